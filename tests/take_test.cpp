// take, embedding, take_along_axis / gather (core/gather_node.hpp): against plain loops, fused with
// their consumers, with views for indices and computed sources, and every index checked first.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <tenfold/tenfold.hpp>

using namespace tenfold;
using Catch::Contains;

namespace {
template <class T, class S>
void iota(Tensor<T, S>& t, double scale = 1.0, double shift = 0.0) {
  for (index_t k = 0; k < S::size; ++k) t.data()[k] = static_cast<T>(double(k) * scale + shift);
}
} // namespace

TEST_CASE("take: every axis of a rank-3 source, int32 and int64 indices", "[take]") {
  Tensor<float, shape<3, 4, 5>> x;
  iota(x, 0.5, -7.0);
  const Tensor<std::int32_t, shape<2, 3>> i32{2, 0, 1, 1, 2, 2};
  const Tensor<std::int64_t, shape<2, 3>> i64{3, 0, 1, 1, 2, 3};

  Tensor<float, shape<2, 3, 4, 5>> t0 = take<0>(x, i32);
  Tensor<float, shape<3, 2, 3, 5>> t1 = take<1>(x, i64);
  Tensor<float, shape<3, 4, 2, 3>> t2 = take<-1>(x, i32);
  int wrong = 0;
  for (index_t a = 0; a < 2; ++a)
    for (index_t b = 0; b < 3; ++b)
      for (index_t i = 0; i < 3; ++i)
        for (index_t j = 0; j < 4; ++j)
          for (index_t k = 0; k < 5; ++k) {
            if (i < 3 && t0(a, b, j, k) != x(i32(a, b), j, k)) ++wrong;
            if (t1(i, a, b, k) != x(i, i64(a, b), k)) ++wrong;
            if (t2(i, j, a, b) != x(i, j, i32(a, b))) ++wrong;
          }
  CHECK(wrong == 0);
}

TEST_CASE("embedding: token rows, plus positions, through layer_norm in one nest", "[take]") {
  constexpr index_t V = 50, D = 24, B = 2, S = 7;
  Tensor<float, shape<V, D>> table;
  Tensor<float, shape<S, D>> pos;
  Tensor<float, shape<D>> gamma, beta;
  for (index_t k = 0; k < V * D; ++k) table.data()[k] = std::sin(float(k) * 0.37f);
  for (index_t k = 0; k < S * D; ++k) pos.data()[k] = std::cos(float(k) * 0.11f);
  for (index_t k = 0; k < D; ++k) gamma.data()[k] = 1.0f + 0.01f * float(k), beta.data()[k] = -0.02f * float(k);
  Tensor<std::int64_t, shape<B, S>> ids{0, 49, 3, 3, 17, 8, 1, 48, 2, 2, 2, 9, 10, 0};

  Tensor<float, shape<B, S, D>> e = embedding(table, ids);
  for (index_t b = 0; b < B; ++b)
    for (index_t s = 0; s < S; ++s)
      for (index_t d = 0; d < D; ++d) REQUIRE(e(b, s, d) == table(ids(b, s), d));

  // Fused: the lookup feeds the row pass directly. Reference: the same from materialised rows, and
  // from plain loops in double.
  Tensor<float, shape<B, S, D>> fused = layer_norm(embedding(table, ids) + pos, gamma, beta, 1e-5f);
  Tensor<float, shape<B, S, D>> rows = e + pos;
  Tensor<float, shape<B, S, D>> staged = layer_norm(rows, gamma, beta, 1e-5f);
  double worst = 0;
  for (index_t b = 0; b < B; ++b)
    for (index_t s = 0; s < S; ++s) {
      double mean = 0, var = 0;
      for (index_t d = 0; d < D; ++d) mean += double(table(ids(b, s), d)) + double(pos(s, d));
      mean /= D;
      for (index_t d = 0; d < D; ++d) {
        const double v = double(table(ids(b, s), d)) + double(pos(s, d)) - mean;
        var += v * v;
      }
      var /= D;
      for (index_t d = 0; d < D; ++d) {
        const double v = double(table(ids(b, s), d)) + double(pos(s, d));
        const double want = (v - mean) / std::sqrt(var + 1e-5) * double(gamma(d)) + double(beta(d));
        worst = std::max(worst, std::abs(double(fused(b, s, d)) - want));
        CHECK(fused(b, s, d) == Approx(staged(b, s, d)).margin(1e-6));
      }
    }
  CHECK(worst < 1e-5);
}

TEST_CASE("take: indices through a view, a computed source, inside let and an arena", "[take]") {
  Tensor<float, shape<6, 4>> x;
  iota(x, 1.0, 1.0);
  const Tensor<std::int32_t, shape<3, 2>> idt{5, 0, 1, 4, 2, 2}; // read transposed: [[5, 1, 2], [0, 4, 2]]
  Tensor<float, shape<2, 3, 4>> t = take<0>(exp(x * 0.1f), transpose(idt));
  for (index_t a = 0; a < 2; ++a)
    for (index_t b = 0; b < 3; ++b)
      for (index_t j = 0; j < 4; ++j) CHECK(t(a, b, j) == Approx(std::exp(0.1f * x(idt(b, a), j))).epsilon(1e-6));

  // The source a GEMM (materialised first), the lookup in the consumer's nest.
  Tensor<float, shape<4, 4>> w;
  iota(w, 0.25, -2.0);
  Tensor<float, shape<2, 3, 4>> via_gemm = take<0>(matmul(x, w), transpose(idt)) * 2.0f;
  Tensor<float, shape<6, 4>> xw = matmul(x, w);
  for (index_t a = 0; a < 2; ++a)
    for (index_t b = 0; b < 3; ++b)
      for (index_t j = 0; j < 4; ++j) CHECK(via_gemm(a, b, j) == 2.0f * xw(idt(b, a), j));

  // In a let body, and with every buffer in a caller's arena.
  Tensor<float, shape<3, 2, 4>> in_let = let(x * 3.0f, [&](const auto& p) { return take<0>(p, idt) + 1.0f; });
  CHECK(in_let(0, 0, 1) == 3.0f * x(5, 1) + 1.0f);
  using E = decltype(take<0>(matmul(x, w), idt));
  alignas(64) static std::byte arena[4096];
  static_assert(eval_arena_bytes<Tensor<float, shape<3, 2, 4>>, E> <= index_t(sizeof arena));
  Tensor<float, shape<3, 2, 4>> in_arena;
  eval(in_arena, take<0>(matmul(x, w), idt), std::span<std::byte>(arena));
  CHECK(in_arena(2, 1, 3) == xw(2, 3));
}

TEST_CASE("take_along_axis / gather: as NumPy's and torch.gather", "[take]") {
  Tensor<float, shape<4, 5>> x;
  iota(x, 1.5, 0.0);
  const Tensor<std::int64_t, shape<4, 1>> labels{3, 0, 4, 1};
  Tensor<float, shape<4, 1>> picked = take_along_axis<1>(x, labels);
  for (index_t i = 0; i < 4; ++i) CHECK(picked(i, 0) == x(i, labels(i, 0)));
  // A cross-entropy's pick, fused with what consumes it: -log_softmax(x)[i, label_i].
  Tensor<float, shape<4, 1>> nll = -take_along_axis<1>(log_softmax(x, axis<1>), labels);
  for (index_t i = 0; i < 4; ++i) {
    double m = -1e300, s = 0;
    for (index_t j = 0; j < 5; ++j) m = std::max(m, double(x(i, j)));
    for (index_t j = 0; j < 5; ++j) s += std::exp(double(x(i, j)) - m);
    CHECK(nll(i, 0) == Approx(-(double(x(i, labels(i, 0))) - m - std::log(s))).epsilon(1e-5));
  }
  // Along axis 0, with fewer columns than the source (torch.gather allows it).
  const Tensor<std::int32_t, shape<2, 3>> rows{3, 0, 1, 2, 2, 0};
  Tensor<float, shape<2, 3>> g = gather<0>(x, rows);
  for (index_t i = 0; i < 2; ++i)
    for (index_t j = 0; j < 3; ++j) CHECK(g(i, j) == x(rows(i, j), j));
}

TEST_CASE("take: an index out of range is an error naming it, and nothing is written", "[take]") {
  Tensor<float, shape<5, 3>> table;
  iota(table);
  Tensor<std::int32_t, shape<2, 2>> ids{0, 1, 2, 3};
  Tensor<float, shape<2, 2, 3>> out = full<float, shape<2, 2, 3>>(-1.0f);
  ids(1, 0) = 5;
  CHECK_THROWS_WITH(out = embedding(table, ids),
                    Contains("tenfold::take: index 5 at [1, 0] of the indices is out of range for axis 0 of extent 5"));
  ids(1, 0) = -1;
  CHECK_THROWS_WITH(out = embedding(table, ids) * 2.0f, Contains("index -1 at [1, 0]"));
  for (index_t k = 0; k < 12; ++k) CHECK(out.data()[k] == -1.0f);

  Tensor<float, shape<5, 3>> x;
  iota(x);
  const Tensor<std::int64_t, shape<5, 1>> col{0, 1, 2, 3, 2};
  Tensor<float, shape<5, 1>> y;
  CHECK_THROWS_WITH(y = take_along_axis<1>(x, col), Contains("tenfold::take_along_axis: index 3 at [3, 0] of the indices is out of range for axis 1 of extent 3"));
  // A large id in int64 is reported as itself, not truncated.
  const Tensor<std::int64_t, shape<1>> huge{std::int64_t(1) << 40};
  Tensor<float, shape<1, 3>> h;
  CHECK_THROWS_WITH(h = embedding(table, huge), Contains("index 1099511627776 at [0]"));
}
