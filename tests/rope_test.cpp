// rope(x, cos, sin) (ops/rope.hpp): against the rotation written out in long double, for a [B, H, T, D]
// and a [T, D] operand; its derivative (through the autodiff walk) is the rotation by -θ.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>

#include <tenfold/autodiff/backward.hpp>
#include <tenfold/tenfold.hpp>

using namespace tenfold;
using ld = long double;

namespace {
template <class T, class S>
void fill(Tensor<T, S>& t, std::uint64_t seed) {
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
  for (auto& x : t) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = T(-1.0 + 2.0 * double(s >> 11) * 0x1p-53);
  }
}
ld angle(index_t t, index_t i, index_t D) { return ld(t) * std::pow(10000.0L, -2.0L * ld(i) / ld(D)); }

// out[.., t, i] = x_i cos θ - x_{i+h} sin θ, out[.., t, i+h] = x_{i+h} cos θ + x_i sin θ, over `rows`
// rows of T positions (a flat view of the leading axes).
template <class X, class Y>
double worst_rotation_error(const X& x, const Y& y, index_t rows, index_t T, index_t D, int sign) {
  const index_t h = D / 2;
  double worst = 0;
  for (index_t r = 0; r < rows; ++r)
    for (index_t t = 0; t < T; ++t)
      for (index_t i = 0; i < h; ++i) {
        const ld c = std::cos(angle(t, i, D)), s = sign * std::sin(angle(t, i, D));
        const auto* xr = x.data() + (r * T + t) * D;
        const auto* yr = y.data() + (r * T + t) * D;
        const ld a = ld(xr[i]) * c - ld(xr[i + h]) * s, b = ld(xr[i + h]) * c + ld(xr[i]) * s;
        worst = std::max({worst, double(std::fabs(ld(yr[i]) - a)), double(std::fabs(ld(yr[i + h]) - b))});
      }
  return worst;
}
} // namespace

TEST_CASE("rope: heads of [B, H, T, D] and a plain [T, D], against the rotation in long double", "[rope]") {
  {
    Tensor<double, shape<2, 3, 5, 8>> x;
    fill(x, 1);
    const rope_tables<double, 5, 8> t;
    Tensor<double, shape<2, 3, 5, 8>> y = rope(x, t.cos, t.sin);
    CHECK(worst_rotation_error(x, y, 6, 5, 8, 1) < 1e-15);
  }
  {
    Tensor<float, shape<7, 6>> x;
    fill(x, 2);
    const rope_tables<float, 7, 6> t;
    Tensor<float, shape<7, 6>> y = rope(x, t.cos, t.sin);
    CHECK(worst_rotation_error(x, y, 1, 7, 6, 1) < 4e-7);
  }
  {
    // an operand that is an expression, and a consumer in the same nest
    Tensor<float, shape<4, 3, 16>> x;
    fill(x, 3);
    const rope_tables<float, 3, 16> t;
    Tensor<float, shape<4, 3, 16>> y = rope(x * 2.0f, t.cos, t.sin) + 1.0f, x2 = x * 2.0f, r = rope(x2, t.cos, t.sin);
    for (index_t i = 0; i < index_t(y.size()); ++i) CHECK(y.data()[i] == r.data()[i] + 1.0f);
  }
}

// Nests large enough for the pool whose runs are short (the halves: rows of D/2 floats) walk blocks of
// rows over the axes before the run (cpu/evaluator.hpp, short_run_axes): every row of every block, in
// the decoder's shape (16-float rows, whole vectors) and with rows of 12 (no whole vector, a tail only).
TEST_CASE("rope: the decoder's heads and ragged rows, nests of short runs over the pool", "[rope]") {
  {
    static Tensor<float, shape<12, 4, 64, 32>> x, y;
    fill(x, 4);
    const rope_tables<float, 64, 32> t;
    y = rope(x, t.cos, t.sin);
    CHECK(worst_rotation_error(x, y, 48, 64, 32, 1) < 4e-7);
  }
  {
    static Tensor<float, shape<2, 3, 700, 24>> x, y;
    fill(x, 5);
    const rope_tables<float, 700, 24> t;
    y = rope(x, t.cos, t.sin);
    CHECK(worst_rotation_error(x, y, 6, 700, 24, 1) < 2e-6);
  }
}

TEST_CASE("rope: the derivative is the rotation by -θ", "[rope][autodiff]") {
  Tensor<double, shape<2, 4, 6, 10>> x, w;
  fill(x, 4), fill(w, 5);
  const rope_tables<double, 6, 10> t;
  auto [value, dx] = value_and_grad([&](const auto& x_) { return sum(rope(x_, t.cos, t.sin) * w); }, x);
  Tensor<double, shape<2, 4, 6, 10>> g = dx;
  Tensor<double> v = value;
  // the gradient of sum(R x * w) is Rᵀ w = R(-θ) w
  CHECK(worst_rotation_error(w, g, 8, 6, 10, -1) < 1e-15);
  Tensor<double, shape<2, 4, 6, 10>> y = rope(x, t.cos, t.sin);
  double direct = 0;
  for (index_t i = 0; i < index_t(y.size()); ++i) direct += y.data()[i] * w.data()[i];
  CHECK(v() == Approx(direct).epsilon(1e-14));
}
