#pragma once
// Reduction entries of the op table. `combine(acc, x, i)` folds element x found at position i of the
// reduced subspace; `merge(a, b)` joins two partial results where a covers earlier positions than b;
// `simd_combine` / `simd_merge` (optional, together) do the same for whole batches of accumulators.
#include <algorithm>

#include "tenfold/ops/table_binary.hpp"

namespace tenfold::ops {

// The derivative of a max or min: g shared equally by the elements equal to the result y (PyTorch's
// amax/amin rule), as an expression over x's shape (y and g broadcast back).
template <class X, class Y, class G, class Ctx>
auto tie_share(const X& x, const Y& y, const G& g, const Ctx& ctx) {
  const auto tie = call<eq>(x, y);
  return call<where>(tie, g, 0.0) / ctx.sum_back(call<where>(tie, 1.0, 0.0));
}

struct sum : reduction<sum, reduce_result::wide> {
  TENFOLD_OP_NAME(sum);
  template <class A> TENFOLD_HD static constexpr A identity() { return A(0); }
  // Integer sums wrap around on overflow, as NumPy's do (sc::wrapping_add: never undefined).
  template <class A, class X> TENFOLD_HD static A combine(A acc, X x, index_t) {
    if constexpr (sc::wraps_v<A>) return sc::wrapping_add(acc, A(x));
    else return acc + x;
  }
  template <class A> TENFOLD_HD static A merge(A a, A b) { return sc::wrapping_add(a, b); }
  template <class A> TENFOLD_HD static A finalize(A a, index_t) { return a; }
  template <class B> static B simd_combine(const B& acc, const B& x) { return acc + x; }
  template <class B> static B simd_merge(const B& a, const B& b) { return a + b; }
  static long double reference(const long double* x, index_t n) {
    long double s = 0;
    for (index_t i = 0; i < n; ++i) s += x[i];
    return s;
  }
  // the derivative: x the operand, y and g the result and its gradient broadcast back to x's shape,
  // ctx the reduced count and sum_back(e) (e summed over the same axes, broadcast back)
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, const auto& g,
                  [[maybe_unused]] const auto& ctx) {
    return g;
  }
  // cumsum's derivative: y_j sums x_i for i <= j, so x_i gets the g_j of every j >= i (ctx: the scan's
  // axis; rev_cumsum(e) sums e from the axis's far end).
  static auto scan_vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, const auto& g, const auto& ctx) {
    return ctx.rev_cumsum(g);
  }
  static constexpr test_spec test{.lo = -1, .hi = 1, .ulps = 4};
  static constexpr bench_spec bench{.flops = 1};
};
struct mean : reduction<mean, reduce_result::floating> {
  TENFOLD_OP_NAME(mean);
  template <class A> TENFOLD_HD static constexpr A identity() { return A(0); }
  template <class A, class X> TENFOLD_HD static A combine(A acc, X x, index_t) { return acc + x; }
  template <class A> TENFOLD_HD static A merge(A a, A b) { return a + b; }
  template <class A> TENFOLD_HD static A finalize(A a, index_t n) { return n ? a / A(n) : A(NAN); }
  template <class B> static B simd_combine(const B& acc, const B& x) { return acc + x; }
  template <class B> static B simd_merge(const B& a, const B& b) { return a + b; }
  static long double reference(const long double* x, index_t n) { return sum::reference(x, n) / n; }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, const auto& g, const auto& ctx) {
    return g / double(ctx.count);
  }
  static constexpr test_spec test{.lo = -1, .hi = 1, .ulps = 4};
  static constexpr bench_spec bench{.flops = 1};
};
struct prod : reduction<prod, reduce_result::wide> {
  TENFOLD_OP_NAME(prod);
  template <class A> TENFOLD_HD static constexpr A identity() { return A(1); }
  template <class A, class X> TENFOLD_HD static A combine(A acc, X x, index_t) {
    if constexpr (sc::wraps_v<A>) return sc::wrapping_mul(acc, A(x)); // as sum: integers wrap
    else return acc * x;
  }
  template <class A> TENFOLD_HD static A merge(A a, A b) { return sc::wrapping_mul(a, b); }
  template <class A> TENFOLD_HD static A finalize(A a, index_t) { return a; }
  template <class B> static B simd_combine(const B& acc, const B& x) { return sc::wrapping_mul(acc, x); }
  template <class B> static B simd_merge(const B& a, const B& b) { return sc::wrapping_mul(a, b); }
  static long double reference(const long double* x, index_t n) {
    long double p = 1;
    for (index_t i = 0; i < n; ++i) p *= x[i];
    return p;
  }
  // d y / d x_i is the product of the other elements: y / x_i where no element is zero. Where one is, it
  // gets the product of the others and every other element 0; with two or more zeros, all are 0
  // (PyTorch's rule). The product of the nonzero elements is taken apart, so no 0 / 0 arises.
  static auto vjp(const auto& x, [[maybe_unused]] const auto& y, const auto& g, const auto& ctx) {
    const auto is_zero = call<eq>(x, 0.0);
    const auto zeros = ctx.sum_back(call<where>(is_zero, 1.0, 0.0));
    const auto others = ctx.template reduce_back<prod>(call<where>(is_zero, 1.0, x));
    return g * call<where>(is_zero, call<where>(call<eq>(zeros, 1.0), others, 0.0),
                           call<where>(call<eq>(zeros, 0.0), others / x, 0.0));
  }
  // cumprod's derivative: x_i gets the sum over j >= i of g_j times the product of x_k, k <= j, k != i.
  // Before the first zero of the row that is (sum over j >= i of g_j y_j) / x_i. The first zero, at z,
  // gets y_{z-1} times the sum over j >= z of g_j times the product of x_k for z < k <= j; every element
  // after it 0 (each of its products holds x_z). The quotient is selected only before the first zero.
  static auto scan_vjp(const auto& x, const auto& y, const auto& g, const auto& ctx) {
    const auto is_zero = call<eq>(x, 0.0);
    const auto seen = ctx.cumsum(call<where>(is_zero, 1.0, 0.0)); // zeros at or before each position
    const auto before = call<eq>(seen, 0.0);
    const auto first = [&](const auto& v, const auto& otherwise) { // v at the first zero
      return call<where>(is_zero, call<where>(call<eq>(seen, 1.0), v, otherwise), otherwise);
    };
    const auto upto = ctx.cumprod(call<where>(before, x, 1.0));                        // y_{z-1} at z
    const auto after = ctx.cumprod(call<where>(before, 1.0, first(1.0, x)));          // x_{z+1} ... x_j
    const auto tail = ctx.rev_cumsum(call<where>(before, 0.0, g * after));
    return call<where>(before, ctx.rev_cumsum(g * y) / x, first(upto * tail, 0.0));
  }
  static constexpr test_spec test{.lo = 0.5, .hi = 1.5, .ulps = 64};
  static constexpr bench_spec bench{.flops = 1};
};
// max/min propagate NaN like NumPy: once an accumulator is NaN it stays NaN.
// xsimd's float/double max and min are the x86 instructions on SSE2, AVX and AVX-512 builds, which
// return the second operand when either is NaN (Intel SDM, MAXPS/MINPS).
template <class B>
inline constexpr bool nan_second_max = std::is_floating_point_v<typename B::value_type> &&
                                       (std::is_base_of_v<xsimd::sse2, typename B::arch_type> ||
                                        std::is_base_of_v<xsimd::avx, typename B::arch_type> ||
                                        std::is_base_of_v<xsimd::avx512f, typename B::arch_type>);
struct max : reduction<max, reduce_result::same> {
  TENFOLD_OP_NAME(max);
  static constexpr bool needs_nonempty = true;
  // -inf, not lowest(): the max of elements that are all -inf (a fully masked row) is -inf.
  template <class A> TENFOLD_HD static constexpr A identity() {
    if constexpr (std::numeric_limits<A>::has_infinity) return -std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::lowest();
  }
  template <class A, class X> TENFOLD_HD static A combine(A acc, X x, index_t) { return (x > acc || x != x) ? A(x) : acc; }
  template <class A> TENFOLD_HD static A merge(A a, A b) { return (b > a || b != b) ? b : a; }
  template <class A> TENFOLD_HD static A finalize(A a, index_t) { return a; }
  template <class B> static B simd_combine(const B& acc, const B& x) {
    // x86's MAXPS/MAXPD return their second operand when either is NaN, so max(acc, x) is NaN when x
    // is, and only a NaN acc needs the select: three instructions instead of four.
    if constexpr (nan_second_max<B>) return xsimd::select(xsimd::isnan(acc), acc, xsimd::max(acc, x));
    else return xsimd::select((x > acc) || xsimd::isnan(x), x, acc);
  }
  template <class B> static B simd_merge(const B& a, const B& b) { return simd_combine(a, b); }
  static long double reference(const long double* x, index_t n) {
    long double m = x[0];
    for (index_t i = 0; i < n; ++i)
      if (std::isnan(x[i])) return x[i];
      else m = std::max(m, x[i]);
    return m;
  }
  static auto vjp(const auto& x, const auto& y, const auto& g, const auto& ctx) { return tie_share(x, y, g, ctx); }
  static constexpr test_spec test{.ulps = 0};
  static constexpr bench_spec bench{.flops = 1};
};
struct min : reduction<min, reduce_result::same> {
  TENFOLD_OP_NAME(min);
  static constexpr bool needs_nonempty = true;
  template <class A> TENFOLD_HD static constexpr A identity() { // +inf where there is one, as for max
    if constexpr (std::numeric_limits<A>::has_infinity) return std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::max();
  }
  template <class A, class X> TENFOLD_HD static A combine(A acc, X x, index_t) { return (x < acc || x != x) ? A(x) : acc; }
  template <class A> TENFOLD_HD static A merge(A a, A b) { return (b < a || b != b) ? b : a; }
  template <class A> TENFOLD_HD static A finalize(A a, index_t) { return a; }
  template <class B> static B simd_combine(const B& acc, const B& x) {
    if constexpr (nan_second_max<B>) return xsimd::select(xsimd::isnan(acc), acc, xsimd::min(acc, x)); // as max
    else return xsimd::select((x < acc) || xsimd::isnan(x), x, acc);
  }
  template <class B> static B simd_merge(const B& a, const B& b) { return simd_combine(a, b); }
  static long double reference(const long double* x, index_t n) {
    long double m = x[0];
    for (index_t i = 0; i < n; ++i)
      if (std::isnan(x[i])) return x[i];
      else m = std::min(m, x[i]);
    return m;
  }
  static auto vjp(const auto& x, const auto& y, const auto& g, const auto& ctx) { return tie_share(x, y, g, ctx); }
  static constexpr test_spec test{.ulps = 0};
  static constexpr bench_spec bench{.flops = 1};
};

// argmax/argmin: the first position of the extreme value; the first NaN wins, as in NumPy.
template <class T>
struct value_index {
  T value;
  index_t index;
};
template <class D, bool Greater>
struct arg_extreme : reduction<D, reduce_result::index> {
  static constexpr bool needs_nonempty = true;
  template <class I> using acc_type = value_index<I>;
  template <class A> TENFOLD_HD static constexpr A identity() { return {decltype(A::value)(NAN), -1}; }
  template <class A> TENFOLD_HD static bool better(const A& b, const A& a) {
    if (a.index < 0) return b.index >= 0;
    if (b.index < 0 || a.value != a.value) return false;
    if (b.value != b.value) return true;
    return Greater ? b.value > a.value : b.value < a.value;
  }
  template <class A, class X> TENFOLD_HD static A combine(A acc, X x, index_t i) {
    const A c{decltype(A::value)(x), i};
    return better(c, acc) ? c : acc;
  }
  template <class A> TENFOLD_HD static A merge(A a, A b) { return better(b, a) ? b : a; }
  template <class A> TENFOLD_HD static index_t finalize(A a, index_t) { return a.index; }
  static long double reference(const long double* x, index_t n) {
    index_t best = 0;
    for (index_t i = 0; i < n; ++i) {
      if (std::isnan(x[i])) return i;
      if (Greater ? x[i] > x[best] : x[i] < x[best]) best = i;
    }
    return best;
  }
  static constexpr test_spec test{.ulps = 0};
  static constexpr bench_spec bench{.flops = 2};
};
struct argmax : arg_extreme<argmax, true> {
  TENFOLD_OP_NAME(argmax);
};
struct argmin : arg_extreme<argmin, false> {
  TENFOLD_OP_NAME(argmin);
};

struct any : reduction<any, reduce_result::boolean> {
  TENFOLD_OP_NAME(any);
  template <class A> TENFOLD_HD static constexpr A identity() { return false; }
  template <class A, class X> TENFOLD_HD static A combine(A acc, X x, index_t) { return acc || bool(x); }
  template <class A> TENFOLD_HD static A merge(A a, A b) { return a || b; }
  template <class A> TENFOLD_HD static A finalize(A a, index_t) { return a; }
  static long double reference(const long double* x, index_t n) { return std::any_of(x, x + n, [](long double v) { return v != 0; }); }
  static constexpr test_spec test{.ulps = 0, .integral = true};
  static constexpr bench_spec bench{.flops = 1};
};
struct all : reduction<all, reduce_result::boolean> {
  TENFOLD_OP_NAME(all);
  template <class A> TENFOLD_HD static constexpr A identity() { return true; }
  template <class A, class X> TENFOLD_HD static A combine(A acc, X x, index_t) { return acc && bool(x); }
  template <class A> TENFOLD_HD static A merge(A a, A b) { return a && b; }
  template <class A> TENFOLD_HD static A finalize(A a, index_t) { return a; }
  static long double reference(const long double* x, index_t n) { return std::all_of(x, x + n, [](long double v) { return v != 0; }); }
  static constexpr test_spec test{.ulps = 0, .integral = true};
  static constexpr bench_spec bench{.flops = 1};
};

// Variance and standard deviation with Bessel's correction: Σ (x - mean)² / (n - Correction), Correction
// = 1 by default as PyTorch's (correction<0> is NumPy's default, the population variance); n - Correction
// <= 0 gives NaN (0 / 0), as both libraries do.
//
// Accuracy: each block of a run (at most 1024 elements, in L1) is two vector sweeps, its mean m̂ and then
// Σ d and Σ d² with d = x - m̂ (the corrected two-pass algorithm: m2 = Σ d² - (Σ d)² / n), so the data's
// offset never enters a sum of squares; blocks, threads and GPU blocks then merge with Chan et al.'s
// pairwise formula. The moments are held in double, also for float input: the merge's mean and the
// shift between blocks are where a float accumulator lost its digits (single-pass float Welford: 4e-4
// relative error on data with mean 1e4 and unit spread). Element by element (run tails, the device,
// reductions along a kept innermost axis) it is Welford's update, in double as well. A block holding
// ±inf or NaN, or whose sums overflow T, takes that element path too (NaN and inf as the definition).
template <class T>
struct moments {
  T n, mean, m2;
};
template <bool Sqrt, int Correction = 1>
struct variance : reduction<variance<Sqrt, Correction>, reduce_result::floating> {
  // Named `std` in the API: a type called `std` would hide namespace std inside tenfold::ops.
  static constexpr std::string_view name = Sqrt ? "std" : "var";
  static constexpr int correction = Correction;
  template <class I> using acc_type = moments<double>;
  template <class A> TENFOLD_HD static constexpr A identity() { return {0, 0, 0}; }
  template <class A, class X> TENFOLD_HD static A combine(A a, X x, index_t) {
    a.n += 1;
    const double d = double(x) - a.mean;
    a.mean += d / a.n;
    a.m2 += d * (double(x) - a.mean);
    return a;
  }
  template <class A> TENFOLD_HD static A merge(A a, A b) {
    if (b.n == 0) return a;
    if (a.n == 0) return b;
    const auto n = a.n + b.n, d = b.mean - a.mean;
    return {n, a.mean + d * (b.n / n), a.m2 + b.m2 + d * d * (a.n * b.n / n)};
  }
  template <class A> TENFOLD_HD static auto finalize(A a, index_t) {
    const double dof = a.n - Correction;
    const double v = a.m2 / (dof > 0 ? dof : 0.0);
    if constexpr (Sqrt) return std::sqrt(v);
    else return v;
  }
  // d var / dx = 2 (x - mean) / (n - correction); d std = (x - mean) / ((n - correction) std).
  static auto vjp(const auto& x, [[maybe_unused]] const auto& y, const auto& g, const auto& ctx) {
    const auto centered = x - ctx.sum_back(x) / double(ctx.count);
    if constexpr (Sqrt) return g * centered / (y * double(ctx.count - Correction));
    else return g * centered * (2.0 / double(ctx.count - Correction));
  }
  template <class A, class I, class Row> static A simd_block(const Row& row, index_t lo, index_t hi) {
    using B = xsimd::batch<I>;
    constexpr index_t w = B::size;
    const index_t n = hi - lo;
    auto one_by_one = [&] {
      A acc = identity<A>();
      for (index_t j = lo; j < hi; ++j) acc = combine(acc, static_cast<I>(row.scalar(j)), j);
      return acc;
    };
    if (n < 4 * w) return one_by_one();
    B s0(I(0)), s1(I(0)), s2(I(0)), s3(I(0));
    index_t j = lo;
    for (; j + 4 * w <= hi; j += 4 * w) {
      s0 += row.load(j), s1 += row.load(j + w), s2 += row.load(j + 2 * w), s3 += row.load(j + 3 * w);
    }
    for (; j + w <= hi; j += w) s0 += row.load(j);
    I sum = tenfold::simd::hadd((s0 + s1) + (s2 + s3));
    for (; j < hi; ++j) sum += static_cast<I>(row.scalar(j));
    const I shift = sum / I(n);
    if (!(std::abs(shift) <= std::numeric_limits<I>::max())) return one_by_one(); // ±inf, NaN, or the sum overflowed
    const B c(shift);
    B d0(I(0)), d1(I(0)), q0(I(0)), q1(I(0)), q2(I(0)), q3(I(0));
    for (j = lo; j + 4 * w <= hi; j += 4 * w) {
      const B a = row.load(j) - c, b = row.load(j + w) - c, e = row.load(j + 2 * w) - c, f = row.load(j + 3 * w) - c;
      d0 += a + b, d1 += e + f;
      q0 = xsimd::fma(a, a, q0), q1 = xsimd::fma(b, b, q1), q2 = xsimd::fma(e, e, q2), q3 = xsimd::fma(f, f, q3);
    }
    for (; j + w <= hi; j += w) {
      const B a = row.load(j) - c;
      d0 += a, q0 = xsimd::fma(a, a, q0);
    }
    double sd = double(tenfold::simd::hadd(d0 + d1)), sq = double(tenfold::simd::hadd((q0 + q1) + (q2 + q3)));
    for (; j < hi; ++j) {
      const double a = double(static_cast<I>(row.scalar(j))) - double(shift);
      sd += a, sq += a * a;
    }
    if (!(sq <= std::numeric_limits<I>::max())) return one_by_one(); // d² overflowed T
    const double m2 = sq - sd * sd / double(n);
    return A{double(n), double(shift) + sd / double(n), m2 > 0 ? m2 : 0.0};
  }
  static long double reference(const long double* x, index_t n) {
    const long double m = sum::reference(x, n) / n;
    long double s = 0;
    for (index_t i = 0; i < n; ++i) s += (x[i] - m) * (x[i] - m);
    const long double v = s / std::max<long double>(n - Correction, 0);
    return Sqrt ? std::sqrt(v) : v;
  }
  // Measured (the generated reduction tests, up to 10^6 elements): float within 4 ulps, double within 24
  // (the pairwise merge of a thousand blocks, in double); the square root halves it.
  static constexpr test_spec test{.lo = -1, .hi = 1, .ulps = Sqrt ? 16 : 32};
  static constexpr bench_spec bench{.flops = 6};
};
using var = variance<false>;
using stddev = variance<true>;

// log Σ exp(x) online: keep the running max m and s = Σ exp(x - m).
template <class T>
struct max_sum {
  T m, s;
};
// A block of a run for the logsumexp family (at most 1024 elements, so it stays in L1 between the two
// sweeps): the block's max in one vector sweep, Σ exp(x - max) in a second — one exp per element, no
// rescaling; blocks then merge with Op::merge. A block holding ±inf or NaN takes Op's scalar combine,
// which spells those cases out.
template <class Op, class A, class I, class Row>
A logsumexp_block(const Row& row, index_t lo, index_t hi) {
  using B = xsimd::batch<I>;
  constexpr index_t w = B::size;
  A acc = Op::template identity<A>();
  // Whole vectors up to `body`, then the rest one by one. (`body` is computed up front: with a constant
  // hi, GCC 12 carried a `j + w <= hi` loop's final j into the scalar tail before it folded the tail's
  // guard, and warned -Waggressive-loop-optimizations in users' -O3 builds: cpu::store_run too.)
  const index_t body = lo + (hi - lo) / w * w;
  index_t j;
  I m = -std::numeric_limits<I>::infinity();
  if (body > lo) {
    B mv = row.load(lo);
    for (j = lo + w; j < body; j += w) {
      const B x = row.load(j);
      mv = xsimd::select(x > mv || xsimd::isnan(x), x, mv);
    }
    alignas(64) I lane[w];
    mv.store_aligned(lane);
    for (index_t k = 0; k < w; ++k) m = lane[k] > m || lane[k] != lane[k] ? lane[k] : m;
  }
  for (j = body; j < hi; ++j) {
    const I x = static_cast<I>(row.scalar(j));
    m = x > m || x != x ? x : m;
  }
  if (!(std::abs(m) <= std::numeric_limits<I>::max())) { // ±inf or NaN somewhere: the careful path
    for (j = lo; j < hi; ++j) acc = Op::combine(acc, static_cast<I>(row.scalar(j)), j);
    return acc;
  }
  const B mb(m);
  B s0(I(0)), s1(I(0));
  for (j = lo; j + 2 * w <= body; j += 2 * w) {
    s0 += ops::exp::simd(row.load(j) - mb);
    s1 += ops::exp::simd(row.load(j + w) - mb);
  }
  if (j < body) s0 += ops::exp::simd(row.load(j) - mb);
  I s = tenfold::simd::hadd(s0 + s1);
  for (j = body; j < hi; ++j) s += std::exp(static_cast<I>(row.scalar(j)) - m);
  return Op::merge(acc, A{m, s});
}

struct logsumexp : reduction<logsumexp, reduce_result::floating> {
  TENFOLD_OP_NAME(logsumexp);
  template <class A, class I, class Row> static A simd_block(const Row& row, index_t lo, index_t hi) {
    return logsumexp_block<logsumexp, A, I>(row, lo, hi);
  }
  template <class I> using acc_type = max_sum<I>;
  template <class A> TENFOLD_HD static constexpr A identity() {
    using T = decltype(A::m);
    return {-std::numeric_limits<T>::infinity(), T(0)};
  }
  template <class A> TENFOLD_HD static A merge(A a, A b) {
    using T = decltype(A::m);
    if (a.m != a.m || b.m != b.m) return {T(NAN), T(NAN)};
    if (b.m == -std::numeric_limits<T>::infinity()) return a;
    if (a.m == -std::numeric_limits<T>::infinity()) return b;
    if (b.m == std::numeric_limits<T>::infinity() || a.m == std::numeric_limits<T>::infinity())
      return {std::numeric_limits<T>::infinity(), T(1)};
    return a.m >= b.m ? A{a.m, a.s + b.s * std::exp(b.m - a.m)} : A{b.m, b.s + a.s * std::exp(a.m - b.m)};
  }
  template <class A, class X> TENFOLD_HD static A combine(A a, X x, index_t) { return merge(a, A{x, decltype(A::s)(1)}); }
  template <class A> TENFOLD_HD static auto finalize(A a, index_t) { return a.m + std::log(a.s); }
  static long double reference(const long double* x, index_t n) {
    long double m = -INFINITY;
    for (index_t i = 0; i < n; ++i) m = std::isnan(x[i]) ? x[i] : std::max(m, x[i]);
    if (std::isnan(m) || std::isinf(m)) return m;
    long double s = 0;
    for (index_t i = 0; i < n; ++i) s += std::exp(x[i] - m);
    return m + std::log(s);
  }
  static auto vjp(const auto& x, const auto& y, const auto& g, [[maybe_unused]] const auto& ctx) {
    return g * call<exp>(x - y);
  }
  static constexpr test_spec test{.lo = -50, .hi = 50, .ulps = 4};
  static constexpr bench_spec bench{.flops = 22};
};
// max(x) + log Σ exp(x - max(x)) exactly as that definition evaluates it in IEEE arithmetic: a +inf
// anywhere makes some x - max NaN, so the result is NaN (logsumexp itself says +inf). Not a user-facing
// op: it is what softmax's definition is rewritten to (ops/rewrite.hpp), so the rewrite changes no value
// in any special case.
struct shifted_logsumexp : logsumexp {
  static constexpr std::string_view name = "logsumexp";
  template <class A> TENFOLD_HD static A merge(A a, A b) {
    using T = decltype(A::m);
    if (a.m == std::numeric_limits<T>::infinity() || b.m == std::numeric_limits<T>::infinity()) return {T(NAN), T(NAN)};
    return logsumexp::merge(a, b);
  }
  template <class A, class X> TENFOLD_HD static A combine(A a, X x, index_t) { return merge(a, A{x, decltype(A::s)(1)}); }
  template <class A, class I, class Row> static A simd_block(const Row& row, index_t lo, index_t hi) {
    return logsumexp_block<shifted_logsumexp, A, I>(row, lo, hi);
  }
  static long double reference(const long double* x, index_t n) {
    for (index_t i = 0; i < n; ++i)
      if (x[i] == INFINITY) return NAN;
    return logsumexp::reference(x, n);
  }
};
// log_softmax's two row constants, max(x) and log Σ exp(x - max(x)), kept apart so that its result
// (x - max) - log Σ rounds at the scale of x - max and of the log, not at the row maximum's: x - lse, with
// lse = max + log Σ rounded once, lost 2e-4 relative accuracy on rows spanning ±1e4. softmax's online
// form takes the max and Σ exp(x - max) itself (ops/rewrite.hpp). The parts run shifted_logsumexp's
// accumulation and say so (`accumulation`): a row computes it once, in one pass (cpu/row_memo.hpp), and
// each takes its part. IEEE cases are shifted_logsumexp's: a +inf makes every part NaN.
enum class lse_part { max, log_sum, sum };
template <lse_part P>
struct shifted_logsumexp_part : shifted_logsumexp {
  static constexpr std::string_view name =
      P == lse_part::max ? "logsumexp.max" : P == lse_part::log_sum ? "logsumexp.log_sum" : "logsumexp.sum";
  using accumulation = shifted_logsumexp;
  template <class A> TENFOLD_HD static auto finalize(A a, index_t) {
    if constexpr (P == lse_part::max) return a.m;
    else if constexpr (P == lse_part::log_sum) return std::log(a.s);
    else return a.s;
  }
  // The parts appear only together: in (x - max) - log Σ exp(x - max) each read with the same gradient,
  // in exp(x - max) / Σ exp(x - max) as softmax's definition reads them. Neither result depends on the
  // max, so the max is held constant (no gradient): the max's share (the ties' g / count) and the other
  // part's -max' cancel exactly, and computed apart they cost two row reductions and a compare of every
  // element with the max (the decoder's logit gradient, [768, 114]).
  static auto vjp(const auto& x, const auto& y, const auto& g, const auto& ctx) {
    if constexpr (P == lse_part::max) return no_gradient{};
    else if constexpr (P == lse_part::log_sum) return g * call<exp>(x - ctx.max_back(x) - y);
    else return g * call<exp>(x - ctx.max_back(x));
  }
};

// Euclidean norm. Σ x² in the accumulator type: overflows only where x² itself would.
struct norm : reduction<norm, reduce_result::floating> {
  TENFOLD_OP_NAME(norm);
  template <class A> TENFOLD_HD static constexpr A identity() { return A(0); }
  template <class A, class X> TENFOLD_HD static A combine(A acc, X x, index_t) { return acc + x * x; }
  template <class A> TENFOLD_HD static A merge(A a, A b) { return a + b; }
  template <class A> TENFOLD_HD static A finalize(A a, index_t) { return std::sqrt(a); }
  template <class B> static B simd_combine(const B& acc, const B& x) { return xsimd::fma(x, x, acc); }
  template <class B> static B simd_merge(const B& a, const B& b) { return a + b; }
  static long double reference(const long double* x, index_t n) {
    long double s = 0;
    for (index_t i = 0; i < n; ++i) s += x[i] * x[i];
    return std::sqrt(s);
  }
  // x / ‖x‖, and 0 where the norm is 0 (PyTorch's subgradient there).
  static auto vjp(const auto& x, const auto& y, const auto& g, [[maybe_unused]] const auto& ctx) {
    return call<where>(call<eq>(y, 0.0), 0.0, g * x / y);
  }
  static constexpr test_spec test{.lo = -1, .hi = 1, .ulps = 4};
  static constexpr bench_spec bench{.flops = 2};
};
} // namespace tenfold::ops
