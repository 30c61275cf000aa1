// bf16 GEMM (f32 accumulation) on tensor cores against cuBLAS (cublasGemmEx, the peer only) at 4096^3
// and 8192^3. Prints TFLOP/s and the ratio (issue 5 target: >= 70% of cuBLAS).
#include "bench_timing.hpp"

#include <cublas_v2.h>

using namespace tenfold;

namespace {
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw error(std::string("cuBLAS: ") + what + " failed (" + std::to_string(int(s)) + ")");
}

template <index_t N>
void gemm_case(cublasHandle_t h) {
  using S = shape<N, N>;
  rng gen(3);
  cuda::Tensor<bf16, S> a, b;
  cuda::Tensor<float, S> c, ref;
  a = cast<bf16>(uniform<S>(gen, -1.0f, 1.0f));
  b = cast<bf16>(uniform<S>(gen, -1.0f, 1.0f));
  const double ours = bench::median_ms([&] { c = matmul(a.expr(), b.expr()); }, 20);
  // The portable wmma kernel (what runs where there is no sm_90a code), for the record.
  cuda::detail::sm90::portable_only() = true;
  const double portable = bench::median_ms([&] { c = matmul(a.expr(), b.expr()); }, 20);
  cuda::detail::sm90::portable_only() = false;
  c = matmul(a.expr(), b.expr());
  const float one = 1, zero = 0;
  // Row-major C = A B is column-major C^T = B^T A^T: swap the operands.
  const double peer = bench::median_ms(
      [&] {
        check(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, b.data(), CUDA_R_16BF, N, a.data(), CUDA_R_16BF, N, &zero,
                           ref.data(), CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              "cublasGemmEx");
      },
      20);
  const double flops = 2.0 * N * N * N;
  std::printf("bf16 GEMM %ld^3: tenfold %7.1f TFLOP/s (%s), cuBLAS %7.1f TFLOP/s, ratio %5.1f%% | portable wmma kernel %7.1f TFLOP/s\n",
              long(N), flops / ours / 1e9, cuda::detail::sm90::available() ? "sm90 TMA + wgmma" : "portable", flops / peer / 1e9,
              100.0 * peer / ours, flops / portable / 1e9);
  // Sanity: the two results agree (same inputs, f32 accumulation in both).
  const auto hc = cuda::to_host(c);
  const auto hr = cuda::to_host(ref);
  double worst = 0;
  for (index_t i = 0; i < S::size; i += 997) worst = std::max(worst, double(std::fabs(hc.data()[i] - hr.data()[i])));
  std::printf("  max |tenfold - cuBLAS| on a sample: %g\n", worst);
}
} // namespace

// f32 at 4096^3: the exact SIMT kernel and the TF32 tensor-core kernel (cuda::tf32_matmul()) against
// cuBLAS SGEMM and cuBLAS with TF32 (CUBLAS_COMPUTE_32F_FAST_TF32).
void f32_case(cublasHandle_t h) {
  constexpr index_t N = 4096;
  using S = shape<N, N>;
  rng gen(5);
  cuda::Tensor<float, S> a, b, c, ref;
  a = uniform<S>(gen, -1.0f, 1.0f);
  b = uniform<S>(gen, -1.0f, 1.0f);
  const double simt = bench::median_ms([&] { c = matmul(a.expr(), b.expr()); }, 10);
  cuda::tf32_matmul() = true;
  const double tf32 = bench::median_ms([&] { c = matmul(a.expr(), b.expr()); }, 10);
  cuda::tf32_matmul() = false;
  const float one = 1, zero = 0;
  auto peer = [&](cublasComputeType_t ct) {
    return bench::median_ms(
        [&] {
          check(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, b.data(), CUDA_R_32F, N, a.data(), CUDA_R_32F, N, &zero,
                             ref.data(), CUDA_R_32F, N, ct, CUBLAS_GEMM_DEFAULT),
                "cublasGemmEx");
        },
        10);
  };
  const double sgemm = peer(CUBLAS_COMPUTE_32F), peer_tf32 = peer(CUBLAS_COMPUTE_32F_FAST_TF32);
  const double flops = 2.0 * N * N * N;
  std::printf("f32 GEMM %ld^3: tenfold SIMT %6.1f TFLOP/s vs cuBLAS SGEMM %6.1f (%5.1f%%) | tenfold TF32 %6.1f vs cuBLAS TF32 %6.1f (%5.1f%%)\n",
              long(N), flops / simt / 1e9, flops / sgemm / 1e9, 100.0 * sgemm / simt, flops / tf32 / 1e9, flops / peer_tf32 / 1e9,
              100.0 * peer_tf32 / tf32);
}

int main() {
  if (!bench::device_ready()) return 0;
  cublasHandle_t h;
  check(cublasCreate(&h), "cublasCreate");
  gemm_case<4096>(h);
  gemm_case<8192>(h);
  f32_case(h);
  cublasDestroy(h);
}
