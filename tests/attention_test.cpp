// attention(q, k, v): the tiled CPU kernel (cpu/attention.hpp) and the node's `at` fallback against a
// naive long-double reference with a two-pass softmax, over shapes that cross the query and key block
// sizes, broadcast batch and head axes, causal masks (bottom-right aligned) and not, f32 and f64; large
// logits; rows a causal mask hides entirely; bitwise independence of the thread count; and the plan:
// no Sq x Sk buffer anywhere.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include <tenfold/tenfold.hpp>

using namespace tenfold;
using ld = long double;

namespace {
template <class T, class S>
void fill(Tensor<T, S>& t, std::uint64_t seed, double mag = 1) {
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
  for (auto& x : t) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = T(mag * (-1.0 + 2.0 * double(s >> 11) * 0x1p-53));
  }
}

// softmax(q kᵀ · scale) v for one batch/head pair, in long double, the softmax in two passes (max, then
// exp and sum). Query i sees keys j <= i + (Sk - Sq) when causal; a query that sees none gives 0.
template <class Q, class K, class V, class O>
void reference(const Q& q, const K& k, const V& v, O& out, index_t Sq, index_t Sk, index_t D, index_t Dv, bool causal, ld scale) {
  std::vector<ld> p(std::size_t(Sk > 0 ? Sk : 1));
  for (index_t i = 0; i < Sq; ++i) {
    const index_t n = causal ? std::clamp<index_t>(i + 1 + Sk - Sq, 0, Sk) : Sk;
    ld mx = -std::numeric_limits<ld>::infinity(), z = 0;
    for (index_t j = 0; j < n; ++j) {
      ld s = 0;
      for (index_t d = 0; d < D; ++d) s += ld(q(i, d)) * ld(k(j, d));
      p[j] = s * scale;
      mx = std::max(mx, p[j]);
    }
    for (index_t j = 0; j < n; ++j) z += p[j] = std::exp(p[j] - mx);
    for (index_t e = 0; e < Dv; ++e) {
      ld acc = 0;
      for (index_t j = 0; j < n; ++j) acc += p[j] * ld(v(j, e));
      out(i, e, n == 0 ? ld(0) : acc / z);
    }
  }
}

// The worst difference of y [B, H, Sq, Dv] from the reference for q [B, H, Sq, D], k and v, batch
// element b reading its first keys(b) keys, scaled by 1 / sqrt(D).
template <class Y, class Q, class K, class V, class Keys>
double worst_error(const Y& y, const Q& q, const K& k, const V& v, Keys&& keys, bool is_causal) {
  using S = typename Q::shape_type;
  constexpr index_t B = S::dims[0], H = S::dims[1], Sq = S::dims[2], D = S::dims[3], Dv = Y::shape_type::dims[3];
  double worst = 0;
  for (index_t b = 0; b < B; ++b)
    for (index_t h = 0; h < H; ++h) {
      auto qa = [&](index_t i, index_t d) { return q(b, h, i, d); };
      auto ka = [&](index_t j, index_t d) { return k(b, h, j, d); };
      auto va = [&](index_t j, index_t e) { return v(b, h, j, e); };
      auto cmp = [&](index_t i, index_t e, ld r) { worst = std::max(worst, double(std::fabs(ld(y(b, h, i, e)) - r))); };
      reference(qa, ka, va, cmp, Sq, keys(b), D, Dv, is_causal, 1 / std::sqrt(ld(D)));
    }
  return worst;
}

constexpr index_t max3(index_t a, index_t b, index_t c) { return std::max(a, std::max(b, c)); }

// q [BQ, HQ, Sq, D], k [BK, HK, Sk, D], v [BV, HV, Sk, Dv]: batch and head axes broadcast.
template <class T, bool Causal, index_t Sq, index_t Sk, index_t D, index_t Dv, index_t BQ, index_t HQ, index_t BK, index_t HK, index_t BV,
          index_t HV>
void check_case(std::uint64_t seed) {
  constexpr index_t B = max3(BQ, BK, BV), H = max3(HQ, HK, HV);
  Tensor<T, shape<BQ, HQ, Sq, D>> q;
  Tensor<T, shape<BK, HK, Sk, D>> k;
  Tensor<T, shape<BV, HV, Sk, Dv>> v;
  fill(q, seed, 2), fill(k, seed + 1, 2), fill(v, seed + 2);
  Tensor<T, shape<B, H, Sq, Dv>> y;
  if constexpr (Causal) y = attention(q, k, v, causal);
  else y = attention(q, k, v);
  const ld scale = 1 / std::sqrt(ld(D));
  double worst = 0, vmax = 0;
  for (const T x : v) vmax = std::max(vmax, double(std::fabs(x)));
  for (index_t b = 0; b < B; ++b)
    for (index_t h = 0; h < H; ++h) {
      auto qa = [&](index_t i, index_t d) { return q(BQ == 1 ? 0 : b, HQ == 1 ? 0 : h, i, d); };
      auto ka = [&](index_t j, index_t d) { return k(BK == 1 ? 0 : b, HK == 1 ? 0 : h, j, d); };
      auto va = [&](index_t j, index_t e) { return v(BV == 1 ? 0 : b, HV == 1 ? 0 : h, j, e); };
      auto cmp = [&](index_t i, index_t e, ld r) { worst = std::max(worst, double(std::fabs(ld(y(b, h, i, e)) - r))); };
      reference(qa, ka, va, cmp, Sq, Sk, D, Dv, Causal, scale);
    }
  // The output is a convex combination of rows of v: its error is measured against their magnitude.
  const double tol = 16 * std::numeric_limits<T>::epsilon() * vmax;
  INFO("T = " << (std::is_same_v<T, float> ? "f32" : "f64") << ", causal " << Causal << ", Sq " << Sq << ", Sk " << Sk << ", D " << D
                << ", Dv " << Dv << ": worst error " << worst << ", tolerance " << tol);
  CHECK(worst <= tol);
}

template <class T, index_t Sq, index_t Sk, index_t D, index_t Dv, index_t BQ, index_t HQ, index_t BK, index_t HK, index_t BV, index_t HV>
void check_both(std::uint64_t seed) {
  check_case<T, false, Sq, Sk, D, Dv, BQ, HQ, BK, HK, BV, HV>(seed);
  check_case<T, true, Sq, Sk, D, Dv, BQ, HQ, BK, HK, BV, HV>(seed + 10);
}
} // namespace

// Sq, Sk in {1, 3, 17, 64, 129, 300} and D, Dv in {1, 8, 33, 64, 128}, each value at least once, on both
// sides of the block sizes (f32 AVX-512: 28 query rows, 128 keys per block; AVX2: 12 and 64).
TEST_CASE("attention f32: random shapes, broadcast batch and head axes, causal and not", "[attention]") {
  check_both<float, 1, 300, 64, 64, 2, 3, 2, 3, 2, 3>(1);    // one query (decoding) over many keys
  check_both<float, 3, 17, 8, 33, 2, 1, 1, 3, 2, 3>(2);      // heads broadcast from k, batch from q
  check_both<float, 17, 3, 33, 8, 1, 1, 2, 3, 1, 3>(3);      // causal: 14 rows see no key
  check_both<float, 64, 64, 128, 1, 2, 3, 2, 1, 1, 1>(4);    // one v shared by every batch and head
  check_both<float, 129, 129, 1, 128, 1, 3, 1, 3, 1, 3>(5);  // D = 1
  check_both<float, 300, 129, 64, 33, 2, 1, 2, 1, 2, 1>(6);  // Sq > Sk, both past a block
  check_both<float, 129, 300, 33, 64, 1, 2, 1, 2, 1, 2>(7);  // Sq < Sk: causal rows see Sk - Sq + i + 1 keys
  check_both<float, 300, 1, 8, 8, 1, 1, 1, 1, 1, 1>(8);      // one key
  check_both<float, 64, 300, 128, 128, 1, 2, 1, 1, 1, 2>(9); // the largest head dimension
  check_both<float, 17, 64, 1, 1, 2, 1, 2, 1, 2, 1>(10);
}

TEST_CASE("attention f64: random shapes, broadcast batch and head axes, causal and not", "[attention]") {
  check_both<double, 1, 129, 8, 128, 2, 1, 2, 1, 2, 1>(11);
  check_both<double, 17, 300, 64, 33, 1, 3, 1, 3, 1, 1>(12);
  check_both<double, 300, 64, 33, 64, 1, 1, 1, 1, 1, 1>(13);
  check_both<double, 129, 3, 128, 8, 2, 1, 1, 1, 2, 1>(14);
}

TEST_CASE("attention: the node's `at` (the portable fallback) agrees with the reference", "[attention]") {
  Tensor<float, shape<2, 40, 9>> q;
  Tensor<float, shape<70, 9>> k; // broadcast over the batch
  Tensor<float, shape<2, 70, 5>> v;
  fill(q, 21, 2), fill(k, 22, 2), fill(v, 23);
  const auto node = attention(q, k, v, causal, 0.5);
  for (index_t b = 0; b < 2; ++b) {
    auto qa = [&](index_t i, index_t d) { return q(b, i, d); };
    auto ka = [&](index_t j, index_t d) { return k(j, d); };
    auto va = [&](index_t j, index_t e) { return v(b, j, e); };
    double worst = 0;
    auto cmp = [&](index_t i, index_t e, ld r) {
      const index_t idx[3] = {b, i, e};
      worst = std::max(worst, double(std::fabs(ld(node.at(idx)) - r)));
    };
    reference(qa, ka, va, cmp, 40, 70, 9, 5, true, 0.5L);
    CHECK(worst <= 1e-6);
  }
}

TEST_CASE("attention: logits of magnitude 1e4 stay finite and accurate", "[attention]") {
  // Integer q and k up to ±100 with scale 1: every score is an exact integer up to ±8e4 in f32, so the
  // reference sees the same logits; a naive exp would overflow to inf (and give NaN).
  Tensor<float, shape<3, 150, 8>> q;
  Tensor<float, shape<3, 200, 8>> k;
  Tensor<float, shape<3, 200, 16>> v;
  fill(q, 31, 100), fill(k, 32, 100), fill(v, 33);
  for (auto& x : q) x = std::round(x);
  for (auto& x : k) x = std::round(x);
  for (int c = 0; c < 2; ++c) {
    Tensor<float, shape<3, 150, 16>> y;
    if (c) y = attention(q, k, v, causal, 1.0);
    else y = attention(q, k, v, 1.0);
    double worst = 0, smax = 0;
    bool finite = true;
    for (index_t b = 0; b < 3; ++b) {
      auto qa = [&](index_t i, index_t d) { return q(b, i, d); };
      auto ka = [&](index_t j, index_t d) { return k(b, j, d); };
      auto va = [&](index_t j, index_t e) { return v(b, j, e); };
      auto cmp = [&](index_t i, index_t e, ld r) {
        finite = finite && std::isfinite(y(b, i, e));
        worst = std::max(worst, double(std::fabs(ld(y(b, i, e)) - r)));
      };
      reference(qa, ka, va, cmp, 150, 200, 8, 16, c == 1, 1.0L);
      for (index_t i = 0; i < 150; ++i)
        for (index_t j = 0; j < 200; ++j) {
          ld s = 0;
          for (index_t d = 0; d < 8; ++d) s += ld(q(b, i, d)) * k(b, j, d);
          smax = std::max(smax, double(std::fabs(s)));
        }
    }
    CHECK(smax > 1e4); // the logits are as large as claimed
    CHECK(finite);
    CHECK(worst <= 1e-6);
  }
}

TEST_CASE("attention: rows a causal mask hides entirely are 0; keys scored -inf weigh 0", "[attention]") {
  // Sq > Sk, bottom-right aligned: query i sees keys j <= i - 5, so rows 0..4 see none.
  Tensor<double, shape<2, 9, 4>> q;
  Tensor<double, shape<2, 4, 4>> k;
  Tensor<double, shape<2, 4, 3>> v;
  fill(q, 41), fill(k, 42), fill(v, 43);
  Tensor<double, shape<2, 9, 3>> y = attention(q, k, v, causal);
  const auto node = attention(q, k, v, causal);
  for (index_t b = 0; b < 2; ++b)
    for (index_t i = 0; i < 9; ++i)
      for (index_t e = 0; e < 3; ++e) {
        const index_t idx[3] = {b, i, e};
        CHECK(std::isfinite(y(b, i, e)));
        if (i < 5) CHECK(y(b, i, e) == 0.0);
        if (i < 5) CHECK(node.at(idx) == 0.0);
      }
  CHECK(y(0, 5, 0) == v(0, 0, 0)); // the first visible row sees key 0 alone
  // A key whose score is -inf (k = -inf against q > 0) gets weight 0; a query whose every score is
  // -inf gives 0, like a fully masked one.
  Tensor<float, shape<2, 3>> qp = full<float, shape<2, 3>>(1.0f);
  qp(1, 0) = 1, qp(1, 1) = 1, qp(1, 2) = 1;
  Tensor<float, shape<4, 3>> kp = full<float, shape<4, 3>>(0.5f);
  Tensor<float, shape<4, 2>> vp;
  fill(vp, 44);
  const float inf = std::numeric_limits<float>::infinity();
  for (index_t d = 0; d < 3; ++d) kp(2, d) = -inf;
  Tensor<float, shape<2, 2>> yp = attention(qp, kp, vp);
  for (index_t e = 0; e < 2; ++e) CHECK(yp(0, e) == Approx((vp(0, e) + vp(1, e) + vp(3, e)) / 3).epsilon(1e-6));
  for (index_t j = 0; j < 4; ++j)
    for (index_t d = 0; d < 3; ++d) kp(j, d) = -inf;
  yp = attention(qp, kp, vp);
  for (index_t e = 0; e < 2; ++e) CHECK(yp(1, e) == 0.0f);
}

TEST_CASE("attention: operands that are expressions or views; elementwise consumers; the plan", "[attention][plan]") {
  Tensor<float, shape<4, 100, 16>> q;
  Tensor<float, shape<4, 16, 130>> kt; // k stored transposed: read through a view
  Tensor<float, shape<4, 130, 24>> v;
  Tensor<float, shape<4, 100, 24>> x;
  fill(q, 51), fill(kt, 52), fill(v, 53), fill(x, 54);
  Tensor<float, shape<4, 100, 24>> y = x + attention(q * 2.0f, swapaxes<1, 2>(kt), v, 0.25);
  double worst = 0;
  for (index_t b = 0; b < 4; ++b) {
    auto qa = [&](index_t i, index_t d) { return 2.0f * q(b, i, d); };
    auto ka = [&](index_t j, index_t d) { return kt(b, d, j); };
    auto va = [&](index_t j, index_t e) { return v(b, j, e); };
    auto cmp = [&](index_t i, index_t e, ld r) { worst = std::max(worst, double(std::fabs(ld(y(b, i, e)) - (r + x(b, i, e))))); };
    reference(qa, ka, va, cmp, 100, 130, 16, 24, false, 0.25L);
  }
  CHECK(worst <= 1e-6);

  // The plan: attention at the root takes one nest and no buffer; the elementwise consumer above reads
  // one buffer of the output's size; an operand that is an expression gets a buffer of its own size.
  // Nothing of size Sq x Sk (100 x 130 per batch) is ever planned, unlike the materialised formula.
  using Root = decltype(attention(q, swapaxes<1, 2>(kt), v));
  STATIC_REQUIRE(plan_of<Root>::nests == 1);
  STATIC_REQUIRE(plan_of<Root>::buffers == 0);
  using Consumer = decltype(x + attention(q * 2.0f, swapaxes<1, 2>(kt), v, 0.25));
  STATIC_REQUIRE(plan_of<Consumer>::buffers == 2);
  STATIC_REQUIRE(arena_plan<Consumer>::total == 4 * 100 * 24 * 4 + 4 * 100 * 16 * 4);
  using Formula = decltype(softmax(matmul(q, kt) * 0.25f));
  STATIC_REQUIRE(arena_plan<Formula>::total >= 4 * 100 * 130 * 4); // the scores the formula materialises
  // In a let: the value is evaluated once, read by two consumers.
  // (a + a is exact, so the comparison does not depend on how the compiler contracts floating point.)
  Tensor<float, shape<4, 100, 24>> z = let(attention(q, swapaxes<1, 2>(kt), v), [](const auto& a) { return a + a; });
  Tensor<float, shape<4, 100, 24>> a = attention(q, swapaxes<1, 2>(kt), v);
  bool same = true;
  for (index_t i = 0; i < z.size(); ++i) same = same && z.data()[i] == 2 * a.data()[i];
  CHECK(same);
  // The destination is also every operand: evaluated aside, never overwritten while it is read.
  Tensor<float, shape<4, 100, 16>> self = q, expected = attention(q, q, q);
  self = attention(self, self, self);
  CHECK(std::memcmp(self.data(), expected.data(), sizeof(float) * self.size()) == 0);
}

TEST_CASE("attention: a threaded evaluation gives the bits of two rows at a time", "[attention][determinism]") {
  // Large enough to be split over the pool (ctest runs this with TENFOLD_NUM_THREADS 1 and 2). Two
  // query rows are too few to thread, and every element is computed by the same operations whatever
  // the block it falls in: the bits must agree. (One row alone takes the one-query path, whose bits
  // may differ: the next test.)
  Tensor<float, shape<4, 256, 64>> q, k, v;
  fill(q, 61, 2), fill(k, 62, 2), fill(v, 63);
  Tensor<float, shape<4, 256, 64>> y = attention(q, k, v), yc = attention(q, k, v, causal);
  bool same = true;
  for (index_t b = 0; b < 4; ++b)
    for (index_t i = 0; i + 1 < 256; i += 5) {
      Tensor<float, shape<2, 64>> qi, rows;
      Tensor<float, shape<256, 64>> kb, vb;
      std::memcpy(qi.data(), &q(b, i, 0), sizeof(float) * 2 * 64);
      std::memcpy(kb.data(), &k(b, 0, 0), sizeof(float) * 256 * 64);
      std::memcpy(vb.data(), &v(b, 0, 0), sizeof(float) * 256 * 64);
      rows = attention(qi, kb, vb);
      same = same && std::memcmp(rows.data(), &y(b, i, 0), sizeof(float) * 2 * 64) == 0;
    }
  CHECK(same);
  // Causal: a suffix of the queries keeps each row's visible keys (bottom-right alignment), and the
  // last 8 rows are too few to thread.
  Tensor<float, shape<4, 8, 64>> tail = attention(slice<whole, range<248, 256>, whole>(q), k, v, causal);
  CHECK(std::memcmp(tail.data(), &yc(0, 248, 0), sizeof(float) * 8 * 64) == 0);
  CHECK(std::memcmp(&tail(3, 0, 0), &yc(3, 248, 0), sizeof(float) * 8 * 64) == 0);
}

// One query row (a decode step) reads the keys and values where they lie (cpu/attention.hpp,
// run_one_query): against the reference over key counts on both sides of a vector (16 floats or 8,
// AVX-512 or AVX2), head dimensions with vector tails, causal and not, key_lengths (0 keys: 0), keys
// scored -inf, f64, a k that is a view (the tiled pass), and its bits independent of the thread count.
TEST_CASE("attention: one query row against its keys where they lie", "[attention][decode][determinism]") {
  const auto check = [](auto tag, auto dims, std::uint64_t seed) {
    using T = decltype(tag);
    constexpr index_t B = 2, H = 3, Sk = decltype(dims)::dims[0], D = decltype(dims)::dims[1], Dv = decltype(dims)::dims[2];
    Tensor<T, shape<B, H, 1, D>> q;
    Tensor<T, shape<B, H, Sk, D>> k;
    Tensor<T, shape<B, H, Sk, Dv>> v;
    fill(q, seed, 2), fill(k, seed + 1, 2), fill(v, seed + 2);
    for (index_t n : {index_t(1), index_t(7), index_t(8), index_t(15), index_t(16), index_t(17), Sk}) {
      if (n > Sk) continue;
      for (int c = 0; c < 2; ++c) {
        Tensor<T, shape<B, H, 1, Dv>> y;
        if (c == 1) y = attention(q, k, v, causal, first_keys(n));
        else y = attention(q, k, v, first_keys(n));
        const double worst = worst_error(y, q, k, v, [&](index_t) { return n; }, c == 1);
        INFO((std::is_same_v<T, float> ? "f32" : "f64") << ", Sk " << Sk << ", D " << D << ", Dv " << Dv << ", keys " << n << ", causal " << c
                                                         << ": worst error " << worst);
        CHECK(worst <= 16 * std::numeric_limits<T>::epsilon());
      }
    }
  };
  check(float{}, shape<40, 32, 32>{}, 71);   // the decoder's heads
  check(float{}, shape<17, 24, 20>{}, 72);   // D and Dv with vector tails (16 + 8, 16 + 4; AVX2 8 x 3, 16 + 4)
  check(float{}, shape<33, 1, 70>{}, 73);    // D = 1; Dv 4 vectors + 2 + a tail (AVX-512)
  check(float{}, shape<300, 64, 128>{}, 74); // more keys than a tile's block
  check(double{}, shape<40, 12, 36>{}, 75);

  // key_lengths: element b reads its first lens[b] keys (NaN past them would show); 0 keys give 0.
  constexpr index_t B = 5, H = 2, Sk = 40, D = 32, Dv = 32;
  Tensor<float, shape<B, H, 1, D>> q;
  Tensor<float, shape<B, H, Sk, D>> k;
  Tensor<float, shape<B, H, Sk, Dv>> v;
  fill(q, 81, 2), fill(k, 82, 2), fill(v, 83);
  Tensor<std::int32_t, shape<B>> lens{40, 17, 16, 1, 0};
  for (index_t b = 0; b < B; ++b)
    for (index_t h = 0; h < H; ++h)
      for (index_t j = lens(b); j < Sk; ++j) {
        for (index_t d = 0; d < D; ++d) k(b, h, j, d) = std::numeric_limits<float>::quiet_NaN();
        for (index_t e = 0; e < Dv; ++e) v(b, h, j, e) = std::numeric_limits<float>::quiet_NaN();
      }
  Tensor<float, shape<B, H, 1, Dv>> y = attention(q, k, v, key_lengths(lens));
  const double worst = worst_error(y, q, k, v, [&](index_t b) { return index_t(lens(b)); }, false);
  INFO("key_lengths: worst error " << worst);
  CHECK(worst <= 16 * std::numeric_limits<float>::epsilon()); // NaN fails it
  for (index_t e = 0; e < Dv; ++e) CHECK(y(4, 1, 0, e) == 0.0f);

  // Keys scored -inf weigh 0; a query whose every score is -inf gives 0.
  Tensor<float, shape<1, D>> q1 = full<float, shape<1, D>>(1.0f);
  Tensor<float, shape<20, D>> kp = full<float, shape<20, D>>(0.5f);
  Tensor<float, shape<20, 3>> vp;
  fill(vp, 84);
  const float inf = std::numeric_limits<float>::infinity();
  for (index_t d = 0; d < D; ++d) kp(2, d) = kp(17, d) = -inf;
  Tensor<float, shape<1, 3>> yp = attention(q1, kp, vp);
  for (index_t e = 0; e < 3; ++e) {
    double sum = 0;
    for (index_t j = 0; j < 20; ++j)
      if (j != 2 && j != 17) sum += vp(j, e);
    CHECK(yp(0, e) == Approx(sum / 18).epsilon(1e-6));
  }
  kp = full<float, shape<20, D>>(-inf);
  yp = attention(q1, kp, vp);
  for (index_t e = 0; e < 3; ++e) CHECK(yp(0, e) == 0.0f);

  // k stored transposed (a view: the tiled pass) gives the same values to rounding.
  Tensor<float, shape<B, H, D, Sk>> kt;
  fill(kt, 85, 2);
  Tensor<float, shape<B, H, Sk, D>> kc = swapaxes<2, 3>(kt);
  fill(v, 83);
  Tensor<float, shape<B, H, 1, Dv>> y_view = attention(q, swapaxes<2, 3>(kt), v), y_rows = attention(q, kc, v);
  double gap = 0;
  for (index_t i = 0; i < y_view.size(); ++i) gap = std::max(gap, double(std::fabs(y_view.data()[i] - y_rows.data()[i])));
  CHECK(gap <= 8 * std::numeric_limits<float>::epsilon());

  // Enough work for the pool (ctest runs this with TENFOLD_NUM_THREADS 1 and 2): the bits of each batch
  // element evaluated alone.
  constexpr index_t BH = 16, Sl = 2048, Dl = 64;
  auto ql = std::make_unique<Tensor<float, shape<BH, 1, Dl>>>();
  auto kl = std::make_unique<Tensor<float, shape<BH, Sl, Dl>>>();
  auto vl = std::make_unique<Tensor<float, shape<BH, Sl, Dl>>>();
  fill(*ql, 86, 2), fill(*kl, 87, 2), fill(*vl, 88);
  Tensor<float, shape<BH, 1, Dl>> all = attention(*ql, *kl, *vl);
  bool same = true;
  auto kb = std::make_unique<Tensor<float, shape<Sl, Dl>>>();
  auto vb = std::make_unique<Tensor<float, shape<Sl, Dl>>>();
  for (index_t b = 0; b < BH; ++b) {
    Tensor<float, shape<1, Dl>> qb;
    std::memcpy(qb.data(), &(*ql)(b, 0, 0), sizeof(float) * Dl);
    std::memcpy(kb->data(), &(*kl)(b, 0, 0), sizeof(float) * Sl * Dl);
    std::memcpy(vb->data(), &(*vl)(b, 0, 0), sizeof(float) * Sl * Dl);
    Tensor<float, shape<1, Dl>> one = attention(qb, *kb, *vb);
    same = same && std::memcmp(one.data(), &all(b, 0, 0), sizeof(float) * Dl) == 0;
  }
  CHECK(same);
}

namespace {
// y = e through the CPU kernel with the given tiles, prepared as eval prepares it (tools/tune times it so).
template <class Y, class E>
void eval_with_tiles(Y& y, E&& e, const cpu::attention_config& cfg) {
  using S = typename Y::shape_type;
  auto root = detail::expand_to<S>(detail::as_node(std::forward<E>(e)));
  const auto dst = detail::as_destination(y);
  using P = arena_plan<decltype(root), std::remove_const_t<decltype(dst)>>;
  static_assert(P::bytes == 0);
  cpu::arena_buffers slots{nullptr, P::offsets.data(), P::buffers};
  const auto prepared = plan::prepare_root(std::move(root), slots);
  cpu::run_attention(dst, prepared, cfg);
}
} // namespace

TEST_CASE("attention: every tile configuration the tuner tries agrees with the reference", "[attention][tune]") {
  // tools/tune picks query rows per task (row_panels x MR) and keys per block (key_panels x NR) per
  // machine; each of its candidates must compute attention. 129 queries and 300 keys leave ragged
  // blocks for all of them; causal masks skip whole tiles.
  constexpr index_t Sq = 129, Sk = 300, D = 33, Dv = 40;
  Tensor<float, shape<2, Sq, D>> q;
  Tensor<float, shape<2, Sk, D>> k;
  Tensor<float, shape<2, Sk, Dv>> v;
  fill(q, 71, 2), fill(k, 72, 2), fill(v, 73);
  double vmax = 0;
  for (const float x : v) vmax = std::max(vmax, double(std::fabs(x)));
  const double tol = 16 * std::numeric_limits<float>::epsilon() * vmax;
  for (const bool is_causal : {false, true})
    for (index_t rows = 1; rows <= 4; ++rows)
      for (index_t keys : {1, 2, 4, 8}) {
        Tensor<float, shape<2, Sq, Dv>> y;
        if (is_causal) eval_with_tiles(y, attention(q, k, v, causal), {rows, keys});
        else eval_with_tiles(y, attention(q, k, v), {rows, keys});
        double worst = 0;
        for (index_t b = 0; b < 2; ++b) {
          auto cmp = [&](index_t i, index_t e, ld r) { worst = std::max(worst, double(std::fabs(ld(y(b, i, e)) - r))); };
          reference([&](index_t i, index_t d) { return q(b, i, d); }, [&](index_t j, index_t d) { return k(b, j, d); },
                    [&](index_t j, index_t e) { return v(b, j, e); }, cmp, Sq, Sk, D, Dv, is_causal, 1 / std::sqrt(ld(D)));
        }
        INFO("causal " << is_causal << ", row_panels " << rows << ", key_panels " << keys << ": worst error " << worst << ", tolerance " << tol);
        CHECK(worst <= tol);
      }
  // The tiles are applied: blocks of 32 keys rescale where blocks of 128 do not, which moves last bits.
  Tensor<float, shape<2, Sq, Dv>> y, y_default = attention(q, k, v);
  eval_with_tiles(y, attention(q, k, v), {1, 1});
  CHECK(std::memcmp(y.data(), y_default.data(), sizeof(float) * 2 * Sq * Dv) != 0);
  CHECK_THROWS_AS(eval_with_tiles(y, attention(q, k, v), {0, 4}), tenfold::error);
  CHECK_THROWS_AS(eval_with_tiles(y, attention(q, k, v), {2, 0}), tenfold::error);
}

// A KV cache: attention over the first n keys of k and v (first_keys(n), n at run time) is attention over
// those n keys alone, causal alignment included (query i sees keys j <= i + n - Sq); n > Sk is an error.
TEST_CASE("attention: first_keys(n) reads the first n keys alone (a KV cache filled to n)", "[attention]") {
  constexpr index_t Sk = 150, D = 24, Dv = 20; // 150 keys: past one block of keys (Bc is 128 or less)
  Tensor<float, shape<2, 3, Sk, D>> k;
  Tensor<float, shape<2, 3, Sk, Dv>> v;
  fill(k, 51, 2), fill(v, 52);
  auto check = [&](const auto& q, bool is_causal) {
    using QS = typename std::remove_cvref_t<decltype(q)>::shape_type;
    constexpr index_t Sq = QS::dims[2];
    for (index_t n : {index_t(Sq), index_t(Sq + 1), index_t(17), index_t(129), Sk}) {
      if (n < Sq && is_causal) continue;
      // the keys past n are NaN: read, they would show in every output
      auto kn = k;
      auto vn = v;
      for (index_t b = 0; b < 2; ++b)
        for (index_t h = 0; h < 3; ++h)
          for (index_t j = n; j < Sk; ++j) {
            for (index_t d = 0; d < D; ++d) kn(b, h, j, d) = std::numeric_limits<float>::quiet_NaN();
            for (index_t e = 0; e < Dv; ++e) vn(b, h, j, e) = std::numeric_limits<float>::quiet_NaN();
          }
      Tensor<float, shape<2, 3, Sq, Dv>> y;
      if (is_causal) y = attention(q, kn, vn, causal, first_keys(n));
      else y = attention(q, kn, vn, first_keys(n));
      const double worst = worst_error(y, q, kn, vn, [&](index_t) { return n; }, is_causal);
      INFO("Sq " << Sq << ", first_keys(" << n << "), causal " << is_causal << ": worst error " << worst);
      CHECK(worst <= 16 * std::numeric_limits<float>::epsilon()); // NaN fails it
    }
  };
  Tensor<float, shape<2, 3, 1, D>> q1; // a decode step
  Tensor<float, shape<2, 3, 7, D>> q7; // a few positions at once
  fill(q1, 53, 2), fill(q7, 54, 2);
  check(q1, false), check(q1, true), check(q7, false), check(q7, true);
  // the node's `at` (the portable path) reads the same prefix
  const auto node = attention(q7, k, v, causal, first_keys(40));
  Tensor<float, shape<2, 3, 7, Dv>> y = node;
  const index_t idx[4] = {1, 2, 6, 5};
  CHECK(node.at(idx) == Approx(y(1, 2, 6, 5)).margin(1e-5));
  CHECK_THROWS_WITH(attention(q1, k, v, first_keys(151)), Catch::Contains("first_keys(151), but k and v hold 150 keys"));
  CHECK_THROWS_WITH(attention(q1, k, v, causal, first_keys(-1)), Catch::Contains("first_keys(-1)"));
}

// Sentences padded to one length: key_lengths(lens) has batch element b read its first lens[b] keys
// alone (the padding is never read: NaN there would show), lengths across a block of keys, 1 and 0 (no
// key: the rows are 0); a length outside [0, Sk] is an error, when built and when evaluated.
TEST_CASE("attention: key_lengths(lens) reads each batch element's first lens[b] keys", "[attention]") {
  constexpr index_t B = 4, H = 3, Sq = 150, Sk = 150, D = 24, Dv = 20;
  Tensor<float, shape<B, H, Sq, D>> q;
  Tensor<float, shape<B, H, Sk, D>> k;
  Tensor<float, shape<B, H, Sk, Dv>> v;
  fill(q, 61, 2), fill(k, 62, 2), fill(v, 63);
  Tensor<std::int32_t, shape<B>> lens{150, 129, 1, 0};
  for (index_t b = 0; b < B; ++b)
    for (index_t h = 0; h < H; ++h)
      for (index_t j = lens(b); j < Sk; ++j) {
        for (index_t d = 0; d < D; ++d) k(b, h, j, d) = std::numeric_limits<float>::quiet_NaN();
        for (index_t e = 0; e < Dv; ++e) v(b, h, j, e) = std::numeric_limits<float>::quiet_NaN();
      }
  Tensor<float, shape<B, H, Sq, Dv>> y = attention(q, k, v, key_lengths(lens));
  const double worst = worst_error(y, q, k, v, [&](index_t b) { return index_t(lens(b)); }, false);
  INFO("worst error " << worst);
  CHECK(worst <= 16 * std::numeric_limits<float>::epsilon()); // NaN fails it
  for (index_t i = 0; i < Sq; ++i) CHECK(y(3, 1, i, 7) == 0.0f); // no key: 0
  // the node's `at` (the portable path) reads the same keys
  const auto node = attention(q, k, v, key_lengths(lens));
  const index_t idx[4] = {1, 2, 140, 5};
  CHECK(node.at(idx) == Approx(y(1, 2, 140, 5)).margin(1e-5));
  // a fused consumer, and a broadcast k and v (one set of keys, each sentence its own prefix of it)
  Tensor<float, shape<1, 1, Sk, D>> k1;
  Tensor<float, shape<1, 1, Sk, Dv>> v1;
  fill(k1, 64, 2), fill(v1, 65);
  Tensor<float, shape<B, H, Sq, Dv>> y1 = attention(q, k1, v1, key_lengths(lens)) * 2.0f;
  // (the packed K and V are those of one batch element: the next with other lengths repacks them)
  double worst1 = 0;
  for (index_t b = 0; b < B; ++b)
    for (index_t h = 0; h < H; ++h) {
      auto qa = [&](index_t i, index_t d) { return q(b, h, i, d); };
      auto ka = [&](index_t j, index_t d) { return k1(0, 0, j, d); };
      auto va = [&](index_t j, index_t e) { return v1(0, 0, j, e); };
      auto cmp = [&](index_t i, index_t e, ld r) { worst1 = std::max(worst1, double(std::fabs(ld(y1(b, h, i, e)) - 2 * r))); };
      reference(qa, ka, va, cmp, Sq, lens(b), D, Dv, false, 1 / std::sqrt(ld(D)));
    }
  INFO("broadcast k and v: worst error " << worst1);
  CHECK(worst1 <= 32 * std::numeric_limits<float>::epsilon());
  lens(2) = 151;
  CHECK_THROWS_WITH(attention(q, k, v, key_lengths(lens)), Catch::Contains("key_lengths[2] is 151, but k and v hold 150 keys"));
  lens(2) = 1;
  const auto later = attention(q, k, v, key_lengths(lens));
  lens(0) = -1; // changed after the expression was built: the evaluation checks again
  CHECK_THROWS_WITH(y = later, Catch::Contains("key_lengths[0] is -1"));
  // lengths marked as device memory (what cuda::key_lengths makes) are never read on the host
  lens(0) = 2;
  const key_lengths_t<B> on_device{lens.data(), true};
  CHECK_THROWS_WITH(y = attention(q, k, v, on_device), Catch::Contains("key_lengths in device memory"));
}
