#pragma once
// Bitwise and shift entries of the op table, for integer and bool operands (category::bitwise refuses
// floating ones with a static_assert). They form a list of their own (ops::bitwise_ops), apart from the
// unary and binary lists whose generated tests run every entry on float and double.
#include "tenfold/ops/table_unary.hpp"

namespace tenfold::ops {
namespace sc {
template <class T>
inline constexpr int bit_width = int(sizeof(T)) * 8;
// NumPy's shifts (npy_lshift, npy_rshift): a count outside [0, bits) gives 0, or -1 for a right shift of a
// negative value; C++ leaves those undefined. The left shift is done in the unsigned type, where the bits
// shifted out are simply dropped.
template <class T>
TENFOLD_HD constexpr T shift_left(T a, T b) {
  if (b < T(0) || b >= T(bit_width<T>)) return T(0);
  return T(wrap_unsigned_t<T>(a) << b);
}
template <class T>
TENFOLD_HD constexpr T shift_right(T a, T b) {
  // A count past the width shifts in the sign bit everywhere: as a shift by bits - 1 (arithmetic, since C++20).
  return T(a >> ((b < T(0) || b >= T(bit_width<T>)) ? T(bit_width<T> - 1) : b));
}
template <class B>
auto shift_count_in_range(const B& b) {
  using T = typename B::value_type;
  return b >= B(T(0)) && b < B(T(bit_width<T>));
}
// The references: long double holds every int64 exactly; bools are 0 and 1.
inline long long as_int(long double x) { return static_cast<long long>(x); }
// The low `bits` bits of v as a signed number (two's complement), as a `bits`-wide integer holds it.
inline long double wrap_to(unsigned long long v, int bits) {
  if (bits == 64) return static_cast<long double>(static_cast<long long>(v));
  return static_cast<long double>(static_cast<std::int32_t>(static_cast<std::uint32_t>(v)));
}
} // namespace sc

// and, or, xor and not of the bits; of bools, the logical ones (a bool result stays bool, as in NumPy).
struct bitwise_and : binary<bitwise_and, category::bitwise> {
  TENFOLD_OP_NAME(bitwise_and);
  template <class T> TENFOLD_HD static T scalar(T a, T b) { return T(a & b); }
  template <class B> static B simd(const B& a, const B& b) { return a & b; }
  template <class R> static long double integer_reference(long double a, long double b) { return sc::as_int(a) & sc::as_int(b); }
  static constexpr test_spec test{.lo = -1000, .hi = 1000, .ulps = 0, .integral = true};
  static constexpr bench_spec bench{.flops = 1};
};
struct bitwise_or : binary<bitwise_or, category::bitwise> {
  TENFOLD_OP_NAME(bitwise_or);
  template <class T> TENFOLD_HD static T scalar(T a, T b) { return T(a | b); }
  template <class B> static B simd(const B& a, const B& b) { return a | b; }
  template <class R> static long double integer_reference(long double a, long double b) { return sc::as_int(a) | sc::as_int(b); }
  static constexpr test_spec test{.lo = -1000, .hi = 1000, .ulps = 0, .integral = true};
  static constexpr bench_spec bench{.flops = 1};
};
struct bitwise_xor : binary<bitwise_xor, category::bitwise> {
  TENFOLD_OP_NAME(bitwise_xor);
  template <class T> TENFOLD_HD static T scalar(T a, T b) { return T(a ^ b); }
  template <class B> static B simd(const B& a, const B& b) { return a ^ b; }
  template <class R> static long double integer_reference(long double a, long double b) { return sc::as_int(a) ^ sc::as_int(b); }
  static constexpr test_spec test{.lo = -1000, .hi = 1000, .ulps = 0, .integral = true};
  static constexpr bench_spec bench{.flops = 1};
};
// ~True is False (NumPy's invert of a bool), not ~1 = -2.
struct bitwise_not : unary<bitwise_not, category::bitwise> {
  TENFOLD_OP_NAME(bitwise_not);
  template <class T> TENFOLD_HD static T scalar(T x) {
    if constexpr (std::is_same_v<T, bool>) return !x;
    else return T(~x);
  }
  template <class B> static B simd(const B& x) { return ~x; }
  template <class R> static long double integer_reference(long double x) {
    if constexpr (std::is_same_v<R, bool>) return x == 0;
    else return -sc::as_int(x) - 1; // two's complement: ~x = -x - 1
  }
  static constexpr test_spec test{.lo = -1000, .hi = 1000, .ulps = 0, .integral = true};
  static constexpr bench_spec bench{.flops = 1};
};

// Shifts: bools shift as int32 (NumPy: as int8), so the result of two bools is int32. The count is the
// second operand, in the promoted type; counts outside [0, bits) follow NumPy (sc::shift_left above).
template <class D>
struct shift : binary<D, category::bitwise> {
  template <class... V>
  using result_type = arith_t<typename typing<category::bitwise, V...>::result>;
};
struct left_shift : shift<left_shift> {
  TENFOLD_OP_NAME(left_shift);
  template <class T> TENFOLD_HD static arith_t<T> scalar(T a, T b) { return sc::shift_left<arith_t<T>>(a, b); }
  template <class B> static B simd(const B& a, const B& b) {
    const auto ok = sc::shift_count_in_range(b);
    return xsimd::select(ok, a << xsimd::select(ok, b, B(0)), B(0));
  }
  // a * 2^b, wrapped to the result's width.
  template <class R> static long double integer_reference(long double a, long double b) {
    const int bits = sc::bit_width<R>;
    if (b < 0 || b >= bits) return 0;
    return sc::wrap_to(static_cast<unsigned long long>(sc::as_int(a)) << sc::as_int(b), bits);
  }
  static constexpr test_spec test{.lo = -1000, .hi = 1000, .ulps = 0, .lo2 = -3, .hi2 = 70, .integral = true};
  static constexpr bench_spec bench{.flops = 3};
};
struct right_shift : shift<right_shift> {
  TENFOLD_OP_NAME(right_shift);
  template <class T> TENFOLD_HD static arith_t<T> scalar(T a, T b) { return sc::shift_right<arith_t<T>>(a, b); }
  template <class B> static B simd(const B& a, const B& b) {
    using T = typename B::value_type;
    return a >> xsimd::select(sc::shift_count_in_range(b), b, B(T(sc::bit_width<T> - 1)));
  }
  // floor(a / 2^b): 0 or -1 once every bit is shifted out.
  template <class R> static long double integer_reference(long double a, long double b) {
    if (b < 0 || b >= sc::bit_width<R>) return a < 0 ? -1 : 0;
    return std::floor(a / std::ldexp(1.0L, int(b)));
  }
  static constexpr test_spec test{.lo = -1000, .hi = 1000, .ulps = 0, .lo2 = -3, .hi2 = 70, .integral = true};
  static constexpr bench_spec bench{.flops = 3};
};
} // namespace tenfold::ops
