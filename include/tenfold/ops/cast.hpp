#pragma once
// tenfold::cast<T>(x): x's elements converted to T, elementwise. It is the one explicit conversion: an
// assignment converts implicitly only where nothing can be lost (widens_v in core/dtype.hpp).
//
// Every input has a defined result (no conversion here is undefined behaviour):
//  - to bool: x != 0; NaN is true (as in C++ and NumPy). From bool: 0 or 1.
//  - floating -> integer: truncation toward zero, as C++'s static_cast; NaN -> 0; values beyond the
//    integer's range, ±inf included, saturate to its lowest / highest value. (NumPy leaves these
//    undefined; C++ makes them undefined behaviour.)
//  - integer -> narrower integer: saturates (int64 -> int32 clamps to [-2^31, 2^31 - 1]; C++ and
//    NumPy would wrap).
//  - -> floating: rounded to nearest, ties to even; beyond the target's range -> ±inf (IEEE); NaN
//    stays NaN. A cast to bf16 or f16 inside an expression rounds there, although the value then
//    travels in float like every half value does.
#include <xsimd/xsimd.hpp>

#include "tenfold/core/expr.hpp"
#include "tenfold/ops/descriptor.hpp"

namespace tenfold {
namespace ops {

namespace detail {
template <class T>
inline constexpr std::string_view cast_name = "cast";
template <>
inline constexpr std::string_view cast_name<float> = "cast<float32>";
template <>
inline constexpr std::string_view cast_name<double> = "cast<float64>";
template <>
inline constexpr std::string_view cast_name<std::int32_t> = "cast<int32>";
template <>
inline constexpr std::string_view cast_name<std::int64_t> = "cast<int64>";
template <>
inline constexpr std::string_view cast_name<bool> = "cast<bool>";
template <>
inline constexpr std::string_view cast_name<bf16> = "cast<bfloat16>";
template <>
inline constexpr std::string_view cast_name<f16> = "cast<float16>";
} // namespace detail

// The op descriptor (the shape of ops/descriptor.hpp's entries; not in the table: it has no test or
// bench spec of its own, and its result type is a parameter rather than a category).
template <class To>
struct cast {
  static_assert(is_supported_element_v<To>, "tenfold::cast<T>: T must be float, double, int32_t, int64_t, bool, "
                                            "tenfold::bf16 or tenfold::f16");
  static constexpr ops::kind op_kind = kind::unary;
  // A cast to bool is computed in its operand's lanes, as the predicates (isnan) are.
  static constexpr ops::category op_category = category::predicate;
  static constexpr int arity = 1;
  static constexpr std::string_view name = detail::cast_name<To>;
  template <class V>
  using result_type = To;
  template <class V>
  using operating_type = compute_t<V>;

  // x arrives in its compute type (float for a half).
  template <class From>
  TENFOLD_HD static constexpr To scalar(From x) {
    if constexpr (std::is_same_v<To, bool>) return x != From(0);
    else if constexpr (std::is_same_v<From, bool>) return To(x ? 1 : 0);
    else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
      // -lowest is 2^31 or 2^63, exact in float and double alike (max is not).
      constexpr From top = -From(std::numeric_limits<To>::lowest());
      if (x != x) return To(0);
      if (x >= top) return std::numeric_limits<To>::max();
      if (x < -top) return std::numeric_limits<To>::lowest();
      return static_cast<To>(x);
    } else if constexpr (std::is_integral_v<To> && sizeof(To) < sizeof(From)) {
      if (x > From(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
      if (x < From(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
      return static_cast<To>(x);
    } else if constexpr (is_half_v<To>) return To(x); // the half's own rounding (core/dtype.hpp)
    else return static_cast<To>(x);
  }

  template <class R, class A>
  TENFOLD_HD static compute_t<R> apply(A a) {
    return static_cast<compute_t<R>>(scalar(a));
  }

  // Vectorised where the operand computes in the result's lanes (the evaluator asks only then):
  // a half read as float, float rounded to bf16, and any cast to bool.
  template <class B>
    requires(!std::is_same_v<To, f16>)
  static auto simd(const B& x) {
    if constexpr (std::is_same_v<To, bool>) return !(x == B(0)); // not x != 0: that is false for NaN
    else if constexpr (std::is_same_v<To, bf16>) {
      // bf16 is binary32's top half: round the low half away, ties to even; a NaN stays a quiet NaN.
      using U = xsimd::batch<std::uint32_t, typename B::arch_type>;
      const U u = xsimd::bitwise_cast<U>(x);
      const U rounded = (u + U(0x7fffu) + ((u >> 16) & U(1u))) & U(0xffff0000u);
      const U quiet = (u | U(0x00400000u)) & U(0xffff0000u);
      return xsimd::select(xsimd::isnan(x), xsimd::bitwise_cast<B>(quiet), xsimd::bitwise_cast<B>(rounded));
    } else return x; // float from a half: exact
  }
};
} // namespace ops

// cast<T>(x): the elements of x converted to T (rules above). A cast to x's own type is x itself.
template <class T, expression X>
auto cast(X&& x) {
  static_assert(is_supported_element_v<T>, "tenfold::cast<T>: T must be float, double, int32_t, int64_t, bool, "
                                           "tenfold::bf16 or tenfold::f16");
  using N = detail::node_t<X>;
  if constexpr (std::is_same_v<typename N::value_type, T>) return detail::as_node(std::forward<X>(x));
  else return detail::map_node<ops::cast<T>, N>{{}, {detail::as_node(std::forward<X>(x))}};
}
} // namespace tenfold
