#pragma once
// Shared machinery of the table-driven op tests (ops_*_test.cpp): distances in ulps, inputs drawn from an
// entry's test_spec, a reporter that names the op, the layout, the inputs and both results when a check
// fails, and the elementwise cases themselves (one per operand layout), so that each test file only picks
// which of them it instantiates (the reduction cases are in reduce_test_support.hpp). The cases are heavy to
// compile (every layout and size is a new static shape, so a new evaluator instantiation); the files split
// them to stay near a minute each. Nothing here knows any particular op except `where`'s condition.
//
// Set TENFOLD_TEST_VERBOSE=1 to print every case's worst error, not just the failing ones.
#include <catch2/catch.hpp>
#include <tenfold/tenfold.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace tenfold::test {

// ---- element types ---------------------------------------------------------------------------------
template <class T>
long double to_ld(T v) {
  if constexpr (is_half_v<T>) return static_cast<long double>(float(v));
  else return static_cast<long double>(v);
}
template <class T>
T from_ld(long double v) {
  if constexpr (is_half_v<T>) return T(static_cast<double>(v)); // one rounding, from double
  else return static_cast<T>(v);
}
template <class T>
std::string_view type_name() {
  return dtype_name<T>();
}

// ---- ulps --------------------------------------------------------------------------------------------
// Spacing of the format F (float, double, bf16, f16) at |x|: constant across a binade, denorm_min
// below the normal range, ulp(max) above it.
template <class F>
long double ulp_at(long double x) {
  using lim = std::numeric_limits<F>;
  x = std::fabs(x);
  int e = (x > 0 && std::isfinite(x)) ? std::ilogb(x) : lim::min_exponent - 1;
  e = std::clamp(e, lim::min_exponent - 1, lim::max_exponent - 1);
  return std::ldexp(1.0L, e - (lim::digits - 1));
}

// |got - expected| in ulps of F at `expected`. NaN matches NaN; an infinity matches only itself. A
// finite reference beyond F's range is the infinity it rounds to; an infinite result against a finite
// reference counts as the first value past max (so overflowing right at the edge costs about one ulp).
template <class F>
long double ulp_error(long double got, long double expected) {
  using lim = std::numeric_limits<F>;
  constexpr long double inf = std::numeric_limits<long double>::infinity();
  if (std::isnan(got) || std::isnan(expected)) return std::isnan(got) && std::isnan(expected) ? 0 : inf;
  const long double overflow = std::ldexp(2.0L - std::ldexp(1.0L, -lim::digits), lim::max_exponent - 1);
  if (std::isfinite(expected) && std::fabs(expected) >= overflow) expected = std::copysign(inf, expected);
  if (std::isinf(expected)) return got == expected ? 0 : inf;
  if (std::isinf(got)) got = std::copysign(std::ldexp(1.0L, lim::max_exponent), got);
  return std::fabs(got - expected) / ulp_at<F>(expected);
}

// The reference is long double (64-bit significand): for double results it is itself only good to about
// 2^-11 ulp, so a correctly rounded result may sit that much past half an ulp from it (2^-10 allowed).
template <class F>
inline const long double reference_slack = std::ldexp(1.0L, std::numeric_limits<F>::digits - 63);

// ---- input domains -------------------------------------------------------------------------------------
struct domain {
  double lo = -10, hi = 10;
  bool integral = false;
  bool boolish = false; // 0/1 values (logical operands, where's condition)
  bool specials = true;
};

// Operand k of an elementwise op: the spec's domain, or (lo2, hi2) for the last operand when given.
template <class Op>
domain operand_domain(int k) {
  constexpr ops::test_spec s = Op::test;
  domain d{s.lo, s.hi, s.integral, false, s.specials};
  if (k == Op::arity - 1 && Op::arity > 1 && s.hi2 > s.lo2) d.lo = s.lo2, d.hi = s.hi2;
  if (Op::op_category == ops::category::logical) d.boolish = true;
  // where(cond, a, b): the spec describes the values; the condition is read as bool.
  if (std::is_same_v<Op, ops::where> && k == 0) d.boolish = true;
  return d;
}

// ±0, ±inf, NaN, denormals, the extremes, and the domain's own edges.
template <class T>
std::vector<T> special_values(const domain& d) {
  using lim = std::numeric_limits<T>;
  if constexpr (std::is_integral_v<T>) {
    return {T(0), T(1), T(-1), T(std::ceil(d.lo)), T(std::floor(d.hi))};
  } else if (d.boolish) {
    return {T(0), -T(0), T(1), T(0.5), lim::quiet_NaN(), lim::infinity()};
  } else {
    std::vector<T> v{T(0),
                     -T(0),
                     lim::infinity(),
                     -lim::infinity(),
                     lim::quiet_NaN(),
                     lim::denorm_min(),
                     -lim::denorm_min(),
                     from_ld<T>(to_ld(lim::min()) / 3),
                     lim::min(),
                     lim::max(),
                     lim::lowest(),
                     T(1),
                     T(-1)};
    for (double e : {d.lo, d.hi})
      if (std::isfinite(e) && std::find(v.begin(), v.end(), from_ld<T>(e)) == v.end()) v.push_back(from_ld<T>(e));
    return v;
  }
}

// One value inside the domain. Half the draws are uniform, half log-uniform in magnitude (down to 1e-8 of
// the domain's extent), so that wide domains such as log's (0, 1e6] are also probed near their small end.
template <class T>
T draw(const domain& d, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u01(0, 1);
  if (d.boolish) return T(u01(rng) < 0.5 ? 0 : 1);
  if (d.integral || std::is_integral_v<T>) {
    std::uniform_int_distribution<long long> ui(std::llround(std::ceil(d.lo)), std::llround(std::floor(d.hi)));
    return T(ui(rng));
  }
  // Rounding to T may step just outside the domain (0.999 -> 0.99900001f, or -0.999 -> -1 in bf16): draw again.
  for (int attempt = 0;; ++attempt) {
    double x;
    if (u01(rng) < 0.5) {
      x = d.lo + (d.hi - d.lo) * u01(rng);
    } else {
      const double big = std::max(std::fabs(d.lo), std::fabs(d.hi)), tiny = big * 1e-8;
      bool negative;
      double mlo, mhi;
      if (d.lo >= 0) negative = false, mlo = std::max(d.lo, tiny), mhi = d.hi;
      else if (d.hi <= 0) negative = true, mlo = std::max(-d.hi, tiny), mhi = -d.lo;
      else negative = u01(rng) < -d.lo / (d.hi - d.lo), mlo = tiny, mhi = negative ? -d.lo : d.hi;
      const double m = std::exp(std::log(mlo) + (std::log(mhi) - std::log(mlo)) * u01(rng));
      x = negative ? -m : m;
    }
    const T t = from_ld<T>(x);
    if ((to_ld(t) >= d.lo && to_ld(t) <= d.hi) || attempt == 100) return t;
  }
}

enum class fill {
  random,    // every value drawn from the domain
  mixed,     // odd positions hold special values (so they reach both the SIMD body and the scalar tail)
  cartesian, // the leading positions hold every combination of the operands' special values
};

// Values for the operands of an op; sizes[k] is operand k's number of elements. Cartesian filling
// needs every operand to have the same size and at least the product of the special counts.
template <class T>
std::vector<std::vector<T>> make_values(const std::vector<domain>& doms, const std::vector<index_t>& sizes, fill mode,
                                        std::mt19937_64& rng) {
  const int arity = int(doms.size());
  std::vector<std::vector<T>> v(arity);
  for (int k = 0; k < arity; ++k) {
    v[k].resize(sizes[k]);
    for (auto&& x : v[k]) x = draw<T>(doms[k], rng); // auto&&: std::vector<bool> hands out proxies
  }
  if (mode == fill::mixed) {
    for (int k = 0; k < arity; ++k) {
      if (!doms[k].specials) continue;
      const auto sp = special_values<T>(doms[k]);
      std::uniform_int_distribution<std::size_t> pick(0, sp.size() - 1);
      for (index_t i = 1; i < sizes[k]; i += 2) v[k][i] = sp[pick(rng)];
    }
  } else if (mode == fill::cartesian) {
    std::vector<std::vector<T>> sp(arity);
    index_t combos = 1;
    for (int k = 0; k < arity; ++k) {
      sp[k] = doms[k].specials ? special_values<T>(doms[k]) : std::vector<T>{draw<T>(doms[k], rng)};
      combos *= index_t(sp[k].size());
    }
    for (int k = 0; k < arity; ++k) REQUIRE(sizes[k] >= combos);
    for (index_t i = 0; i < combos; ++i) {
      index_t r = i;
      for (int k = arity - 1; k >= 0; --k) {
        v[k][i] = sp[k][r % index_t(sp[k].size())];
        r /= index_t(sp[k].size());
      }
    }
  }
  return v;
}

// A fixed seed per (op, test, case): a failure reproduces when its case runs alone.
inline std::uint64_t seed_of(std::string_view a, std::string_view b = {}, std::uint64_t c = 0) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::string_view s : {a, std::string_view("/"), b})
    for (char ch : s) h = (h ^ std::uint8_t(ch)) * 1099511628211ull;
  return h ^ (c * 0x9e3779b97f4a7c15ull);
}

// ---- checking and reporting ----------------------------------------------------------------------------
inline std::string show(long double x) {
  std::ostringstream s;
  s << std::setprecision(21) << x;
  return s.str();
}

// Collects one case's checks; on failure the first few mismatches are printed in full.
struct report {
  std::string what; // "exp float32 transposed [29,37]"
  index_t checked = 0, failed = 0;
  long double worst = 0; // largest finite error seen: ulps for floating results, |difference| otherwise
  std::vector<std::string> samples;

  explicit report(std::string w) : what(std::move(w)) {}

  void fail(index_t at, const long double* in, int n, long double got, long double expected, long double err) {
    ++failed;
    if (samples.size() >= 8) return;
    std::ostringstream s;
    s << "  [" << at << "] inputs (";
    for (int k = 0; k < n; ++k) s << (k ? ", " : "") << show(in[k]);
    s << "): got " << show(got) << ", expected " << show(expected) << ", error " << show(err);
    samples.push_back(s.str());
  }
  void finish() const {
    std::ostringstream s;
    s << what << ": " << failed << " of " << checked << " elements outside tolerance (worst " << show(worst) << ")";
    for (const auto& m : samples) s << "\n" << m;
    if (std::getenv("TENFOLD_TEST_VERBOSE")) std::printf("%s\n", s.str().c_str()); // every case's worst error
    INFO(s.str());
    CHECK(failed == 0);
  }
};

// Elementwise tolerance: the entry's ulps in the result type (half types: the float result rounded once
// more, so half an ulp of the half type plus the float error), or its absolute slack near zero.
template <class R>
long double tolerance_ulps(const ops::test_spec& s) {
  if constexpr (is_half_v<R>) return 0.5L + s.ulps * std::ldexp(1.0L, std::numeric_limits<R>::digits - 24) + 1e-6L;
  else return s.ulps + reference_slack<R>;
}

// One output element against its reference; returns false (and records it) when outside tolerance.
template <class R>
bool check_value(report& rep, index_t at, const long double* in, int n, R got_r, long double expected,
                 const ops::test_spec& s) {
  ++rep.checked;
  const long double got = to_ld(got_r);
  long double err;
  bool ok;
  if constexpr (std::is_same_v<R, bool>) {
    err = got != (expected != 0);
    ok = err == 0;
  } else if constexpr (std::is_integral_v<R>) {
    err = std::fabs(got - expected);
    ok = got == expected;
  } else {
    err = ulp_error<R>(got, expected);
    ok = err <= tolerance_ulps<R>(s) || (s.abs_tol > 0 && std::fabs(got - expected) <= s.abs_tol);
    // An exact zero must carry the reference's sign (sign(-0) is +0, expm1(-0) is -0). Where the result
    // only rounds to zero (an absolute tolerance), the sign is not asked for.
    if (ok && got == 0 && expected == 0 && std::signbit(got) != std::signbit(expected)) ok = false, err = 1;
  }
  if (std::isfinite(err) && err > rep.worst) rep.worst = err;
  if (!ok) rep.fail(at, in, n, got, expected, err);
  return ok;
}

template <class S>
std::string shape_str() {
  std::string s = "[";
  for (int i = 0; i < S::rank; ++i) s += (i ? "," : "") + std::to_string(S::dims[i]);
  return s + "]";
}

// An entry whose integer results differ from its real-valued reference (fmod(x, 0) is 0 for integers,
// NaN for floating types) says so with an integer_reference; one whose result depends on the integer type
// (a shift's width, bitwise_not of a bool) with integer_reference<R>, R the result type.
template <class Op, class R = long double, std::size_t... I>
long double call_reference(const long double* in, std::index_sequence<I...>) {
  if constexpr (std::is_integral_v<R> && requires { Op::template integer_reference<R>(in[I]...); })
    return Op::template integer_reference<R>(in[I]...);
  else if constexpr (std::is_integral_v<R> && !std::is_same_v<R, bool> && requires { Op::integer_reference(in[I]...); })
    return static_cast<long double>(Op::integer_reference(in[I]...));
  else return static_cast<long double>(Op::reference(in[I]...));
}
} // namespace tenfold::test

// ---- elementwise cases ---------------------------------------------------------------------------------
// Each case builds operands of one layout, evaluates tenfold::apply<Op>(operands...) — exactly what the
// generated user functions do — and checks every output element against Op::reference on the inputs that
// element reads (looked up through the layout's own index map, not through the library's views).
namespace tenfold::test {

template <class Op>
std::vector<domain> domains() {
  std::vector<domain> d;
  for (int k = 0; k < Op::arity; ++k) d.push_back(operand_domain<Op>(k));
  return d;
}

// `in` holds each output element's operand values, arity per element. Instantiated once per op and
// result type (not per layout), which keeps the test files' compile time down.
template <class Op, class R>
void check_outputs(const std::string& what, const R* out, index_t n, const std::vector<long double>& in) {
  report rep{std::string(Op::name) + " " + what};
  for (index_t o = 0; o < n; ++o) {
    const long double* x = in.data() + o * Op::arity;
    check_value(rep, o, x, Op::arity, out[o], call_reference<Op, R>(x, std::make_index_sequence<Op::arity>{}), Op::test);
  }
  rep.finish();
}

// Gathers the inputs of every output element through `input(o, k)` (operand k's value for output o).
template <class Op, class T, class Out, class Input>
void check_elementwise(const std::string& layout, const Out& out, Input&& input) {
  std::vector<long double> in(std::size_t(Out::size()) * Op::arity);
  for (index_t o = 0; o < Out::size(); ++o)
    for (int k = 0; k < Op::arity; ++k) in[o * Op::arity + k] = to_ld(input(o, k));
  check_outputs<Op>(std::string(type_name<T>()) + " " + layout + " " + Out::shape_string(), out.data(), Out::size(),
                    in);
}

template <class T, class S>
Tensor<T, S> tensor_of(const std::vector<T>& v) {
  Tensor<T, S> t;
  std::copy(v.begin(), v.end(), t.data());
  return t;
}

inline const char* fill_name(fill f) { return f == fill::random ? "random" : f == fill::mixed ? "mixed" : "specials"; }

// Every operand a contiguous [N] tensor.
template <class Op, class T, index_t N>
void contiguous_case(fill mode) {
  constexpr int A = Op::arity;
  std::mt19937_64 rng(seed_of(Op::name, type_name<T>(), N * 4 + int(mode)));
  const auto v = make_values<T>(domains<Op>(), std::vector<index_t>(A, N), mode, rng);
  std::array<Tensor<T, shape<N>>, A> x;
  for (int k = 0; k < A; ++k) std::copy(v[k].begin(), v[k].end(), x[k].data());
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto e = tenfold::apply<Op>(x[I]...);
    Tensor<typename decltype(e)::value_type, shape<N>> out = e;
    check_elementwise<Op, T>(std::string("contiguous/") + fill_name(mode), out,
                             [&](index_t o, int k) { return v[k][o]; });
  }
  (std::make_index_sequence<A>{});
}

// Every operand a step-2 slice of its own [67] tensor: 34 elements at stride 2.
template <class Op, class T>
void strided_case() {
  constexpr int A = Op::arity;
  std::mt19937_64 rng(seed_of(Op::name, type_name<T>(), 101));
  const auto v = make_values<T>(domains<Op>(), std::vector<index_t>(A, 67), fill::mixed, rng);
  std::array<Tensor<T, shape<67>>, A> x;
  for (int k = 0; k < A; ++k) std::copy(v[k].begin(), v[k].end(), x[k].data());
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto e = tenfold::apply<Op>(slice<range<none, none, 2>>(x[I])...);
    Tensor<typename decltype(e)::value_type, shape<34>> out = e;
    check_elementwise<Op, T>("strided(step 2)", out, [&](index_t o, int k) { return v[k][2 * o]; });
  }
  (std::make_index_sequence<A>{});
}

// Operand 0 is transpose of a [37,29] tensor; the others are contiguous [29,37].
template <class Op, class T>
void transposed_case() {
  constexpr int A = Op::arity;
  std::mt19937_64 rng(seed_of(Op::name, type_name<T>(), 102));
  const auto v = make_values<T>(domains<Op>(), std::vector<index_t>(A, 37 * 29), fill::mixed, rng);
  auto t = tensor_of<T, shape<37, 29>>(v[0]);
  std::array<Tensor<T, shape<29, 37>>, A> x;
  for (int k = 1; k < A; ++k) std::copy(v[k].begin(), v[k].end(), x[k].data());
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto e = tenfold::apply<Op>(transpose(t), x[I + 1]...);
    Tensor<typename decltype(e)::value_type, shape<29, 37>> out = e;
    check_elementwise<Op, T>("transposed(operand 0)", out, [&](index_t o, int k) {
      const index_t i = o / 37, j = o % 37;
      return k == 0 ? v[0][j * 29 + i] : v[k][o];
    });
  }
  (std::make_index_sequence<A - 1>{});
}

// Broadcast against [37,29]: operand 0 is [37,1] (a column: constant along the run), the last is [1,29]
// (a row, reused for every output row), any middle one is full. A unary op gets a [1,29] row.
template <int K, int A>
using broadcast_operand_shape =
    std::conditional_t<K == A - 1, shape<1, 29>, std::conditional_t<K == 0, shape<37, 1>, shape<37, 29>>>;

template <class Op, class T>
void broadcast_case() {
  constexpr int A = Op::arity;
  std::mt19937_64 rng(seed_of(Op::name, type_name<T>(), 103));
  auto size_of = [](int k) -> index_t { return k == A - 1 ? 29 : k == 0 ? 37 : 37 * 29; };
  std::vector<index_t> sizes;
  for (int k = 0; k < A; ++k) sizes.push_back(size_of(k));
  const auto v = make_values<T>(domains<Op>(), sizes, fill::mixed, rng);
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    std::tuple<Tensor<T, broadcast_operand_shape<int(I), A>>...> x{
        tensor_of<T, broadcast_operand_shape<int(I), A>>(v[I])...};
    auto e = tenfold::apply<Op>(broadcast_to<shape<37, 29>>(std::get<I>(x))...);
    Tensor<typename decltype(e)::value_type, shape<37, 29>> out = e;
    check_elementwise<Op, T>("broadcast", out, [&](index_t o, int k) {
      return k == A - 1 ? v[k][o % 29] : k == 0 ? v[k][o / 29] : v[k][o];
    });
  }
  (std::make_index_sequence<A>{});
}

// The last operand a C++ scalar (a scalar_node), the others contiguous [33]; several scalar values.
template <class Op, class T>
void scalar_case() {
  constexpr int A = Op::arity;
  static_assert(A >= 2);
  std::mt19937_64 rng(seed_of(Op::name, type_name<T>(), 104));
  const auto doms = domains<Op>();
  const auto v = make_values<T>(doms, std::vector<index_t>(A, 33), fill::random, rng);
  std::array<Tensor<T, shape<33>>, A - 1> x;
  for (int k = 0; k < A - 1; ++k) std::copy(v[k].begin(), v[k].end(), x[k].data());
  std::vector<T> scalars{v[A - 1][0], v[A - 1][1], v[A - 1][2]};
  if (doms[A - 1].specials)
    for (T s : special_values<T>(doms[A - 1])) scalars.push_back(s);
  for (T s : scalars) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      auto e = tenfold::apply<Op>(x[I]..., s);
      Tensor<typename decltype(e)::value_type, shape<33>> out = e;
      check_elementwise<Op, T>("scalar(last operand)", out, [&](index_t o, int k) { return k == A - 1 ? s : v[k][o]; });
    }
    (std::make_index_sequence<A - 1>{});
  }
}

// The layouts for one op and one floating element type, in two groups so that a test file can take a
// share of the (compile-time heavy) instantiations. Sizes 1, 7 and 33 straddle the SIMD width (16 floats
// with AVX-512): all tail, one batch short, two batches and a tail.
template <class Op, class T>
void contiguous_layouts() {
  contiguous_case<Op, T, 1>(fill::random);
  contiguous_case<Op, T, 7>(fill::mixed);
  contiguous_case<Op, T, 33>(fill::mixed);
  contiguous_case<Op, T, 4099>(fill::cartesian);
  if constexpr (std::is_same_v<T, float>) contiguous_case<Op, T, 1000003>(fill::mixed);
}
template <class Op, class T>
void view_layouts() {
  strided_case<Op, T>();
  transposed_case<Op, T>();
  broadcast_case<Op, T>();
  if constexpr (Op::arity >= 2) scalar_case<Op, T>();
}
} // namespace tenfold::test

// ---- domain ends of unary ops -----------------------------------------------------------------------------
// Every unary entry at the ends of its type's range rather than inside its test domain: ±0, ±inf, NaN,
// subnormals, the extremes, a sweep over every binade of both signs, and, wherever the reference changes
// class between two sweep points (finite to overflowing, normal to subnormal to zero, a number to NaN), the
// exact threshold in T found by bisection and the values a few ulps either side of it. Checked through
// the vectorised evaluator (a contiguous [4099] tensor, the shape contiguous_layouts already instantiates)
// and through the scalar function alone (what the scalar tails and the CUDA kernels run).
namespace tenfold::test {

// T's values in order, as integers (for bisection between two of them).
template <class T>
using ordinal_t = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;
template <class T>
ordinal_t<T> ordinal_of(T x) {
  using U = std::make_unsigned_t<ordinal_t<T>>;
  const U u = std::bit_cast<U>(x), sign = U(1) << (sizeof(T) * 8 - 1);
  return (u & sign) ? -ordinal_t<T>(u & ~sign) : ordinal_t<T>(u);
}
template <class T>
T value_of(ordinal_t<T> o) {
  using U = std::make_unsigned_t<ordinal_t<T>>;
  const U sign = U(1) << (sizeof(T) * 8 - 1);
  return std::bit_cast<T>(o < 0 ? U(-o) | sign : U(o));
}

// What a reference value becomes in T: 0 NaN, 1 rounds to ±0, 2 subnormal, 3 normal, 4 overflows.
template <class T>
int value_class(long double r) {
  using lim = std::numeric_limits<T>;
  if (std::isnan(r)) return 0;
  const long double a = std::fabs(r);
  if (a <= to_ld(lim::denorm_min()) / 2) return 1;
  if (a < to_ld(lim::min())) return 2;
  const long double overflow = std::ldexp(2.0L - std::ldexp(1.0L, -lim::digits), lim::max_exponent - 1);
  return a < overflow ? 3 : 4;
}

// One value of the entry as tenfold computes it: the scalar function (Simd = false) or the SIMD one on a
// batch of x (true; the scalar one where the entry has none for T).
template <class Op, class T, bool Simd>
long double computed(T x) {
  using R = typename Op::template result_type<T>;
  if constexpr (Simd && requires(const xsimd::batch<T>& b) { Op::simd(b); }) {
    if constexpr (std::is_same_v<R, bool>) return Op::simd(xsimd::batch<T>(x)).get(0);
    else return to_ld(Op::simd(xsimd::batch<T>(x)).get(0));
  } else {
    return to_ld(convert<R>(Op::template apply<R>(static_cast<compute_t<T>>(x))));
  }
}

template <class Op, class T>
std::vector<T> edge_values() {
  using lim = std::numeric_limits<T>;
  std::vector<T> v{T(0), -T(0), lim::infinity(), -lim::infinity(), lim::quiet_NaN(), lim::denorm_min(),
                   -lim::denorm_min(), lim::min(), -lim::min(), lim::max(), lim::lowest(), T(1), T(-1)};
  // A sweep over every binade at eight points, for both signs.
  std::vector<T> sweep;
  for (int e = lim::min_exponent - lim::digits; e < lim::max_exponent; ++e)
    for (int k = 0; k < 8; ++k) sweep.push_back(T(std::ldexp(1.0L + k / 8.0L, e)));
  sweep.push_back(lim::max());
  // Where the reference, the scalar function or the SIMD one changes class between two sweep points, the
  // first value of the new class (by bisection) and three on each side of it: the thresholds of the
  // reference and any early ones of the implementation.
  auto classes = [](T x) {
    return std::array<int, 3>{value_class<T>(Op::reference(to_ld(x))), value_class<T>(computed<Op, T, false>(x)),
                              value_class<T>(computed<Op, T, true>(x))};
  };
  for (int s : {1, -1}) {
    T prev = s > 0 ? T(0) : -T(0);
    auto cp = classes(prev);
    for (T m : sweep) {
      const T x = T(s) * m;
      const auto cx = classes(x);
      v.push_back(x);
      for (int c = 0; c < 3; ++c) {
        if (cp[c] == cx[c]) continue;
        ordinal_t<T> a = ordinal_of(prev), b = ordinal_of(x);
        while ((b > a ? b - a : a - b) > 1) {
          const ordinal_t<T> mid = a + (b - a) / 2;
          (classes(value_of<T>(mid))[c] == cx[c] ? b : a) = mid;
        }
        for (int k = -3; k <= 3; ++k) v.push_back(value_of<T>(b + (b > a ? k : -k)));
      }
      prev = x, cp = cx;
    }
  }
  return v;
}

template <class Op, class T>
void edge_case() {
  constexpr index_t N = 4099;
  using R = typename Op::template result_type<T>;
  const std::vector<T> v = edge_values<Op, T>();
  report rep_scalar{std::string(Op::name) + " " + std::string(type_name<T>()) + " domain ends, scalar function"};
  for (std::size_t i = 0; i < v.size(); ++i) {
    const long double x = to_ld(v[i]);
    const R got = convert<R>(Op::template apply<R>(static_cast<compute_t<T>>(v[i])));
    check_value(rep_scalar, index_t(i), &x, 1, got, static_cast<long double>(Op::reference(x)), Op::test);
  }
  rep_scalar.finish();
  // The same values through the evaluator, N at a time (the last chunk padded with its own first values).
  for (std::size_t base = 0; base < v.size(); base += N) {
    Tensor<T, shape<N>> t;
    for (index_t i = 0; i < N; ++i) t.data()[i] = v[base + std::size_t(i) % std::min<std::size_t>(N, v.size() - base)];
    auto e = tenfold::apply<Op>(t);
    Tensor<typename decltype(e)::value_type, shape<N>> out = e;
    std::vector<long double> in(N);
    for (index_t i = 0; i < N; ++i) in[i] = to_ld(t.data()[i]);
    check_outputs<Op>(std::string(type_name<T>()) + " domain ends, evaluator", out.data(), N, in);
  }
}
} // namespace tenfold::test
