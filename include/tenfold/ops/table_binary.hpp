#pragma once
// Binary and ternary entries of the op table.
#include "tenfold/ops/table_unary.hpp"

namespace tenfold::ops {

// bool + bool is bool (logical or), as in NumPy and PyTorch (descriptor.hpp, bool_closed_t); a bool with
// any other type promotes to that type.
struct add : binary<add> {
  TENFOLD_OP_NAME(add);
  template <class... V> using result_type = bool_closed_t<V...>;
  template <class T> TENFOLD_HD static T scalar(T a, T b) { return sc::wrapping_add(a, b); } // integers wrap
  template <class B> static B simd(const B& a, const B& b) { return a + b; }
  static long double reference(long double a, long double b) { return a + b; }
  template <int K>
  static auto vjp([[maybe_unused]] const auto& a, [[maybe_unused]] const auto& b, [[maybe_unused]] const auto& y,
                  [[maybe_unused]] const auto& g) {
    if constexpr (K == 0) return g;
    else return g;
  }
  static constexpr test_spec test{.ulps = 0.5};
  static constexpr bench_spec bench{.flops = 1};
};
// bool - bool computes in int32 (-1, 0 or 1): NumPy and PyTorch refuse it; it has no bool meaning.
struct sub : binary<sub> {
  TENFOLD_OP_NAME(sub);
  template <class T> TENFOLD_HD static T scalar(T a, T b) { return sc::wrapping_sub(a, b); }
  template <class B> static B simd(const B& a, const B& b) { return a - b; }
  static long double reference(long double a, long double b) { return a - b; }
  template <int K>
  static auto vjp([[maybe_unused]] const auto& a, [[maybe_unused]] const auto& b, [[maybe_unused]] const auto& y,
                  [[maybe_unused]] const auto& g) {
    if constexpr (K == 0) return g;
    else return -g;
  }
  static constexpr test_spec test{.ulps = 0.5};
  static constexpr bench_spec bench{.flops = 1};
};
// bool * bool is bool (logical and), as in NumPy and PyTorch.
struct mul : binary<mul> {
  TENFOLD_OP_NAME(mul);
  template <class... V> using result_type = bool_closed_t<V...>;
  template <class T> TENFOLD_HD static T scalar(T a, T b) { return sc::wrapping_mul(a, b); }
  template <class B> static B simd(const B& a, const B& b) { return sc::wrapping_mul(a, b); }
  static long double reference(long double a, long double b) { return a * b; }
  template <int K>
  static auto vjp([[maybe_unused]] const auto& a, [[maybe_unused]] const auto& b, [[maybe_unused]] const auto& y,
                  [[maybe_unused]] const auto& g) {
    if constexpr (K == 0) return g * b;
    else return g * a;
  }
  static constexpr test_spec test{.ulps = 0.5};
  static constexpr bench_spec bench{.flops = 1};
};
struct div : binary<div, category::floating> {
  TENFOLD_OP_NAME(div);
  template <class T> TENFOLD_HD static T scalar(T a, T b) { return a / b; }
  template <class B> static B simd(const B& a, const B& b) { return a / b; }
  static long double reference(long double a, long double b) { return a / b; }
  template <int K>
  static auto vjp([[maybe_unused]] const auto& a, [[maybe_unused]] const auto& b, [[maybe_unused]] const auto& y,
                  [[maybe_unused]] const auto& g) {
    if constexpr (K == 0) return g / b;
    else return -g * y / b;
  }
  static constexpr test_spec test{.ulps = 0.5};
  static constexpr bench_spec bench{.flops = 1};
};
struct pow : binary<pow, category::floating> {
  TENFOLD_OP_NAME(pow);
  template <class T> TENFOLD_HD static T scalar(T a, T b) { return std::pow(a, b); }
  // No SIMD form: xsimd::pow, exp(b log a) in working precision, is off by about |b log a| ulps (130
  // measured in double at this domain's edge), flushes subnormal results and gets C's special cases
  // wrong (pow(0, 0), pow(1, NaN), negative bases). Running it in double fixes float's accuracy but,
  // with xsimd 8's double kernels and conversions, is slower than std::pow (15 against 7 ns an element).
  static long double reference(long double a, long double b) { return std::pow(a, b); }
  // d/db = y log(a): defined for a > 0
  template <int K>
  static auto vjp([[maybe_unused]] const auto& a, [[maybe_unused]] const auto& b, [[maybe_unused]] const auto& y,
                  [[maybe_unused]] const auto& g) {
    if constexpr (K == 0) return g * b * call<pow>(a, b - 1.0);
    else return g * y * call<log>(a);
  }
  static constexpr test_spec test{.lo = 0, .hi = 10, .ulps = 4, .lo2 = -10, .hi2 = 10};
  static constexpr bench_spec bench{.flops = 40};
};
// C's fmod: the result has the dividend's sign. Integers stay integers and are computed exactly in their
// own type (NumPy's np.fmod; through float32 they were wrong above 2^24); fmod(x, 0) is NaN for floating
// types and 0 for integers (NumPy's value, which also warns), and fmod(x, -1) is 0 (C's INT_MIN % -1 is
// undefined): never a trap, never undefined.
struct fmod : binary<fmod> {
  TENFOLD_OP_NAME(fmod);
  template <class T> TENFOLD_HD static T scalar(T a, T b) {
    if constexpr (std::is_integral_v<T>) return b == T(0) || b == T(-1) ? T(0) : T(a % b);
    else return std::fmod(a, b);
  }
  // No SIMD form: fmod is exact, and an exact vector form (a - trunc(a/b) b in one fused step) depends on
  // a fused multiply-add that xsimd 8.1 may emulate with two roundings (then off by up to 2^14 ulps, seen
  // in an -O1 build); xsimd::fmod itself is off by up to 10^7 ulps. The scalar std::fmod is exact everywhere.
  static long double reference(long double a, long double b) { return std::fmod(a, b); }
  static long double integer_reference(long double a, long double b) { return b == 0 ? 0 : std::fmod(a, b); }
  // as PyTorch: d/db = -trunc(a / b)
  template <int K>
  static auto vjp([[maybe_unused]] const auto& a, [[maybe_unused]] const auto& b, [[maybe_unused]] const auto& y,
                  [[maybe_unused]] const auto& g) {
    if constexpr (K == 0) return g;
    else return -g * call<trunc>(a / b);
  }
  static constexpr test_spec test{.lo = -100, .hi = 100, .ulps = 0, .lo2 = 0.5, .hi2 = 10};
  static constexpr bench_spec bench{.flops = 4};
};
namespace sc {
// NumPy's floor division and remainder (npy_divmod in npymath): the quotient rounds toward -inf and the
// remainder takes the divisor's sign, as in Python. Integers: x // 0 and x % 0 are 0 (NumPy's values, with
// a warning there), INT_MIN // -1 wraps to INT_MIN, and nothing is undefined (C's INT_MIN / -1 is).
// Floating types: fmod, then the quotient (a - mod) / b snapped to a whole number; x // 0 is a / 0 (±inf
// or NaN) and x % 0 is NaN; a zero result carries the sign NumPy gives it (remainder: the divisor's).
template <class T>
struct divmod_result {
  T quotient, remainder;
};
template <class T>
TENFOLD_HD divmod_result<T> divmod(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == T(0)) return {T(0), T(0)};
    if (b == T(-1)) return {wrapping_neg(a), T(0)};
    const T q = T(a / b), r = T(a % b);
    if (r != T(0) && ((r < T(0)) != (b < T(0)))) return {T(q - T(1)), T(r + b)};
    return {q, r};
  } else {
    T mod = std::fmod(a, b);
    if (b == T(0)) return {a / b, mod};
    T div = (a - mod) / b;
    if (mod != T(0)) {
      if ((b < T(0)) != (mod < T(0))) {
        mod += b;
        div -= T(1);
      }
    } else {
      mod = std::copysign(T(0), b);
    }
    T floordiv;
    if (div != T(0)) {
      floordiv = std::floor(div);
      if (div - floordiv > T(0.5)) floordiv += T(1);
    } else {
      floordiv = std::copysign(T(0), a / b);
    }
    return {floordiv, mod};
  }
}
} // namespace sc

// a // b and a % b as NumPy's floor_divide and remainder (sc::divmod above; Python's // and % on numbers).
// No SIMD form: xsimd 8.1 has no integer division (its batches divide lane by lane in C, undefined for
// x / 0 and INT_MIN / -1), and the floating form needs an exact fmod (see fmod below).
struct floor_divide : binary<floor_divide> {
  TENFOLD_OP_NAME(floor_divide);
  template <class T> TENFOLD_HD static T scalar(T a, T b) { return sc::divmod(a, b).quotient; }
  // Python's a // b, from its definition (the floor of the exact quotient) rather than NumPy's steps: an
  // infinite divisor gives ±0 when the signs agree and -1 when they differ (then a % b is b), inf // x is NaN.
  static long double reference(long double a, long double b) {
    if (b == 0) return a / b;
    if (std::isnan(a) || std::isnan(b) || std::isinf(a)) return NAN;
    if (std::isinf(b) && a != 0 && (a < 0) != (b < 0)) return -1;
    const long double q = std::isinf(b) ? 0 : std::floor(a / b);
    return q == 0 ? std::copysign(0.0L, a / b) : q;
  }
  static long double integer_reference(long double a, long double b) { return b == 0 ? 0 : std::floor(a / b); }
  // NumPy's steps round a - fmod(a, b) and the quotient in T before snapping it to a whole number: exact
  // below 2^(digits - 2), and off by one (2 ulps at most) above, where NumPy's own result is off the same way.
  static constexpr std::string_view no_derivative = "piecewise constant (its derivative is 0 wherever it exists)";
  static constexpr test_spec test{.lo = -100, .hi = 100, .ulps = 2, .lo2 = -10, .hi2 = 10};
  static constexpr bench_spec bench{.flops = 8};
};
struct remainder : binary<remainder> {
  TENFOLD_OP_NAME(remainder);
  template <class T> TENFOLD_HD static T scalar(T a, T b) { return sc::divmod(a, b).remainder; }
  static long double reference(long double a, long double b) {
    if (b == 0 || std::isnan(a) || std::isnan(b) || std::isinf(a)) return NAN;
    const long double r = std::isinf(b) ? a : std::fmod(a, b);
    if (r == 0) return std::copysign(0.0L, b);
    return (r < 0) != (b < 0) ? r + b : r;
  }
  static long double integer_reference(long double a, long double b) {
    if (b == 0) return 0;
    const long double r = std::fmod(a, b);
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
  }
  // a - b floor(a / b): as PyTorch, d/db = -floor(a / b)
  template <int K>
  static auto vjp([[maybe_unused]] const auto& a, [[maybe_unused]] const auto& b, [[maybe_unused]] const auto& y,
                  [[maybe_unused]] const auto& g) {
    if constexpr (K == 0) return g;
    else return -g * call<floor_divide>(a, b);
  }
  static constexpr test_spec test{.lo = -100, .hi = 100, .ulps = 0.5, .lo2 = -10, .hi2 = 10};
  // Derivative checks (grad_ops_test): divisors away from 0, so that a finite difference's steps can stay
  // clear of the jumps, |b| apart.
  static constexpr test_spec grad_test{.lo = -100, .hi = 100, .lo2 = 0.5, .hi2 = 10};
  static constexpr bench_spec bench{.flops = 8};
};
struct atan2 : binary<atan2, category::floating> {
  TENFOLD_OP_NAME(atan2);
  template <class T> TENFOLD_HD static T scalar(T a, T b) { return std::atan2(a, b); }
  // xsimd::atan2 returns NaN where both operands are zero or both infinite; C gives ±0, ±π, ±π/4, ±3π/4.
  template <class B> static B simd(const B& a, const B& b) {
    using T = typename B::value_type;
    const auto redo = (a == B(0) && b == B(0)) || (xsimd::isinf(a) && xsimd::isinf(b));
    return sc::redo_lanes(xsimd::atan2(a, b), a, b, redo, [](T x, T y) { return std::atan2(x, y); });
  }
  static long double reference(long double a, long double b) { return std::atan2(a, b); }
  template <int K>
  static auto vjp([[maybe_unused]] const auto& a, [[maybe_unused]] const auto& b, [[maybe_unused]] const auto& y,
                  [[maybe_unused]] const auto& g) {
    if constexpr (K == 0) return g * b / (a * a + b * b);
    else return -g * a / (a * a + b * b);
  }
  static constexpr test_spec test{.ulps = 3}; // xsimd's atan2: 2.62 ulps measured
  static constexpr bench_spec bench{.flops = 25};
};
// minimum/maximum propagate NaN, as NumPy's do (std::fmin would drop it), and give the second operand when
// the two compare equal (±0), as NumPy's do. The SIMD forms test isnan: xsimd's != is an ordered
// comparison, false for NaN, unlike C++'s. Two bools give bool.
struct minimum : binary<minimum> {
  TENFOLD_OP_NAME(minimum);
  template <class... V> using result_type = bool_closed_t<V...>;
  template <class T> TENFOLD_HD static T scalar(T a, T b) { return (a < b || a != a) ? a : b; }
  template <class B> static B simd(const B& a, const B& b) { return xsimd::select((a < b) || xsimd::isnan(a), a, b); }
  static long double reference(long double a, long double b) { return std::isnan(a) || std::isnan(b) ? NAN : a < b ? a : b; }
  // a tie shares g equally, as PyTorch
  template <int K>
  static auto vjp([[maybe_unused]] const auto& a, [[maybe_unused]] const auto& b, [[maybe_unused]] const auto& y,
                  [[maybe_unused]] const auto& g) {
    if constexpr (K == 0) return call<where>(a < b, g, call<where>(call<eq>(a, b), g * 0.5, 0.0));
    else return call<where>(b < a, g, call<where>(call<eq>(a, b), g * 0.5, 0.0));
  }
  static constexpr test_spec test{.ulps = 0};
  static constexpr bench_spec bench{.flops = 1};
};
struct maximum : binary<maximum> {
  TENFOLD_OP_NAME(maximum);
  template <class... V> using result_type = bool_closed_t<V...>;
  template <class T> TENFOLD_HD static T scalar(T a, T b) { return (a > b || a != a) ? a : b; }
  template <class B> static B simd(const B& a, const B& b) { return xsimd::select((a > b) || xsimd::isnan(a), a, b); }
  static long double reference(long double a, long double b) { return std::isnan(a) || std::isnan(b) ? NAN : a > b ? a : b; }
  // a tie shares g equally, as PyTorch
  template <int K>
  static auto vjp([[maybe_unused]] const auto& a, [[maybe_unused]] const auto& b, [[maybe_unused]] const auto& y,
                  [[maybe_unused]] const auto& g) {
    if constexpr (K == 0) return call<where>(a > b, g, call<where>(call<eq>(a, b), g * 0.5, 0.0));
    else return call<where>(b > a, g, call<where>(call<eq>(a, b), g * 0.5, 0.0));
  }
  static constexpr test_spec test{.ulps = 0};
  static constexpr bench_spec bench{.flops = 1};
};

#define TENFOLD_COMPARISON(n, op)                                                        \
  struct n : binary<n, category::compare> {                                              \
    TENFOLD_OP_NAME(n);                                                                  \
    template <class T> TENFOLD_HD static bool scalar(T a, T b) { return a op b; }        \
    template <class B> static auto simd(const B& a, const B& b) { return a op b; }       \
    static long double reference(long double a, long double b) { return a op b; }        \
    static constexpr test_spec test{.ulps = 0, .integral = true};                        \
    static constexpr bench_spec bench{.flops = 1};                                       \
  }
TENFOLD_COMPARISON(eq, ==);
TENFOLD_COMPARISON(lt, <);
TENFOLD_COMPARISON(le, <=);
TENFOLD_COMPARISON(gt, >);
TENFOLD_COMPARISON(ge, >=);
#undef TENFOLD_COMPARISON
// Not from the macro: xsimd's != is ordered (false when either side is NaN); C++'s is true then.
struct ne : binary<ne, category::compare> {
  TENFOLD_OP_NAME(ne);
  template <class T> TENFOLD_HD static bool scalar(T a, T b) { return a != b; }
  template <class B> static auto simd(const B& a, const B& b) { return !(a == b); }
  static long double reference(long double a, long double b) { return a != b; }
  static constexpr test_spec test{.ulps = 0, .integral = true};
  static constexpr bench_spec bench{.flops = 1};
};

struct logical_and : binary<logical_and, category::logical> {
  TENFOLD_OP_NAME(logical_and);
  TENFOLD_HD static bool scalar(bool a, bool b) { return a && b; }
  // a and b may differ in kind: a comparison's mask beside a memoised node's 0/1 numbers.
  template <class A, class B> static auto simd(const A& a, const B& b) { return sc::truth(a) && sc::truth(b); }
  static long double reference(long double a, long double b) { return a != 0 && b != 0; }
  static constexpr test_spec test{.ulps = 0, .integral = true};
  static constexpr bench_spec bench{.flops = 1};
};
struct logical_or : binary<logical_or, category::logical> {
  TENFOLD_OP_NAME(logical_or);
  TENFOLD_HD static bool scalar(bool a, bool b) { return a || b; }
  template <class A, class B> static auto simd(const A& a, const B& b) { return sc::truth(a) || sc::truth(b); }
  static long double reference(long double a, long double b) { return a != 0 || b != 0; }
  static constexpr test_spec test{.ulps = 0, .integral = true};
  static constexpr bench_spec bench{.flops = 1};
};
struct logical_xor : binary<logical_xor, category::logical> {
  TENFOLD_OP_NAME(logical_xor);
  TENFOLD_HD static bool scalar(bool a, bool b) { return a != b; }
  // (a || b) && !(a && b): xsimd 8.1 gets both != and ^ of masks wrong on some ISAs (SSE2 compares
  // the masks as floats, where all-ones is a NaN; AVX-512's ^ of bit masks): true xor true came out
  // true. Found by the CUDA op test, whose host side is built for SSE2; ops_baseline_test keeps it so.
  template <class A, class B> static auto simd(const A& a, const B& b) {
    const auto x = sc::truth(a), y = sc::truth(b);
    return (x || y) && !(x && y);
  }
  static long double reference(long double a, long double b) { return (a != 0) != (b != 0); }
  static constexpr test_spec test{.ulps = 0, .integral = true};
  static constexpr bench_spec bench{.flops = 1};
};

// where(cond, a, b): cond is read as bool, a and b promote together (numbers among them adopt their type;
// the condition takes no part in it); two bools give bool.
struct where : ternary<where> {
  TENFOLD_OP_NAME(where);
  static constexpr bool typed_operand(int k) { return k > 0; }
  static constexpr bool own_apply = true; // apply, not scalar: c is read as bool, not converted with a and b
  template <class C, class A, class B>
  using result_type = promote_t<A, B>; // a selection: bool values stay bool
  template <class R, class C, class A, class B>
  TENFOLD_HD static compute_t<R> apply(C c, A a, B b) {
    return static_cast<bool>(c) ? static_cast<compute_t<R>>(a) : static_cast<compute_t<R>>(b);
  }
  template <class M, class B> static B simd(const M& c, const B& a, const B& b) {
    return xsimd::select(sc::truth(c), a, b); // c: a mask, or numbers (true where non-zero)
  }
  static long double reference(long double c, long double a, long double b) { return c != 0 ? a : b; }
  // no gradient flows to the condition
  template <int K>
  static auto vjp([[maybe_unused]] const auto& c, [[maybe_unused]] const auto& a, [[maybe_unused]] const auto& b,
                  [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    if constexpr (K == 0) return no_gradient{};
    else if constexpr (K == 1) return call<where>(c, g, 0.0);
    else return call<where>(c, 0.0, g);
  }
  static constexpr test_spec test{.ulps = 0};
  static constexpr bench_spec bench{.flops = 1};
};
// clamp(x, lo, hi) = minimum(maximum(x, lo), hi), as NumPy's clip and PyTorch's clamp: with lo > hi the
// result is hi, and a NaN in x, lo or hi gives NaN.
struct clamp : ternary<clamp> {
  TENFOLD_OP_NAME(clamp);
  template <class... V> using result_type = bool_closed_t<V...>;
  template <class T> TENFOLD_HD static T scalar(T x, T lo, T hi) { return minimum::scalar(maximum::scalar(x, lo), hi); }
  template <class B> static B simd(const B& x, const B& lo, const B& hi) { return minimum::simd(maximum::simd(x, lo), hi); }
  static long double reference(long double x, long double lo, long double hi) {
    if (std::isnan(x) || std::isnan(lo) || std::isnan(hi)) return NAN;
    const long double m = x > lo ? x : lo; // NumPy's maximum and minimum: the second operand when equal (±0)
    return m < hi ? m : hi;
  }
  // y = min(max(x, lo), hi): g goes to the operand y equals (x at a tie, as PyTorch; hi when lo >= hi)
  template <int K>
  static auto vjp([[maybe_unused]] const auto& x, [[maybe_unused]] const auto& lo, [[maybe_unused]] const auto& hi,
                  [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    if constexpr (K == 0) return call<where>(x >= lo && x <= hi, g, 0.0);
    else if constexpr (K == 1) return call<where>(!(x >= lo && x <= hi) && x < lo && lo < hi, g, 0.0);
    else return call<where>(!(x >= lo && x <= hi) && !(x < lo && lo < hi), g, 0.0);
  }
  static constexpr test_spec test{.ulps = 0};
  static constexpr bench_spec bench{.flops = 2};
};
// lerp(a, b, t) = a + t (b - a), exact at t = 0.
struct lerp : ternary<lerp, category::floating> {
  TENFOLD_OP_NAME(lerp);
  template <class T> TENFOLD_HD static T scalar(T a, T b, T t) { return a + t * (b - a); }
  template <class B> static B simd(const B& a, const B& b, const B& t) { return a + t * (b - a); }
  static long double reference(long double a, long double b, long double t) { return a + t * (b - a); }
  template <int K>
  static auto vjp([[maybe_unused]] const auto& a, [[maybe_unused]] const auto& b, [[maybe_unused]] const auto& w,
                  [[maybe_unused]] const auto& y, [[maybe_unused]] const auto& g) {
    if constexpr (K == 0) return g * (1.0 - w);
    else if constexpr (K == 1) return g * w;
    else return g * (b - a);
  }
  static constexpr test_spec test{.lo = -10, .hi = 10, .ulps = 2, .lo2 = 0, .hi2 = 1, .specials = false, .abs_tol = 1e-5};
  static constexpr bench_spec bench{.flops = 3};
};
} // namespace tenfold::ops
