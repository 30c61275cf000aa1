// GEMM on the device against a long-double reference: tensor cores for bf16/f16 (f32 accumulation),
// the SIMT kernel for f32, odd sizes, a transposed operand, batches, and fused epilogues. On a Hopper
// device built for sm_90a every tensor-core case runs twice: the TMA + wgmma kernel (cuda/gemm_sm90.hpp)
// and the portable wmma kernel (cuda/gemm.hpp).
#include "cuda_test_support.hpp"

using namespace tenfold;

namespace {
enum class b_form { row_major, transposed, batched };

// C[b] = relu(A[b] B[b] + bias) in long double, from the rounded inputs the device sees.
// Returns the worst error, relative to sum |a b|.
template <class T, index_t Bt, index_t M, index_t K, index_t N, b_form F, class Out = float>
double check_gemm(double rel) {
  const auto a = test::random_tensor<T, shape<Bt, M, K>>(-1, 1, 21);
  const auto bn = test::random_tensor<T, shape<K, N>>(-1, 1, 22);
  const auto bt = test::random_tensor<T, shape<N, K>>(-1, 1, 23);
  const auto bb = test::random_tensor<T, shape<Bt, K, N>>(-1, 1, 25);
  const auto bias = test::random_tensor<float, shape<N>>(-1, 1, 24);
  const auto da = cuda::to_device(a);
  const auto dbn = cuda::to_device(bn);
  const auto dbt = cuda::to_device(bt);
  const auto dbb = cuda::to_device(bb);
  const auto dbias = cuda::to_device(bias);
  cuda::Tensor<Out, shape<Bt, M, N>> out;
  // Poison (all-ones bytes: NaN in every float format): an unwritten element fails the check.
  REQUIRE(cudaMemset(out.data(), 0xFF, sizeof(Out) * Bt * M * N) == cudaSuccess);
  // (cast<Out>: a 16-bit output is an explicit narrowing; for a float one it is no node at all.)
  if constexpr (F == b_form::transposed) out = cast<Out>(relu(matmul(da.expr(), transpose(dbt.expr())) + dbias.expr()));
  else if constexpr (F == b_form::batched) out = cast<Out>(relu(matmul(da.expr(), dbb.expr()) + dbias.expr()));
  else out = cast<Out>(relu(matmul(da.expr(), dbn.expr()) + dbias.expr()));
  const Tensor<Out, shape<Bt, M, N>> got = cuda::to_host(out);
  double worst = 0;
  for (index_t b = 0; b < Bt; ++b)
    for (index_t i = 0; i < M; ++i)
      for (index_t j = 0; j < N; ++j) {
        long double acc = 0, mag = 0;
        for (index_t k = 0; k < K; ++k) {
          const float bv = F == b_form::transposed ? float(bt(j, k)) : F == b_form::batched ? float(bb(b, k, j)) : float(bn(k, j));
          const long double p = (long double)float(a(b, i, k)) * (long double)bv;
          acc += p;
          mag += std::fabs((double)p);
        }
        const long double want = std::max(0.0L, acc + bias(j));
        const double g = double(got(b, i, j));
        // Error relative to the sum of |products| (the scale of the rounding errors of any order);
        // a 16-bit output adds its own rounding, relative to the value.
        const double out_round = std::is_same_v<Out, float> ? 0.0 : std::fabs(double(want)) * 8e-3;
        const double err = std::isfinite(g) ? std::max(0.0, double(std::fabs(want - (long double)g)) - out_round) / double(mag + 1e-30L) : INFINITY;
        worst = std::max(worst, err);
      }
  INFO("worst error relative to sum |a b|: " << worst);
  CHECK(worst <= rel);
  return worst;
}

// Every tensor-core case, through each GEMM kernel this device has.
template <class F>
void on_each_tensor_core_path(F&& f) {
  const bool hopper = cuda::detail::sm90::available();
  cuda::detail::sm90::portable_only() = false;
  INFO((hopper ? "sm90 (TMA + wgmma) kernel" : "portable kernel (no sm_90a code for this device)"));
  f();
  if (hopper) {
    cuda::detail::sm90::portable_only() = true;
    INFO("portable kernel");
    f();
    cuda::detail::sm90::portable_only() = false;
  }
}
} // namespace

TEST_CASE("bf16 and f16 GEMM on tensor cores match a long-double reference") {
  TENFOLD_REQUIRE_DEVICE();
  on_each_tensor_core_path([] {
    check_gemm<bf16, 2, 130, 72, 200, b_form::row_major>(1e-5);  // M, N and K tails, A batched, B broadcast
    check_gemm<f16, 1, 77, 40, 65, b_form::transposed>(1e-5);    // B K-major (a transposed [N, K] weight)
    check_gemm<bf16, 1, 256, 256, 256, b_form::row_major>(1e-5); // whole tiles
    check_gemm<bf16, 3, 200, 136, 264, b_form::batched>(1e-5);   // both operands batched
    check_gemm<bf16, 1, 2100, 328, 520, b_form::transposed>(1e-5); // > 16 tile-rows: the grouped tile order
    check_gemm<bf16, 1, 96, 200, 96, b_form::row_major, bf16>(1e-5); // bf16 output
    check_gemm<bf16, 1, 33, 70, 48, b_form::row_major>(1e-5);   // row stride not 16 bytes: portable only
  });
}
TEST_CASE("the sm90 GEMM is used exactly where the device is Hopper and the build has sm_90a code") {
  TENFOLD_REQUIRE_DEVICE();
  int major = 0, minor = 0;
  REQUIRE(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0) == cudaSuccess);
  // The tests are built for 80 and 90a (CMakeLists.txt): on an H100/H200 the sm90 kernel must be there.
  CHECK(cuda::detail::sm90::available() == (major == 9 && minor == 0));
  using Mm = decltype(matmul(std::declval<cuda::Tensor<bf16, shape<64, 64>>&>().expr(), std::declval<cuda::Tensor<bf16, shape<64, 64>>&>().expr()));
  static_assert(cuda::detail::sm90::eligible_v<Mm>);
  using Odd = decltype(matmul(std::declval<cuda::Tensor<bf16, shape<64, 70>>&>().expr(), std::declval<cuda::Tensor<bf16, shape<70, 64>>&>().expr()));
  static_assert(!cuda::detail::sm90::eligible_v<Odd>); // K = 70: rows of A are not 16-byte multiples
}
TEST_CASE("f32 GEMM (SIMT) matches a long-double reference") {
  TENFOLD_REQUIRE_DEVICE();
  REQUIRE_FALSE(cuda::tf32_matmul()); // off by default
  check_gemm<float, 2, 33, 100, 70, b_form::transposed>(1e-5); // tails, batches, B K-major
  check_gemm<float, 1, 128, 64, 64, b_form::row_major>(1e-5);
}
TEST_CASE("f32 GEMMs of few tiles over a long K (cuda/dot.hpp) match a long-double reference") {
  TENFOLD_REQUIRE_DEVICE();
  check_gemm<float, 3, 33, 129, 70, b_form::transposed>(1e-5); // runs of 32 outputs, 8 slices, batched, B K-major
  check_gemm<float, 1, 64, 1568, 128, b_form::row_major>(1e-5); // runs of 32, 32 slices (a dense layer)
  check_gemm<float, 2, 20, 3000, 24, b_form::batched>(1e-5);    // runs of 4 (with a tail), 128 slices
  check_gemm<float, 2, 64, 64, 10, b_form::transposed>(1e-5);   // K = 64, runs of 16 over 10 columns
}
TEST_CASE("f32 GEMM with tf32_matmul() on runs on tensor cores, within TF32's rounding") {
  TENFOLD_REQUIRE_DEVICE();
  cuda::tf32_matmul() = true;
  // Inputs rounded to a 10-bit mantissa (2^-11 relative each): about 1e-3 of sum |a b| at most. The
  // error must also be well above exact f32's (~1e-7), or the tensor cores did not run.
  const double e1 = check_gemm<float, 2, 130, 72, 200, b_form::row_major>(2e-3);
  const double e2 = check_gemm<float, 1, 77, 40, 65, b_form::transposed>(2e-3);
  const double e3 = check_gemm<float, 3, 64, 100, 96, b_form::batched>(2e-3);
  cuda::tf32_matmul() = false;
  CHECK(e1 > 1e-5);
  CHECK(e2 > 1e-5);
  CHECK(e3 > 1e-5);
  CHECK(check_gemm<float, 1, 77, 40, 65, b_form::transposed>(1e-5) < 1e-5); // and off again: exact
}
