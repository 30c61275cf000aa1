#include "tenfold/core/dtype.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

using tenfold::bf16;
using tenfold::f16;

namespace {

// An independent model of a 16-bit binary format: every positive finite value decoded with ldexp into a
// table indexed by bit pattern (positive patterns are ordered like their values), then rounding to
// nearest by binary search. It shares no code with the header.
struct format_model {
  int mant, exp_bits;
  std::vector<double> values; // values[i] = value of pattern i; values[inf] = 2^(emax+1), the overflow edge

  format_model(int m, int e) : mant(m), exp_bits(e) {
    const int bias = (1 << (e - 1)) - 1;
    for (std::uint32_t i = 0; i <= inf_bits(); ++i) {
      const int ex = int(i >> m), fr = int(i & ((1u << m) - 1));
      values.push_back(ex == 0 ? std::ldexp(double(fr), 1 - bias - m)
                               : std::ldexp(double((1 << m) + fr), ex - bias - m));
    }
  }
  std::uint16_t inf_bits() const { return std::uint16_t(((1u << exp_bits) - 1) << mant); }
  std::uint16_t quiet_bit() const { return std::uint16_t(1u << (mant - 1)); }
  bool is_nan(std::uint16_t b) const { return (b & 0x7fff) > inf_bits(); }
  double decode(std::uint16_t b) const { // finite or inf only
    const double mag = (b & 0x7fff) == inf_bits() ? INFINITY : values[b & 0x7fff];
    return (b & 0x8000) ? -mag : mag;
  }
  // Correctly rounded, ties to even; NaN is the caller's business.
  std::uint16_t round(double v) const {
    const std::uint16_t sign = std::signbit(v) ? 0x8000 : 0;
    const double a = std::fabs(v);
    if (a >= values.back()) return sign | inf_bits();
    const auto lo = std::uint16_t(std::upper_bound(values.begin(), values.end(), a) - values.begin() - 1);
    if (values[lo] == a) return sign | lo;
    const double mid = (values[lo] + values[lo + 1]) / 2; // exact: both have few significant bits
    if (a < mid) return sign | lo;
    if (a > mid) return sign | std::uint16_t(lo + 1);
    return sign | std::uint16_t((lo & 1) ? lo + 1 : lo);
  }
};

const format_model bf16_model(7, 8);
const format_model f16_model(10, 5);

template <class H> const format_model& model_of() {
  if constexpr (std::is_same_v<H, bf16>) return bf16_model;
  else return f16_model;
}

// Only failures become Catch assertions, so the exhaustive loops stay fast and their output short.
#define EXPECT_BITS(got, want, input)                                                            \
  do {                                                                                           \
    if ((got) != (want)) {                                                                       \
      INFO("input " << std::hexfloat << (input) << " got 0x" << std::hex << (got) << " want 0x" \
                    << (want));                                                                  \
      CHECK((got) == (want));                                                                    \
    }                                                                                            \
  } while (0)

template <class H, class Real> void check_rounds_like_model(Real v) {
  const auto& m = model_of<H>();
  const std::uint16_t got = H(v).bits;
  if (std::isnan(v)) {
    if (!m.is_nan(got)) CHECK(m.is_nan(got));
    if (!(got & m.quiet_bit())) CHECK((got & m.quiet_bit()));
    return;
  }
  EXPECT_BITS(got, m.round(double(v)), v);
}

// Around every pair of neighbours: both ends, one ulp inside each, the midpoint and one ulp either side
// of it. The ulp is the source type's, so for double the cases that float would double-round are hit.
template <class H, class Real> void sweep_neighbours() {
  const auto& m = model_of<H>();
  for (std::uint32_t i = 0; i < m.inf_bits(); ++i) {
    const double lo = m.values[i], hi = m.values[i + 1], mid = (lo + hi) / 2;
    const Real inf = std::numeric_limits<Real>::infinity();
    Real cases[] = {Real(lo), std::nextafter(Real(lo), inf), Real(mid), std::nextafter(Real(mid), Real(0)),
                    std::nextafter(Real(mid), inf), std::nextafter(Real(hi), Real(0))};
    for (Real c : cases) {
      check_rounds_like_model<H>(c);
      check_rounds_like_model<H>(-c);
    }
  }
}

template <class H> void check_all_patterns() {
  const auto& m = model_of<H>();
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const H h = H::from_bits(std::uint16_t(b));
    const float f = h;
    const std::uint16_t back = H(f).bits;
    if (m.is_nan(std::uint16_t(b))) {
      // A NaN comes back quiet with sign and payload intact, so a quiet NaN comes back unchanged.
      if (!std::isnan(f)) CHECK(std::isnan(f));
      EXPECT_BITS(back, std::uint16_t(b | m.quiet_bit()), b);
      continue;
    }
    const double want = m.decode(std::uint16_t(b));
    if (double(f) != want || std::signbit(f) != std::signbit(want)) CHECK(double(f) == want);
    EXPECT_BITS(back, std::uint16_t(b), f);
    EXPECT_BITS(H(double(f)).bits, std::uint16_t(b), f);
  }
}

template <class H> void check_random() {
  std::mt19937_64 rng(20240611);
  // Uniform bit patterns cover every exponent; the second loop concentrates on the format's own range.
  for (int n = 0; n < 1'000'000; ++n) {
    const auto u = std::uint32_t(rng());
    check_rounds_like_model<H>(std::bit_cast<float>(u));
    check_rounds_like_model<H>(std::bit_cast<double>(std::uint64_t(rng())));
  }
  const int lo_exp = std::is_same_v<H, f16> ? -27 : -136, hi_exp = std::is_same_v<H, f16> ? 17 : 128;
  std::uniform_int_distribution<int> exps(lo_exp, hi_exp);
  std::uniform_real_distribution<double> frac(1.0, 2.0);
  for (int n = 0; n < 1'000'000; ++n) {
    const double d = std::ldexp(frac(rng), exps(rng)) * ((n & 1) ? -1 : 1);
    check_rounds_like_model<H>(d);
    check_rounds_like_model<H>(float(d));
  }
}

// promote_t is symmetric, so every row is checked both ways round.
template <class A, class B, class R>
constexpr bool promotes_to =
    std::is_same_v<tenfold::promote_t<A, B>, R> && std::is_same_v<tenfold::promote_t<B, A>, R>;

} // namespace

TEST_CASE("bf16: every pattern decodes exactly and survives a round trip", "[dtype]") {
  check_all_patterns<bf16>();
}
TEST_CASE("f16: every pattern decodes exactly and survives a round trip", "[dtype]") {
  check_all_patterns<f16>();
}

TEST_CASE("bf16 and f16 round float and double to nearest even at every boundary", "[dtype]") {
  sweep_neighbours<bf16, float>();
  sweep_neighbours<bf16, double>();
  sweep_neighbours<f16, float>();
  sweep_neighbours<f16, double>();
}

TEST_CASE("bf16 and f16 round random floats and doubles like the model", "[dtype]") {
  check_random<bf16>();
  check_random<f16>();
}

TEST_CASE("integers convert with a single rounding", "[dtype]") {
  for (std::int32_t i = -300000; i <= 300000; ++i) {
    EXPECT_BITS(bf16(i).bits, bf16_model.round(double(i)), i);
    EXPECT_BITS(f16(i).bits, f16_model.round(double(i)), i);
  }
  const std::int64_t big[] = {std::int64_t(1) << 40, (std::int64_t(1) << 40) + (std::int64_t(1) << 32),
                              (std::int64_t(1) << 40) + (std::int64_t(3) << 32),
                              std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min()};
  for (auto i : big) EXPECT_BITS(bf16(i).bits, bf16_model.round(double(i)), i);
  // Through float this would first become the tie 2^30 + 2^22 and then round down to 2^30.
  CHECK(bf16(std::int32_t((1 << 30) + (1 << 22) + 1)).bits == 0x4e81);
  CHECK(f16(std::numeric_limits<std::int64_t>::max()).bits == 0x7c00);
  CHECK(float(bf16(true)) == 1.0f);
  CHECK(f16(std::uint8_t(255)).bits == 0x5bf8);
}

TEST_CASE("f16 edge cases", "[dtype]") {
  CHECK(f16(65504.0f).bits == 0x7bff);
  CHECK(f16(std::nextafter(65520.0f, 0.0f)).bits == 0x7bff);
  CHECK(f16(65520.0f).bits == 0x7c00); // the tie above max goes to inf (max is odd)
  CHECK(f16(-65520.0f).bits == 0xfc00);
  CHECK(f16(1e30f).bits == 0x7c00);
  CHECK(f16(1e300).bits == 0x7c00);
  CHECK(f16(0x1p-24f).bits == 0x0001);
  CHECK(f16(0x1p-25f).bits == 0x0000); // tie between 0 and 2^-24: even is 0
  CHECK(f16(-0x1p-25f).bits == 0x8000);
  CHECK(f16(std::nextafter(0x1p-25f, 1.0f)).bits == 0x0001);
  CHECK(f16(0x3p-25f).bits == 0x0002); // tie between 1 and 2 ulps: even is 2
  CHECK(f16(0x1p-14f).bits == 0x0400);
  CHECK(f16(0x1.ffcp-15f).bits == 0x0400); // largest subnormal + half ulp carries into the exponent
  CHECK(f16(1.0f + 0x1p-11f).bits == 0x3c00);
  CHECK(f16(1.0f + 0x3p-11f).bits == 0x3c02);
  CHECK(f16(std::numeric_limits<float>::denorm_min()).bits == 0x0000);
  CHECK(f16(-0.0f).bits == 0x8000);
  CHECK(f16(INFINITY).bits == 0x7c00);
  CHECK(f16(-INFINITY).bits == 0xfc00);
  CHECK(f16(std::bit_cast<float>(0x7f800001u)).bits == 0x7e00); // low-payload NaN must not become inf
  CHECK(f16(std::bit_cast<float>(0xffc00000u)).bits == 0xfe00);
  CHECK(float(f16::from_bits(0x0001)) == 0x1p-24f);
  CHECK(float(f16::from_bits(0x3555)) == 0x1.554p-2f);
}

TEST_CASE("bf16 edge cases", "[dtype]") {
  CHECK(bf16(1.0f + 0x1p-8f).bits == 0x3f80);
  CHECK(bf16(1.0f + 0x3p-8f).bits == 0x3f82);
  CHECK(bf16(std::numeric_limits<float>::max()).bits == 0x7f80);
  CHECK(bf16(0x1.fep127f).bits == 0x7f7f);
  CHECK(bf16(0x1.ffp127f).bits == 0x7f80); // tie above max goes to inf
  CHECK(bf16(std::numeric_limits<float>::denorm_min()).bits == 0x0000);
  CHECK(bf16(0x1p-133f).bits == 0x0001);
  CHECK(bf16(std::numeric_limits<float>::min()).bits == 0x0080);
  CHECK(bf16(1e300).bits == 0x7f80);
  CHECK(bf16(1e-300).bits == 0x0000);
  CHECK(bf16(-1e-300).bits == 0x8000);
  CHECK(bf16(std::bit_cast<float>(0x7f800001u)).bits == 0x7fc0); // truncating would give inf
  CHECK(bf16(std::bit_cast<float>(0xff800001u)).bits == 0xffc0);
  CHECK(bf16(std::numeric_limits<double>::quiet_NaN()).bits == 0x7fc0);
  // Through float, 1 + 2^-8 + 2^-30 first becomes the tie 1 + 2^-8 and then rounds down to 1.
  CHECK(bf16(1.0 + 0x1p-8 + 0x1p-30).bits == 0x3f81);
}

TEST_CASE("conversions and limits are constant expressions", "[dtype]") {
  static_assert(bf16(1.0f).bits == 0x3f80);
  static_assert(float(bf16::from_bits(0x4049)) == 3.140625f);
  static_assert(f16(65520.0f).bits == 0x7c00);
  static_assert(float(f16::from_bits(0x0001)) == 0x1p-24f);
  static_assert(f16(0.1).bits == 0x2e66);
  static_assert(float(std::numeric_limits<f16>::max()) == 65504.0f);
  static_assert(tenfold::convert<std::int32_t>(bf16(3.75f)) == 3);
  static_assert(float(bf16(1.5f) * bf16(2.0f)) == 3.0f);
  SUCCEED();
}

TEST_CASE("numeric_limits", "[dtype]") {
  using LF = std::numeric_limits<f16>;
  using LB = std::numeric_limits<bf16>;
  STATIC_REQUIRE(LF::is_specialized && LB::is_specialized);
  STATIC_REQUIRE(LF::digits == 11 && LB::digits == 8);
  STATIC_REQUIRE(LF::is_iec559 && !LB::is_iec559);
  STATIC_REQUIRE(std::numeric_limits<const f16>::digits == 11);
  CHECK(float(LF::max()) == 65504.0f);
  CHECK(float(LF::lowest()) == -65504.0f);
  CHECK(float(LF::min()) == 0x1p-14f);
  CHECK(float(LF::denorm_min()) == 0x1p-24f);
  CHECK(float(LF::epsilon()) == 0x1p-10f);
  CHECK(float(LF::round_error()) == 0.5f);
  CHECK(float(LB::max()) == 0x1.fep127f);
  CHECK(float(LB::lowest()) == -0x1.fep127f);
  CHECK(float(LB::min()) == std::numeric_limits<float>::min());
  CHECK(float(LB::denorm_min()) == 0x1p-133f);
  CHECK(float(LB::epsilon()) == 0x1p-7f);
  CHECK(float(LB::round_error()) == 0.5f);
  CHECK(std::isinf(float(LF::infinity())));
  CHECK(std::isinf(float(LB::infinity())));
  CHECK(std::isnan(float(LF::quiet_NaN())));
  CHECK(std::isnan(float(LB::signaling_NaN())));
  CHECK(LB::signaling_NaN().bits != LB::quiet_NaN().bits);
  // Each epsilon is the gap above one, checked against the model rather than trusted.
  CHECK(f16_model.values[0x3c01] - 1.0 == double(float(LF::epsilon())));
  CHECK(bf16_model.values[0x3f81] - 1.0 == double(float(LB::epsilon())));
  CHECK(std::log10(double(float(LF::max()))) >= LF::max_exponent10);
  CHECK(std::log10(double(float(LB::max()))) >= LB::max_exponent10);
}

TEST_CASE("operators keep half types and mix with built-ins without ambiguity", "[dtype]") {
  bf16 x = 1.0f;
  float y = x + 1.0f;
  CHECK(y == 2.0f);
  STATIC_REQUIRE(std::is_same_v<decltype(x + 1.0f), float>);
  STATIC_REQUIRE(std::is_same_v<decltype(1.0f * x), float>);
  STATIC_REQUIRE(std::is_same_v<decltype(x + 1.0), double>);
  STATIC_REQUIRE(std::is_same_v<decltype(x + 1), float>);
  STATIC_REQUIRE(std::is_same_v<decltype(x + x), bf16>);
  STATIC_REQUIRE(std::is_same_v<decltype(-x), bf16>);
  STATIC_REQUIRE(std::is_same_v<decltype(f16(1.0f) / f16(2.0f)), f16>);
  STATIC_REQUIRE(std::is_same_v<decltype(x + f16(1.0f)), float>);
  STATIC_REQUIRE(std::is_same_v<decltype(x == 1.0f), bool>);

  const bf16 a = 1.5f, b = 2.25f;
  CHECK((a + b).bits == bf16(3.75f).bits);
  CHECK((a - b).bits == bf16(-0.75f).bits);
  CHECK((a * b).bits == bf16(3.375f).bits);
  CHECK((b / a).bits == bf16(1.5f).bits);
  CHECK((-a).bits == 0xbfc0);
  CHECK(bf16(1.0f) + bf16(0x1p-9f) == bf16(1.0f)); // rounded back to bf16, not kept in float
  f16 h = 1.0f;
  h += 1.0f;
  h *= f16(3.0f);
  h -= 1;
  h /= 2.0;
  CHECK(float(h) == 2.5f);

  const f16 nan = std::numeric_limits<f16>::quiet_NaN();
  CHECK_FALSE(nan == nan);
  CHECK(nan != nan);
  CHECK_FALSE(nan < nan);
  CHECK(std::isnan(float(-nan)));
  CHECK(f16(0.0f) == f16(-0.0f));
  CHECK(bf16(1.0f) < bf16(2.0f));
  CHECK(bf16(2.0f) >= bf16(2.0f));
  CHECK(bf16(2.0f) > 1.5f);
  CHECK(x == 1.0f);
  CHECK(x == 1);
}

TEST_CASE("traits, names and promotion", "[dtype]") {
  using std::int32_t, std::int64_t;
  static_assert(tenfold::is_half_v<bf16> && tenfold::is_half_v<f16> && !tenfold::is_half_v<float>);
  static_assert(std::is_same_v<tenfold::compute_t<bf16>, float>);
  static_assert(std::is_same_v<tenfold::compute_t<f16>, float>);
  static_assert(std::is_same_v<tenfold::compute_t<int64_t>, int64_t>);
  static_assert(tenfold::is_supported_element_v<bool> && tenfold::is_supported_element_v<f16>);
  static_assert(!tenfold::is_supported_element_v<std::int8_t> && !tenfold::is_supported_element_v<char>);
  static_assert(tenfold::is_floating_v<bf16> && tenfold::is_floating_v<double>);
  static_assert(!tenfold::is_floating_v<int32_t> && !tenfold::is_floating_v<bool>);

  static_assert(tenfold::dtype_name<float>() == "float32");
  static_assert(tenfold::dtype_name<double>() == "float64");
  static_assert(tenfold::dtype_name<int32_t>() == "int32");
  static_assert(tenfold::dtype_name<int64_t>() == "int64");
  static_assert(tenfold::dtype_name<bool>() == "bool");
  static_assert(tenfold::dtype_name<bf16>() == "bfloat16");
  static_assert(tenfold::dtype_name<f16>() == "float16");

  static_assert(promotes_to<bool, bool, bool>);
  static_assert(promotes_to<bf16, bf16, bf16>);
  static_assert(promotes_to<bool, int32_t, int32_t>);
  static_assert(promotes_to<bool, f16, f16>);
  static_assert(promotes_to<bool, double, double>);
  static_assert(promotes_to<int32_t, int64_t, int64_t>);
  static_assert(promotes_to<int32_t, float, float>);
  static_assert(promotes_to<int64_t, float, float>);
  static_assert(promotes_to<int64_t, double, double>);
  static_assert(promotes_to<int32_t, bf16, bf16>);
  static_assert(promotes_to<int64_t, f16, f16>);
  static_assert(promotes_to<float, double, double>);
  static_assert(promotes_to<bf16, f16, float>);
  static_assert(promotes_to<bf16, float, float>);
  static_assert(promotes_to<f16, float, float>);
  static_assert(promotes_to<bf16, double, double>);
  static_assert(promotes_to<f16, double, double>);
  SUCCEED();
}

TEST_CASE("convert", "[dtype]") {
  using tenfold::convert;
  CHECK(convert<bool>(std::numeric_limits<bf16>::quiet_NaN()));
  CHECK_FALSE(convert<bool>(f16(-0.0f)));
  CHECK(convert<bool>(f16(0x1p-24f)));
  CHECK_FALSE(convert<bool>(0.0));
  CHECK(convert<bool>(std::int64_t(-2)));
  CHECK(convert<f16>(true).bits == 0x3c00);
  CHECK(convert<bf16>(false).bits == 0x0000);
  CHECK(convert<float>(true) == 1.0f);
  CHECK(convert<bf16>(f16(1.0f + 0x1p-10f)).bits == 0x3f80);        // f16 -> bf16 rounds
  CHECK(convert<f16>(bf16(0x1p-20f)).bits == f16(0x1p-20f).bits);    // into f16's subnormals
  CHECK(convert<f16>(bf16(1e20f)).bits == 0x7c00);
  CHECK(convert<std::int32_t>(bf16(-3.75f)) == -3);
  CHECK(convert<std::int64_t>(f16(65504.0f)) == 65504);
  CHECK(convert<double>(f16::from_bits(0x0003)) == 0x3p-24);
  CHECK(convert<f16>(std::int64_t(70000)).bits == 0x7c00);
  CHECK(convert<bf16>(1.0 + 0x1p-8 + 0x1p-30).bits == 0x3f81);
  CHECK(convert<f16>(f16(2.0f)).bits == 0x4000);
  CHECK(std::isinf(convert<float>(1e40)));
  CHECK(convert<std::int32_t>(std::int64_t(7)) == 7);
}
