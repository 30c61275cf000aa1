// GEMM on the device against a long-double reference: tensor cores for bf16/f16 (f32 accumulation),
// the SIMT kernel for f32, odd sizes, a transposed operand, batches, and fused epilogues.
#include "cuda_test_support.hpp"

using namespace tenfold;

namespace {
// C[b] = A[b] B (+ bias, relu) in long double, from the rounded inputs the device sees.
template <class T, index_t Bt, index_t M, index_t K, index_t N>
void check_gemm(double rel, bool transposed_b) {
  const auto a = test::random_tensor<T, shape<Bt, M, K>>(-1, 1, 21);
  const auto bn = test::random_tensor<T, shape<K, N>>(-1, 1, 22);
  const auto bt = test::random_tensor<T, shape<N, K>>(-1, 1, 23);
  const auto bias = test::random_tensor<float, shape<N>>(-1, 1, 24);
  const auto da = cuda::to_device(a);
  const auto dbn = cuda::to_device(bn);
  const auto dbt = cuda::to_device(bt);
  const auto dbias = cuda::to_device(bias);
  cuda::Tensor<float, shape<Bt, M, N>> out;
  if (transposed_b) out = relu(matmul(da.expr(), transpose(dbt.expr())) + dbias.expr());
  else out = relu(matmul(da.expr(), dbn.expr()) + dbias.expr());
  const Tensor<float, shape<Bt, M, N>> got = cuda::to_host(out);
  double worst = 0;
  for (index_t b = 0; b < Bt; ++b)
    for (index_t i = 0; i < M; ++i)
      for (index_t j = 0; j < N; ++j) {
        long double acc = 0, mag = 0;
        for (index_t k = 0; k < K; ++k) {
          const long double p = (long double)float(a(b, i, k)) * (long double)float(transposed_b ? bt(j, k) : bn(k, j));
          acc += p;
          mag += std::fabs((double)p);
        }
        const long double want = std::max(0.0L, acc + bias(j));
        // Error relative to the sum of |products| (the scale of the rounding errors of any order).
        worst = std::max(worst, double(std::fabs(want - (long double)got(b, i, j)) / (mag + 1e-30L)));
      }
  INFO("worst error relative to sum |a b|: " << worst);
  CHECK(worst <= rel);
}
} // namespace

TEST_CASE("bf16 and f16 GEMM on tensor cores match a long-double reference") {
  TENFOLD_REQUIRE_DEVICE();
  check_gemm<bf16, 2, 130, 72, 200>(1e-5, false); // f32 accumulation of exact bf16 products
  check_gemm<f16, 1, 77, 40, 65>(1e-5, true);     // odd sizes, transposed operand (scalar tile loads)
  check_gemm<bf16, 1, 256, 256, 256>(1e-5, false);
}
TEST_CASE("f32 GEMM (SIMT) matches a long-double reference") {
  TENFOLD_REQUIRE_DEVICE();
  check_gemm<float, 3, 33, 129, 70>(1e-5, true);
  check_gemm<float, 1, 128, 64, 64>(1e-5, false);
}
