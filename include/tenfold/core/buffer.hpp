#pragma once
// Heap buffers: a large tensor's storage, a program's or an expression's arena, packed parameters.
// One of 2 MiB or more starts on a 2 MiB boundary and, on Linux, is marked for transparent huge pages
// (madvise MADV_HUGEPAGE: most distributions lend them only where asked, `madvise` in
// /sys/kernel/mm/transparent_hugepage/enabled), so that one TLB entry maps 2 MiB of it, not 4 KiB.
// A kernel that reads many rows of a large operand at once (a GEMM's panels of B: one line from each of
// 256 rows 16 KiB apart) otherwise spends its time on page walks. Measured on Zen 5 (bench/RESULTS.md):
// the decoder's training 5.6-6.1 -> 5.1-5.2 s for 200 iterations; 16 rows through a 64 MiB row-major B
// (AVX2) 52 -> 93 GFLOP/s with the GEMM's far prefetch. `TENFOLD_HUGE_PAGES=0` in the environment (read
// once) leaves the pages to the system's default; the alignment stays.
#include <cstddef>
#include <cstdlib>
#include <new>
#include <span>
#include <utility>

#include "tenfold/core/config.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tenfold::detail {

inline constexpr std::size_t huge_page_bytes = std::size_t(2) << 20;

// The alignment a buffer of `bytes` gets where `align` is asked for.
constexpr std::size_t buffer_alignment(std::size_t bytes, std::size_t align) {
  return bytes >= huge_page_bytes && align < huge_page_bytes ? huge_page_bytes : align;
}

inline bool huge_pages_wanted() {
  static const bool wanted = [] {
    const char* e = std::getenv("TENFOLD_HUGE_PAGES");
    return !(e && e[0] == '0' && e[1] == '\0');
  }();
  return wanted;
}

// Uninitialised; free it with free_buffer(p, bytes, align), the same bytes and align.
inline void* allocate_buffer(std::size_t bytes, std::size_t align) {
  const std::size_t a = buffer_alignment(bytes, align);
  void* p = ::operator new(bytes, std::align_val_t(a));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // (advice only: where the kernel has no huge pages to lend, or none at all, the pages stay small)
  if (a == huge_page_bytes && huge_pages_wanted()) (void)madvise(p, bytes, MADV_HUGEPAGE);
#endif
  return p;
}
inline void free_buffer(void* p, std::size_t bytes, std::size_t align) noexcept {
  ::operator delete(p, std::align_val_t(buffer_alignment(bytes, align)));
}

} // namespace tenfold::detail

namespace tenfold {
// A caller's arena for eval(dst, src, arena) and run_step: `bytes` on the heap, 64-byte aligned (from
// 2 MiB on, as above: in huge pages), uninitialised, never resized; movable, not copyable.
class arena_buffer {
 public:
  arena_buffer() = default;
  explicit arena_buffer(std::size_t bytes)
      : bytes_(bytes), p_(bytes > 0 ? static_cast<std::byte*>(detail::allocate_buffer(bytes, default_alignment)) : nullptr) {}
  arena_buffer(arena_buffer&& o) noexcept : bytes_(std::exchange(o.bytes_, 0)), p_(std::exchange(o.p_, nullptr)) {}
  arena_buffer& operator=(arena_buffer&& o) noexcept {
    std::swap(bytes_, o.bytes_), std::swap(p_, o.p_);
    return *this;
  }
  ~arena_buffer() {
    if (p_) detail::free_buffer(p_, bytes_, default_alignment);
  }
  std::byte* data() const noexcept { return p_; }
  std::size_t size() const noexcept { return bytes_; }
  std::span<std::byte> span() const noexcept { return {p_, bytes_}; }

 private:
  std::size_t bytes_ = 0;
  std::byte* p_ = nullptr;
};
} // namespace tenfold
