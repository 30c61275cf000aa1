// Model blocks on the device against the CPU evaluator on the same inputs: what the kernel tests check
// one at a time, together — GEMMs whose operands are materialised values (arena slots), epilogues, row
// kernels, the arena made once and reused. (Kept to a head and a feed-forward block: nvcc's front end
// takes minutes on a whole encoder block written as one expression, whose tree repeats its subtrees.)
#include "cuda_test_support.hpp"

using namespace tenfold;

namespace {
// ||got - want|| / ||want|| over all elements.
template <class T, class S>
double normwise(const Tensor<T, S>& want, const Tensor<T, S>& got) {
  double num = 0, den = 0;
  for (index_t i = 0; i < S::size; ++i) {
    const double w = double(want.data()[i]), g = double(got.data()[i]);
    num += (g - w) * (g - w);
    den += w * w;
  }
  return std::isfinite(num) ? std::sqrt(num / den) : INFINITY;
}

constexpr index_t T = 96, D = 64, F = 256;

// Attention over materialised projections, written once for either evaluator (a CPU tensor or a
// device expression each): the scores are a GEMM over two GEMM results, the softmax runs over
// materialised scores, and the last GEMM reads the softmax's buffer: three arena slots.
template <class H, class W>
auto attention_head(const H& h, const W& wq, const W& wk, const W& wv) {
  return matmul(softmax(matmul(matmul(h, wq), transpose(matmul(h, wk))) * 0.125f), matmul(h, wv));
}
} // namespace

TEST_CASE("an f32 attention head as one expression, with one arena made once, matches the CPU") {
  TENFOLD_REQUIRE_DEVICE();
  const auto x = test::random_tensor<float, shape<T, D>>(-1, 1, 1);
  const auto wq = test::random_tensor<float, shape<D, D>>(-0.2, 0.2, 2);
  const auto wk = test::random_tensor<float, shape<D, D>>(-0.2, 0.2, 3);
  const auto wv = test::random_tensor<float, shape<D, D>>(-0.2, 0.2, 4);
  const auto g = test::random_tensor<float, shape<D>>(0.5, 1.5, 8);
  const auto b = test::random_tensor<float, shape<D>>(-0.5, 0.5, 9);
  const Tensor<float, shape<T, D>> h = layer_norm(x, g, b);
  const Tensor<float, shape<T, D>> want = x + attention_head(h, wq, wk, wv);

  const auto dx = cuda::to_device(x);
  const auto dwq = cuda::to_device(wq);
  const auto dwk = cuda::to_device(wk);
  const auto dwv = cuda::to_device(wv);
  const auto dg = cuda::to_device(g);
  const auto db = cuda::to_device(b);
  cuda::Tensor<float, shape<T, D>> dh, out;
  dh = layer_norm(dx.expr(), dg.expr(), db.expr());
  auto expr = dx.expr() + attention_head(dh.expr(), dwq.expr(), dwk.expr(), dwv.expr());
  constexpr index_t bytes = cuda::arena_bytes_for<cuda::Tensor<float, shape<T, D>>, decltype(expr)>;
  static_assert(bytes > 0, "the head materialises its GEMM operands and the scores");
  CHECK_THROWS_WITH(cuda::eval(out, expr, cuda::arena(bytes / 2)),
                    Catch::Contains("the arena has") && Catch::Contains(std::to_string(bytes)));
  const cuda::arena a(bytes);
  for (int pass = 0; pass < 2; ++pass) { // the same arena again: nothing left over from the first pass matters
    REQUIRE(cudaMemset(out.data(), 0xFF, sizeof(float) * T * D) == cudaSuccess);
    cuda::eval(out, expr, a);
    const Tensor<float, shape<T, D>> got = cuda::to_host(out);
    const double err = normwise(want, got);
    INFO("pass " << pass << ": ||gpu - cpu|| / ||cpu|| = " << err);
    CHECK(err < 2e-6);
  }
}

TEST_CASE("a bf16 feed-forward block (tensor-core GEMMs with fused epilogues) matches the CPU") {
  TENFOLD_REQUIRE_DEVICE();
  const auto x = test::random_tensor<float, shape<T, D>>(-1, 1, 11);
  const auto w1 = test::random_tensor<bf16, shape<D, F>>(-0.2, 0.2, 12);
  const auto w2 = test::random_tensor<bf16, shape<F, D>>(-0.1, 0.1, 13);
  const auto w2t = test::random_tensor<bf16, shape<D, F>>(-0.1, 0.1, 14); // a [out, in] weight, read transposed
  const auto g = test::random_tensor<float, shape<D>>(0.5, 1.5, 15);
  const auto b = test::random_tensor<float, shape<D>>(-0.5, 0.5, 16);
  const auto b1 = test::random_tensor<float, shape<F>>(-0.5, 0.5, 17);
  // CPU: the same statements (16-bit intermediates are rounded where the device rounds them).
  Tensor<bf16, shape<T, D>> h = cast<bf16>(layer_norm(x, g, b));
  Tensor<bf16, shape<T, F>> u = cast<bf16>(gelu(matmul(h, w1) + b1));
  const Tensor<float, shape<T, D>> want = x + matmul(u, w2);
  const Tensor<float, shape<T, D>> want_t = x + matmul(u, transpose(w2t));

  const auto dx = cuda::to_device(x);
  const auto dg = cuda::to_device(g);
  const auto db = cuda::to_device(b);
  const auto db1 = cuda::to_device(b1);
  const auto dw1 = cuda::to_device(w1);
  const auto dw2 = cuda::to_device(w2);
  const auto dw2t = cuda::to_device(w2t);
  cuda::Tensor<bf16, shape<T, D>> dh;
  cuda::Tensor<bf16, shape<T, F>> du;
  cuda::Tensor<float, shape<T, D>> out, out_t;
  dh = cast<bf16>(layer_norm(dx.expr(), dg.expr(), db.expr()));
  du = cast<bf16>(gelu(matmul(dh.expr(), dw1.expr()) + db1.expr()));
  out = dx.expr() + matmul(du.expr(), dw2.expr());
  out_t = dx.expr() + matmul(du.expr(), transpose(dw2t.expr()));
  // The bf16 intermediates could round differently on the two sides (2^-8 relative) where the f32
  // values before rounding differ in the last bits; on the H100 the whole block agreed to 2.1e-7.
  const double e = normwise(want, Tensor<float, shape<T, D>>(cuda::to_host(out)));
  const double et = normwise(want_t, Tensor<float, shape<T, D>>(cuda::to_host(out_t)));
  INFO("||gpu - cpu|| / ||cpu||: " << e << " (B row-major), " << et << " (B transposed)");
  CHECK(e < 2e-5);
  CHECK(et < 2e-5);
}
