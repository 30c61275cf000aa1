#pragma once
// tenfold::cuda::Tensor<T, shape<...>>: a tensor whose elements live in device memory. It is used in
// expressions through expr(), a strided leaf like any other whose holder (device_holder) marks the
// pointer as a device pointer; the CUDA evaluator accepts only such leaves, so a host tensor can never
// reach a kernel by mistake. Copies between host and device are explicit and checked.
#include <string>

#include "tenfold/core/param_holder.hpp"
#include "tenfold/core/tensor.hpp"
#include "tenfold/cuda/memory.hpp"

namespace tenfold::cuda {

// A leaf's holder for device memory: a plain pointer, trivially copyable into a kernel's arguments.
template <class T>
struct device_holder {
  T* ptr = nullptr;
  TENFOLD_HD T* data() const { return ptr; }
};

template <class N>
inline constexpr bool is_device_leaf_v = false;
template <class T, class S, auto St, index_t O, class E>
inline constexpr bool is_device_leaf_v<tenfold::detail::leaf<T, S, St, O, device_holder<E>>> = true;
// A parameter of a function reverse mode differentiates, on a device tensor (value_and_grad and vjp
// called with cuda::Tensors).
template <class T, class S, auto St, index_t O, class E, class Tag, int K, class F>
inline constexpr bool is_device_leaf_v<tenfold::detail::leaf<T, S, St, O, autodiff::param_holder<E, Tag, K, device_holder<F>>>> = true;

// A leaf as a kernel reads it: such a parameter's leaf becomes a plain device leaf (its holder's type
// names the function being differentiated, often a host lambda, which nvcc does not take in a kernel's
// template arguments; the walk has matched parameters by then).
template <class L>
const L& kernel_leaf(const L& l) {
  return l;
}
template <class T, class S, auto St, index_t O, class E, class Tag, int K, class F>
auto kernel_leaf(const tenfold::detail::leaf<T, S, St, O, autodiff::param_holder<E, Tag, K, device_holder<F>>>& l) {
  return tenfold::detail::leaf<T, S, St, O, device_holder<T>>{{}, {l.data()}};
}

// A contiguous device leaf over p.
template <class T, class S>
using device_leaf = tenfold::detail::leaf<T, S, tenfold::detail::canon(strides_of<S>), 0, device_holder<T>>;

template <class T, class S>
device_leaf<T, S> leaf_at(T* p) {
  return {{}, {p}};
}

template <class Dst, class Src>
void eval(Dst&& dst, Src&& src, stream_ref s = {});

template <class T, class S = shape<>>
class Tensor {
  static_assert(tenfold::detail::check_tensor<T, S>::ok);

 public:
  using value_type = T;
  using shape_type = S;
  static constexpr int rank = S::rank;
  static constexpr index_t size() { return S::size; }
  static constexpr std::size_t bytes = std::size_t(S::size) * sizeof(T);

  // Zero-filled, as a host Tensor is: a fresh tensor never holds garbage. The fill is complete on
  // return, so a kernel on any stream (a non-blocking one included) sees zeros, never a late memset.
  Tensor() : buffer_(bytes) {
    if (bytes) {
      TENFOLD_CUDA_CHECK(cudaMemsetAsync(buffer_.data(), 0, bytes, nullptr));
      TENFOLD_CUDA_CHECK(cudaStreamSynchronize(nullptr));
    }
  }
  // Deep copies are spelled out (clone), never implied by `auto a = b;`.
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;

  // Evaluates an expression over device tensors into this one.
  template <expression E>
  Tensor& operator=(E&& e) {
    cuda::eval(*this, std::forward<E>(e));
    return *this;
  }

  T* data() const noexcept { return reinterpret_cast<T*>(buffer_.data()); }

  // This tensor as an expression operand (read), or as a destination.
  device_leaf<const T, S> expr() const { return {{}, {data()}}; }
  device_leaf<T, S> out() { return {{}, {data()}}; }

  void copy_from(const tenfold::Tensor<T, S>& host, stream_ref s = {}) {
    TENFOLD_CUDA_CHECK(cudaMemcpyAsync(data(), host.data(), bytes, cudaMemcpyHostToDevice, s.handle));
  }
  // Waits for the copy: the host tensor is ready when this returns.
  void copy_to(tenfold::Tensor<T, S>& host, stream_ref s = {}) const {
    TENFOLD_CUDA_CHECK(cudaMemcpyAsync(host.data(), data(), bytes, cudaMemcpyDeviceToHost, s.handle));
    s.synchronize();
  }
  // From/to pinned memory: asynchronous, ordered on `s`; the caller synchronises.
  void copy_from(const pinned_buffer<T>& host, stream_ref s = {}) {
    check_size(host.size());
    TENFOLD_CUDA_CHECK(cudaMemcpyAsync(data(), host.data(), bytes, cudaMemcpyHostToDevice, s.handle));
  }
  void copy_to(pinned_buffer<T>& host, stream_ref s = {}) const {
    check_size(host.size());
    TENFOLD_CUDA_CHECK(cudaMemcpyAsync(host.data(), data(), bytes, cudaMemcpyDeviceToHost, s.handle));
  }
  Tensor clone(stream_ref s = {}) const {
    Tensor t;
    TENFOLD_CUDA_CHECK(cudaMemcpyAsync(t.data(), data(), bytes, cudaMemcpyDeviceToDevice, s.handle));
    return t;
  }

 private:
  static void check_size(std::size_t n) {
    if (n != std::size_t(S::size))
      throw error(tenfold::detail::message("tenfold::cuda::Tensor: the pinned buffer has ", n, " elements, the shape ",
                                           tenfold::Tensor<T, S>::shape_string(), " needs ", S::size));
  }
  device_buffer buffer_;
};

template <class T, class S>
Tensor<T, S> to_device(const tenfold::Tensor<T, S>& host, stream_ref s = {}) {
  Tensor<T, S> d;
  d.copy_from(host, s);
  return d;
}
template <class T, class S>
tenfold::Tensor<T, S> to_host(const Tensor<T, S>& dev, stream_ref s = {}) {
  tenfold::Tensor<T, S> h;
  dev.copy_to(h, s);
  return h;
}
} // namespace tenfold::cuda
