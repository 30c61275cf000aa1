#pragma once
// The reduction cases of the table-driven op tests (ops_reduce*_test.cpp): the tolerance of a reduced
// value, whole-tensor reductions with special values, reductions of views, and the 16 axis subsets of a
// rank-4 tensor. Inputs, ulps and reporting come from op_test_support.hpp.
#include "op_test_support.hpp"

// ---- reductions ----------------------------------------------------------------------------------------
namespace tenfold::test {

// A reduction's inputs: its spec's domain; integral entries (any, all) read 0/1.
template <class Op>
domain reduction_domain() {
  constexpr ops::test_spec s = Op::test;
  return {s.lo, s.hi, s.integral, s.integral, s.specials};
}

// Op carried out one element after another in R's own accumulator type.
template <class Op, class R>
long double in_order(const std::vector<long double>& x) {
  using I = typename Op::template input_type<R>;
  using A = typename Op::template acc_type<I>;
  A acc = Op::template identity<A>();
  for (std::size_t i = 0; i < x.size(); ++i) acc = Op::combine(acc, static_cast<I>(static_cast<R>(x[i])), index_t(i));
  return static_cast<long double>(Op::finalize(acc, index_t(x.size())));
}

// One reduced output against Op::reference over the inputs it covers.
//
// Tolerance. NaN and infinities must match exactly, as must bool and integer results. A floating result
// passes within the entry's ulps of the reference, or within
//     ulps × (ulp(expected) + depth × ε × |Op(|x|)|),
// the reference applied to the absolute values scaling the rounding error: for sum that is the classic
// ε Σ|x_i| bound of a sum whose terms cancel, for mean the same over n, for norm and prod it is relative.
// `depth` is 1 for the library's pairwise reductions: their worst-case bound grows with the tree depth,
// but rounding errors of opposite signs cancel so the observed error stays well below ε Σ|x_i| (the
// pairwise-model and 10^7-floats tests pin the order and the accuracy down exactly). Scans add their
// terms one after another, so for them depth is the prefix length k (the worst case, (k-1) ε Σ|x_i|).
template <class Op, class R>
bool check_reduction(report& rep, index_t at, const std::vector<long double>& x, R got_r, long double depth = 1) {
  ++rep.checked;
  const index_t n = index_t(x.size());
  const long double expected = static_cast<long double>(Op::reference(x.data(), n)), got = to_ld(got_r);
  long double err;
  bool ok;
  if constexpr (std::is_same_v<R, bool>) {
    err = got != (expected != 0);
    ok = err == 0;
  } else if constexpr (std::is_integral_v<R>) {
    err = std::fabs(got - expected);
    ok = got == expected;
  } else {
    constexpr ops::test_spec s = Op::test;
    err = ulp_error<R>(got, expected);
    ok = err <= tolerance_ulps<R>(s);
    if (!ok && std::isfinite(got) && std::isfinite(expected)) {
      std::vector<long double> ax; // finite inputs only: a -inf in logsumexp changes nothing, its |x| would
      for (long double v : x)      // make the scale infinite
        if (std::isfinite(v)) ax.push_back(std::fabs(v));
      long double scale =
          ax.empty() ? 0 : std::fabs(static_cast<long double>(Op::reference(ax.data(), index_t(ax.size()))));
      if (!std::isfinite(scale)) scale = 0;
      const long double tol =
          s.ulps * (ulp_at<R>(expected) + depth * std::numeric_limits<R>::epsilon() * scale) + s.abs_tol;
      ok = std::fabs(got - expected) <= tol;
    }
  }
  if constexpr (is_floating_v<R>) {
    // An intermediate that leaves R's range (x² of a huge x, a product that underflows to 0 before it
    // meets an inf) makes the result inf or NaN where the long-double reference, with its far wider
    // range, stays finite. Then the same reduction done in order in the element type must leave the
    // range too (which of inf and NaN it reaches depends on the order, so either is accepted).
    if (!ok && !std::isfinite(got) && !std::isnan(expected)) ok = !std::isfinite(in_order<Op, R>(x));
  }
  if (std::isfinite(err) && err > rep.worst) rep.worst = err;
  if (!ok) {
    long double head[4];
    const int k = int(std::min<index_t>(n, 4));
    for (int i = 0; i < k; ++i) head[i] = x[i];
    rep.fail(at, head, k, got, expected, err);
  }
  return ok;
}

inline std::vector<long double> widen(const auto& v) {
  std::vector<long double> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) r[i] = to_ld(v[i]);
  return r;
}

// axes_of_mask<M>: the axis list whose bit i of M is set (M = 5 gives axes_t<0, 2>).
template <int M>
constexpr auto mask_axes() {
  std::array<int, std::popcount(unsigned(M))> a{};
  for (int i = 0, k = 0; i < 32; ++i)
    if (M >> i & 1) a[k++] = i;
  return a;
}
template <int M, std::size_t... J>
axes_t<mask_axes<M>()[J]...> axes_for(std::index_sequence<J...>);
template <int M>
using axes_of_mask = decltype(axes_for<M>(std::make_index_sequence<std::popcount(unsigned(M))>{}));

// Op over the axes in mask M of x. The empty subset is not expressible through the API (an empty axis
// list means every axis), so M = 0 builds the node directly: each output then reduces one element.
template <class Op, int M, bool Keep, class X>
auto reduce_mask(X& x) {
  if constexpr (M == 0) {
    using N = detail::node_t<X&>;
    return detail::reduce_node<Op, N, detail::canon(std::array<bool, N::rank>{}), Keep>{{}, detail::as_node(x)};
  } else {
    if constexpr (Keep) return tenfold::reduce<Op>(x, axes_of_mask<M>{}, keepdims);
    else return tenfold::reduce<Op>(x, axes_of_mask<M>{});
  }
}
} // namespace tenfold::test

// ---- reductions over the axis subsets of a rank-4 tensor --------------------------------------------------
// Each output's inputs are gathered in row-major order of the reduced axes (the positions argmax/argmin
// report) and handed to the entry's long-double reference.
namespace tenfold::test {
using rank4_shape = shape<3, 5, 4, 7>;

template <class Op, int M, bool Keep>
void subset_case(const Tensor<float, rank4_shape>& x, const std::vector<float>& v, const std::string& data) {
  auto e = reduce_mask<Op, M, Keep>(x);
  using E = decltype(e);
  Tensor<typename E::value_type, typename E::shape_type> out = e;
  // With keepdims the reduced axes have extent 1, so an output's flat index is the same either way.
  std::vector<std::vector<long double>> groups(E::shape_type::size);
  std::array<index_t, 4> idx{};
  for (index_t f = 0; f < rank4_shape::size; ++f) {
    detail::unravel<rank4_shape>(f, idx.data());
    index_t o = 0;
    for (int a = 0; a < 4; ++a)
      if (!(M >> a & 1)) o = o * rank4_shape::dims[a] + idx[a];
    groups[o].push_back(v[f]);
  }
  std::string axes;
  for (int a = 0; a < 4; ++a)
    if (M >> a & 1) axes += (axes.empty() ? "" : ",") + std::to_string(a);
  report rep{std::string(Op::name) + " float32 [3,5,4,7] over axes {" + axes + "}" + (Keep ? " keepdims " : " ") +
             shape_str<typename E::shape_type>() + ", " + data};
  for (index_t o = 0; o < E::shape_type::size; ++o) check_reduction<Op>(rep, o, groups[o], out.data()[o]);
  rep.finish();
}

template <class Op, bool Keep, int... M>
void all_subsets(const Tensor<float, rank4_shape>& x, const std::vector<float>& v, const std::string& data,
                 std::integer_sequence<int, M...>) {
  (subset_case<Op, M, Keep>(x, v, data), ...);
}

// Op over each of the 16 axis subsets of a [3,5,4,7] float tensor (with keepdims or without), on random
// data, ties, and data with NaN and infinities (0/1 data of two densities for any and all).
template <class Op, bool Keep>
void axis_subsets() {
  std::mt19937_64 rng(seed_of(Op::name, "axes"));
  const domain d = reduction_domain<Op>();
  std::vector<std::pair<std::string, std::vector<float>>> data;
  auto fill = [&](const domain& dd) {
    std::vector<float> v(rank4_shape::size);
    for (float& x : v) x = draw<float>(dd, rng);
    return v;
  };
  data.emplace_back("random", fill(d));
  if (d.boolish) {
    // Mostly ones and mostly zeros, so that both outcomes of any and all occur along short axes.
    auto ones = fill(d), zeros = fill(d);
    std::uniform_real_distribution<double> u(0, 1);
    for (float& x : ones) x = u(rng) < 0.9 ? 1.f : 0.f;
    for (float& x : zeros) x = u(rng) < 0.1 ? 1.f : 0.f;
    data.emplace_back("90% ones", ones);
    data.emplace_back("10% ones", zeros);
  } else {
    data.emplace_back("whole numbers in [-3, 3]", fill(domain{-3, 3, true}));
    auto sp = fill(d); // a NaN and infinities reach some outputs of every subset (and every kernel path)
    sp[rank4_shape::size / 3] = NAN;
    sp[5] = INFINITY;
    sp[rank4_shape::size - 2] = -INFINITY;
    data.emplace_back("with NaN and ±inf", sp);
  }
  Tensor<float, rank4_shape> x;
  for (const auto& [name, v] : data) {
    std::copy(v.begin(), v.end(), x.data());
    all_subsets<Op, Keep>(x, v, name, std::make_integer_sequence<int, 16>{});
  }
}
} // namespace tenfold::test

// ---- whole-tensor reductions, special values, views -------------------------------------------------------
namespace tenfold::test {

template <class T>
std::vector<T> draw_n(const domain& d, index_t n, std::mt19937_64& rng) {
  std::vector<T> v(n);
  for (auto& x : v) x = draw<T>(d, rng);
  return v;
}

// The whole-tensor reduction of x (holding v) checked against the reference.
template <class Op, class T, index_t N>
void check_full(const std::string& what, Tensor<T, shape<N>>& x, const std::vector<T>& v) {
  std::copy(v.begin(), v.end(), x.data());
  auto e = tenfold::reduce<Op>(x);
  Tensor<typename decltype(e)::value_type, shape<>> out = e;
  report rep{std::string(Op::name) + " " + std::string(type_name<T>()) + " all axes of [" + std::to_string(N) + "] " +
             what};
  check_reduction<Op>(rep, 0, widen(v), out());
  rep.finish();
}

// Random inputs; whole numbers in [-3, 3] (ties, which argmax/argmin resolve to the first position); and,
// for the 0/1 entries (any, all), all-zero, all-one and single-exception inputs.
template <class Op, class T, index_t N>
void full_reduction_case() {
  std::mt19937_64 rng(seed_of(Op::name, type_name<T>(), N));
  const domain d = reduction_domain<Op>();
  Tensor<T, shape<N>> x;
  check_full<Op>("random", x, draw_n<T>(d, N, rng));
  if (d.boolish) {
    std::uniform_int_distribution<index_t> pos(0, N - 1);
    for (int base : {0, 1}) {
      std::vector<T> v(N, T(base));
      check_full<Op>("all " + std::to_string(base), x, v);
      v[pos(rng)] = T(1 - base);
      check_full<Op>("all " + std::to_string(base) + " but one", x, v);
    }
  } else {
    check_full<Op>("whole numbers in [-3, 3]", x, draw_n<T>(domain{-3, 3, true}, N, rng));
  }
}

// Each special value at a few positions (SIMD body, tail, second block), then in pairs. The other
// elements are ±1 (0/1 for any and all): every partial result then stays exact and in range, so inf,
// NaN, huge and subnormal values meet the reference the same way whatever the summation order.
template <class Op, class T>
void specials_case() {
  constexpr index_t n = 4099;
  std::mt19937_64 rng(seed_of(Op::name, type_name<T>(), 7));
  const domain d = reduction_domain<Op>();
  std::vector<std::vector<T>> bases;
  if (d.boolish) {
    bases = {std::vector<T>(n, T(0)), std::vector<T>(n, T(1))};
  } else {
    bases.emplace_back(n);
    for (T& v : bases[0]) v = rng() & 1 ? T(1) : T(-1);
  }
  Tensor<T, shape<n>> x;
  const auto sp = special_values<T>(d);
  for (const auto& base : bases) {
    const std::string b = d.boolish ? " in " + show(to_ld(base[0])) + "s" : "";
    for (T s : sp)
      for (index_t p : {index_t(0), index_t(17), index_t(2050), n - 1}) {
        auto v = base;
        v[p] = s;
        check_full<Op>("with " + show(to_ld(s)) + " at " + std::to_string(p) + b, x, v);
      }
    for (std::size_t i = 0; i < sp.size(); ++i) {
      auto v = base;
      v[100] = sp[i];
      v[3000] = sp[(i + 3) % sp.size()];
      check_full<Op>(
          "with " + show(to_ld(sp[i])) + " at 100 and " + show(to_ld(sp[(i + 3) % sp.size()])) + " at 3000" + b, x, v);
    }
  }
}

// A reduction of a 2-D view checked against inputs read through `get(i, j)`; Axis -1 reduces both.
template <class Op, int Axis, class T, class View, class Get>
void check_2d(const std::string& what, View&& view, Get get) {
  using S = typename detail::node_t<View>::shape_type;
  constexpr index_t A = S::dims[0], B = S::dims[1];
  report rep{std::string(Op::name) + " " + std::string(type_name<T>()) + " " + what};
  if constexpr (Axis == -1) {
    Tensor<typename Op::template result_type<T>, shape<>> out = tenfold::reduce<Op>(view);
    std::vector<long double> in;
    for (index_t i = 0; i < A; ++i)
      for (index_t j = 0; j < B; ++j) in.push_back(to_ld(get(i, j)));
    check_reduction<Op>(rep, 0, in, out());
  } else {
    auto e = tenfold::reduce<Op>(view, axis<Axis>);
    Tensor<typename decltype(e)::value_type, typename decltype(e)::shape_type> out = e;
    const index_t outs = Axis == 0 ? B : A, len = Axis == 0 ? A : B;
    for (index_t o = 0; o < outs; ++o) {
      std::vector<long double> in;
      for (index_t r = 0; r < len; ++r) in.push_back(to_ld(Axis == 0 ? get(r, o) : get(o, r)));
      check_reduction<Op>(rep, o, in, out.data()[o]);
    }
  }
  rep.finish();
}

template <class Op, class T>
void view_cases() {
  std::mt19937_64 rng(seed_of(Op::name, type_name<T>(), 8));
  const domain d = reduction_domain<Op>();
  const auto v = draw_n<T>(d, 37 * 29, rng);
  auto x = tensor_of<T, shape<37, 29>>(v);
  auto tget = [&](index_t i, index_t j) { return v[j * 29 + i]; }; // transpose(x)(i, j) = x(j, i)
  check_2d<Op, 0, T>("transposed [29,37] axis 0", transpose(x), tget);
  check_2d<Op, 1, T>("transposed [29,37] axis 1", transpose(x), tget);
  check_2d<Op, -1, T>("transposed [29,37] all axes", transpose(x), tget);
  auto row = tensor_of<T, shape<1, 29>>(std::vector<T>(v.begin(), v.begin() + 29));
  auto bget = [&](index_t, index_t j) { return v[j]; };
  check_2d<Op, 0, T>("broadcast [1,29]->[37,29] axis 0", broadcast_to<shape<37, 29>>(row), bget);
  check_2d<Op, 1, T>("broadcast [1,29]->[37,29] axis 1", broadcast_to<shape<37, 29>>(row), bget);
  // A step-3 slice of 4099 elements (1367 of them: a full block and a tail), reduced whole.
  const auto w = draw_n<T>(d, 4099, rng);
  auto s = tensor_of<T, shape<4099>>(w);
  Tensor<typename Op::template result_type<T>, shape<>> out =
      tenfold::reduce<Op>(slice<range<none, none, 3>>(s));
  std::vector<long double> in;
  for (index_t i = 0; i < 4099; i += 3) in.push_back(to_ld(w[i]));
  report rep{std::string(Op::name) + " " + std::string(type_name<T>()) + " strided (step 3) [1367] all axes"};
  check_reduction<Op>(rep, 0, in, out());
  rep.finish();
}

// Every case of ops_reduce_test / ops_reduce_f64_test for one entry and element type.
template <class Op, class T>
void reduction_cases() {
  full_reduction_case<Op, T, 1>();
  full_reduction_case<Op, T, 7>();
  full_reduction_case<Op, T, 33>();
  full_reduction_case<Op, T, 1000003>();
  specials_case<Op, T>();
  view_cases<Op, T>();
}
} // namespace tenfold::test
