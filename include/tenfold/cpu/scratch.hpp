#pragma once
// Per-thread scratch arrays (the GEMM's packing buffers, the attention kernel's tiles), grown to the
// largest size asked for and then kept, so that evaluation allocates nothing once they have grown.
//
// Which thread runs which part of a product depends on timing (the pool hands parts out one at a
// time), so after a warm-up one thread may not yet have grown a buffer as far as another has, and
// could grow it later. prepare_scratch() grows every thread's buffers to the largest size any thread
// has asked for: after a warm-up run and prepare_scratch(), running the same expressions again
// allocates nothing, whatever the schedule (tests/alloc_test.cpp counts it).
#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "tenfold/cpu/thread_pool.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define TENFOLD_ASAN_SCRATCH 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TENFOLD_ASAN_SCRATCH 1
#endif
#endif
#if defined(TENFOLD_ASAN_SCRATCH)
#include <sanitizer/asan_interface.h>
#endif

namespace tenfold::cpu {

// One kind of per-thread buffer: Tag tells the kinds apart (each remembers its own largest size).
// Under AddressSanitizer what lies past the size last asked for is poisoned: a kernel that writes or
// reads past its own request is reported even where an earlier, larger request left the room.
template <class T, class Tag>
class scratch_buffer {
  struct aligned_delete {
    void operator()(T* p) const { ::operator delete[](p, std::align_val_t(default_alignment)); }
  };
  std::unique_ptr<T[], aligned_delete> p_;
  index_t size_ = 0;
  static inline std::atomic<index_t> largest_{0}; // over every thread's buffer of this kind

 public:
  T* get(index_t n) {
    if (n > size_) {
#if defined(TENFOLD_ASAN_SCRATCH)
      if (p_) ASAN_UNPOISON_MEMORY_REGION(p_.get(), std::size_t(size_) * sizeof(T));
#endif
      p_.reset(static_cast<T*>(::operator new[](std::size_t(n) * sizeof(T), std::align_val_t(default_alignment))));
      size_ = n;
      for (index_t l = largest_.load(std::memory_order_relaxed); n > l && !largest_.compare_exchange_weak(l, n);) {
      }
    }
#if defined(TENFOLD_ASAN_SCRATCH)
    ASAN_UNPOISON_MEMORY_REGION(p_.get(), std::size_t(std::max<index_t>(n, 0)) * sizeof(T));
    ASAN_POISON_MEMORY_REGION(p_.get() + std::max<index_t>(n, 0), std::size_t(size_ - std::max<index_t>(n, 0)) * sizeof(T));
#endif
    return p_.get();
  }
  void grow_to_largest() { get(largest_.load()); }
};

// The workspace types in use (cpu::, not a nested detail::, which would hide tenfold::detail here).
struct scratch_registry {
  std::mutex m;
  std::vector<void (*)()> grow; // one per workspace type: grows the calling thread's buffers
  static scratch_registry& instance() {
    static scratch_registry r;
    return r;
  }
};

// Called once per workspace type, on its first use: prepare_scratch() then grows that type's buffers.
inline void register_scratch(void (*grow_calling_thread)()) {
  auto& r = scratch_registry::instance();
  std::lock_guard<std::mutex> lk(r.m);
  r.grow.push_back(grow_calling_thread);
}

// Grows every thread's scratch buffers to the largest size any thread has used (see the top of this
// file). Allocates; call it after a warm-up run, outside the code that must not allocate.
inline void prepare_scratch() {
  std::vector<void (*)()> grow;
  {
    auto& r = scratch_registry::instance();
    std::lock_guard<std::mutex> lk(r.m);
    grow = r.grow;
  }
  auto each = [&] {
    for (auto* g : grow) g();
  };
  thread_pool::instance().on_each_thread(each);
}

} // namespace tenfold::cpu
