#pragma once
// tenfold::Tensor<T, shape<N...>>: owns its elements (row-major, 64-byte aligned). Assigning an
// expression evaluates it; using a tensor in an expression references it (or owns it, if temporary).
#include <algorithm>
#include <initializer_list>
#include <string>

#include "tenfold/core/error.hpp"
#include "tenfold/core/expr.hpp"
#include "tenfold/core/storage.hpp"

namespace tenfold {

// Evaluates `src` into `dst` (a Tensor or a writable view). Defined by the CPU backend (cpu/evaluator.hpp).
template <class Dst, class Src>
void eval(Dst&& dst, Src&& src);

namespace detail {
template <class T, class S>
struct check_tensor {
  static_assert(is_shape_v<S>, "tenfold::Tensor<T, S>: S must be tenfold::shape<N...>");
  static_assert(is_supported_element_v<T>, "tenfold::Tensor<T, S>: T must be float, double, int32_t, int64_t, bool, "
                                           "tenfold::bf16 or tenfold::f16");
  static constexpr bool ok = true;
};
} // namespace detail

template <class T, class S>
class Tensor {
  static_assert(detail::check_tensor<T, S>::ok);

 public:
  using value_type = T;
  using shape_type = S;
  static constexpr int rank = S::rank;
  static constexpr std::array<index_t, S::rank> shape = S::dims;
  static constexpr std::array<index_t, S::rank> strides = strides_of<S>;
  static constexpr index_t size() { return S::size; }

  Tensor() = default;
  Tensor(std::initializer_list<T> values) {
    if (index_t(values.size()) != S::size)
      throw error(detail::message("tenfold::Tensor: initializer list has ", values.size(), " values, the shape ",
                                  shape_string(), " needs ", S::size));
    std::copy(values.begin(), values.end(), data());
  }
  template <expression E>
    requires(!std::is_same_v<std::remove_cvref_t<E>, Tensor>)
  Tensor(E&& e) { // NOLINT(google-explicit-constructor): `Tensor<float, S> y = exp(x);` is the point
    eval(*this, std::forward<E>(e));
  }
  template <expression E>
    requires(!std::is_same_v<std::remove_cvref_t<E>, Tensor>)
  Tensor& operator=(E&& e) {
    eval(*this, std::forward<E>(e));
    return *this;
  }
  // Compound assignment reads each element before writing it, so it is alias-safe in place.
  template <class E> Tensor& operator+=(E&& e) { eval(*this, *this + std::forward<E>(e)); return *this; }
  template <class E> Tensor& operator-=(E&& e) { eval(*this, *this - std::forward<E>(e)); return *this; }
  template <class E> Tensor& operator*=(E&& e) { eval(*this, *this * std::forward<E>(e)); return *this; }
  template <class E> Tensor& operator/=(E&& e) { eval(*this, *this / std::forward<E>(e)); return *this; }

  // A bounded axis (shape<upto<N>, ...>): how many of its N positions the tensor holds now (N when
  // made). Assigning an expression sets it to the expression's; operator() checks against it.
  index_t length() const noexcept requires(S::has_bounded) { return length_.n; }
  void set_length(index_t n) requires(S::has_bounded) {
    constexpr index_t cap = S::dims[S::bounded_axis];
    if (n < 0 || n > cap)
      throw error(detail::message("tenfold::Tensor", shape_string(), ": length ", n, " for its upto<", cap, "> axis (0 to ", cap, ")"));
    length_.n = n;
  }
  index_t* length_data() noexcept requires(S::has_bounded) { return &length_.n; }
  const index_t* length_data() const noexcept requires(S::has_bounded) { return &length_.n; }

  T* data() noexcept { return storage_.data(); }
  const T* data() const noexcept { return storage_.data(); }
  T* begin() noexcept { return data(); }
  T* end() noexcept { return data() + S::size; }
  const T* begin() const noexcept { return data(); }
  const T* end() const noexcept { return data() + S::size; }

  // Checked element access: an index out of range throws, naming the index and the shape.
  template <std::integral... I>
  T& operator()(I... i) {
    return data()[offset(i...)];
  }
  template <std::integral... I>
  const T& operator()(I... i) const {
    return data()[offset(i...)];
  }

  static std::string shape_string() {
    std::string s = "[";
    for (int i = 0; i < S::rank; ++i) (s += i ? "," : "") += (S::bounded[i] ? "upto " : "") + std::to_string(S::dims[i]);
    return s + "]";
  }

 private:
  template <class... I>
  index_t offset(I... i) const {
    static_assert(sizeof...(I) == S::rank, "tenfold::Tensor: element access needs one index per axis");
    const index_t idx[] = {index_t(i)..., 0};
    index_t o = 0;
    for (int k = 0; k < S::rank; ++k) {
      index_t extent = S::dims[k];
      if constexpr (S::has_bounded)
        if (k == S::bounded_axis) extent = length_.n;
      if (idx[k] < 0 || idx[k] >= extent) {
        std::string where = "(";
        for (int m = 0; m < S::rank; ++m) (where += m ? "," : "") += std::to_string(idx[m]);
        throw error(detail::message("tenfold::Tensor: index ", where, ") out of range for shape ", shape_string(),
                                    S::has_bounded ? " of length " + std::to_string(extent) : std::string()));
      }
      o += idx[k] * strides[k];
    }
    return o;
  }

  struct no_length {};
  struct run_length {
    index_t n = S::dims[S::bounded_axis];
  };
  detail::storage<T, S::size> storage_;
  [[no_unique_address]] std::conditional_t<S::has_bounded, run_length, no_length> length_;
};
} // namespace tenfold
