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

// The derivative as the decoder's trainer takes it: the gradient of the rotated heads [B, H, T, D] back
// into q's layout [B, T, H, D] (heads permuted). The walk's nest reads the halves flipped, times
// rotate_half's sign (an arange), reshaped back to [..., D] and permuted; it runs over [..., 2, D/2],
// where those reshapes cancel (cpu/split_rows.hpp). Against R(-θ) g in long double, in the decoder's
// shape (pool-sized) and in a small one with halves of 3 (no whole vector).
TEST_CASE("rope: the derivative into a permuted layout, the nest over the halves", "[rope][autodiff]") {
  auto check = [](auto& q, auto& g, auto& dq, auto T, auto D, double tol) {
    using G = std::remove_cvref_t<decltype(g)>;
    constexpr index_t B = G::shape_type::dims[0], H = G::shape_type::dims[1];
    const rope_tables<float, decltype(T)::value, decltype(D)::value> t;
    auto [d] = vjp([&](const auto& q_) { return rope(permute<0, 2, 1, 3>(q_), t.cos, t.sin); }, g, q);
    dq = d;
    // dq permuted back to [B, H, T, D] is R(-θ) g
    std::remove_cvref_t<decltype(g)> back = permute<0, 2, 1, 3>(dq);
    CHECK(worst_rotation_error(g, back, B * H, decltype(T)::value, decltype(D)::value, -1) < tol);
  };
  {
    static Tensor<float, shape<12, 64, 4, 32>> q, dq;
    static Tensor<float, shape<12, 4, 64, 32>> g;
    fill(q, 6), fill(g, 7);
    check(q, g, dq, std::integral_constant<index_t, 64>{}, std::integral_constant<index_t, 32>{}, 4e-7);
  }
  {
    Tensor<float, shape<2, 5, 3, 6>> q, dq;
    Tensor<float, shape<2, 3, 5, 6>> g;
    fill(q, 8), fill(g, 9);
    check(q, g, dq, std::integral_constant<index_t, 5>{}, std::integral_constant<index_t, 6>{}, 4e-7);
  }
  // the nest's form written by hand: it takes the split, and each element is the index arithmetic's
  Tensor<float, shape<3, 4, 20, 32>> x;
  Tensor<float, shape<3, 20, 4, 32>> c, y;
  fill(x, 10), fill(c, 11);
  auto e = permute<0, 2, 1, 3>(reshape<3, 4, 20, 32>(flip<3>(reshape<3, 4, 20, 2, 16>(x)) * reshape<2, 1>(arange<float, 2>(-1, 2)))) + c;
  STATIC_REQUIRE(cpu::split_rows_factor<decltype(detail::as_node(y)), decltype(e)>() == 16);
  y = e;
  int wrong = 0;
  for (index_t b = 0; b < 3; ++b)
    for (index_t t = 0; t < 20; ++t)
      for (index_t h = 0; h < 4; ++h)
        for (index_t i = 0; i < 32; ++i) {
          const float sign = i < 16 ? -1.0f : 1.0f;
          wrong += y(b, t, h, i) != x(b, h, t, i < 16 ? i + 16 : i - 16) * sign + c(b, t, h, i);
        }
  CHECK(wrong == 0);
}
