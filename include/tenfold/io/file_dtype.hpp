#pragma once
// The element types safetensors and .npy files hold, their names in each format, and which tenfold
// element types each one converts to exactly.
//
// A file's elements convert to T only when every value of the file's type is exactly a value of T, the
// rule of read_idx too: the same type; an integer to a wider integer, or to a floating type with enough
// digits (uint8 -> bf16, int16 -> float, int32 -> double); f16 -> f16, float, double; bf16 -> bf16,
// float, double; float32 -> float, double; bool -> bool only. Anything else is an error naming both
// types: a lossy read should be an explicit cast by the caller, not a silent rounding here.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../core/dtype.hpp"

namespace tenfold::io::detail {

enum class file_dtype { boolean, u8, i8, i16, u16, i32, u32, i64, u64, f16, bf16, f32, f64 };

struct file_dtype_info {
  file_dtype dtype;
  std::string_view safetensors; // "F32"
  std::string_view numpy;       // "f4" (without the byte order); empty: NumPy has no such type
  std::size_t bytes;
};

inline constexpr file_dtype_info file_dtypes[] = {
    {file_dtype::boolean, "BOOL", "b1", 1}, {file_dtype::u8, "U8", "u1", 1},   {file_dtype::i8, "I8", "i1", 1},
    {file_dtype::i16, "I16", "i2", 2},      {file_dtype::u16, "U16", "u2", 2}, {file_dtype::i32, "I32", "i4", 4},
    {file_dtype::u32, "U32", "u4", 4},      {file_dtype::i64, "I64", "i8", 8}, {file_dtype::u64, "U64", "u8", 8},
    {file_dtype::f16, "F16", "f2", 2},      {file_dtype::bf16, "BF16", "", 2}, {file_dtype::f32, "F32", "f4", 4},
    {file_dtype::f64, "F64", "f8", 8}};

constexpr const file_dtype_info& info(file_dtype d) { return file_dtypes[static_cast<std::size_t>(d)]; }

inline std::optional<file_dtype> safetensors_dtype(std::string_view name) {
  for (const auto& d : file_dtypes)
    if (d.safetensors == name) return d.dtype;
  return std::nullopt;
}
inline std::optional<file_dtype> numpy_dtype(std::string_view kind_and_size) {
  for (const auto& d : file_dtypes)
    if (!d.numpy.empty() && d.numpy == kind_and_size) return d.dtype;
  return std::nullopt;
}

// The file type that stores a tenfold element type as it is in memory.
template <class T>
constexpr file_dtype file_dtype_of() {
  static_assert(is_supported_element_v<T>, "tenfold::io: not a tenfold element type");
  if constexpr (std::is_same_v<T, float>) return file_dtype::f32;
  else if constexpr (std::is_same_v<T, double>) return file_dtype::f64;
  else if constexpr (std::is_same_v<T, std::int32_t>) return file_dtype::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return file_dtype::i64;
  else if constexpr (std::is_same_v<T, bool>) return file_dtype::boolean;
  else if constexpr (std::is_same_v<T, bf16>) return file_dtype::bf16;
  else return file_dtype::f16;
}

// The C++ type of a file type's elements (bool is read as a byte and checked to be 0 or 1).
template <file_dtype D>
using file_element_t =
    std::tuple_element_t<static_cast<std::size_t>(D),
                         std::tuple<std::uint8_t, std::uint8_t, std::int8_t, std::int16_t, std::uint16_t, std::int32_t,
                                    std::uint32_t, std::int64_t, std::uint64_t, f16, bf16, float, double>>;

// Whether every value of file type D is exactly a value of T.
template <file_dtype D, class T>
consteval bool converts_exactly() {
  using From = file_element_t<D>;
  if constexpr (D == file_dtype::boolean || std::is_same_v<T, bool>)
    return D == file_dtype::boolean && std::is_same_v<T, bool>;
  else {
    using F = std::numeric_limits<From>;
    using To = std::numeric_limits<T>;
    if constexpr (std::is_same_v<From, T>) return true;
    else if constexpr (F::is_integer && To::is_integer)
      return std::intmax_t(To::min()) <= std::intmax_t(F::min()) &&
             std::uintmax_t(To::max()) >= std::uintmax_t(F::max());
    else if constexpr (F::is_integer) return F::digits <= To::digits;
    else
      return !To::is_integer && F::digits <= To::digits && F::max_exponent <= To::max_exponent &&
             F::min_exponent >= To::min_exponent;
  }
}

// f(std::integral_constant<file_dtype, d>{}) for the runtime value d: one instantiation per file type.
template <class F, std::size_t... I>
auto visit_file_dtype(file_dtype d, F&& f, std::index_sequence<I...>) {
  decltype(f(std::integral_constant<file_dtype, file_dtype::boolean>{})) result{};
  (void)((static_cast<std::size_t>(d) == I &&
          (result = f(std::integral_constant<file_dtype, file_dtype(I)>{}), true)) ||
         ...);
  return result;
}
template <class F>
auto visit_file_dtype(file_dtype d, F&& f) {
  return visit_file_dtype(d, f, std::make_index_sequence<std::size(file_dtypes)>{});
}

template <class T>
bool converts_exactly(file_dtype d) {
  return visit_file_dtype(d, [](auto c) { return converts_exactly<decltype(c)::value, T>(); });
}

inline constexpr std::size_t no_bad_element = std::size_t(-1);

// Converts n little-endian elements of file type d at src (any alignment) into dst. Only for a pair
// where converts_exactly<T>(d). Returns the index of the first BOOL byte that is neither 0 nor 1 (a
// bool holding 2 is undefined behaviour in C++), or no_bad_element.
template <class T>
std::size_t decode_elements(file_dtype d, const std::byte* src, T* dst, std::size_t n) {
  return visit_file_dtype(d, [&](auto c) -> std::size_t {
    constexpr file_dtype D = decltype(c)::value;
    if constexpr (D == file_dtype::boolean && std::is_same_v<T, bool>) {
      for (std::size_t i = 0; i < n; ++i) {
        const auto b = std::to_integer<unsigned>(src[i]);
        if (b > 1) return i;
        dst[i] = b != 0;
      }
    } else if constexpr (std::is_same_v<file_element_t<D>, T>) {
      if (n > 0) std::memcpy(dst, src, n * sizeof(T));
    } else if constexpr (converts_exactly<D, T>()) {
      using From = file_element_t<D>;
      for (std::size_t i = 0; i < n; ++i) {
        From v;
        std::memcpy(&v, src + i * sizeof(From), sizeof(From));
        dst[i] = tenfold::convert<T>(v);
      }
    }
    return no_bad_element;
  });
}

} // namespace tenfold::io::detail
