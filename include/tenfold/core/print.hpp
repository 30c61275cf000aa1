#pragma once
// Printing a Tensor (or TensorMap): `std::cout << t` and tenfold::to_string(t) give what NumPy's
// str() gives for the same array under its default print options:
//  - nested brackets, one row per line, a blank line between blocks of rank 3 and up; rows wrapped at
//    75 columns; every element padded to a common width;
//  - floats with at most 8 fractional digits, each with the fewest digits that read back as the same
//    value ("maxprec"), so [1.  2.5]; scientific notation when a nonzero |x| is < 1e-4 or large (>= 1e8
//    for double, 1e6 for float, 1e3 for f16: NumPy >= 2.2 looks at the type; 1e2 for bf16 by the same
//    rule), or the largest is over 1000 times the smallest (then with a common number of digits:
//    [1.0e-05 1.5e+00]); nan, inf; bf16 and f16 with the digits of their own precision, as NumPy's float16;
//  - integers right-aligned; bool as True / False;
//  - more than 1000 elements: each axis longer than 6 shows its first 3 and last 3 entries around `...`;
//  - a 0-d tensor prints as its scalar (1.0, 1e-05, True).
// cpu/print.hpp adds printing of any expression (evaluated first).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "tenfold/core/dtype.hpp"
#include "tenfold/core/expr.hpp"

namespace tenfold {
namespace detail::print {

inline constexpr index_t threshold = 1000; // more elements than this: long axes are summarised
inline constexpr index_t edge_items = 3;   // entries shown at each end of a summarised axis
inline constexpr std::size_t line_width = 75;
inline constexpr int precision = 8; // fractional digits at most

// A finite value as ±d[0].d[1..] x 10^exp, without trailing zeros (but at least one digit).
struct decimal {
  bool negative = false;
  std::string digits;
  int exp = 0;
};

// From the scientific form "-d.ddde+XX" that printf and to_chars write.
inline decimal parse_scientific(std::string_view s) {
  decimal d;
  std::size_t i = 0;
  if (s[0] == '-') d.negative = true, i = 1;
  for (; s[i] != 'e'; ++i)
    if (s[i] >= '0' && s[i] <= '9') d.digits += s[i]; // (the point is the C locale's: skipped, whatever it is)
  d.exp = int(std::strtol(std::string(s.substr(i + 1)).c_str(), nullptr, 10));
  while (d.digits.size() > 1 && d.digits.back() == '0') d.digits.pop_back();
  return d;
}

// Correctly rounded to `frac` digits after the point (of the exact binary value, ties to even), as
// NumPy's Dragon4 rounds where the shortest form needs more digits than allowed.
inline std::string printf_double(const char* format, int frac, double v) {
  char buf[400];
  std::snprintf(buf, sizeof buf, format, frac, v);
  return buf;
}

// The fewest significant digits that read back as x in x's own type.
template <class T>
decimal shortest(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    char buf[64];
    const auto end = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific).ptr;
    return parse_scientific({buf, std::size_t(end - buf)});
  } else {
    const double v = float(x); // bf16, f16: exact in double
    auto reads_back = [&](const std::string& s) { return T(std::strtod(s.c_str(), nullptr)).bits == x.bits; };
    for (int p = 0;; ++p) {
      const std::string s = printf_double("%.*e", p, v);
      if (reads_back(s)) return parse_scientific(s);
      // At a power of two the values that round to x lie unevenly around it: the nearest p+1 digits can
      // miss while their neighbour on the other side hits (f16's 2^-6 is 0.01563, not 0.01562).
      decimal d = parse_scientific(s);
      d.digits.resize(std::size_t(p) + 1, '0');
      const long long m = std::stoll(d.digits);
      for (const long long n : {m - 1, m + 1}) {
        const std::string t = (d.negative ? "-" : "") + std::to_string(n) + "e" + std::to_string(d.exp - p);
        if (n > 0 && reads_back(t)) {
          decimal r{d.negative, std::to_string(n), d.exp - p + int(std::to_string(n).size()) - 1};
          while (r.digits.size() > 1 && r.digits.back() == '0') r.digits.pop_back();
          return r;
        }
      }
    }
  }
}

inline std::string exponent_string(int e, int width) {
  std::string d = std::to_string(e < 0 ? -e : e);
  if (int(d.size()) < width) d.insert(0, std::size_t(width) - d.size(), '0');
  return (e < 0 ? "-" : "+") + d;
}

template <class T>
double to_double(T x) {
  if constexpr (is_half_v<T>) return float(x);
  else return static_cast<double>(x);
}

// A finite value in positional notation: the integer part (with the sign) and the fraction digits,
// at most `precision` of them.
struct positional {
  std::string integer, fraction;
};
template <class T>
positional positional_of(T x) {
  const decimal d = shortest(x);
  const int n = int(d.digits.size());
  positional p;
  if (n - 1 - d.exp > precision) {
    const std::string s = printf_double("%.*f", precision, to_double(x));
    const std::size_t dot = s.find_first_not_of("-0123456789");
    p.integer = s.substr(0, dot);
    p.fraction = s.substr(dot + 1);
    while (!p.fraction.empty() && p.fraction.back() == '0') p.fraction.pop_back();
    return p;
  }
  if (d.exp >= 0) {
    p.integer = d.digits.substr(0, std::size_t(std::min(n, d.exp + 1)));
    if (d.exp + 1 > n) p.integer.append(std::size_t(d.exp + 1 - n), '0');
    if (n > d.exp + 1) p.fraction = d.digits.substr(std::size_t(d.exp + 1));
  } else {
    p.integer = "0";
    p.fraction = std::string(std::size_t(-d.exp - 1), '0') + d.digits;
  }
  if (d.negative) p.integer.insert(0, "-");
  return p;
}

// A finite value in scientific notation, at most `precision` fraction digits.
struct scientific {
  std::string integer, fraction;
  int exp;
};
template <class T>
scientific scientific_of(T x) {
  decimal d = shortest(x);
  if (int(d.digits.size()) - 1 > precision) d = parse_scientific(printf_double("%.*e", precision, to_double(x)));
  return {(d.negative ? "-" : "") + d.digits.substr(0, 1), d.digits.substr(1), d.exp};
}

inline std::string exponent_string(int e, std::size_t width) {
  std::string d = std::to_string(e < 0 ? -e : e);
  if (d.size() < width) d.insert(0, width - d.size(), '0');
  return (e < 0 ? "-" : "+") + d;
}

inline std::string pad_left(std::string s, std::size_t width) {
  if (s.size() < width) s.insert(0, width - s.size(), ' ');
  return s;
}

// NumPy's FloatingFormat (floatmode "maxprec"): one format for all the values shown.
template <class T>
std::vector<std::string> format_floats(const std::vector<T>& values) {
  using C = compute_t<T>; // comparisons and the ratio in the values' own precision, as NumPy does
  auto finite = [](T x) { return std::isfinite(C(x)); };
  bool any_nonzero = false, any_nonfinite = false, neginf = false;
  C lo = 0, hi = 0;
  for (T x : values) {
    if (!finite(x)) {
      any_nonfinite = true;
      neginf = neginf || C(x) < 0;
      continue;
    }
    const C a = std::fabs(C(x));
    if (a == 0) continue;
    lo = any_nonzero ? std::min(lo, a) : a;
    hi = any_nonzero ? std::max(hi, a) : a;
    any_nonzero = true;
  }
  // NumPy >= 2.2: large values switch at 10^min(8, decimal digits the type holds): 1e8 for double, 1e6
  // for float, 1e3 for f16, 1e2 for bf16.
  constexpr int type_digits = std::numeric_limits<T>::digits10;
  const C cutoff = C(T(type_digits >= 8 ? 1e8 : type_digits == 6 ? 1e6 : type_digits == 3 ? 1e3 : 1e2));
  const bool exp_format = any_nonzero && (hi >= cutoff || lo < C(T(1e-4)) || C(T(hi / lo)) > C(T(1000)));

  std::size_t left = 0, right = 0, exp_size = 0;
  std::vector<scientific> sci;
  std::vector<positional> pos;
  for (T x : values) {
    if (!finite(x)) continue;
    if (exp_format) {
      sci.push_back(scientific_of(x));
      const auto& s = sci.back();
      left = std::max(left, s.integer.size());
      right = std::max(right, s.fraction.size());
      exp_size = std::max({exp_size, std::size_t(2), std::to_string(s.exp < 0 ? -s.exp : s.exp).size()});
    } else {
      pos.push_back(positional_of(x));
      left = std::max(left, pos.back().integer.size());
      right = std::max(right, pos.back().fraction.size());
    }
  }
  const std::size_t precision_digits = right; // scientific: every value gets this many fraction digits
  if (exp_format) right = exp_size + 2 + precision_digits;
  if (any_nonfinite) { // room for nan, inf and -inf in the common width
    const std::size_t widest = neginf ? 4 : 3;
    left = std::max(left, widest - std::min(widest, right + 1));
  }

  std::vector<std::string> out;
  out.reserve(values.size());
  std::size_t k = 0;
  for (T x : values) {
    if (!finite(x)) {
      out.push_back(pad_left(C(x) != C(x) ? "nan" : C(x) < 0 ? "-inf" : "inf", left + right + 1));
    } else if (exp_format) {
      // Every value gets the common number of digits: its own, continued exactly (not with zeros).
      ++k;
      const decimal d = parse_scientific(printf_double("%.*e", int(precision_digits), to_double(x)));
      const std::string digits = d.digits + std::string(precision_digits + 1 - d.digits.size(), '0');
      out.push_back(pad_left((d.negative ? "-" : "") + digits.substr(0, 1), left) + "." + digits.substr(1) + "e" +
                    exponent_string(d.exp, exp_size));
    } else {
      const auto& p = pos[k++];
      out.push_back(pad_left(p.integer, left) + "." + p.fraction + std::string(right - p.fraction.size(), ' '));
    }
  }
  return out;
}

template <class T>
std::vector<std::string> format_elements(const std::vector<T>& values) {
  std::vector<std::string> out;
  if constexpr (std::is_same_v<T, bool>) {
    for (bool b : values) out.push_back(b ? " True" : "False");
  } else if constexpr (std::is_integral_v<T>) {
    std::size_t width = 0;
    for (T x : values) width = std::max(width, std::to_string(x).size());
    for (T x : values) out.push_back(pad_left(std::to_string(x), width));
  } else {
    out = format_floats(values);
  }
  return out;
}

// A 0-d tensor prints as NumPy prints its scalar: the shortest digits, positional for 1e-4 <= |x| < cutoff
// (keeping one fraction digit: 1.0), scientific otherwise (1e-05, 1.5e+16).
template <class T>
std::string scalar_string(T x) {
  if constexpr (std::is_same_v<T, bool>) return x ? "True" : "False";
  else if constexpr (std::is_integral_v<T>) return std::to_string(x);
  else {
    const double v = to_double(x);
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    const long double a = std::fabs(static_cast<long double>(v));
    const decimal d = shortest(x);
    // NumPy 2's cutoff for large values: 1e16 for double, 1e6 for float, 1e3 for f16 (and 1e2 for bf16).
    constexpr int type_digits = std::numeric_limits<T>::digits10;
    constexpr long double cutoff = type_digits >= 15 ? 1e16L : type_digits == 6 ? 1e6L : type_digits == 3 ? 1e3L : 1e2L;
    if (a == 0 || (a >= 1e-4L && a < cutoff)) {
      const int n = int(d.digits.size());
      std::string s = d.negative ? "-" : "";
      if (d.exp < 0) return s + "0." + std::string(std::size_t(-d.exp - 1), '0') + d.digits;
      s += d.digits.substr(0, std::size_t(std::min(n, d.exp + 1)));
      if (d.exp + 1 > n) s.append(std::size_t(d.exp + 1 - n), '0');
      return s + "." + (n > d.exp + 1 ? d.digits.substr(std::size_t(d.exp + 1)) : "0");
    }
    return (d.negative ? "-" : "") + d.digits.substr(0, 1) + (d.digits.size() > 1 ? "." + d.digits.substr(1) : "") +
           "e" + exponent_string(d.exp, 2);
  }
}

// NumPy's _formatArray: brackets, `...` for summarised axes, and rows wrapped at line_width with a
// hanging indent. `words` are the formatted elements shown, in row-major order.
inline std::string layout(const index_t* dims, int rank, bool summarise, const std::vector<std::string>& words) {
  std::size_t next = 0;
  auto extend = [](std::string& s, std::string& line, const std::string& word, std::size_t width,
                   const std::string& prefix) {
    if (line.size() + word.size() > width && line.size() > prefix.size()) { // wrapping a bare prefix would not help
      while (!line.empty() && line.back() == ' ') line.pop_back();
      s += line + "\n";
      line = prefix;
    }
    line += word;
  };
  auto recurse = [&](auto& self, int axis, const std::string& hanging, std::size_t width) -> std::string {
    if (axis == rank) return words[next++];
    const std::string inner = hanging + " "; // the nested level aligns under its "["
    const index_t n = dims[axis];
    const bool summary = summarise && 2 * edge_items < n;
    const index_t lead = summary ? edge_items : 0, trail = summary ? edge_items : n;
    std::string s;
    if (axis == rank - 1) {
      const std::size_t elem_width = width - 1; // room for the closing "]"
      std::string line = hanging;
      for (index_t i = 0; i < lead; ++i)
        extend(s, line, self(self, axis + 1, inner, width - 1), elem_width, hanging), line += ' ';
      if (summary) extend(s, line, "...", elem_width, hanging), line += ' ';
      for (index_t i = trail; i > 1; --i)
        extend(s, line, self(self, axis + 1, inner, width - 1), elem_width, hanging), line += ' ';
      extend(s, line, self(self, axis + 1, inner, width - 1), elem_width, hanging);
      s += line;
    } else {
      const std::string line_sep(std::size_t(rank - axis - 1), '\n');
      for (index_t i = 0; i < lead; ++i) s += hanging + self(self, axis + 1, inner, width - 1) + line_sep;
      if (summary) s += hanging + "..." + line_sep;
      for (index_t i = trail; i > 1; --i) s += hanging + self(self, axis + 1, inner, width - 1) + line_sep;
      s += hanging + self(self, axis + 1, inner, width - 1);
    }
    return "[" + s.substr(hanging.size()) + "]";
  };
  return recurse(recurse, 0, " ", line_width);
}

// Row-major elements `data` of extents dims[0 .. rank).
template <class T>
std::string format(const T* data, const index_t* dims, int rank) {
  if (rank == 0) return scalar_string(data[0]);
  index_t size = 1;
  for (int i = 0; i < rank; ++i) size *= dims[i];
  if (size == 0) return "[]";
  const bool summarise = size > threshold;
  // The entries shown along each axis; the format is chosen from the values shown only, as NumPy does.
  std::vector<std::vector<index_t>> shown(static_cast<std::size_t>(rank));
  for (int a = 0; a < rank; ++a)
    for (index_t i = 0; i < dims[a]; ++i)
      if (!summarise || dims[a] <= 2 * edge_items || i < edge_items || i >= dims[a] - edge_items) shown[a].push_back(i);
  std::vector<T> values;
  std::vector<std::size_t> at(std::size_t(rank), 0);
  for (bool more = true; more;) {
    index_t offset = 0;
    for (int a = 0; a < rank; ++a) offset = offset * dims[a] + shown[a][at[a]];
    values.push_back(data[offset]);
    more = false;
    for (int a = rank - 1; a >= 0 && !more; --a) {
      if (++at[a] < shown[a].size()) more = true;
      else at[a] = 0;
    }
  }
  return layout(dims, rank, summarise, format_elements(values));
}
} // namespace detail::print

// The tensor as NumPy's str() shows it (see the top of this file); a bounded one (upto<N>), its rows up
// to its length.
template <class X>
  requires(detail::is_tensor_v<X>)
std::string to_string(const X& t) {
  using S = typename X::shape_type;
  if constexpr (S::has_bounded) {
    auto dims = X::shape;
    dims[S::bounded_axis] = t.length();
    if constexpr (S::bounded_axis == 0) return detail::print::format(t.data(), dims.data(), X::rank);
    else { // (the active elements, gathered)
      std::vector<std::remove_const_t<typename X::value_type>> active(std::size_t(detail::active_part<S>(S::size, t.length())));
      for (std::size_t a = 0; a < active.size(); ++a) active[a] = t.data()[detail::active_at<S>(index_t(a), t.length())];
      return detail::print::format(active.data(), dims.data(), X::rank);
    }
  } else return detail::print::format(t.data(), X::shape.data(), X::rank);
}
template <class X>
  requires(detail::is_tensor_v<X>)
std::ostream& operator<<(std::ostream& os, const X& t) { return os << to_string(t); }
} // namespace tenfold
