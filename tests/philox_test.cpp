#include "tenfold/core/philox.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

namespace {

using tenfold::detail::u32x4;

constexpr bool same(u32x4 a, u32x4 b) {
    for (int k = 0; k < 4; ++k)
        if (a.v[k] != b.v[k]) return false;
    return true;
}

constexpr std::uint64_t seed_a = 0x0123456789ABCDEFull;
constexpr int n_draws = 1'000'000;

struct moments {
    double mean, var, skew, kurt_excess;
};

moments moments_of(const std::vector<double>& x) {
    const double n = static_cast<double>(x.size());
    double mean = 0;
    for (double v : x) mean += v;
    mean /= n;
    double m2 = 0, m3 = 0, m4 = 0;
    for (double v : x) {
        const double d = v - mean;
        m2 += d * d;
        m3 += d * d * d;
        m4 += d * d * d * d;
    }
    m2 /= n, m3 /= n, m4 /= n;
    return {mean, m2, m3 / std::pow(m2, 1.5), m4 / (m2 * m2) - 3};
}

} // namespace

// Random123 tests/kat_vectors, the three "philox4x32 10" lines: counter, key -> output.
TEST_CASE("philox4x32 matches the Random123 known-answer vectors", "[philox]") {
    using tenfold::detail::philox4x32;
    CHECK(same(philox4x32({{0, 0, 0, 0}}, {{0, 0}}),
               {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}}));
    CHECK(same(philox4x32({{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, {{0xffffffffu, 0xffffffffu}}),
               {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}}));
    CHECK(same(philox4x32({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, {{0xa4093822u, 0x299f31d0u}}),
               {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}}));
}

// Kernels and plans may fold seeds at compile time; this keeps that possible.
static_assert(same(tenfold::detail::philox4x32({{0, 0, 0, 0}}, {{0, 0}}),
                   {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}}));
static_assert(tenfold::detail::uniform_at<float>(1, 2, 3, 0.f, 1.f) < 1.f);
static_assert(std::is_trivially_copyable_v<tenfold::rng>);

TEST_CASE("counter layout: offset+i in words 0..1, stream in 2..3, seed as key", "[philox]") {
    using namespace tenfold::detail;
    // offset + i crosses the 32-bit boundary: the carry must reach word 1.
    CHECK(same(philox_at(seed_a, 0xffffffffull, 1, 7),
               philox4x32({{0u, 1u, 7u, 0u}}, {{0x89ABCDEFu, 0x01234567u}})));
    // Chunking a draw must not change it: (offset 5, i 10) is (offset 15, i 0).
    CHECK(same(philox_at(seed_a, 5, 10), philox_at(seed_a, 15, 0)));
}

TEST_CASE("conversions hit their documented ranges exactly", "[philox]") {
    using namespace tenfold::detail;
    CHECK(uniform01_float(0) == 0.f);
    CHECK(uniform01_float(0xffffffffu) == 1.f - 0x1.0p-24f);
    CHECK(uniform01_double(0, 0) == 0.0);
    CHECK(uniform01_double(0xffffffffu, 0xffffffffu) == 1.0 - 0x1.0p-53);
    CHECK(uniform01_nonzero_float(0) == 0x1.0p-24f);
    CHECK(uniform01_nonzero_float(0xffffffffu) == 1.f);
    CHECK(uniform01_nonzero_double(0, 0) == 0x1.0p-53);
    CHECK(uniform01_nonzero_double(0xffffffffu, 0xffffffffu) == 1.0);
    // 1 + (1 - 2^-24) rounds to 2 in float; the result must still be below hi.
    CHECK(scale_uniform(1.f - 0x1.0p-24f, 1.f, 2.f) < 2.f);
}

TEMPLATE_TEST_CASE("uniform_at: moments, range, chi-square, lag-1 correlation", "[philox][stats]", float,
                   double) {
    using tenfold::detail::uniform_at;
    std::vector<double> x(n_draws);
    for (int i = 0; i < n_draws; ++i) x[i] = uniform_at<TestType>(seed_a, 0, i, TestType(0), TestType(1));

    const moments m = moments_of(x);
    const double n = n_draws;
    CHECK(std::abs(m.mean - 0.5) < 5 * std::sqrt(1.0 / 12 / n));
    // Var of (U - 1/2)^2 is 1/80 - 1/144 = 1/180.
    CHECK(std::abs(m.var - 1.0 / 12) < 5 * std::sqrt(1.0 / 180 / n));

    std::vector<long> bins(100, 0);
    double lo = 1, hi = 0;
    for (double v : x) {
        lo = std::min(lo, v), hi = std::max(hi, v);
        ++bins[static_cast<int>(v * 100)];
    }
    CHECK(lo >= 0.0);
    CHECK(hi < 1.0);
    double chi2 = 0;
    const double expected = n / 100;
    for (long b : bins) chi2 += (b - expected) * (b - expected) / expected;
    // Upper tail of chi-square with 99 dof: P(chi2 > 181) ~ 1e-6.
    CHECK(chi2 < 181.0);

    // Neighbouring counters must not correlate (a weak mixer shows up here first).
    double c = 0;
    for (int i = 1; i < n_draws; ++i) c += (x[i] - m.mean) * (x[i - 1] - m.mean);
    CHECK(std::abs(c / (n - 1) / m.var) < 5 / std::sqrt(n));

    // A non-unit interval keeps its bounds too.
    TestType mn = 10, mx = -10;
    for (int i = 0; i < 100'000; ++i) {
        const TestType v = uniform_at<TestType>(seed_a, 77, i, TestType(-3), TestType(2));
        mn = std::min(mn, v), mx = std::max(mx, v);
    }
    CHECK(mn >= TestType(-3));
    CHECK(mx < TestType(2));
}

TEMPLATE_TEST_CASE("normal_at: moments and the 1-sigma fraction", "[philox][stats]", float, double) {
    using tenfold::detail::normal_at;
    const double mean = 2.0, sd = 3.0;
    std::vector<double> z(n_draws);
    long within = 0, non_finite = 0;
    for (int i = 0; i < n_draws; ++i) {
        const double v = normal_at<TestType>(seed_a, 1000, i, TestType(mean), TestType(sd));
        non_finite += !std::isfinite(v);
        z[i] = (v - mean) / sd;
        within += std::abs(z[i]) < 1.0;
    }
    REQUIRE(non_finite == 0);
    const moments m = moments_of(z);
    const double n = n_draws;
    // Standard errors for a unit normal: mean 1/sqrt(n), var sqrt(2/n), skew sqrt(6/n), kurtosis sqrt(24/n).
    CHECK(std::abs(m.mean) < 5 / std::sqrt(n));
    CHECK(std::abs(m.var - 1) < 5 * std::sqrt(2 / n));
    CHECK(std::abs(m.skew) < 5 * std::sqrt(6 / n));
    CHECK(std::abs(m.kurt_excess) < 5 * std::sqrt(24 / n));
    const double p1 = 0.682689492137;
    CHECK(std::abs(within / n - p1) < 5 * std::sqrt(p1 * (1 - p1) / n));
}

TEST_CASE("bernoulli_at: frequency within 5 sigma of p", "[philox][stats]") {
    using tenfold::detail::bernoulli_at;
    for (double p : {0.001, 0.3, 0.5, 0.9}) {
        long hits = 0;
        for (int i = 0; i < n_draws; ++i) hits += bernoulli_at(seed_a, 42, i, p);
        CHECK(std::abs(hits / double(n_draws) - p) < 5 * std::sqrt(p * (1 - p) / n_draws));
    }
    CHECK_FALSE(bernoulli_at(seed_a, 0, 0, 0.0));
    CHECK(bernoulli_at(seed_a, 0, 0, 1.0));
}

TEST_CASE("determinism: values depend only on (seed, offset, i)", "[philox]") {
    using namespace tenfold::detail;
    // Same inputs, same value, whatever order or split the elements are computed in.
    std::vector<float> forward(1000), backward(1000);
    for (int i = 0; i < 1000; ++i) forward[i] = uniform_at<float>(seed_a, 9, i, 0.f, 1.f);
    for (int i = 999; i >= 0; --i) backward[i] = uniform_at<float>(seed_a, 9, i, 0.f, 1.f);
    CHECK(forward == backward);
    CHECK(normal_at<double>(seed_a, 3, 17, 0.0, 1.0) == normal_at<double>(seed_a, 10, 10, 0.0, 1.0));

    // Different seeds (including ones differing only in the high key word) give different streams.
    for (std::uint64_t other : {seed_a + 1, seed_a ^ (std::uint64_t{1} << 40)}) {
        int equal = 0;
        for (int i = 0; i < 1000; ++i) equal += same(philox_at(seed_a, 0, i), philox_at(other, 0, i));
        CHECK(equal == 0);
    }
    // Different stream ids give different values for the same counter.
    CHECK_FALSE(same(philox_at(seed_a, 0, 0, 0), philox_at(seed_a, 0, 0, 1)));
}

TEST_CASE("rng::advance hands out disjoint counter ranges", "[philox]") {
    tenfold::rng r(seed_a);
    CHECK(r.seed() == seed_a);
    CHECK(r.offset() == 0);
    const std::uint64_t first = r.advance(100);
    const std::uint64_t second = r.advance(50);
    CHECK(first == 0);
    CHECK(second == 100);
    CHECK(r.offset() == 150);
    const tenfold::philox_stream third = r.reserve(10);
    CHECK(third.seed == seed_a);
    CHECK(third.offset == 150);
    CHECK(r.offset() == 160);

    // Two successive draws equal one draw of their combined length: no counter is reused or skipped.
    using tenfold::detail::uniform_at;
    for (int i = 0; i < 150; ++i) {
        const double joined = uniform_at<double>(seed_a, 0, i, 0.0, 1.0);
        const double split = i < 100 ? uniform_at<double>(seed_a, first, i, 0.0, 1.0)
                                     : uniform_at<double>(seed_a, second, i - 100, 0.0, 1.0);
        CHECK(joined == split);
    }
    // A copy continues independently from the same point (value semantics).
    tenfold::rng copy = r;
    CHECK(copy.advance(1) == r.advance(1));
}
