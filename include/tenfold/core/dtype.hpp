#pragma once
// Element types: the two 16-bit floats, their limits, and the traits that name, classify and promote
// every element type tenfold stores.
#include "tenfold/core/config.hpp"

#include <concepts>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

namespace tenfold {

namespace detail {

// std::bit_cast is a host-only constexpr function to nvcc (it warns without --expt-relaxed-constexpr);
// the builtin behind it works on both sides with every compiler we target.
template <class To, class From>
TENFOLD_HD constexpr To bit_cast(const From& from) noexcept {
  static_assert(sizeof(To) == sizeof(From));
  return __builtin_bit_cast(To, from);
}

// Rounds an IEEE binary32/binary64 (raw bits) to a 16-bit format with DstMant fraction bits and
// DstExp exponent bits, ties to even. One routine serves f16 and double->bf16, so there is a single
// place where subnormals, overflow and NaN are right.
template <int DstMant, int DstExp, class Bits>
TENFOLD_HD constexpr std::uint16_t round_to_16(Bits u) noexcept {
  constexpr int src_mant = sizeof(Bits) == 8 ? 52 : 23;
  constexpr int src_exp_max = sizeof(Bits) == 8 ? 0x7ff : 0xff;
  constexpr int src_bias = src_exp_max >> 1;
  constexpr int dst_exp_max = (1 << DstExp) - 1;
  constexpr int dst_bias = dst_exp_max >> 1;
  constexpr unsigned inf = unsigned(dst_exp_max) << DstMant;
  const unsigned sign = unsigned(u >> (sizeof(Bits) * 8 - 1)) << (DstMant + DstExp);
  const int exp = int(u >> src_mant) & src_exp_max;
  Bits sig = u & ((Bits(1) << src_mant) - 1);
  if (exp == src_exp_max) {
    // NaN keeps its sign and top payload bits and is made quiet, so it can never turn into inf.
    const unsigned nan = sig ? (1u << (DstMant - 1)) | unsigned(sig >> (src_mant - DstMant)) : 0u;
    return std::uint16_t(sign | inf | nan);
  }
  if (exp != 0) sig |= Bits(1) << src_mant;
  const int e = (exp ? exp : 1) - src_bias + dst_bias; // biased exponent in the target format
  if (e >= dst_exp_max) return std::uint16_t(sign | inf);
  // Below the normal range the target's fraction loses one bit per exponent step.
  const int shift = src_mant - DstMant + (e < 1 ? 1 - e : 0);
  if (shift > src_mant + 1) return std::uint16_t(sign); // under half the smallest subnormal
  Bits q = sig >> shift;
  const Bits rem = sig & ((Bits(1) << shift) - 1), half = Bits(1) << (shift - 1);
  q += (rem > half || (rem == half && (q & 1))) ? 1 : 0;
  // q carries the implicit bit into the exponent field; a carry out of the largest finite value
  // lands exactly on inf's bit pattern.
  return std::uint16_t(sign | ((e < 1 ? 0u : unsigned(e - 1) << DstMant) + unsigned(q)));
}

} // namespace detail

// Brain float: binary32's exponent range with 8 significant bits.
struct bf16 {
  std::uint16_t bits;

  bf16() = default;
  TENFOLD_HD constexpr bf16(float f) noexcept : bits(from_float(f)) {}
  // Rounded once, directly from the double: going through float could round twice.
  TENFOLD_HD constexpr bf16(double d) noexcept
      : bits(detail::round_to_16<7, 8>(detail::bit_cast<std::uint64_t>(d))) {}
  // Via double, exact for |i| <= 2^53, so only one rounding happens (beyond that, two can).
  template <std::integral I>
  TENFOLD_HD constexpr bf16(I i) noexcept : bf16(static_cast<double>(i)) {}

  TENFOLD_HD static constexpr bf16 from_bits(std::uint16_t b) noexcept {
    bf16 r{};
    r.bits = b;
    return r;
  }
  TENFOLD_HD constexpr operator float() const noexcept {
    return detail::bit_cast<float>(std::uint32_t(bits) << 16);
  }

private:
  // The hot path (every bf16 store) skips the general routine: bf16 is the top half of a binary32.
  TENFOLD_HD static constexpr std::uint16_t from_float(float f) noexcept {
    std::uint32_t u = detail::bit_cast<std::uint32_t>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x0040u); // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u); // ties to even; a carry into the exponent is the right answer
    return std::uint16_t(u >> 16);
  }
};

// IEEE binary16.
struct f16 {
  std::uint16_t bits;

  f16() = default;
  TENFOLD_HD constexpr f16(float f) noexcept
      : bits(detail::round_to_16<10, 5>(detail::bit_cast<std::uint32_t>(f))) {}
  TENFOLD_HD constexpr f16(double d) noexcept
      : bits(detail::round_to_16<10, 5>(detail::bit_cast<std::uint64_t>(d))) {}
  template <std::integral I>
  TENFOLD_HD constexpr f16(I i) noexcept : f16(static_cast<double>(i)) {}

  TENFOLD_HD static constexpr f16 from_bits(std::uint16_t b) noexcept {
    f16 r{};
    r.bits = b;
    return r;
  }
  TENFOLD_HD constexpr operator float() const noexcept {
    const std::uint32_t sign = std::uint32_t(bits & 0x8000u) << 16;
    const std::uint32_t exp = (bits >> 10) & 0x1fu, mant = bits & 0x3ffu;
    if (exp == 0x1f) return detail::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) { // subnormal: mant * 2^-24 is exact in float
      const float mag = float(mant) * 0x1p-24f;
      return sign ? -mag : mag;
    }
    return detail::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  }
};

static_assert(sizeof(bf16) == 2 && std::is_trivially_copyable_v<bf16> && std::is_standard_layout_v<bf16>);
static_assert(sizeof(f16) == 2 && std::is_trivially_copyable_v<f16> && std::is_standard_layout_v<f16>);

template <class T>
inline constexpr bool is_half_v = std::is_same_v<std::remove_cv_t<T>, bf16> ||
                                  std::is_same_v<std::remove_cv_t<T>, f16>;

template <class T>
concept half_float = is_half_v<T>;

template <class T>
concept element = std::is_arithmetic_v<T> || is_half_v<T>;

// Arithmetic on a half type is done in float: it is what the hardware does and, as float's 24 bits are
// at least 2p+2 for both formats (p = 8, 11), rounding the float result again is still correctly rounded.
template <class T>
using compute_t = std::conditional_t<is_half_v<T>, float, T>;

// Same-type operators only; a half mixed with any other type goes through operator float and the
// built-in operators, so bf16 + float is float and bf16 + double is double, never ambiguous.
template <half_float H> TENFOLD_HD constexpr H operator+(H a, H b) noexcept { return H(float(a) + float(b)); }
template <half_float H> TENFOLD_HD constexpr H operator-(H a, H b) noexcept { return H(float(a) - float(b)); }
template <half_float H> TENFOLD_HD constexpr H operator*(H a, H b) noexcept { return H(float(a) * float(b)); }
template <half_float H> TENFOLD_HD constexpr H operator/(H a, H b) noexcept { return H(float(a) / float(b)); }
// Flipping the sign bit is exact and keeps NaN a NaN, which a round trip through float also would, slower.
template <half_float H> TENFOLD_HD constexpr H operator-(H a) noexcept { return H::from_bits(a.bits ^ 0x8000u); }

template <half_float H, element R> TENFOLD_HD constexpr H& operator+=(H& a, R b) noexcept { return a = H(a + b); }
template <half_float H, element R> TENFOLD_HD constexpr H& operator-=(H& a, R b) noexcept { return a = H(a - b); }
template <half_float H, element R> TENFOLD_HD constexpr H& operator*=(H& a, R b) noexcept { return a = H(a * b); }
template <half_float H, element R> TENFOLD_HD constexpr H& operator/=(H& a, R b) noexcept { return a = H(a / b); }

// Compared as float, not as bits: +0 == -0 and NaN is unordered.
template <half_float H> TENFOLD_HD constexpr bool operator==(H a, H b) noexcept { return float(a) == float(b); }
template <half_float H> TENFOLD_HD constexpr bool operator!=(H a, H b) noexcept { return float(a) != float(b); }
template <half_float H> TENFOLD_HD constexpr bool operator<(H a, H b) noexcept { return float(a) < float(b); }
template <half_float H> TENFOLD_HD constexpr bool operator<=(H a, H b) noexcept { return float(a) <= float(b); }
template <half_float H> TENFOLD_HD constexpr bool operator>(H a, H b) noexcept { return float(a) > float(b); }
template <half_float H> TENFOLD_HD constexpr bool operator>=(H a, H b) noexcept { return float(a) >= float(b); }

template <class T>
inline constexpr bool is_supported_element_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
    std::is_same_v<T, std::int64_t> || std::is_same_v<T, bool> || std::is_same_v<T, bf16> ||
    std::is_same_v<T, f16>;

template <class T>
inline constexpr bool is_floating_v = std::is_floating_point_v<T> || is_half_v<T>;

template <class T>
constexpr std::string_view dtype_name() {
  static_assert(is_supported_element_v<T>,
                "dtype_name: not a tenfold element type (float, double, int32, int64, bool, bf16, f16)");
  if constexpr (std::is_same_v<T, float>) return "float32";
  else if constexpr (std::is_same_v<T, double>) return "float64";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
  else if constexpr (std::is_same_v<T, bool>) return "bool";
  else if constexpr (std::is_same_v<T, bf16>) return "bfloat16";
  else return "float16";
}

namespace detail {
template <class A, class B>
constexpr auto promote() {
  static_assert(is_supported_element_v<A> && is_supported_element_v<B>,
                "promote_t: not a tenfold element type (float, double, int32, int64, bool, bf16, f16)");
  // An integer never widens a half: a bf16 tensor scaled by 2 stays bf16.
  if constexpr (std::is_same_v<A, B>) return std::type_identity<A>{};
  else if constexpr (is_half_v<A> && std::is_integral_v<B>) return std::type_identity<A>{};
  else if constexpr (is_half_v<B> && std::is_integral_v<A>) return std::type_identity<B>{};
  // What is left follows C++ (bool < int32 < int64 < float < double) once halves count as float;
  // bf16 + f16 is float because neither holds the other.
  else return std::type_identity<std::common_type_t<compute_t<A>, compute_t<B>>>{};
}
} // namespace detail

template <class A, class B>
using promote_t = typename decltype(detail::promote<A, B>())::type;

// The conversions an assignment makes implicitly: those whose destination holds every value of the
// source's kind. bool -> anything; an integer -> a wider (or the same) integer, float or double; a half
// -> float or double; float -> double. (int -> float rounds above 2^24, as NumPy's 'same_kind' allows;
// an integer -> a half is refused: f16 cannot even hold int32's range.) Everything else narrows, and
// needs tenfold::cast<T>(...), whose rounding and saturation are defined in ops/cast.hpp.
template <class To, class From>
inline constexpr bool widens_v = [] {
  if constexpr (std::is_same_v<To, From> || std::is_same_v<From, bool>) return true;
  else if constexpr (std::is_integral_v<From>)
    return std::is_floating_point_v<To> ||
           (std::is_integral_v<To> && !std::is_same_v<To, bool> && sizeof(To) >= sizeof(From));
  else if constexpr (is_half_v<From>) return std::is_floating_point_v<To>;
  else return std::is_same_v<From, float> && std::is_same_v<To, double>;
}();

namespace detail {
// Instantiated by every assignment (tenfold::eval, Tensor's and TensorMap's operator=): the compiler's
// note names the two element types.
template <class To, class From>
struct check_assignment {
  static_assert(widens_v<To, From>,
                "tenfold: assigning this expression would narrow its element type (to an integer from a floating "
                "type, to a narrower type, or between bf16 and f16): convert explicitly with tenfold::cast<T>(expr)");
  static constexpr bool ok = true;
};
} // namespace detail

// Value conversion between element types. NaN converts to bool true, as in C++; a half to an integer
// behaves like float to that integer (out of range is undefined).
template <element To, element From>
TENFOLD_HD constexpr To convert(From x) noexcept {
  if constexpr (std::is_same_v<To, From>) return x;
  else if constexpr (std::is_same_v<To, bool>) return x != From(0);
  else if constexpr (is_half_v<From> && is_half_v<To>) return To(float(x));
  else if constexpr (is_half_v<From>) return static_cast<To>(float(x));
  else if constexpr (is_half_v<To>) return To(x);
  else return static_cast<To>(x);
}

namespace detail {
// Both formats share everything but their parameters; std::numeric_limits below just inherits.
template <class H, int Digits, int MinExp, int MaxExp, int Digits10, int MaxDigits10, int MinExp10,
          int MaxExp10, bool Iec559>
struct half_limits {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr std::float_denorm_style has_denorm = std::denorm_present;
  static constexpr bool has_denorm_loss = false;
  static constexpr std::float_round_style round_style = std::round_to_nearest;
  static constexpr bool is_iec559 = Iec559;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int digits = Digits;
  static constexpr int digits10 = Digits10;
  static constexpr int max_digits10 = MaxDigits10;
  static constexpr int radix = 2;
  static constexpr int min_exponent = MinExp;
  static constexpr int min_exponent10 = MinExp10;
  static constexpr int max_exponent = MaxExp;
  static constexpr int max_exponent10 = MaxExp10;
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;

  TENFOLD_HD static constexpr H min() noexcept { return H::from_bits(std::uint16_t(1u << frac)); }
  TENFOLD_HD static constexpr H max() noexcept { return H::from_bits(std::uint16_t(inf_bits - 1)); }
  TENFOLD_HD static constexpr H lowest() noexcept { return H::from_bits(std::uint16_t(0x8000u | (inf_bits - 1))); }
  TENFOLD_HD static constexpr H epsilon() noexcept { return H::from_bits(std::uint16_t((MaxExp - 1 - frac) << frac)); }
  TENFOLD_HD static constexpr H round_error() noexcept { return H::from_bits(std::uint16_t((MaxExp - 2) << frac)); }
  TENFOLD_HD static constexpr H infinity() noexcept { return H::from_bits(inf_bits); }
  TENFOLD_HD static constexpr H quiet_NaN() noexcept { return H::from_bits(std::uint16_t(inf_bits | (1u << (frac - 1)))); }
  TENFOLD_HD static constexpr H signaling_NaN() noexcept { return H::from_bits(std::uint16_t(inf_bits | (1u << (frac - 2)))); }
  TENFOLD_HD static constexpr H denorm_min() noexcept { return H::from_bits(1); }

private:
  // Everything above follows from the format: fraction bits = Digits - 1, exponent bias = MaxExp - 1.
  static constexpr int frac = Digits - 1;
  static constexpr std::uint16_t inf_bits = std::uint16_t(((MaxExp - 1) * 2 + 1) << frac);
};
} // namespace detail

} // namespace tenfold

namespace std {

template <>
struct numeric_limits<tenfold::bf16>
    : tenfold::detail::half_limits<tenfold::bf16, 8, -125, 128, 2, 4, -37, 38, false> {};
template <>
struct numeric_limits<tenfold::f16>
    : tenfold::detail::half_limits<tenfold::f16, 11, -13, 16, 3, 5, -4, 4, true> {};

} // namespace std
