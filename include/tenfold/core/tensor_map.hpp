#pragma once
// tenfold::map<T, shape<N...>>(pointer): the caller's memory seen as a tensor, without a copy. A
// TensorMap is accepted wherever a Tensor is — as an operand (a leaf over the pointer, never owning it,
// even when the map is a temporary) and as a destination (`m = exp(x);` writes through). Over a
// `const T*` it is read-only. The caller keeps the memory alive and row-major, S::size elements long.
//
// A shape with a bounded axis (shape<upto<N>, 16>) maps a run-time part of the memory: the map keeps its
// length (given when made, or set_length), and only the positions below it are read or written, so the
// memory need only reach the last active element. Unlike a bounded Tensor's, an assignment does not
// change it: the operands must have the same length.
#include <cstdint>
#include <string>

#include "tenfold/core/tensor.hpp"

namespace tenfold {

template <class T, class S>
class TensorMap {
  static_assert(detail::check_tensor<std::remove_const_t<T>, S>::ok);

 public:
  using value_type = std::remove_const_t<T>;
  using shape_type = S;
  static constexpr int rank = S::rank;
  static constexpr std::array<index_t, S::rank> shape = S::dims;
  static constexpr std::array<index_t, S::rank> strides = strides_of<S>;
  static constexpr index_t size() { return S::size; }

  explicit TensorMap(T* p) : data_(p) { check_pointer(p); }
  // Over a bounded shape: `length` positions of its upto<N> axis are active (0 to N).
  TensorMap(T* p, index_t length) requires(S::has_bounded) : data_(p) {
    check_pointer(p);
    set_length(length);
  }
  TensorMap(const TensorMap&) = default;

  // A bounded axis: how many of its positions the map covers now (N when made without a length).
  index_t length() const noexcept requires(S::has_bounded) { return length_.n; }
  void set_length(index_t n) requires(S::has_bounded) {
    constexpr index_t cap = S::dims[S::bounded_axis];
    if (n < 0 || n > cap)
      throw error(detail::message("tenfold::TensorMap", shape_string(), ": length ", n, " for its upto<", cap,
                                  "> axis (0 to ", cap, ")"));
    length_.n = n;
  }
  index_t* length_data() noexcept requires(S::has_bounded && !std::is_const_v<T>) { return &length_.n; }
  const index_t* length_data() const noexcept requires(S::has_bounded) { return &length_.n; }

 private:
  static void check_pointer(T* p) {
    if (p == nullptr) throw error(detail::message("tenfold::map: the pointer is null (expected ", what(), ")"));
    if (reinterpret_cast<std::uintptr_t>(p) % alignof(value_type) != 0)
      throw error(detail::message("tenfold::map: the pointer is not aligned to ", alignof(value_type), " bytes (expected ",
                                  what(), ")"));
  }

 public:
  // Assignment writes the mapped elements (it never rebinds the pointer), as Tensor's does.
  TensorMap& operator=(const TensorMap& o) requires(!std::is_const_v<T>) {
    eval(*this, o);
    return *this;
  }
  template <expression E>
    requires(!std::is_const_v<T> && !std::is_same_v<std::remove_cvref_t<E>, TensorMap>)
  TensorMap& operator=(E&& e) {
    eval(*this, std::forward<E>(e));
    return *this;
  }
  template <class E>
    requires(!std::is_const_v<T>)
  TensorMap& operator+=(E&& e) {
    eval(*this, *this + std::forward<E>(e));
    return *this;
  }
  template <class E>
    requires(!std::is_const_v<T>)
  TensorMap& operator-=(E&& e) {
    eval(*this, *this - std::forward<E>(e));
    return *this;
  }
  template <class E>
    requires(!std::is_const_v<T>)
  TensorMap& operator*=(E&& e) {
    eval(*this, *this * std::forward<E>(e));
    return *this;
  }
  template <class E>
    requires(!std::is_const_v<T>)
  TensorMap& operator/=(E&& e) {
    eval(*this, *this / std::forward<E>(e));
    return *this;
  }
  template <expression E>
    requires(std::is_const_v<T>)
  TensorMap& operator=(E&&) {
    static_assert(sizeof(E) == 0, "tenfold::map: this map is read-only (it was made from a const pointer)");
    return *this;
  }

  // Like Tensor's: a const map reads only.
  T* data() noexcept { return data_; }
  const value_type* data() const noexcept { return data_; }
  T* begin() noexcept { return data_; }
  T* end() noexcept { return data_ + S::size; }
  const value_type* begin() const noexcept { return data_; }
  const value_type* end() const noexcept { return data_ + S::size; }

  // Checked element access: an index out of range throws, naming the index and the shape.
  template <std::integral... I>
  T& operator()(I... i) {
    return data_[offset(i...)];
  }
  template <std::integral... I>
  const value_type& operator()(I... i) const {
    return data_[offset(i...)];
  }

  static std::string shape_string() { return Tensor<value_type, S>::shape_string(); }

 private:
  static std::string what() {
    return std::string(std::is_const_v<T> ? "const " : "") + std::string(dtype_name<value_type>()) + "* for a " +
           shape_string() + " map";
  }
  template <class... I>
  index_t offset(I... i) const {
    static_assert(sizeof...(I) == S::rank, "tenfold::TensorMap: element access needs one index per axis");
    const index_t idx[] = {index_t(i)..., 0};
    index_t o = 0;
    for (int k = 0; k < S::rank; ++k) {
      index_t extent = S::dims[k];
      if constexpr (S::has_bounded)
        if (k == S::bounded_axis) extent = length_.n;
      if (idx[k] < 0 || idx[k] >= extent) {
        std::string where = "(";
        for (int m = 0; m < S::rank; ++m) (where += m ? "," : "") += std::to_string(idx[m]);
        throw error(detail::message("tenfold::TensorMap: index ", where, ") out of range for shape ", shape_string(),
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
  T* data_;
  [[no_unique_address]] std::conditional_t<S::has_bounded, run_length, no_length> length_;
};

// map<float, shape<4, 8>>(p): a writable view of p[0 .. 32); over a const pointer, a read-only one.
// A null pointer, or one not aligned to alignof(T), throws tenfold::error.
template <class T, class S>
TensorMap<T, S> map(T* p) {
  return TensorMap<T, S>(p);
}
template <class T, class S>
TensorMap<const T, S> map(const T* p) {
  return TensorMap<const T, S>(p);
}
} // namespace tenfold
