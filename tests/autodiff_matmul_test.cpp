// Gradients of batched matmuls (autodiff/backward.hpp): dA = g Bᵀ and dB = Aᵀ g per batch element, an
// operand broadcast along batch axes (absent, or of extent 1) summed over them. Each loss is
// sum(matmul(a, b) * r) with a random r; its exact gradient is written below from the definition of a
// broadcast batched product, in long double, independently of tenfold.
#include <catch2/catch.hpp>
#include <tenfold/autodiff/backward.hpp>
#include <tenfold/tenfold.hpp>

#include <array>
#include <cmath>
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

// A row-major tensor's linear index at batch index `o` (of the broadcast batch shape Out, aligned from the
// right) and matrix position (i, j); an axis of extent 1 reads position 0.
template <class S, class Out>
index_t at(const std::array<index_t, 8>& o, index_t i, index_t j) {
  constexpr int rb = S::rank - 2, ob = Out::rank - 2;
  index_t k = 0;
  for (int d = 0; d < rb; ++d) k = k * S::dims[d] + (S::dims[d] == 1 ? 0 : o[std::size_t(ob - rb + d)]);
  return (k * S::dims[rb] + i) * S::dims[rb + 1] + j;
}

// d/da and d/db of sum(matmul(a, b) * r): for every output batch index, r's matrix against the other
// operand's, added where the operand was read.
template <class SA, class SB, class SC, class T>
void matmul_reference(const T* a, const T* b, const T* r, std::vector<ld>& ga, std::vector<ld>& gb) {
  constexpr index_t M = SA::dims[SA::rank - 2], K = SA::dims[SA::rank - 1], N = SB::dims[SB::rank - 1];
  constexpr index_t batches = SC::size / (M * N);
  ga.assign(std::size_t(SA::size), 0);
  gb.assign(std::size_t(SB::size), 0);
  std::array<index_t, 8> o{};
  for (index_t t = 0; t < batches; ++t) {
    index_t rest = t;
    for (int d = SC::rank - 3; d >= 0; --d) o[std::size_t(d)] = rest % SC::dims[d], rest /= SC::dims[d];
    for (index_t i = 0; i < M; ++i)
      for (index_t j = 0; j < N; ++j) {
        const ld g = r[at<SC, SC>(o, i, j)];
        for (index_t k = 0; k < K; ++k) {
          ga[std::size_t(at<SA, SC>(o, i, k))] += g * b[at<SB, SC>(o, k, j)];
          gb[std::size_t(at<SB, SC>(o, k, j))] += g * a[at<SA, SC>(o, i, k)];
        }
      }
  }
}

template <class T, class SA, class SB>
void check_matmul() {
  const auto a = random_tensor<T, SA>(1);
  const auto b = random_tensor<T, SB>(2);
  using SC = typename decltype(detail::as_node(matmul(a, b)))::shape_type;
  const auto r = random_tensor<T, SC>(3);
  auto [loss, da, db] = value_and_grad([&](const auto& a_, const auto& b_) { return sum(matmul(a_, b_) * r); }, a, b);
  const Tensor<T, SA> ga = da;
  const Tensor<T, SB> gb = db;
  std::vector<ld> want_a, want_b;
  matmul_reference<SA, SB, SC>(a.data(), b.data(), r.data(), want_a, want_b);
  INFO(detail::node_t<decltype(a)>::str() << " x " << detail::node_t<decltype(b)>::str());
  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-13;
  CHECK(worst_error(ga, want_a) < tol);
  CHECK(worst_error(gb, want_b) < tol);
}
} // namespace

TEST_CASE("batched matmul: gradients of both operands, same batch shape", "[autodiff][matmul]") {
  check_matmul<float, shape<2, 3, 4, 5>, shape<2, 3, 5, 4>>(); // [B, H, T, D] x [B, H, D, T]
  check_matmul<double, shape<2, 3, 4, 5>, shape<2, 3, 5, 4>>();
  check_matmul<double, shape<3, 6, 2>, shape<3, 2, 7>>();
}

TEST_CASE("batched matmul: an operand broadcast along batch axes gets its gradient summed over them",
          "[autodiff][matmul]") {
  check_matmul<float, shape<2, 4, 3>, shape<3, 5>>(); // [B, T, K] x [K, N]: a linear layer's weights
  check_matmul<double, shape<2, 4, 3>, shape<3, 5>>();
  check_matmul<float, shape<4, 3>, shape<2, 3, 5>>(); // [M, K] x [B, K, N]
  check_matmul<double, shape<4, 3>, shape<2, 3, 5>>();
  check_matmul<float, shape<3, 4, 5>, shape<2, 3, 5, 6>>(); // [H, T, D] x [B, H, D, S]
  check_matmul<double, shape<3, 4, 5>, shape<2, 3, 5, 6>>();
  check_matmul<double, shape<2, 1, 4, 5>, shape<1, 3, 5, 2>>(); // extent-1 batch axes on both sides
  check_matmul<float, shape<1, 4, 5>, shape<2, 3, 5, 2>>();
}

TEST_CASE("batched matmul: transposed and computed operands, and a vector operand", "[autodiff][matmul]") {
  // Attention's scores q kᵀ with q, k [B, H, T, D]: the transpose is a view of the parameter.
  using S = shape<2, 2, 4, 3>;
  const auto q = random_tensor<double, S>(4);
  const auto k = random_tensor<double, S>(5);
  const auto r = random_tensor<double, shape<2, 2, 4, 4>>(6);
  auto [l1, dq, dk] =
      value_and_grad([&](const auto& q_, const auto& k_) { return sum(matmul(q_, swapaxes<-2, -1>(k_)) * r); }, q, k);
  const Tensor<double, S> gq = dq, gk = dk;
  std::vector<ld> want_q(S::size, 0), want_k(S::size, 0);
  for (index_t bh = 0; bh < 4; ++bh)
    for (index_t i = 0; i < 4; ++i)
      for (index_t j = 0; j < 4; ++j)
        for (index_t d = 0; d < 3; ++d) {
          const ld g = r.data()[(bh * 4 + i) * 4 + j];
          want_q[std::size_t((bh * 4 + i) * 3 + d)] += g * k.data()[(bh * 4 + j) * 3 + d];
          want_k[std::size_t((bh * 4 + j) * 3 + d)] += g * q.data()[(bh * 4 + i) * 3 + d];
        }
  CHECK(worst_error(gq, want_q) < 1e-13);
  CHECK(worst_error(gk, want_k) < 1e-13);

  // A computed operand and a shared weight: sum(matmul(tanh(x), w) * r2), x [B, T, K], w [K, N].
  const auto x = random_tensor<float, shape<3, 5, 4>>(7);
  const auto w = random_tensor<float, shape<4, 6>>(8);
  const auto r2 = random_tensor<float, shape<3, 5, 6>>(9);
  auto [l2, dx, dw] =
      value_and_grad([&](const auto& x_, const auto& w_) { return sum(matmul(tanh(x_), w_) * r2); }, x, w);
  const Tensor<float, shape<3, 5, 4>> gx = dx;
  const Tensor<float, shape<4, 6>> gw = dw;
  std::vector<ld> want_x(60, 0), want_w(24, 0);
  for (index_t t = 0; t < 15; ++t)
    for (index_t n = 0; n < 6; ++n)
      for (index_t c = 0; c < 4; ++c) {
        const ld g = r2.data()[t * 6 + n], th = std::tanh(ld(x.data()[t * 4 + c]));
        want_x[std::size_t(t * 4 + c)] += g * w(c, n) * (1 - th * th);
        want_w[std::size_t(c * 6 + n)] += g * th;
      }
  CHECK(worst_error(gx, want_x) < 1e-5);
  CHECK(worst_error(gw, want_w) < 1e-5);

  // A vector on the left of a batch of matrices: [K] x [B, K, N] -> [B, N].
  const auto v = random_tensor<double, shape<3>>(10);
  const auto m = random_tensor<double, shape<2, 3, 4>>(11);
  const auto r3 = random_tensor<double, shape<2, 4>>(12);
  auto [l3, dv, dm] = value_and_grad([&](const auto& v_, const auto& m_) { return sum(matmul(v_, m_) * r3); }, v, m);
  const Tensor<double, shape<3>> gv = dv;
  const Tensor<double, shape<2, 3, 4>> gm = dm;
  std::vector<ld> want_v(3, 0), want_m(24, 0);
  for (index_t b = 0; b < 2; ++b)
    for (index_t c = 0; c < 3; ++c)
      for (index_t n = 0; n < 4; ++n) {
        want_v[std::size_t(c)] += ld(r3(b, n)) * m(b, c, n);
        want_m[std::size_t((b * 3 + c) * 4 + n)] += ld(r3(b, n)) * v(c);
      }
  CHECK(worst_error(gv, want_v) < 1e-13);
  CHECK(worst_error(gm, want_m) < 1e-13);
}
