// Bandwidth-bound kernels against a device-to-device copy of the same bytes: the fused 5-op
// elementwise chain, softmax and layer_norm rows. Prints GB/s and the ratio to the copy
// (issue 5 targets: chain >= 90% of copy bandwidth; softmax vs PyTorch in bench/cuda/torch_compare.py).
#include "bench_timing.hpp"

using namespace tenfold;

namespace {
template <index_t Rows, index_t Cols>
void rows_case() {
  using S = shape<Rows, Cols>;
  rng gen(7);
  cuda::Tensor<float, S> x, y, out;
  x = normal<S>(gen);
  y = normal<S>(gen);
  cuda::Tensor<float, shape<Cols>> g, b;
  g = uniform<shape<Cols>>(gen, 0.5f, 1.5f);
  b = uniform<shape<Cols>>(gen, -1.0f, 1.0f);
  constexpr double bytes_io = 2.0 * S::size * sizeof(float); // read x, write out
  const double copy = bench::median_ms([&] {
    TENFOLD_CUDA_CHECK(cudaMemcpyAsync(out.data(), x.data(), S::size * sizeof(float), cudaMemcpyDeviceToDevice));
  });
  // The 5-op chain reads two inputs: compare against copying both (3 streams of bytes).
  const double chain = bench::median_ms([&] { out = relu(x.expr() * 1.5f + y.expr()) - exp(-abs(x.expr())); });
  const double sm = bench::median_ms([&] { out = softmax(x.expr()); });
  const double ln = bench::median_ms([&] { out = layer_norm(x.expr(), g.expr(), b.expr()); });
  const double gbs = bytes_io / copy / 1e6;
  std::printf("[%6ld x %6ld] copy %8.1f GB/s | chain %6.3f ms (%5.1f%% of copy bw) | softmax %6.3f ms (%5.1f%%) | "
              "layer_norm %6.3f ms (%5.1f%%)\n",
              long(Rows), long(Cols), gbs, chain, 100.0 * (1.5 * bytes_io / chain / 1e6) / gbs, sm,
              100.0 * (bytes_io / sm / 1e6) / gbs, ln, 100.0 * (bytes_io / ln / 1e6) / gbs);
}
} // namespace

int main() {
  if (!bench::device_ready()) return 0;
  rows_case<4096, 1024>();
  rows_case<8192, 4096>();
  rows_case<1024, 32768>();
  rows_case<65536, 128>();
}
