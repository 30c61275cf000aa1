// The gradient of attention (autodiff/backward.hpp) with respect to q, k and v, plain and causal (more
// keys than queries: the bottom-right aligned mask), on leaves and on computed operands, against central
// differences of an independent long-double attention (step 1e-6: truncation and rounding near 1e-12).
#include <catch2/catch.hpp>
#include <tenfold/autodiff/backward.hpp>
#include <tenfold/tenfold.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace tenfold;
using ld = long double;

namespace {
template <class T, class S>
Tensor<T, S> random_tensor(unsigned seed, double scale = 1) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-scale, scale);
  Tensor<T, S> t;
  for (auto& v : t) v = T(u(g));
  return t;
}

// sum over (batch, i, e) of r * softmax(scale q kᵀ) v, q [Bt, Sq, D], k [Bt, Sk, D], v [Bt, Sk, Dv].
struct reference {
  index_t Bt, Sq, Sk, D, Dv;
  bool causal;
  ld loss(const std::vector<ld>& q, const std::vector<ld>& k, const std::vector<ld>& v, const std::vector<ld>& r) const {
    const ld scale = 1 / std::sqrt(ld(D));
    ld total = 0;
    for (index_t b = 0; b < Bt; ++b)
      for (index_t i = 0; i < Sq; ++i) {
        const index_t n = causal ? std::min(Sk, i + 1 + Sk - Sq) : Sk;
        std::vector<ld> s(static_cast<std::size_t>(n), 0);
        ld m = -std::numeric_limits<ld>::infinity(), z = 0;
        for (index_t j = 0; j < n; ++j) {
          ld d = 0;
          for (index_t c = 0; c < D; ++c) d += q[std::size_t((b * Sq + i) * D + c)] * k[std::size_t((b * Sk + j) * D + c)];
          s[std::size_t(j)] = d * scale, m = std::max(m, d * scale);
        }
        for (auto& x : s) x = std::exp(x - m), z += x;
        for (index_t e = 0; e < Dv; ++e) {
          ld o = 0;
          for (index_t j = 0; j < n; ++j) o += s[std::size_t(j)] / z * v[std::size_t((b * Sk + j) * Dv + e)];
          total += o * r[std::size_t((b * Sq + i) * Dv + e)];
        }
      }
    return total;
  }
  // The derivative of loss with respect to every element of which (0: q, 1: k, 2: v).
  std::vector<ld> gradient(int which, std::vector<ld> q, std::vector<ld> k, std::vector<ld> v, const std::vector<ld>& r) const {
    std::vector<ld>& x = which == 0 ? q : which == 1 ? k : v;
    std::vector<ld> out(x.size());
    const ld h = 1e-6L;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const ld keep = x[i];
      x[i] = keep + h;
      const ld up = loss(q, k, v, r);
      x[i] = keep - h;
      const ld down = loss(q, k, v, r);
      x[i] = keep;
      out[i] = (up - down) / (2 * h);
    }
    return out;
  }
};

template <class T, class S>
std::vector<ld> as_ld(const Tensor<T, S>& t) {
  return std::vector<ld>(t.begin(), t.end());
}
template <class T, class S>
double worst_error(const Tensor<T, S>& got, const std::vector<ld>& want) {
  REQUIRE(want.size() == std::size_t(S::size));
  ld worst = 0;
  for (index_t i = 0; i < S::size; ++i)
    worst = std::max(worst, std::fabs(ld(got.data()[i]) - want[std::size_t(i)]) / std::max(std::fabs(want[std::size_t(i)]), 1.0L));
  return double(worst);
}

// q [2, 3, Sq, 4] (batch 2, heads 3), k and v [2, 3, Sk, 4 or 5].
template <class T, bool Causal, index_t Sq, index_t Sk>
void check_leaves(double tol) {
  using SQ = shape<2, 3, Sq, 4>;
  using SK = shape<2, 3, Sk, 4>;
  using SV = shape<2, 3, Sk, 5>;
  const auto q = random_tensor<T, SQ>(1, 1.5), k = random_tensor<T, SK>(2, 1.5);
  const auto v = random_tensor<T, SV>(3);
  const auto r = random_tensor<T, shape<2, 3, Sq, 5>>(4);
  auto [loss, dq, dk, dv] = value_and_grad(
      [&](const auto& q_, const auto& k_, const auto& v_) {
        if constexpr (Causal) return sum(attention(q_, k_, v_, causal) * r);
        else return sum(attention(q_, k_, v_) * r);
      },
      q, k, v);
  Tensor<T, shape<>> l = loss;
  Tensor<T, SQ> gq = dq;
  Tensor<T, SK> gk = dk;
  Tensor<T, SV> gv = dv;
  const reference ref{6, Sq, Sk, 4, 5, Causal};
  const auto Q = as_ld(q), K = as_ld(k), V = as_ld(v), R = as_ld(r);
  CHECK(std::fabs(ld(l()) - ref.loss(Q, K, V, R)) < tol);
  CHECK(worst_error(gq, ref.gradient(0, Q, K, V, R)) < tol);
  CHECK(worst_error(gk, ref.gradient(1, Q, K, V, R)) < tol);
  CHECK(worst_error(gv, ref.gradient(2, Q, K, V, R)) < tol);
}
} // namespace

TEST_CASE("attention: gradients of q, k and v, plain and causal", "[autodiff][attention]") {
  SECTION("plain, 5 queries, 7 keys, double") { check_leaves<double, false, 5, 7>(1e-9); }
  SECTION("causal, 6 queries, 6 keys, double") { check_leaves<double, true, 6, 6>(1e-9); }
  SECTION("causal, 5 queries, 7 keys (bottom-right aligned), double") { check_leaves<double, true, 5, 7>(1e-9); }
  SECTION("causal, 6 queries, 6 keys, float") { check_leaves<float, true, 6, 6>(2e-5); }
}

TEST_CASE("attention: gradient through computed operands, one of them only", "[autodiff][attention]") {
  // q, k and v are heads of one projection x w ([B, T, 3 * 2 * 4] -> three [B, 2, T, 4]), as in a
  // transformer block; only w is differentiated. Checked against differences of the whole loss.
  constexpr index_t B = 2, T = 5, C = 6, H = 2, Dh = 4;
  const auto x = random_tensor<double, shape<B, T, C>>(5);
  const auto w = random_tensor<double, shape<C, 3 * H * Dh>>(6);
  const auto r = random_tensor<double, shape<B, H, T, Dh>>(7);
  auto f = [&](const auto& w_) {
    auto qkv = reshape<B, T, 3, H, Dh>(matmul(reshape<B * T, C>(x), w_));
    auto head = [&]<index_t I>(std::integral_constant<index_t, I>) {
      return permute<0, 2, 1, 3>(reshape<B, T, H, Dh>(slice<whole, whole, range<I, I + 1>, whole, whole>(qkv)));
    };
    return sum(attention(head(std::integral_constant<index_t, 0>{}), head(std::integral_constant<index_t, 1>{}),
                         head(std::integral_constant<index_t, 2>{}), causal) *
               r);
  };
  auto [loss, dw] = value_and_grad(f, w);
  Tensor<double, shape<C, 3 * H * Dh>> got = dw;
  // the same loss in long double, by differences over w
  auto loss_at = [&](const std::vector<ld>& W) {
    std::vector<ld> q, k, v;
    for (int part = 0; part < 3; ++part) {
      std::vector<ld>& out = part == 0 ? q : part == 1 ? k : v;
      for (index_t b = 0; b < B; ++b)
        for (index_t h = 0; h < H; ++h)
          for (index_t t = 0; t < T; ++t)
            for (index_t d = 0; d < Dh; ++d) {
              ld s = 0;
              for (index_t c = 0; c < C; ++c) s += ld(x(b, t, c)) * W[std::size_t(c * 3 * H * Dh + part * H * Dh + h * Dh + d)];
              out.push_back(s);
            }
    }
    return reference{B * H, T, T, Dh, Dh, true}.loss(q, k, v, as_ld(r));
  };
  std::vector<ld> W = as_ld(w), want(W.size());
  for (std::size_t i = 0; i < W.size(); ++i) {
    const ld keep = W[i];
    W[i] = keep + 1e-6L;
    const ld up = loss_at(W);
    W[i] = keep - 1e-6L;
    const ld down = loss_at(W);
    W[i] = keep;
    want[i] = (up - down) / 2e-6L;
  }
  CHECK(worst_error(got, want) < 1e-9);

  // only v's gradient (q and k held fixed) and only q's: the other branches are not built
  const auto q = random_tensor<double, shape<2, 4, 3>>(8);
  const auto k = random_tensor<double, shape<2, 6, 3>>(9);
  const auto v = random_tensor<double, shape<2, 6, 2>>(10);
  const auto s = random_tensor<double, shape<2, 4, 2>>(11);
  auto [l1, dv] = value_and_grad([&](const auto& v_) { return sum(attention(q, k, exp(v_), causal) * s); }, v);
  auto [l2, dq] = value_and_grad([&](const auto& q_) { return sum(attention(q_ * 2.0, k, v) * s); }, q);
  Tensor<double, shape<2, 6, 2>> gv = dv;
  Tensor<double, shape<2, 4, 3>> gq = dq;
  std::vector<ld> Q = as_ld(q), K = as_ld(k), V = as_ld(v), S = as_ld(s), Q2 = Q, EV = V;
  for (auto& e : EV) e = std::exp(e);
  for (auto& e : Q2) e *= 2;
  const auto want_v = reference{2, 4, 6, 3, 2, true}.gradient(2, Q, K, EV, S);
  std::vector<ld> chain_v(want_v.size()), chain_q;
  for (std::size_t i = 0; i < want_v.size(); ++i) chain_v[i] = want_v[i] * EV[i];
  for (auto e : reference{2, 4, 6, 3, 2, false}.gradient(0, Q2, K, V, S)) chain_q.push_back(2 * e);
  CHECK(worst_error(gv, chain_v) < 1e-9);
  CHECK(worst_error(gq, chain_q) < 1e-9);
}

namespace {
// The backward pass's formulas in long double, at sizes where central differences would take too long:
// P = softmax(s q kᵀ) (masked), dP = r vᵀ, dS = P ∘ (dP - rowsum(P ∘ dP)), dq = s dS k, dk = s dSᵀ q,
// dv = Pᵀ r (r: the loss's gradient with respect to the output). Checked against the differences first.
std::array<std::vector<ld>, 3> analytic(const reference& ref, const std::vector<ld>& q, const std::vector<ld>& k,
                                        const std::vector<ld>& v, const std::vector<ld>& r) {
  const auto [Bt, Sq, Sk, D, Dv, masked] = ref;
  const ld scale = 1 / std::sqrt(ld(D));
  std::array<std::vector<ld>, 3> out{std::vector<ld>(q.size()), std::vector<ld>(k.size()), std::vector<ld>(v.size())};
  std::vector<ld> p(static_cast<std::size_t>(Sk)), dp(static_cast<std::size_t>(Sk));
  for (index_t b = 0; b < Bt; ++b)
    for (index_t i = 0; i < Sq; ++i) {
      const index_t n = masked ? std::min(Sk, i + 1 + Sk - Sq) : Sk;
      ld m = -std::numeric_limits<ld>::infinity(), z = 0, delta = 0;
      for (index_t j = 0; j < n; ++j) {
        ld d = 0;
        for (index_t c = 0; c < D; ++c) d += q[std::size_t((b * Sq + i) * D + c)] * k[std::size_t((b * Sk + j) * D + c)];
        p[std::size_t(j)] = d * scale, m = std::max(m, d * scale);
      }
      for (index_t j = 0; j < n; ++j) p[std::size_t(j)] = std::exp(p[std::size_t(j)] - m), z += p[std::size_t(j)];
      for (index_t j = 0; j < n; ++j) {
        p[std::size_t(j)] /= z;
        ld d = 0;
        for (index_t e = 0; e < Dv; ++e) d += r[std::size_t((b * Sq + i) * Dv + e)] * v[std::size_t((b * Sk + j) * Dv + e)];
        dp[std::size_t(j)] = d, delta += p[std::size_t(j)] * d;
      }
      for (index_t j = 0; j < n; ++j) {
        const ld ds = p[std::size_t(j)] * (dp[std::size_t(j)] - delta) * scale;
        for (index_t c = 0; c < D; ++c) {
          out[0][std::size_t((b * Sq + i) * D + c)] += ds * k[std::size_t((b * Sk + j) * D + c)];
          out[1][std::size_t((b * Sk + j) * D + c)] += ds * q[std::size_t((b * Sq + i) * D + c)];
        }
        for (index_t e = 0; e < Dv; ++e)
          out[2][std::size_t((b * Sk + j) * Dv + e)] += p[std::size_t(j)] * r[std::size_t((b * Sq + i) * Dv + e)];
      }
    }
  return out;
}

// q [2, Sq, D], k [2, Sk, D], v [2, Sk, Dv]: sizes that span several blocks of the kernels' tiles
// (cpu/attention_backward.hpp) with odd tails, against `analytic`.
template <class T, bool Causal, index_t Sq, index_t Sk, index_t D, index_t Dv>
void check_tiled(double tol) {
  using SQ = shape<2, Sq, D>;
  using SK = shape<2, Sk, D>;
  using SV = shape<2, Sk, Dv>;
  const auto q = random_tensor<T, SQ>(21, 2), k = random_tensor<T, SK>(22, 2);
  const auto v = random_tensor<T, SV>(23);
  const auto r = random_tensor<T, shape<2, Sq, Dv>>(24);
  auto [loss, dq, dk, dv] = value_and_grad(
      [&](const auto& q_, const auto& k_, const auto& v_) {
        if constexpr (Causal) return sum(attention(q_, k_, v_, causal) * r);
        else return sum(attention(q_, k_, v_) * r);
      },
      q, k, v);
  Tensor<T, SQ> gq = dq;
  Tensor<T, SK> gk = dk;
  Tensor<T, SV> gv = dv;
  const auto want = analytic(reference{2, Sq, Sk, D, Dv, Causal}, as_ld(q), as_ld(k), as_ld(v), as_ld(r));
  CHECK(worst_error(gq, want[0]) < tol);
  CHECK(worst_error(gk, want[1]) < tol);
  CHECK(worst_error(gv, want[2]) < tol);
}
} // namespace

TEST_CASE("attention: the long-double formulas agree with central differences", "[autodiff][attention]") {
  for (bool causal_mask : {false, true}) {
    const reference ref{2, 5, 7, 3, 4, causal_mask};
    std::mt19937_64 g(31);
    std::uniform_real_distribution<double> u(-1.5, 1.5);
    auto draw = [&](std::size_t n) {
      std::vector<ld> x(n);
      for (auto& e : x) e = u(g);
      return x;
    };
    const auto q = draw(2 * 5 * 3), k = draw(2 * 7 * 3), v = draw(2 * 7 * 4), r = draw(2 * 5 * 4);
    const auto a = analytic(ref, q, k, v, r);
    for (int which = 0; which < 3; ++which) {
      const auto fd = ref.gradient(which, q, k, v, r);
      ld worst = 0;
      for (std::size_t i = 0; i < fd.size(); ++i) worst = std::max(worst, std::fabs(a[std::size_t(which)][i] - fd[i]));
      CHECK(double(worst) < 1e-9);
    }
  }
}

TEST_CASE("attention: gradients over many tiles, odd sizes", "[autodiff][attention]") {
  SECTION("plain, 37 queries, 53 keys, double") { check_tiled<double, false, 37, 53, 19, 21>(1e-12); }
  SECTION("causal, 150 queries, 300 keys (bottom-right), float") { check_tiled<float, true, 150, 300, 19, 21>(2e-5); }
  SECTION("causal, 130 queries, 130 keys, double") { check_tiled<double, true, 130, 130, 16, 8>(1e-12); }
}

namespace {
// q, k, v [4, 4, S, D] (16 batch elements, v as wide as q and k): the three gradients come from one node,
// attention_grad_node<all> (cpu/attention_backward.hpp: run_attention_grad_all), against `analytic`.
template <class T, bool Causal, index_t Sq, index_t Sk, index_t D>
void check_together(double tol) {
  using SQ = shape<4, 4, Sq, D>;
  using SK = shape<4, 4, Sk, D>;
  const auto q = random_tensor<T, SQ>(41, 2), k = random_tensor<T, SK>(42, 2);
  const auto v = random_tensor<T, SK>(43);
  const auto r = random_tensor<T, SQ>(44);
  auto [loss, dq, dk, dv] = value_and_grad(
      [&](const auto& q_, const auto& k_, const auto& v_) {
        if constexpr (Causal) return sum(attention(q_, k_, v_, causal) * r);
        else return sum(attention(q_, k_, v_) * r);
      },
      q, k, v);
  using A = std::remove_cvref_t<decltype(attention(detail::as_node(q), detail::as_node(k), detail::as_node(v)))>;
  STATIC_REQUIRE(autodiff::attention_grad_together<A>);
  Tensor<T, SQ> gq = dq;
  Tensor<T, SK> gk = dk;
  Tensor<T, SK> gv = dv;
  const auto want = analytic(reference{16, Sq, Sk, D, D, Causal}, as_ld(q), as_ld(k), as_ld(v), as_ld(r));
  CHECK(worst_error(gq, want[0]) < tol);
  CHECK(worst_error(gk, want[1]) < tol);
  CHECK(worst_error(gv, want[2]) < tol);

  // The node's at() (the reference path, for element types without a kernel) gives the same rows.
  using G = detail::attention_grad_node<detail::attention_part::all, Causal, detail::node_t<const Tensor<T, SQ>&>,
                                        detail::node_t<const Tensor<T, SK>&>, detail::node_t<const Tensor<T, SK>&>,
                                        detail::node_t<const Tensor<T, SQ>&>>;
  const G node{{}, {detail::as_node(q), detail::as_node(k), detail::as_node(v), detail::as_node(r)}, 1 / std::sqrt(double(D))};
  for (index_t b : {index_t(0), index_t(15)})
    for (index_t row : {index_t(0), Sq - 1, Sq, Sq + Sk - 1, Sq + Sk, Sq + 2 * Sk - 1})
      for (index_t c : {index_t(0), D - 1}) {
        const index_t out[4] = {b / 4, b % 4, row, c};
        const auto& part = want[std::size_t(row < Sq ? 0 : row < Sq + Sk ? 1 : 2)];
        const index_t i = row < Sq ? row : row < Sq + Sk ? row - Sq : row - Sq - Sk, n = row < Sq ? Sq : Sk;
        CHECK(std::fabs(ld(node.at(out)) - part[std::size_t((b * n + i) * D + c)]) < tol);
      }
}
} // namespace

TEST_CASE("attention: the three gradients from one node, v as wide as q and k", "[autodiff][attention]") {
  SECTION("plain, 37 queries, 53 keys, double") { check_together<double, false, 37, 53, 19>(1e-12); }
  SECTION("causal, 64 queries and keys, head 32, float (the decoder's)") { check_together<float, true, 64, 64, 32>(2e-5); }
  SECTION("causal, 45 queries, 70 keys (bottom-right), double") { check_together<double, true, 45, 70, 16>(1e-12); }
  SECTION("causal, 130 queries and keys, head 8, double") { check_together<double, true, 130, 130, 8>(1e-12); }
  SECTION("plain, 3 queries, 1 key, head 2, double") { check_together<double, false, 3, 1, 2>(1e-12); }
}

TEST_CASE("attention's backward pass holds no score matrix", "[autodiff][attention]") {
  // 1024 queries and keys, 4 heads: the scores of one head alone would take 4 MiB.
  using S = shape<4, 1024, 64>;
  Tensor<float, S> q, k, v, r;
  auto [loss, dq, dk, dv] = value_and_grad(
      [&](const auto& q_, const auto& k_, const auto& v_) { return sum(attention(q_, k_, v_, causal) * r); }, q, k, v);
  constexpr index_t scores = index_t(sizeof(float)) * 1024 * 1024;
  STATIC_REQUIRE(eval_arena_bytes<Tensor<float, S>, decltype(dq)> < scores);
  STATIC_REQUIRE(eval_arena_bytes<Tensor<float, S>, decltype(dk)> < scores);
  STATIC_REQUIRE(eval_arena_bytes<Tensor<float, S>, decltype(dv)> < scores);
}
