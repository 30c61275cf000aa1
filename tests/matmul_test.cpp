// matmul against a long-double reference: sizes across the GEMM's block edges, every transpose
// combination, batch broadcasting, fused epilogues, expression operands, and integers.
#include <catch2/catch.hpp>
#include <tenfold/tenfold.hpp>

using namespace tenfold;
using ld = long double;

namespace {
template <class T, class S>
Tensor<T, S> random_tensor(std::uint64_t seed) {
  rng g(seed);
  return uniform<S, T>(g, T(-1), T(1));
}
// Tolerance for a K-term dot product in T, relative to the sum of |terms|.
template <class T>
double dot_tol(index_t k) { return 4.0 * double(k) * std::numeric_limits<T>::epsilon(); }
} // namespace

template <class T, index_t M, index_t K, index_t N>
void check_plain() {
  const auto a = random_tensor<T, shape<M, K>>(1);
  const auto b = random_tensor<T, shape<K, N>>(2);
  const auto at_ = random_tensor<T, shape<K, M>>(3); // stored transposed
  const auto bt = random_tensor<T, shape<N, K>>(4);
  Tensor<T, shape<M, N>> c = matmul(a, b), c_tn = matmul(transpose(at_), b), c_nt = matmul(a, transpose(bt)),
                         c_tt = matmul(transpose(at_), transpose(bt));
  bool ok = true;
  for (index_t i = 0; i < M; ++i)
    for (index_t j = 0; j < N; ++j) {
      ld s[4] = {0, 0, 0, 0}, mag[4] = {0, 0, 0, 0};
      for (index_t k = 0; k < K; ++k) {
        const ld terms[4] = {ld(a(i, k)) * b(k, j), ld(at_(k, i)) * b(k, j), ld(a(i, k)) * bt(j, k), ld(at_(k, i)) * bt(j, k)};
        for (int v = 0; v < 4; ++v) s[v] += terms[v], mag[v] += std::fabs(terms[v]);
      }
      const T got[4] = {c(i, j), c_tn(i, j), c_nt(i, j), c_tt(i, j)};
      for (int v = 0; v < 4; ++v) ok = ok && std::fabs(got[v] - s[v]) <= dot_tol<T>(K) * mag[v] + 1e-30;
    }
  INFO("M=" << M << " K=" << K << " N=" << N);
  CHECK(ok);
}

TEST_CASE("matmul: sizes across block edges, all transpose combinations", "[matmul]") {
  check_plain<float, 1, 1, 1>();
  check_plain<float, 3, 17, 5>();
  check_plain<float, 37, 29, 41>();
  check_plain<float, 64, 64, 64>();
  check_plain<float, 100, 300, 97>();  // several K slices and row blocks
  check_plain<float, 7, 13, 300>();    // two column blocks
  check_plain<double, 37, 29, 41>();
  check_plain<double, 1, 257, 3>();
}

TEST_CASE("matmul: batch broadcasting", "[matmul]") {
  const auto a = random_tensor<float, shape<2, 1, 5, 7>>(5);
  const auto b = random_tensor<float, shape<3, 7, 4>>(6);
  Tensor<float, shape<2, 3, 5, 4>> c = matmul(a, b);
  bool ok = true;
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 3; ++q)
      for (int i = 0; i < 5; ++i)
        for (int j = 0; j < 4; ++j) {
          ld s = 0, mag = 0;
          for (int k = 0; k < 7; ++k) s += ld(a(p, 0, i, k)) * b(q, k, j), mag += std::fabs(ld(a(p, 0, i, k)) * b(q, k, j));
          ok = ok && std::fabs(c(p, q, i, j) - s) <= dot_tol<float>(7) * mag;
        }
  CHECK(ok);
}

TEST_CASE("matmul: fused epilogue, expression operands, linear", "[matmul]") {
  const auto x = random_tensor<float, shape<33, 40>>(7);
  const auto w = random_tensor<float, shape<40, 19>>(8);
  const auto bias = random_tensor<float, shape<19>>(9);
  const auto res = random_tensor<float, shape<33, 19>>(10);
  auto fused = relu(matmul(x, w) + bias) * 0.5f + res;
  static_assert(plan_of<decltype(fused)>::nests == 1 && plan_of<decltype(fused)>::buffers == 0,
                "the epilogue runs in the GEMM's store");
  static_assert(plan_of<decltype(matmul(x * 2.0f, w))>::buffers == 1, "an expression operand is materialised");
  Tensor<float, shape<33, 19>> y = fused;
  Tensor<float, shape<33, 19>> y2 = matmul(x * 2.0f, w);
  const auto wt = random_tensor<float, shape<19, 40>>(11); // PyTorch layout [out, in]
  Tensor<float, shape<33, 19>> y3 = linear(x, wt, bias);
  bool ok = true;
  for (int i = 0; i < 33; ++i)
    for (int j = 0; j < 19; ++j) {
      ld s = 0, s3 = 0, mag = 0, mag3 = 0;
      for (int k = 0; k < 40; ++k) {
        s += ld(x(i, k)) * w(k, j), mag += std::fabs(ld(x(i, k)) * w(k, j));
        s3 += ld(x(i, k)) * wt(j, k), mag3 += std::fabs(ld(x(i, k)) * wt(j, k));
      }
      const ld want = std::max<ld>(s + bias(j), 0) * 0.5L + res(i, j);
      ok = ok && std::fabs(y(i, j) - want) <= dot_tol<float>(40) * (mag + 1);
      ok = ok && std::fabs(y2(i, j) - 2 * s) <= 2 * dot_tol<float>(40) * mag;
      ok = ok && std::fabs(y3(i, j) - (s3 + bias(j))) <= dot_tol<float>(40) * (mag3 + 1);
    }
  CHECK(ok);
}

// An operand that is an elementwise expression read transposed (a weight gradient's gelu(a)ᵀ) is
// computed in its leaves' layout and read transposed (plan/walk.hpp operand_leaf); with a broadcast
// bias in the tree, as A and as B.
TEST_CASE("matmul: transposed expression operands", "[matmul]") {
  const auto a = random_tensor<float, shape<37, 21>>(12); // read as aᵀ [21, 37]
  const auto bias = random_tensor<float, shape<21>>(13);  // broadcast along a's rows
  const auto x = random_tensor<float, shape<37, 18>>(14);
  const auto y = random_tensor<float, shape<18, 21>>(15);
  Tensor<float, shape<21, 18>> c = matmul(transpose(relu(a + bias) * 2.0f), x); // as A
  Tensor<float, shape<18, 37>> d = matmul(y, transpose(relu(a + bias) * 2.0f)); // as B
  // a reduction broadcast back in the tree (a norm's mean, a weight gradient's norm(x)ᵀ)
  Tensor<float, shape<21, 18>> m = matmul(transpose(a - mean(a, axis<-1>, keepdims)), x);
  static_assert(plan_of<decltype(matmul(transpose(relu(a + bias)), x))>::buffers == 1);
  const auto e = [&](index_t k, index_t i) { return 2 * std::max<ld>(ld(a(k, i)) + bias(i), 0); }; // (aᵀ)(i, k)
  bool ok = true;
  for (index_t i = 0; i < 21; ++i)
    for (index_t j = 0; j < 18; ++j) {
      ld s = 0, mag = 0;
      for (index_t k = 0; k < 37; ++k) s += e(k, i) * x(k, j), mag += std::fabs(e(k, i) * x(k, j));
      ok = ok && std::fabs(c(i, j) - s) <= dot_tol<float>(37) * mag + 1e-30;
      ld sm = 0, mm = 0;
      for (index_t k = 0; k < 37; ++k) {
        ld row = 0;
        for (index_t q = 0; q < 21; ++q) row += a(k, q);
        const ld centered = ld(a(k, i)) - row / 21;
        sm += centered * x(k, j), mm += std::fabs(centered * x(k, j));
      }
      ok = ok && std::fabs(m(i, j) - sm) <= dot_tol<float>(37) * (mm + 1);
    }
  for (index_t j = 0; j < 18; ++j)
    for (index_t k = 0; k < 37; ++k) {
      ld t = 0, mag = 0;
      for (index_t i = 0; i < 21; ++i) t += ld(y(j, i)) * e(k, i), mag += std::fabs(ld(y(j, i)) * e(k, i));
      ok = ok && std::fabs(d(j, k) - t) <= dot_tol<float>(21) * mag + 1e-30;
    }
  CHECK(ok);
}

TEST_CASE("matmul: integers and a matmul inside a larger expression", "[matmul]") {
  Tensor<int, shape<2, 3>> a{1, 2, 3, 4, 5, 6};
  Tensor<int, shape<3, 2>> b{7, 8, 9, 10, 11, 12};
  Tensor<int, shape<2, 2>> c = matmul(a, b);
  CHECK(c(0, 0) == 58);
  CHECK(c(1, 1) == 154);
  Tensor<float, shape<2, 2>> af{1, 2, 3, 4};
  // Two matmuls in one expression: one drives the store, the other is materialised first.
  Tensor<float, shape<2, 2>> d = matmul(af, af) + matmul(af, transpose(af));
  CHECK(d(0, 0) == 7 + 5);
  CHECK(d(1, 0) == 15 + 11);
  Tensor<float, shape<2>> rowsums = sum(matmul(af, af), axis<1>);
  CHECK(rowsums(1) == 15 + 22);
}

// A vector operand, as NumPy's matmul: [K] x [K, N] -> [N], [M, K] x [K] -> [M], [K] x [K] -> rank 0,
// and with batch axes. The references are plain long-double loops over the operands' elements.
TEST_CASE("matmul: a vector operand (vector @ matrix, matrix @ vector, dot, batched), as NumPy's", "[matmul]") {
  const auto v = random_tensor<float, shape<7>>(21);
  const auto m = random_tensor<float, shape<5, 7>>(22);    // [M, K]
  const auto n = random_tensor<float, shape<7, 4>>(23);    // [K, N]
  const auto bm = random_tensor<float, shape<3, 5, 7>>(24); // [B, M, K]
  const auto bn = random_tensor<float, shape<2, 7, 4>>(25); // [B, K, N]
  const auto bias = random_tensor<float, shape<5>>(26);
  const Tensor<float, shape<5>> mv = matmul(m, v), fused = relu(matmul(m, v) + bias);
  const Tensor<float, shape<4>> vm = matmul(v, n);
  const Tensor<float> dot = matmul(v, v);
  const Tensor<float, shape<3, 5>> bmv = matmul(bm, v);
  const Tensor<float, shape<2, 4>> vbn = matmul(v, bn);
  const Tensor<float, shape<4>> tv = matmul(transpose(n), v * 2.0f); // a view and an expression as operands
  STATIC_REQUIRE(decltype(matmul(v, v))::shape_type::rank == 0);
  // One dot product of K = 7 terms against the long-double one.
  bool ok = true;
  auto check = [&](float got, auto term, ld scale = 1) {
    ld s = 0, mag = 0;
    for (int k = 0; k < 7; ++k) s += term(k), mag += std::fabs(term(k));
    ok = ok && std::fabs(got - scale * s) <= dot_tol<float>(7) * mag * scale + 1e-30;
    return s;
  };
  for (int i = 0; i < 5; ++i) {
    const ld s = check(mv(i), [&](int k) { return ld(m(i, k)) * v(k); });
    ok = ok && std::fabs(fused(i) - std::max<ld>(s + bias(i), 0)) <= dot_tol<float>(7) * 8;
    for (int b = 0; b < 3; ++b) check(bmv(b, i), [&](int k) { return ld(bm(b, i, k)) * v(k); });
  }
  for (int j = 0; j < 4; ++j) {
    check(vm(j), [&](int k) { return ld(v(k)) * n(k, j); });
    check(tv(j), [&](int k) { return ld(n(k, j)) * v(k); }, 2);
    for (int b = 0; b < 2; ++b) check(vbn(b, j), [&](int k) { return ld(v(k)) * bn(b, k, j); });
  }
  check(dot(), [&](int k) { return ld(v(k)) * v(k); });
  CHECK(ok);
  // Integers: exact.
  Tensor<int, shape<2, 3>> a{1, 2, 3, 4, 5, 6};
  Tensor<int, shape<3>> x{7, 8, 9};
  Tensor<int, shape<2>> ax = matmul(a, x);
  Tensor<int, shape<3>> xa = matmul(Tensor<int, shape<2>>{1, -1}, a);
  Tensor<int> xx = matmul(x, x);
  CHECK((ax(0) == 50 && ax(1) == 122));
  CHECK((xa(0) == -3 && xa(1) == -3 && xa(2) == -3));
  CHECK(xx() == 194);
}

// [..., M, K] x [K, N] with A's batch axes and rows at one stride: one GEMM over all the rows
// (cpu/gemm_eval.hpp, batch_folds). Checked with an epilogue, into a destination whose rows do not
// fold (a slice), with A that does not fold (a slice of its rows), and large enough to be split
// over threads.
template <index_t B0, index_t B1, index_t M, index_t K, index_t N>
void check_folded() {
  const auto a = random_tensor<float, shape<B0, B1, M + 1, K>>(11);
  const auto w = random_tensor<float, shape<N, K>>(12); // a linear layer's [out, in]
  const auto bias = random_tensor<float, shape<N>>(13);
  const auto a_rows = slice<whole, whole, range<0, M>, whole>(a); // batch stride (M + 1) K: does not fold
  const Tensor<float, shape<B0, B1, M, K>> a_dense = a_rows;       // folds
  Tensor<float, shape<B0, B1, M, N>> plain = matmul(a_dense, transpose(w));
  Tensor<float, shape<B0, B1, M, N>> fused = gelu(linear(a_dense, w, bias));
  Tensor<float, shape<B0, B1, M, N>> unfolded = matmul(a_rows, transpose(w));
  Tensor<float, shape<B0, B1, M + 2, N>> wide = zeros<float, shape<B0, B1, M + 2, N>>();
  eval(slice<whole, whole, range<1, M + 1>, whole>(wide), matmul(a_dense, transpose(w))); // rows do not fold
  bool ok = true;
  for (index_t b0 = 0; b0 < B0; ++b0)
    for (index_t b1 = 0; b1 < B1; ++b1)
      for (index_t i = 0; i < M; ++i)
        for (index_t j = 0; j < N; ++j) {
          ld s = 0, mag = 0;
          for (index_t k = 0; k < K; ++k) s += ld(a(b0, b1, i, k)) * w(j, k), mag += std::fabs(ld(a(b0, b1, i, k)) * w(j, k));
          const double tol = dot_tol<float>(K) * double(mag) + 1e-30;
          const double x = double(s) + double(bias(j));
          const double g = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
          ok = ok && std::fabs(plain(b0, b1, i, j) - double(s)) <= tol && std::fabs(unfolded(b0, b1, i, j) - double(s)) <= tol &&
               std::fabs(wide(b0, b1, i + 1, j) - double(s)) <= tol && std::fabs(fused(b0, b1, i, j) - g) <= 2 * tol + 1e-6;
        }
  for (index_t b0 = 0; b0 < B0; ++b0)
    for (index_t b1 = 0; b1 < B1; ++b1)
      for (index_t j = 0; j < N; ++j) ok = ok && wide(b0, b1, 0, j) == 0.0f && wide(b0, b1, M + 1, j) == 0.0f;
  INFO("batch " << B0 << "x" << B1 << ", M=" << M << " K=" << K << " N=" << N);
  CHECK(ok);
}

TEST_CASE("matmul: batch axes folded into the rows of one GEMM", "[matmul]") {
  check_folded<2, 3, 5, 7, 9>();       // small: one thread
  check_folded<1, 4, 64, 128, 256>();  // split over the threads
  check_folded<3, 1, 1, 33, 17>();     // one row per batch element
}
