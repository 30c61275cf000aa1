#pragma once
// Unary entries of the op table (see ops/descriptor.hpp for the shape of an entry).
#include "tenfold/core/xsimd.hpp"

#include "tenfold/ops/descriptor.hpp"
#include "tenfold/ops/simd_exp.hpp"

namespace tenfold::ops {
namespace sc {
// Scalar helpers shared by several entries.
template <class T>
TENFOLD_HD constexpr T zero() { return T(0); }
template <class T>
TENFOLD_HD constexpr T one() { return T(1); }
// A logical operand as a mask: a batch of numbers is true where non-zero (NaN too, as bool(NaN) in C++);
// a batch_bool already is one. (xsimd's own && on number batches returns numbers, not a mask.)
template <class B>
auto truth(const B& x) {
  if constexpr (xsimd::is_batch_bool<B>::value) return x;
  else return !(x == B(0)); // not x != 0: that comparison is ordered, false for NaN
}
// Recomputes with the scalar function `f` the lanes of `r` where `redo` holds: for the narrow argument
// ranges an xsimd kernel gets wrong. Costs one mask test per batch when no lane needs it.
template <class B, class M, class F>
B redo_lanes(const B& r, const B& x, const M& redo, F f) {
  if (!xsimd::any(redo)) return r;
  using T = typename B::value_type;
  alignas(B::arch_type::alignment()) T xs[B::size], rs[B::size];
  x.store_aligned(xs);
  r.store_aligned(rs);
  for (std::size_t i = 0; i < B::size; ++i)
    if (redo.get(i)) rs[i] = f(xs[i]);
  return B::load_aligned(rs);
}
template <class B, class M, class F>
B redo_lanes(const B& r, const B& a, const B& b, const M& redo, F f) {
  if (!xsimd::any(redo)) return r;
  using T = typename B::value_type;
  alignas(B::arch_type::alignment()) T as[B::size], bs[B::size], rs[B::size];
  a.store_aligned(as);
  b.store_aligned(bs);
  r.store_aligned(rs);
  for (std::size_t i = 0; i < B::size; ++i)
    if (redo.get(i)) rs[i] = f(as[i], bs[i]);
  return B::load_aligned(rs);
}
// Signed integer arithmetic that wraps around, as NumPy's does (INT_MIN - 1 is INT_MAX, -INT_MIN is INT_MIN):
// computed in the unsigned type, where overflow is defined, and converted back (modular since C++20).
// Other types pass through. (unsigned, not the type's own unsigned: a narrower one would promote to int.)
template <class T>
using wrap_unsigned_t = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
template <class T>
inline constexpr bool wraps_v = std::is_integral_v<T> && std::is_signed_v<T>;
template <class T>
TENFOLD_HD constexpr T wrapping_add(T a, T b) {
  if constexpr (wraps_v<T>) return T(wrap_unsigned_t<T>(a) + wrap_unsigned_t<T>(b));
  else return T(a + b);
}
template <class T>
TENFOLD_HD constexpr T wrapping_sub(T a, T b) {
  if constexpr (wraps_v<T>) return T(wrap_unsigned_t<T>(a) - wrap_unsigned_t<T>(b));
  else return T(a - b);
}
template <class T>
TENFOLD_HD constexpr T wrapping_mul(T a, T b) {
  if constexpr (wraps_v<T>) return T(wrap_unsigned_t<T>(a) * wrap_unsigned_t<T>(b));
  else return T(a * b);
}
// The same for SIMD batches: xsimd multiplies lane by lane in C where the ISA has no instruction for the
// type (int32 on SSE2, int64 before AVX-512DQ), where a signed overflow would be undefined; signed lanes
// multiply as unsigned ones (the same bits as the wrapped product, and the same instruction where there
// is one).
template <class T, class A>
xsimd::batch<T, A> wrapping_mul(const xsimd::batch<T, A>& a, const xsimd::batch<T, A>& b) {
  if constexpr (wraps_v<T>) {
    using U = xsimd::batch<std::make_unsigned_t<T>, A>;
    return xsimd::bitwise_cast<xsimd::batch<T, A>>(xsimd::bitwise_cast<U>(a) * xsimd::bitwise_cast<U>(b));
  } else {
    return a * b;
  }
}
template <class T>
TENFOLD_HD constexpr T wrapping_neg(T a) {
  if constexpr (wraps_v<T>) return T(wrap_unsigned_t<T>(0) - wrap_unsigned_t<T>(a));
  else return T(-a);
}
// For entries whose xsimd kernel is accurate in float only: double then takes the scalar path.
template <class B>
concept float_batch = std::is_same_v<typename B::value_type, float>;
inline constexpr long double ln2 = 0.693147180559945309417232121458176568L;
// Below this x, e^x is under T's normal range (-87.3 in float, -708.4 in double). In double, not long
// double: scalar functions run on CUDA devices, which have no long double.
template <class T>
TENFOLD_HD constexpr T exp_underflow() {
  return T(double(std::numeric_limits<T>::min_exponent - 1) * 0.693147180559945309417);
}
// floor, ceil, trunc and round give a result with x's sign (floor(-0) = -0, ceil(-0.5) = -0); xsimd's SSE2
// emulations of them return +0 there.
template <class B>
B with_sign_of(const B& r, const B& x) {
  if constexpr (std::is_floating_point_v<typename B::value_type>) return xsimd::copysign(r, x);
  else return r;
}
} // namespace sc

#define TENFOLD_OP_NAME(n) static constexpr std::string_view name = #n

// Entries the derivative rules call before their definition (call<cos>(x) in sin's vjp).
struct sign;
struct exp;
struct log;
struct trunc;
struct sin;
struct cos;
struct sinh;
struct cosh;
struct tanh;
struct rsqrt;
struct erf;
struct sigmoid;
struct pow;
struct floor_divide;
struct eq;
struct where;

struct neg : unary<neg, category::arith> {
  TENFOLD_OP_NAME(neg);
  template <class T> TENFOLD_HD static T scalar(T x) { return sc::wrapping_neg(x); }
  // -0 - x, not -x: xsimd 8.1's AVX-512 neg is 0 - x, which gives +0 for +0. (Integers wrap in the lanes.)
  template <class B> static B simd(const B& x) {
    using T = typename B::value_type;
    if constexpr (std::is_floating_point_v<T>) return B(T(-0.0)) - x;
    else return -x;
  }
  static long double reference(long double x) { return -x; }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return -g;
  }
  static constexpr test_spec test{.ulps = 0};
  static constexpr bench_spec bench{.flops = 1};
};
struct abs : unary<abs, category::arith> {
  TENFOLD_OP_NAME(abs);
  template <class T> TENFOLD_HD static T scalar(T x) {
    if constexpr (std::is_integral_v<T>) return x < 0 ? sc::wrapping_neg(x) : x; // abs(INT_MIN) is INT_MIN, as NumPy's
    else return std::fabs(x);
  }
  // Integers: 0 - x where x < 0 (the lanes wrap; xsimd's own abs is std::abs lane by lane where the ISA
  // has no instruction, e.g. int32 on SSE2, and std::abs(INT_MIN) is undefined).
  template <class B> static B simd(const B& x) {
    if constexpr (sc::wraps_v<typename B::value_type>) return xsimd::select(x < B(0), B(0) - x, x);
    else return xsimd::abs(x);
  }
  static long double reference(long double x) { return std::fabs(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g * call<sign>(x); // 0 at 0, as PyTorch
  }
  static constexpr test_spec test{.ulps = 0};
  static constexpr bench_spec bench{.flops = 1};
};
struct sign : unary<sign, category::arith> {
  TENFOLD_OP_NAME(sign);
  // sign(±0) = +0 and sign(NaN) = NaN, as NumPy's (np.sign(-0.0) is 0.0): x + 0 is +0 for ±0 and NaN for NaN.
  template <class T> TENFOLD_HD static T scalar(T x) { return x > T(0) ? T(1) : x < T(0) ? T(-1) : T(x + T(0)); }
  template <class B> static B simd(const B& x) {
    return xsimd::select(x > B(0), B(1), xsimd::select(x < B(0), B(-1), x + B(0)));
  }
  static long double reference(long double x) { return x > 0 ? 1 : x < 0 ? -1 : std::isnan(x) ? x : 0; }
  static constexpr std::string_view no_derivative = "piecewise constant (its derivative is 0 wherever it exists)";
  static constexpr test_spec test{.ulps = 0};
  static constexpr bench_spec bench{.flops = 2};
};
struct square : unary<square, category::arith> {
  TENFOLD_OP_NAME(square);
  template <class T> TENFOLD_HD static T scalar(T x) { return sc::wrapping_mul(x, x); }
  template <class B> static B simd(const B& x) { return sc::wrapping_mul(x, x); }
  static long double reference(long double x) { return x * x; }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g * (x + x);
  }
  static constexpr test_spec test{.ulps = 0.5};
  static constexpr bench_spec bench{.flops = 1};
};
struct relu : unary<relu, category::arith> {
  TENFOLD_OP_NAME(relu);
  // NaN propagates (max(NaN, 0) would hide it).
  template <class T> TENFOLD_HD static T scalar(T x) { return x < T(0) ? T(0) : x; }
  template <class B> static B simd(const B& x) { return xsimd::select(x < B(0), B(0), x); }
  static long double reference(long double x) { return x < 0 ? 0 : x; }
  // From y (y > 0 exactly where x > 0, NaN neither): a backward pass told the value (vjp_with_value)
  // then needs nothing below it, a dense layer's matmul included.
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return call<where>(y > 0.0, g, 0.0); // 0 at 0, as PyTorch
  }
  static constexpr test_spec test{.ulps = 0};
  static constexpr bench_spec bench{.flops = 1};
};

struct exp : unary<exp> {
  TENFOLD_OP_NAME(exp);
  template <class T> TENFOLD_HD static T scalar(T x) { return std::exp(x); }
  // AVX-512 and AVX2 floats: ops/simd_exp.hpp. Otherwise xsimd::exp, which flushes results in the subnormal
  // range to zero and, in float, overflows early (from 88.38, not 88.72): the lanes in those two narrow
  // ranges take std::exp. One test per batch otherwise. Forced inline: GCC kept it out of line in the
  // softmax row loop at AVX2, a call per vector that took a third of the time.
  template <class B> TENFOLD_INLINE static B simd(const B& x) {
#if defined(__AVX512F__)
    if constexpr (sc::avx512_float_v<B>) return B(sc::exp_avx512(x));
#endif
#if defined(__AVX2__) && defined(__FMA__)
    if constexpr (sc::avx2_float_v<B>) return B(sc::exp_avx2(x));
#endif
    using T = typename B::value_type;
    using lim = std::numeric_limits<T>;
    const B r = xsimd::exp(x);
    if (!xsimd::any(xsimd::abs(x) > B(T((1 - lim::min_exponent) * sc::ln2)))) return r;
    const B sub_hi(T((lim::min_exponent - 1) * sc::ln2)), sub_lo(T((lim::min_exponent - lim::digits - 1) * sc::ln2));
    const auto redo = (x < sub_hi && x > sub_lo) ||
                      (x > B(T((lim::max_exponent - 1) * sc::ln2)) && x <= B(T(lim::max_exponent * sc::ln2)));
    return sc::redo_lanes(r, x, redo, [](T v) { return std::exp(v); });
  }
  static long double reference(long double x) { return std::exp(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g * y;
  }
  static constexpr test_spec test{.lo = -100, .hi = 100, .ulps = 2};
  static constexpr bench_spec bench{.flops = 20};
};
struct exp2 : unary<exp2> {
  TENFOLD_OP_NAME(exp2);
  template <class T> TENFOLD_HD static T scalar(T x) { return std::exp2(x); }
  // As exp: xsimd::exp2 flushes subnormal results to zero and overflows from max_exponent - 1 (127 in
  // float, 1023 in double: that point included), not from max_exponent.
  template <class B> static B simd(const B& x) {
    using T = typename B::value_type;
    using lim = std::numeric_limits<T>;
    const B r = xsimd::exp2(x);
    if (!xsimd::any(xsimd::abs(x) > B(T(1 - lim::min_exponent)))) return r;
    const auto redo = (x < B(T(lim::min_exponent - 1)) && x > B(T(lim::min_exponent - lim::digits - 1))) ||
                      (x >= B(T(lim::max_exponent - 1)) && x <= B(T(lim::max_exponent)));
    return sc::redo_lanes(r, x, redo, [](T v) { return std::exp2(v); });
  }
  static long double reference(long double x) { return std::exp2(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g * y * 0.69314718055994530942;
  }
  static constexpr test_spec test{.lo = -140, .hi = 140, .ulps = 2};
  static constexpr bench_spec bench{.flops = 20};
};
struct expm1 : unary<expm1> {
  TENFOLD_OP_NAME(expm1);
  template <class T> TENFOLD_HD static T scalar(T x) { return std::expm1(x); }
  // xsimd::expm1(-0) is +0: zeros pass through. Like exp, it overflows early (float: from 88.38, not
  // 88.72; double: short of 709.78): the lanes past (max_exponent - 1) ln 2 take std::expm1.
  template <class B> static B simd(const B& x) {
    using T = typename B::value_type;
    const B r = xsimd::select(x == B(0), x, xsimd::expm1(x));
    const auto redo = x > B(T((std::numeric_limits<T>::max_exponent - 1) * sc::ln2)) && x < B(std::numeric_limits<T>::infinity());
    return sc::redo_lanes(r, x, redo, [](T v) { return std::expm1(v); });
  }
  static long double reference(long double x) { return std::expm1(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g * (y + 1.0);
  }
  static constexpr test_spec test{.lo = -30, .hi = 88.7, .ulps = 2};
  static constexpr bench_spec bench{.flops = 25};
};
struct log : unary<log> {
  TENFOLD_OP_NAME(log);
  template <class T> TENFOLD_HD static T scalar(T x) { return std::log(x); }
  // xsimd's double log is wrong for subnormal arguments (by tens of units): those lanes take std::log.
  template <class B> static B simd(const B& x) {
    using T = typename B::value_type;
    const auto redo = x > B(0) && x < B(std::numeric_limits<T>::min());
    return sc::redo_lanes(xsimd::log(x), x, redo, [](T v) { return std::log(v); });
  }
  static long double reference(long double x) { return std::log(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g / x;
  }
  static constexpr test_spec test{.lo = 0, .hi = 1e6, .ulps = 2};
  static constexpr bench_spec bench{.flops = 20};
};
struct log2 : unary<log2> {
  TENFOLD_OP_NAME(log2);
  template <class T> TENFOLD_HD static T scalar(T x) { return std::log2(x); }
  // xsimd's double log2 is wrong for subnormal arguments (by tens of units): those lanes take std::log2.
  template <class B> static B simd(const B& x) {
    using T = typename B::value_type;
    const auto redo = x > B(0) && x < B(std::numeric_limits<T>::min());
    return sc::redo_lanes(xsimd::log2(x), x, redo, [](T v) { return std::log2(v); });
  }
  static long double reference(long double x) { return std::log2(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g / (x * 0.69314718055994530942);
  }
  static constexpr test_spec test{.lo = 0, .hi = 1e6, .ulps = 2};
  static constexpr bench_spec bench{.flops = 20};
};
struct log1p : unary<log1p> {
  TENFOLD_OP_NAME(log1p);
  template <class T> TENFOLD_HD static T scalar(T x) { return std::log1p(x); }
  // xsimd::log1p(-0) is +0: zeros pass through.
  template <class B> static B simd(const B& x) { return xsimd::select(x == B(0), x, xsimd::log1p(x)); }
  static long double reference(long double x) { return std::log1p(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g / (x + 1.0);
  }
  static constexpr test_spec test{.lo = -0.999, .hi = 1e6, .ulps = 2};
  static constexpr bench_spec bench{.flops = 25};
};
struct sqrt : unary<sqrt> {
  TENFOLD_OP_NAME(sqrt);
  template <class T> TENFOLD_HD static T scalar(T x) { return std::sqrt(x); }
  template <class B> static B simd(const B& x) { return xsimd::sqrt(x); }
  static long double reference(long double x) { return std::sqrt(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g * 0.5 / y;
  }
  static constexpr test_spec test{.lo = 0, .hi = 1e6, .ulps = 0.5};
  static constexpr bench_spec bench{.flops = 1};
};
struct rsqrt : unary<rsqrt> {
  TENFOLD_OP_NAME(rsqrt);
  // Exact division, not the 12-bit hardware estimate: results must match the reference.
  template <class T> TENFOLD_HD static T scalar(T x) { return T(1) / std::sqrt(x); }
  template <class B> static B simd(const B& x) { return B(1) / xsimd::sqrt(x); }
  static long double reference(long double x) { return 1 / std::sqrt(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g * y / x * -0.5;
  }
  static constexpr test_spec test{.lo = 0, .hi = 1e6, .ulps = 2}; // two roundings (sqrt, then 1/s): < 2 ulps
  static constexpr bench_spec bench{.flops = 2};
};
struct reciprocal : unary<reciprocal> {
  TENFOLD_OP_NAME(reciprocal);
  template <class T> TENFOLD_HD static T scalar(T x) { return T(1) / x; }
  template <class B> static B simd(const B& x) { return B(1) / x; }
  static long double reference(long double x) { return 1 / x; }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return -g * y * y;
  }
  static constexpr test_spec test{.ulps = 0.5};
  static constexpr bench_spec bench{.flops = 1};
};
struct sin : unary<sin> {
  TENFOLD_OP_NAME(sin);
  template <class T> TENFOLD_HD static T scalar(T x) { return std::sin(x); }
  template <class B> static B simd(const B& x) { return xsimd::sin(x); }
  static long double reference(long double x) { return std::sin(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g * call<cos>(x);
  }
  static constexpr test_spec test{.lo = -100, .hi = 100, .ulps = 2};
  static constexpr bench_spec bench{.flops = 20};
};
struct cos : unary<cos> {
  TENFOLD_OP_NAME(cos);
  template <class T> TENFOLD_HD static T scalar(T x) { return std::cos(x); }
  template <class B> static B simd(const B& x) { return xsimd::cos(x); }
  static long double reference(long double x) { return std::cos(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return -g * call<sin>(x);
  }
  static constexpr test_spec test{.lo = -100, .hi = 100, .ulps = 2};
  static constexpr bench_spec bench{.flops = 20};
};
struct tan : unary<tan> {
  TENFOLD_OP_NAME(tan);
  template <class T> TENFOLD_HD static T scalar(T x) { return std::tan(x); }
  template <class B> static B simd(const B& x) { return xsimd::tan(x); }
  static long double reference(long double x) { return std::tan(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g * (y * y + 1.0);
  }
  static constexpr test_spec test{.lo = -1.5, .hi = 1.5, .ulps = 3};
  static constexpr bench_spec bench{.flops = 25};
};
struct asin : unary<asin> {
  TENFOLD_OP_NAME(asin);
  template <class T> TENFOLD_HD static T scalar(T x) { return std::asin(x); }
  template <class B> static B simd(const B& x) { return xsimd::asin(x); }
  static long double reference(long double x) { return std::asin(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g * call<rsqrt>((1.0 - x) * (x + 1.0));
  }
  static constexpr test_spec test{.lo = -1, .hi = 1, .ulps = 3}; // xsimd's float asin: 2.32 ulps measured
  static constexpr bench_spec bench{.flops = 20};
};
struct acos : unary<acos> {
  TENFOLD_OP_NAME(acos);
  template <class T> TENFOLD_HD static T scalar(T x) { return std::acos(x); }
  template <class B> static B simd(const B& x) { return xsimd::acos(x); }
  static long double reference(long double x) { return std::acos(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return -g * call<rsqrt>((1.0 - x) * (x + 1.0));
  }
  static constexpr test_spec test{.lo = -1, .hi = 1, .ulps = 2};
  static constexpr bench_spec bench{.flops = 20};
};
struct atan : unary<atan> {
  TENFOLD_OP_NAME(atan);
  template <class T> TENFOLD_HD static T scalar(T x) { return std::atan(x); }
  template <class B> static B simd(const B& x) { return xsimd::atan(x); }
  static long double reference(long double x) { return std::atan(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g / (x * x + 1.0);
  }
  static constexpr test_spec test{.lo = -100, .hi = 100, .ulps = 3}; // xsimd's atan: 2.22 ulps measured
  static constexpr bench_spec bench{.flops = 20};
};
struct sinh : unary<sinh> {
  TENFOLD_OP_NAME(sinh);
  template <class T> TENFOLD_HD static T scalar(T x) { return std::sinh(x); }
  template <class B> static B simd(const B& x) { return xsimd::sinh(x); }
  static long double reference(long double x) { return std::sinh(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g * call<cosh>(x);
  }
  static constexpr test_spec test{.lo = -80, .hi = 80, .ulps = 3}; // xsimd's float sinh: 2.03 ulps measured
  static constexpr bench_spec bench{.flops = 25};
};
struct cosh : unary<cosh> {
  TENFOLD_OP_NAME(cosh);
  template <class T> TENFOLD_HD static T scalar(T x) { return std::cosh(x); }
  template <class B> static B simd(const B& x) { return xsimd::cosh(x); }
  static long double reference(long double x) { return std::cosh(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g * call<sinh>(x);
  }
  static constexpr test_spec test{.lo = -80, .hi = 80, .ulps = 2};
  static constexpr bench_spec bench{.flops = 25};
};
struct tanh : unary<tanh> {
  TENFOLD_OP_NAME(tanh);
  template <class T> TENFOLD_HD static T scalar(T x) { return std::tanh(x); }
  template <class B> static B simd(const B& x) { return xsimd::tanh(x); }
  static long double reference(long double x) { return std::tanh(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g * (1.0 - y * y);
  }
  static constexpr test_spec test{.lo = -20, .hi = 20, .ulps = 2};
  static constexpr bench_spec bench{.flops = 25};
};
struct asinh : unary<asinh> {
  TENFOLD_OP_NAME(asinh);
  template <class T> TENFOLD_HD static T scalar(T x) { return std::asinh(x); }
  template <class B> static B simd(const B& x) { return xsimd::asinh(x); }
  static long double reference(long double x) { return std::asinh(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g * call<rsqrt>(x * x + 1.0);
  }
  static constexpr test_spec test{.lo = -1e4, .hi = 1e4, .ulps = 4}; // xsimd's float asinh: 3.57 ulps measured
  static constexpr bench_spec bench{.flops = 25};
};
struct acosh : unary<acosh> {
  TENFOLD_OP_NAME(acosh);
  template <class T> TENFOLD_HD static T scalar(T x) { return std::acosh(x); }
  // xsimd::acosh of x < 1 is not NaN (±inf, 0 or a number for large negatives): those lanes are NaN.
  template <class B> static B simd(const B& x) {
    return xsimd::select(x < B(1), B(std::numeric_limits<typename B::value_type>::quiet_NaN()), xsimd::acosh(x));
  }
  static long double reference(long double x) { return std::acosh(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g * call<rsqrt>((x - 1.0) * (x + 1.0));
  }
  static constexpr test_spec test{.lo = 1, .hi = 1e4, .ulps = 2};
  static constexpr bench_spec bench{.flops = 25};
};
struct atanh : unary<atanh> {
  TENFOLD_OP_NAME(atanh);
  template <class T> TENFOLD_HD static T scalar(T x) { return std::atanh(x); }
  template <class B> static B simd(const B& x) { return xsimd::atanh(x); }
  static long double reference(long double x) { return std::atanh(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g / ((1.0 - x) * (x + 1.0));
  }
  static constexpr test_spec test{.lo = -0.999, .hi = 0.999, .ulps = 2};
  static constexpr bench_spec bench{.flops = 25};
};
struct erf : unary<erf> {
  TENFOLD_OP_NAME(erf);
  template <class T> TENFOLD_HD static T scalar(T x) { return std::erf(x); }
  // Float only: xsimd's double erf is off by up to 68 ulps (near |x| = 2.2 and below 0.65).
  template <sc::float_batch B> static B simd(const B& x) { return xsimd::erf(x); }
  static long double reference(long double x) { return std::erf(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g * 1.12837916709551257390 * call<exp>(-(x * x)); // 2/sqrt(pi) exp(-x^2)
  }
  static constexpr test_spec test{.lo = -5, .hi = 5, .ulps = 3}; // xsimd's float erf: 2.35 ulps measured
  static constexpr bench_spec bench{.flops = 25};
};

struct floor : unary<floor, category::arith> {
  TENFOLD_OP_NAME(floor);
  template <class T> TENFOLD_HD static T scalar(T x) {
    if constexpr (std::is_integral_v<T>) return x;
    else return std::floor(x);
  }
  template <class B> static B simd(const B& x) { return sc::with_sign_of(xsimd::floor(x), x); }
  static long double reference(long double x) { return std::floor(x); }
  static constexpr std::string_view no_derivative = "piecewise constant (its derivative is 0 wherever it exists)";
  static constexpr test_spec test{.lo = -1e3, .hi = 1e3, .ulps = 0};
  static constexpr bench_spec bench{.flops = 1};
};
struct ceil : unary<ceil, category::arith> {
  TENFOLD_OP_NAME(ceil);
  template <class T> TENFOLD_HD static T scalar(T x) {
    if constexpr (std::is_integral_v<T>) return x;
    else return std::ceil(x);
  }
  template <class B> static B simd(const B& x) { return sc::with_sign_of(xsimd::ceil(x), x); }
  static long double reference(long double x) { return std::ceil(x); }
  static constexpr std::string_view no_derivative = "piecewise constant (its derivative is 0 wherever it exists)";
  static constexpr test_spec test{.lo = -1e3, .hi = 1e3, .ulps = 0};
  static constexpr bench_spec bench{.flops = 1};
};
struct round : unary<round, category::arith> {
  TENFOLD_OP_NAME(round);
  // Half to even, as NumPy and PyTorch round.
  template <class T> TENFOLD_HD static T scalar(T x) {
    if constexpr (std::is_integral_v<T>) return x;
    else return std::nearbyint(x);
  }
  template <class B> static B simd(const B& x) { return sc::with_sign_of(xsimd::nearbyint(x), x); }
  static long double reference(long double x) {
    const long double f = std::floor(x), d = x - f;
    const long double r = d != 0.5L ? std::floor(x + 0.5L) : std::fmod(f, 2.0L) == 0 ? f : f + 1;
    return r == 0 ? std::copysign(0.0L, x) : r; // np.round(-0.25) is -0.0
  }
  static constexpr std::string_view no_derivative = "piecewise constant (its derivative is 0 wherever it exists)";
  static constexpr test_spec test{.lo = -1e3, .hi = 1e3, .ulps = 0};
  static constexpr bench_spec bench{.flops = 1};
};
struct trunc : unary<trunc, category::arith> {
  TENFOLD_OP_NAME(trunc);
  template <class T> TENFOLD_HD static T scalar(T x) {
    if constexpr (std::is_integral_v<T>) return x;
    else return std::trunc(x);
  }
  template <class B> static B simd(const B& x) { return sc::with_sign_of(xsimd::trunc(x), x); }
  static long double reference(long double x) { return std::trunc(x); }
  static constexpr std::string_view no_derivative = "piecewise constant (its derivative is 0 wherever it exists)";
  static constexpr test_spec test{.lo = -1e3, .hi = 1e3, .ulps = 0};
  static constexpr bench_spec bench{.flops = 1};
};

struct sigmoid : unary<sigmoid> {
  TENFOLD_OP_NAME(sigmoid);
  // Below (min_exponent - 1) ln 2 (-87.3 in float, -708.4 in double) e^x is under the normal range, so
  // 1 + e^x rounds to 1 and sigmoid(x) is e^x, computed directly: 1 / (1 + e^-x) would overflow e^-x
  // (from -88.7 in float) and give 0 where the result is a subnormal number.
  template <class T> TENFOLD_HD static T scalar(T x) {
    return x < sc::exp_underflow<T>() ? std::exp(x) : T(1) / (T(1) + std::exp(-x));
  }
  template <class B> static B simd(const B& x) {
    using T = typename B::value_type;
    const auto tail = x < B(sc::exp_underflow<T>());
    return sc::redo_lanes(B(1) / (B(1) + exp::simd(-x)), x, tail, [](T v) { return std::exp(v); });
  }
  static long double reference(long double x) { return 1 / (1 + std::exp(-x)); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g * y * (1.0 - y);
  }
  static constexpr test_spec test{.lo = -110, .hi = 100, .ulps = 3};
  static constexpr bench_spec bench{.flops = 22};
};
struct silu : unary<silu> {
  TENFOLD_OP_NAME(silu);
  // x / (1 + e^-x), except below (min_exponent - 1) ln 2, where 1 + e^x rounds to 1 and silu(x) is x e^x,
  // a subnormal number or nearly: x e^(x + 64) e^-64 keeps every intermediate normal (x + 64 is exact
  // there), where x / (1 + e^-x) overflowed e^-x (from -88.7 in float) into -0 and x e^x would multiply
  // the few digits of a subnormal e^x by |x|.
  template <class T> TENFOLD_HD static T tail(T x) { return x * std::exp(x + T(64)) * T(1.60381089054863785e-28); }
  template <class T> TENFOLD_HD static T scalar(T x) {
    return x < sc::exp_underflow<T>() ? tail(x) : x / (T(1) + std::exp(-x));
  }
  template <class B> static B simd(const B& x) {
    using T = typename B::value_type;
    const auto low = x < B(sc::exp_underflow<T>());
    return sc::redo_lanes(x / (B(1) + xsimd::exp(-x)), x, low, [](T v) { return tail(v); });
  }
  static long double reference(long double x) { return x / (1 + std::exp(-x)); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    auto s = call<sigmoid>(x);
    return g * s * (x * (1.0 - s) + 1.0);
  }
  static constexpr test_spec test{.lo = -110, .hi = 90, .ulps = 3};
  static constexpr bench_spec bench{.flops = 23};
};
// gelu(x) = x Φ(x), written with erfc so that the left tail does not cancel to zero. It still loses relative
// precision there: erfc's condition number 2z² amplifies the rounding of z = -x/√2, and xsimd's float erfc
// adds 10 to 70 ulps beyond z = 2. Hence an absolute slack of 1e-7, float's ulp at gelu's unit scale.
struct gelu : unary<gelu> {
  TENFOLD_OP_NAME(gelu);
  template <class T> TENFOLD_HD static T scalar(T x) { return T(0.5) * x * std::erfc(x * T(-0.70710678118654752440)); }
  // Float only: xsimd's double erfc is off by 30 ulps near 0.65 and by 10^4..10^6 ulps beyond 2.2.
  // (abs: xsimd's erfc of a huge argument is -0, which made gelu of a huge negative +0.)
  template <sc::float_batch B> static B simd(const B& x) {
    return B(0.5) * x * xsimd::abs(xsimd::erfc(x * B(-0.70710678118654752440)));
  }
  static long double reference(long double x) { return 0.5L * x * std::erfc(-x / std::sqrt(2.0L)); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    // Phi(x) + x phi(x), phi the standard normal density
    return g * (call<erf>(x * 0.70710678118654752440) * 0.5 + 0.5 + x * 0.39894228040143267794 * call<exp>(x * x * -0.5));
  }
  static constexpr test_spec test{.lo = -12, .hi = 12, .ulps = 4, .abs_tol = 1e-7};
  static constexpr bench_spec bench{.flops = 30};
};
namespace sc {
// gelu_tanh's gate in lanes: e = exp(-2u), u = c (x + a x³), with -2u capped at 80 (e stays finite:
// where the cap holds, below x = -9.7, gelu is -0 and its slope under 1e-33), and s = 1 / (1 + e) =
// (1 + tanh u) / 2. gelu_tanh is x s, its slope s (1 + 2 x u' e s): a pass storing both (a product's
// epilogues together) computes the gate once.
template <class B>
struct gelu_tanh_gate {
  B arg, e, s; // -2u, uncapped; e; s
  TENFOLD_INLINE explicit gelu_tanh_gate(const B& x)
      : arg(B(-1.59576912160573071176) * (x + B(0.044715) * x * x * x)), e(exp::simd(xsimd::min(arg, B(80)))), s(B(1) / (B(1) + e)) {}
};
} // namespace sc
// gelu_tanh's derivative, 0.5 (1 + t) + 0.5 x (1 - t²) u', with t = tanh(u), u = c (x + a x³): one entry so
// that t is computed once. Written as an expression its three reads of t were three tanh per element
// (nothing shares a subexpression inside a nest): the vjp over [768, 512] took 710 us on one thread,
// 7x a pass over memory. Not in the op list (not a user-facing op): only gelu_tanh's vjp builds it.
struct gelu_tanh_slope : unary<gelu_tanh_slope> {
  TENFOLD_OP_NAME(gelu_tanh_slope);
  template <class T> TENFOLD_HD static T scalar(T x) {
    const T c = T(0.79788456080286535588), a = T(0.044715);
    const T t = std::tanh(c * (x + a * x * x * x));
    return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * (c + T(3) * a * c * x * x);
  }
  // In lanes: with e = exp(-2u) and s = (1 + t) / 2 = 1 / (1 + e), 1 - s = e s and the slope is
  // s (1 + 2 x u' e s): the table's exp and a division (xsimd's tanh takes both of its branches, each with
  // a division), and no 1 - s to cancel where s is near 1. (-2u capped at 80: e stays finite, e s near 1,
  // where the slope is below 1e-33.)
  template <class B> static B simd(const B& x) {
    const B c(0.79788456080286535588), a(0.044715);
    const sc::gelu_tanh_gate<B> g(x);
    return g.s * (B(1) + B(2) * x * (c + B(3) * a * c * x * x) * g.e * g.s);
  }
  static long double reference(long double x) {
    const long double c = std::sqrt(2 / 3.14159265358979323846264338327950288L), a = 0.044715L;
    const long double t = std::tanh(c * (x + a * x * x * x));
    return 0.5L * (1 + t) + 0.5L * x * (1 - t * t) * c * (1 + 3 * a * x * x);
  }
  static constexpr std::string_view no_derivative = "gelu_tanh's second derivative is not provided";
  static constexpr test_spec test{.lo = -10, .hi = 10, .ulps = 4, .abs_tol = 1e-6};
  static constexpr bench_spec bench{.flops = 30};
};
// The tanh approximation used by GPT-2 and BERT.
struct gelu_tanh : unary<gelu_tanh> {
  TENFOLD_OP_NAME(gelu_tanh);
  template <class T> TENFOLD_HD static T scalar(T x) {
    return T(0.5) * x * (T(1) + std::tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x)));
  }
  // In lanes as x s, s = 1 / (1 + exp(-2u)) (= (1 + tanh u) / 2): the table's exp and a division, no
  // cancellation in the left tail; s as its slope computes it (sc::gelu_tanh_gate).
  template <class B> static B simd(const B& x) {
    const sc::gelu_tanh_gate<B> g(x);
    return xsimd::select(g.arg < B(80), x * g.s, x * B(0)); // (x * 0: -0 below, NaN at -inf, as x / (1 + inf))
  }
  static long double reference(long double x) {
    return 0.5L * x * (1 + std::tanh(std::sqrt(2 / 3.14159265358979323846264338327950288L) * (x + 0.044715L * x * x * x)));
  }
  // 1 + tanh(.) cancels in the left tail: absolute slack there.
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g * call<gelu_tanh_slope>(x);
  }
  static constexpr test_spec test{.lo = -10, .hi = 10, .ulps = 4, .abs_tol = 1e-6};
  static constexpr bench_spec bench{.flops = 30};
};
struct elu : unary<elu> {
  TENFOLD_OP_NAME(elu);
  template <class T> TENFOLD_HD static T scalar(T x) { return x > T(0) ? x : std::expm1(x); }
  template <class B> static B simd(const B& x) { return xsimd::select(x > B(0), x, expm1::simd(x)); }
  static long double reference(long double x) { return x > 0 ? x : std::expm1(x); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return call<where>(x > 0.0, g, g * (y + 1.0));
  }
  static constexpr test_spec test{.lo = -20, .hi = 20, .ulps = 2};
  static constexpr bench_spec bench{.flops = 25};
};
struct selu : unary<selu> {
  TENFOLD_OP_NAME(selu);
  static constexpr double alpha = 1.6732632423543772848170429916717;
  static constexpr double scale = 1.0507009873554804934193349852946;
  template <class T> TENFOLD_HD static T scalar(T x) { return T(scale) * (x > T(0) ? x : T(alpha) * std::expm1(x)); }
  template <class B> static B simd(const B& x) {
    using T = typename B::value_type;
    return B(T(scale)) * xsimd::select(x > B(0), x, B(T(alpha)) * expm1::simd(x));
  }
  static long double reference(long double x) {
    return 1.0507009873554804934193349852946L * (x > 0 ? x : 1.6732632423543772848170429916717L * std::expm1(x));
  }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return call<where>(x > 0.0, g * scale, g * (y + scale * alpha));
  }
  static constexpr test_spec test{.lo = -20, .hi = 20, .ulps = 3};
  static constexpr bench_spec bench{.flops = 26};
};
struct softplus : unary<softplus> {
  TENFOLD_OP_NAME(softplus);
  // log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|).
  template <class T> TENFOLD_HD static T scalar(T x) {
    return (x > T(0) ? x : T(0)) + std::log1p(std::exp(-std::fabs(x)));
  }
  template <class B> static B simd(const B& x) {
    // exp::simd, not xsimd::exp: the latter flushes e^-|x| to zero where it is subnormal (|x| > 87.3 in float).
    return xsimd::select(x > B(0), x, B(0)) + xsimd::log1p(exp::simd(-xsimd::abs(x)));
  }
  static long double reference(long double x) { return (x > 0 ? x : 0) + std::log1p(std::exp(-std::fabs(x))); }
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    return g * call<sigmoid>(x);
  }
  static constexpr test_spec test{.lo = -110, .hi = 90, .ulps = 3};
  static constexpr bench_spec bench{.flops = 45};
};

struct logical_not : unary<logical_not, category::logical> {
  TENFOLD_OP_NAME(logical_not);
  TENFOLD_HD static bool scalar(bool x) { return !x; }
  template <class B> static auto simd(const B& x) { return !sc::truth(x); }
  static long double reference(long double x) { return x == 0; }
  static constexpr test_spec test{.ulps = 0};
  static constexpr bench_spec bench{.flops = 1};
};
struct isnan : unary<isnan, category::predicate> {
  TENFOLD_OP_NAME(isnan);
  template <class T> TENFOLD_HD static bool scalar(T x) { return x != x; }
  template <class B> static auto simd(const B& x) { return xsimd::isnan(x); }
  static long double reference(long double x) { return std::isnan(x); }
  static constexpr test_spec test{.ulps = 0};
  static constexpr bench_spec bench{.flops = 1};
};
struct isinf : unary<isinf, category::predicate> {
  TENFOLD_OP_NAME(isinf);
  template <class T> TENFOLD_HD static bool scalar(T x) { return std::isinf(x); }
  template <class B> static auto simd(const B& x) { return xsimd::abs(x) == B(std::numeric_limits<typename B::value_type>::infinity()); }
  static long double reference(long double x) { return std::isinf(x); }
  static constexpr test_spec test{.ulps = 0};
  static constexpr bench_spec bench{.flops = 1};
};
} // namespace tenfold::ops
