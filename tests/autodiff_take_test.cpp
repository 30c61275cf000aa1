// Gradients through take and embedding (autodiff/backward.hpp, core/scatter_node.hpp): the source's
// gradient is g scattered back onto the rows the indices name, repeated indices accumulating; the
// indices have none. Each loss is linear in the value differentiated, sum(f(x) * r) with a random r,
// and its exact gradient is written below from the definitions in long double, independently of tenfold.
#include <catch2/catch.hpp>
#include <tenfold/autodiff/backward.hpp>
#include <tenfold/tenfold.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

using namespace tenfold;
using ld = long double;

namespace {
template <class T, class S>
Tensor<T, S> random_tensor(unsigned seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Tensor<T, S> t;
  for (auto& v : t) v = T(u(g));
  return t;
}

template <class T, class S>
double worst_error(const Tensor<T, S>& got, const std::vector<ld>& want) {
  REQUIRE(want.size() == std::size_t(S::size));
  ld worst = 0;
  for (index_t i = 0; i < S::size; ++i)
    worst = std::max(worst, std::fabs(ld(got.data()[i]) - want[std::size_t(i)]) /
                                std::max(std::fabs(want[std::size_t(i)]), 1.0L));
  return double(worst);
}

constexpr index_t V = 11, D = 7, B = 4, S = 6;
// Ids with repeats (3 appears five times, 10 twice) and rows never read (5, 6).
template <class I>
Tensor<I, shape<B, S>> token_ids() {
  return Tensor<I, shape<B, S>>{3, 0, 3, 10, 1, 2, 4, 3, 3, 7, 8, 9, 10, 0, 1, 2, 3, 4, 9, 8, 7, 1, 1, 1};
}

// d/dE of sum(embedding(E, ids) * r): r's rows added into the rows the ids name.
template <class T, class I>
std::vector<ld> embedding_reference(const Tensor<I, shape<B, S>>& ids, const T* r) {
  std::vector<ld> g(V * D, 0);
  for (index_t t = 0; t < B * S; ++t)
    for (index_t d = 0; d < D; ++d) g[std::size_t(ids.data()[t] * D + d)] += r[t * D + d];
  return g;
}

template <class T, class I>
void check_embedding() {
  const auto table = random_tensor<T, shape<V, D>>(1);
  const auto r = random_tensor<T, shape<B, S, D>>(2);
  const auto ids = token_ids<I>();
  auto [loss, de] = value_and_grad([&](const auto& e) { return sum(embedding(e, ids) * r); }, table);
  const Tensor<T, shape<V, D>> got = de;
  const double tol = std::is_same_v<T, float> ? 1e-6 : 1e-15;
  CHECK(worst_error(got, embedding_reference(ids, r.data())) < tol);
  // Into a strided destination (a transposed view): the scatter zeroes and adds through its strides.
  Tensor<T, shape<D, V>> flipped_layout;
  eval(transpose(flipped_layout), de);
  const Tensor<T, shape<V, D>> back = transpose(flipped_layout);
  CHECK(worst_error(back, embedding_reference(ids, r.data())) < tol);
  // Through a computed source: d/dE sum(embedding(exp(E), ids) * r) = exp(E) * the scatter.
  auto [l2, de2] = value_and_grad([&](const auto& e) { return sum(embedding(exp(e), ids) * r); }, table);
  const Tensor<T, shape<V, D>> got2 = de2;
  auto want2 = embedding_reference(ids, r.data());
  for (index_t k = 0; k < V * D; ++k) want2[std::size_t(k)] *= std::exp(ld(table.data()[k]));
  CHECK(worst_error(got2, want2) < 4 * tol);
}
} // namespace

TEST_CASE("embedding: the table's gradient is a scatter-add of g (int32 and int64 ids, repeats)", "[autodiff][take]") {
  check_embedding<float, std::int32_t>();
  check_embedding<float, std::int64_t>();
  check_embedding<double, std::int32_t>();
  check_embedding<double, std::int64_t>();
}

namespace {
struct ln_grads {
  std::vector<ld> table, pos, gamma, beta;
};
// d/d(E, pos, gamma, beta) of sum(layer_norm(embedding(E, ids) + pos, gamma, beta) * r), pos [S, D]
// broadcast over the batch: the row-wise layer_norm backward, then the rows scattered by id.
template <class T, class I>
ln_grads layer_norm_reference(const Tensor<I, shape<B, S>>& ids, const T* e, const T* pos, const T* gamma, const T* r) {
  ln_grads g{std::vector<ld>(V * D, 0), std::vector<ld>(S * D, 0), std::vector<ld>(D, 0), std::vector<ld>(D, 0)};
  const ld eps = ld(1e-5f);
  for (index_t b = 0; b < B; ++b)
    for (index_t s = 0; s < S; ++s) {
      const index_t t = b * S + s, v = ids.data()[t];
      ld x[D], xhat[D], dxhat[D], mu = 0, var = 0;
      for (index_t d = 0; d < D; ++d) x[d] = ld(e[v * D + d]) + pos[s * D + d], mu += x[d] / D;
      for (index_t d = 0; d < D; ++d) var += (x[d] - mu) * (x[d] - mu) / D;
      const ld inv = 1 / std::sqrt(var + eps);
      ld m1 = 0, m2 = 0;
      for (index_t d = 0; d < D; ++d) {
        xhat[d] = (x[d] - mu) * inv;
        const ld gy = r[t * D + d];
        g.beta[std::size_t(d)] += gy;
        g.gamma[std::size_t(d)] += gy * xhat[d];
        dxhat[d] = gy * gamma[d];
        m1 += dxhat[d] / D, m2 += dxhat[d] * xhat[d] / D;
      }
      for (index_t d = 0; d < D; ++d) {
        const ld dx = inv * (dxhat[d] - m1 - xhat[d] * m2);
        g.table[std::size_t(v * D + d)] += dx;
        g.pos[std::size_t(s * D + d)] += dx;
      }
    }
  return g;
}

template <class T, class I>
void check_layer_norm() {
  const auto table = random_tensor<T, shape<V, D>>(3);
  const auto pos = random_tensor<T, shape<S, D>>(4);
  const auto gamma = random_tensor<T, shape<D>>(5);
  const auto beta = random_tensor<T, shape<D>>(6);
  const auto r = random_tensor<T, shape<B, S, D>>(7);
  const auto ids = token_ids<I>();
  auto [loss, de, dp, dg, db] =
      value_and_grad([&](const auto& e, const auto& p, const auto& g,
                         const auto& b) { return sum(layer_norm(embedding(e, ids) + p, g, b) * r); },
                     table, pos, gamma, beta);
  const Tensor<T, shape<V, D>> ge = de;
  const Tensor<T, shape<S, D>> gp = dp;
  const Tensor<T, shape<D>> gg = dg, gb = db;
  const auto want = layer_norm_reference(ids, table.data(), pos.data(), gamma.data(), r.data());
  const double tol = std::is_same_v<T, float> ? 2e-5 : 1e-12;
  CHECK(worst_error(ge, want.table) < tol);
  CHECK(worst_error(gp, want.pos) < tol);
  CHECK(worst_error(gg, want.gamma) < tol);
  CHECK(worst_error(gb, want.beta) < tol);
}
} // namespace

TEST_CASE("embedding: layer_norm(embedding(E, ids) + pos, gamma, beta), every parameter's gradient",
          "[autodiff][take]") {
  check_layer_norm<float, std::int32_t>();
  check_layer_norm<double, std::int64_t>();
}

TEST_CASE("embedding: a tied table, read by the lookup and by the output projection", "[autodiff][take]") {
  // logits[t, v] = <E[ids[t]], E[v]>: the scatter (materialised, not the root) plus a matmul's gradient.
  constexpr index_t T = B * S;
  const auto table = random_tensor<double, shape<V, D>>(8);
  const auto r = random_tensor<double, shape<T, V>>(9);
  const auto ids2 = token_ids<std::int32_t>();
  const auto ids = reshape<T>(ids2);
  auto [loss, de] =
      value_and_grad([&](const auto& e) { return sum(matmul(embedding(e, ids), transpose(e)) * r); }, table);
  const Tensor<double, shape<V, D>> got = de;
  std::vector<ld> want(V * D, 0);
  for (index_t t = 0; t < T; ++t) {
    const index_t u = ids2.data()[t];
    for (index_t v = 0; v < V; ++v)
      for (index_t d = 0; d < D; ++d) {
        want[std::size_t(u * D + d)] += r(t, v) * ld(table(v, d));
        want[std::size_t(v * D + d)] += r(t, v) * ld(table(u, d));
      }
  }
  CHECK(worst_error(got, want) < 1e-13);
}

TEST_CASE("take: gradients along other axes, and of take_along_axis", "[autodiff][take]") {
  const auto x = random_tensor<double, shape<3, 5, 4>>(10);
  const Tensor<std::int64_t, shape<2, 3>> idx{4, 0, 4, 1, 4, 2};
  // take<1>: out [3, 2, 3, 4]; rows along the middle axis.
  const auto r1 = random_tensor<double, shape<3, 2, 3, 4>>(11);
  auto [l1, d1] = value_and_grad([&](const auto& x_) { return sum(take<1>(x_, idx) * r1); }, x);
  const Tensor<double, shape<3, 5, 4>> g1 = d1;
  std::vector<ld> want1(3 * 5 * 4, 0);
  for (index_t i = 0; i < 3; ++i)
    for (index_t a = 0; a < 2; ++a)
      for (index_t b = 0; b < 3; ++b)
        for (index_t k = 0; k < 4; ++k) want1[std::size_t((i * 5 + idx(a, b)) * 4 + k)] += r1(i, a, b, k);
  CHECK(worst_error(g1, want1) < 1e-15);

  // take<-1> with indices into the last axis (extent 4): the indexed axis is the innermost one.
  const Tensor<std::int32_t, shape<5>> last{3, 3, 0, 3, 1};
  const auto r2 = random_tensor<double, shape<3, 5, 5>>(12);
  auto [l2, d2] = value_and_grad([&](const auto& x_) { return sum(take<-1>(x_, last) * r2); }, x);
  const Tensor<double, shape<3, 5, 4>> g2 = d2;
  std::vector<ld> want2(3 * 5 * 4, 0);
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 5; ++j)
      for (index_t k = 0; k < 5; ++k) want2[std::size_t((i * 5 + j) * 4 + last(k))] += r2(i, j, k);
  CHECK(worst_error(g2, want2) < 1e-15);

  // take_along_axis<1> (torch.gather) with indices narrower than the source off the axis.
  const Tensor<std::int64_t, shape<2, 3, 4>> along{0, 1, 2, 3, 4, 4, 4, 4, 1, 1, 0, 0,
                                                   2, 3, 2, 3, 0, 0, 0, 0, 4, 3, 2, 1};
  const auto r3 = random_tensor<double, shape<2, 3, 4>>(13);
  auto [l3, d3] = value_and_grad([&](const auto& x_) { return sum(take_along_axis<1>(x_, along) * r3); }, x);
  const Tensor<double, shape<3, 5, 4>> g3 = d3;
  std::vector<ld> want3(3 * 5 * 4, 0);
  for (index_t i = 0; i < 2; ++i)
    for (index_t j = 0; j < 3; ++j)
      for (index_t k = 0; k < 4; ++k) want3[std::size_t((i * 5 + along(i, j, k)) * 4 + k)] += r3(i, j, k);
  CHECK(worst_error(g3, want3) < 1e-15);

  // The same scatter through `at` (the fallback every backend can run), element by element.
  auto [v1] = vjp([&](const auto& x_) { return take<1>(x_, idx); }, r1, x);
  auto [v3] = vjp([&](const auto& x_) { return take_along_axis<1>(x_, along); }, r3, x);
  index_t at[3];
  ld worst = 0;
  for (index_t k = 0; k < 3 * 5 * 4; ++k) {
    detail::unravel<shape<3, 5, 4>>(k, at);
    worst = std::max(worst, std::fabs(ld(v1.at(at)) - want1[std::size_t(k)]) +
                                std::fabs(ld(v3.at(at)) - want3[std::size_t(k)]));
  }
  CHECK(worst < 1e-15);
}

TEST_CASE("embedding: an id out of range is an error when the gradient is evaluated, not a write out of bounds",
          "[autodiff][take]") {
  const auto table = random_tensor<float, shape<V, D>>(14);
  const auto r = random_tensor<float, shape<B, S, D>>(15);
  auto ids = token_ids<std::int32_t>();
  auto [loss, de] = value_and_grad([&](const auto& e) { return sum(embedding(e, ids) * r); }, table);
  ids(2, 3) = V; // after the expression is built: the check runs when it is evaluated
  Tensor<float, shape<V, D>> got;
  CHECK_THROWS_WITH(got = de, Catch::Contains("index 11 at [2, 3]") && Catch::Contains("gradient"));
  ids(2, 3) = -1;
  CHECK_THROWS_WITH(got = de, Catch::Contains("index -1"));
}
