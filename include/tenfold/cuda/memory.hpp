#pragma once
// Device memory, pinned host memory and streams, each an owning RAII type whose every runtime call is
// checked (cuda/error.hpp). Nothing here is implicit: data crosses between host and device only
// through the named copies (to_device, to_host, copy_to_device, copy_to_host).
#include <cuda_runtime.h>

#include <cstddef>
#include <span>
#include <utility>

#include "tenfold/cuda/error.hpp"

namespace tenfold::cuda {

// Is there a device this process can use? A machine without a GPU (or driver) answers false; nothing
// is thrown, so tests and programs can choose another path.
inline bool device_available() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return count > 0;
}

// A non-owning stream handle: what every asynchronous call takes. The default is the legacy stream 0.
struct stream_ref {
  cudaStream_t handle = nullptr;
  void synchronize() const { TENFOLD_CUDA_CHECK(cudaStreamSynchronize(handle)); }
};

// An owned stream (non-blocking with respect to the legacy default stream).
class stream {
 public:
  stream() { TENFOLD_CUDA_CHECK(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking)); }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  stream(stream&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  stream& operator=(stream&& o) noexcept {
    std::swap(handle_, o.handle_);
    return *this;
  }
  ~stream() {
    if (handle_) (void)cudaStreamDestroy(handle_); // a destructor must not throw
  }
  cudaStream_t get() const noexcept { return handle_; }
  operator stream_ref() const noexcept { return {handle_}; } // NOLINT: a stream is usable wherever a ref is
  void synchronize() const { stream_ref{handle_}.synchronize(); }

 private:
  cudaStream_t handle_ = nullptr;
};

// Bytes of device memory from one cudaMalloc (256-byte aligned, as cudaMalloc guarantees).
class device_buffer {
 public:
  device_buffer() = default;
  explicit device_buffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes) TENFOLD_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  device_buffer(device_buffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~device_buffer() {
    if (ptr_) (void)cudaFree(ptr_);
  }
  std::byte* data() const noexcept { return static_cast<std::byte*>(ptr_); }
  std::size_t size() const noexcept { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Page-locked host memory: the source or target of truly asynchronous copies.
// Bytes of device memory for work queued on one stream, from the device's stream-ordered pool
// (cudaMallocAsync): the stream's later work may use it, and it goes back to the pool in stream order when
// this goes out of scope (after the work queued before then). Capturable into a CUDA graph.
class stream_buffer {
 public:
  stream_buffer(std::size_t bytes, stream_ref s) : stream_(s.handle) {
    if (bytes) TENFOLD_CUDA_CHECK(cudaMallocAsync(&ptr_, bytes, stream_));
  }
  stream_buffer(const stream_buffer&) = delete;
  stream_buffer& operator=(const stream_buffer&) = delete;
  ~stream_buffer() {
    if (ptr_) (void)cudaFreeAsync(ptr_, stream_); // a destructor must not throw
  }
  std::byte* data() const noexcept { return static_cast<std::byte*>(ptr_); }

 private:
  void* ptr_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

template <class T>
class pinned_buffer {
 public:
  explicit pinned_buffer(std::size_t n) : n_(n) {
    if (n) TENFOLD_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&ptr_), n * sizeof(T)));
  }
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;
  pinned_buffer(pinned_buffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  pinned_buffer& operator=(pinned_buffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(n_, o.n_);
    return *this;
  }
  ~pinned_buffer() {
    if (ptr_) (void)cudaFreeHost(ptr_);
  }
  T* data() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return n_; }
  std::span<T> span() const noexcept { return {ptr_, n_}; }
  T& operator[](std::size_t i) const noexcept { return ptr_[i]; }

 private:
  T* ptr_ = nullptr;
  std::size_t n_ = 0;
};
} // namespace tenfold::cuda
