#pragma once
// Tensors from nothing: fill/zeros/ones, and lazy generators (arange, linspace, eye, random draws)
// whose element depends only on its index — so random draws are the same on every backend and for
// every thread count.
#include "tenfold/core/philox.hpp"
#include "tenfold/core/reduce_node.hpp"
#include "tenfold/core/tensor.hpp"

namespace tenfold {

template <class T, class S>
void fill(Tensor<T, S>& t, T value) {
  std::fill(t.begin(), t.end(), value);
}
template <class T, class S>
Tensor<T, S> zeros() {
  return Tensor<T, S>{};
}
template <class T, class S>
Tensor<T, S> ones() {
  Tensor<T, S> t;
  fill(t, T(1));
  return t;
}
template <class T, class S>
Tensor<T, S> full(T value) {
  Tensor<T, S> t;
  fill(t, value);
  return t;
}

namespace detail {
template <class S>
TENFOLD_HD constexpr index_t linear_index(const index_t* idx) {
  index_t l = 0;
  for (int i = 0; i < S::rank; ++i) l = l * extent<S>(i) + idx[i];
  return l;
}
template <class T>
struct arange_gen {
  static constexpr const char* name = "arange";
  compute_t<T> start, step;
  TENFOLD_HD compute_t<T> operator()(const index_t* i) const { return start + step * static_cast<compute_t<T>>(i[0]); }
};
template <class T, index_t N>
struct linspace_gen {
  static constexpr const char* name = "linspace";
  double lo, hi;
  // Computed in double and exact at both ends.
  TENFOLD_HD compute_t<T> operator()(const index_t* i) const {
    if (N == 1) return static_cast<compute_t<T>>(lo);
    if (i[0] == N - 1) return static_cast<compute_t<T>>(hi);
    return static_cast<compute_t<T>>(lo + (hi - lo) * double(i[0]) / double(N - 1));
  }
};
struct eye_gen {
  static constexpr const char* name = "eye";
  TENFOLD_HD int operator()(const index_t* i) const { return i[0] == i[1]; }
};
template <class T, class S>
struct uniform_gen {
  static constexpr const char* name = "uniform";
  std::uint64_t seed, offset;
  T lo, hi;
  TENFOLD_HD T operator()(const index_t* i) const { return uniform_at<T>(seed, offset, linear_index<S>(i), lo, hi); }
};
template <class T, class S>
struct normal_gen {
  static constexpr const char* name = "normal";
  std::uint64_t seed, offset;
  T mean, stddev;
  TENFOLD_HD T operator()(const index_t* i) const { return normal_at<T>(seed, offset, linear_index<S>(i), mean, stddev); }
};
template <class S>
struct bernoulli_gen {
  static constexpr const char* name = "bernoulli";
  std::uint64_t seed, offset;
  double p;
  TENFOLD_HD bool operator()(const index_t* i) const { return bernoulli_at(seed, offset, linear_index<S>(i), p); }
};
} // namespace detail

// arange<float, 5>(start, step): start, start + step, ...
template <class T, index_t N>
auto arange(compute_t<T> start = 0, compute_t<T> step = 1) {
  return detail::generator_node<T, shape<N>, detail::arange_gen<T>>{{}, {start, step}};
}
// linspace<float, 5>(0, 1): N evenly spaced values from lo to hi inclusive.
template <class T, index_t N>
auto linspace(double lo, double hi) {
  static_assert(N >= 1, "tenfold::linspace: N must be at least 1");
  return detail::generator_node<T, shape<N>, detail::linspace_gen<T, N>>{{}, {lo, hi}};
}
// eye<float, N, M>(): ones on the main diagonal.
template <class T, index_t N, index_t M = N>
auto eye() {
  return detail::generator_node<T, shape<N, M>, detail::eye_gen>{};
}

// Random draws take a tenfold::rng and advance it, so successive draws are independent.
template <class S, class T = float>
auto uniform(rng& g, T lo = T(0), T hi = T(1)) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "tenfold::uniform: T must be float or double");
  const auto off = g.advance(S::size);
  return detail::generator_node<T, S, detail::uniform_gen<T, S>>{{}, {g.seed(), off, lo, hi}};
}
template <class S, class T = float>
auto normal(rng& g, T mean = T(0), T stddev = T(1)) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "tenfold::normal: T must be float or double");
  const auto off = g.advance(S::size);
  return detail::generator_node<T, S, detail::normal_gen<T, S>>{{}, {g.seed(), off, mean, stddev}};
}
template <class S>
auto bernoulli(rng& g, double p) {
  const auto off = g.advance(S::size);
  return detail::generator_node<bool, S, detail::bernoulli_gen<S>>{{}, {g.seed(), off, p}};
}
} // namespace tenfold
