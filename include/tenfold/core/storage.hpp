#pragma once
// Owned tensor storage: small tensors live inline (on the stack when the Tensor is), larger ones in
// one 64-byte-aligned heap block obtained once at construction (core/buffer.hpp: from 2 MiB on, on a
// huge page boundary). `Tensor<float, shape<4096, 4096>> t;` in a function therefore never touches the
// stack beyond a pointer.
#include <cstring>
#include <new>
#include <type_traits>

#include "tenfold/core/buffer.hpp"
#include "tenfold/core/config.hpp"

namespace tenfold::detail {

inline constexpr std::size_t inline_storage_bytes = 256;

template <class T, index_t N, bool Inline = (N * sizeof(T) <= inline_storage_bytes)>
class storage;

template <class T, index_t N>
class storage<T, N, true> {
  alignas(default_alignment) T data_[N > 0 ? N : 1]{};

 public:
  storage() = default;
  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
};

template <class T, index_t N>
class storage<T, N, false> {
  static_assert(std::is_trivially_copyable_v<T>);
  T* data_;

  static T* allocate() {
    void* p = allocate_buffer(sizeof(T) * N, default_alignment);
    std::memset(p, 0, sizeof(T) * N); // never garbage: a fresh tensor reads as zeros
    return static_cast<T*>(p);
  }
  void release() noexcept {
    if (data_) free_buffer(data_, sizeof(T) * N, default_alignment);
  }

 public:
  storage() : data_(allocate()) {}
  storage(const storage& o) : data_(allocate()) { std::memcpy(data_, o.data_, sizeof(T) * N); }
  storage(storage&& o) noexcept : data_(o.data_) { o.data_ = nullptr; }
  storage& operator=(const storage& o) {
    if (this != &o) {
      if (!data_) data_ = allocate();
      std::memcpy(data_, o.data_, sizeof(T) * N);
    }
    return *this;
  }
  storage& operator=(storage&& o) noexcept {
    if (this != &o) {
      release();
      data_ = o.data_;
      o.data_ = nullptr;
    }
    return *this;
  }
  ~storage() { release(); }
  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
};
} // namespace tenfold::detail
