// The vector row kernel (cuda/rows_vector.hpp) on the device against the CPU evaluator: row lengths at
// its group boundaries. (Apart from cuda_rows_test: its kernels keep a row in registers, fully unrolled,
// and are the slowest device code of the suite to compile; as a file of their own they build in
// parallel with the rest.)
#include "cuda_test_support.hpp"

using namespace tenfold;
using test::check_close;


// The vector path (cuda/rows_vector.hpp): rows read in 16-byte chunks, the reduced input kept in
// registers. Row lengths around its group boundaries: 128 (a warp, one chunk per lane), 1024 (a warp,
// eight), 1025 (not a multiple of 4: the generic kernel), 4096 (a block of 128) and 32768 (a block of
// 1024, the longest that fits registers); each against the CPU.
namespace {
template <index_t Rows, index_t Cols>
void vector_rows() {
  using S = shape<Rows, Cols>;
  const auto x = test::random_tensor<float, S>(-8, 8, 21);
  const auto g = test::random_tensor<float, shape<Cols>>(0.5, 1.5, 22);
  const auto b = test::random_tensor<float, shape<Cols>>(-1, 1, 23);
  const auto dx = cuda::to_device(x);
  const auto dg = cuda::to_device(g);
  const auto db = cuda::to_device(b);
  cuda::Tensor<float, S> out;
  out = softmax(dx.expr());
  check_close(Tensor<float, S>(softmax(x)), cuda::to_host(out), 1e-5, "softmax");
  out = log_softmax(dx.expr());
  check_close(Tensor<float, S>(log_softmax(x)), cuda::to_host(out), 1e-5, "log_softmax");
  out = layer_norm(dx.expr(), dg.expr(), db.expr());
  check_close(Tensor<float, S>(layer_norm(x, g, b)), cuda::to_host(out), 1e-4, "layer_norm", 1.0);
  out = rms_norm(dx.expr(), dg.expr());
  check_close(Tensor<float, S>(rms_norm(x, g)), cuda::to_host(out), 1e-5, "rms_norm");
  cuda::Tensor<float, shape<Rows>> r;
  r = sum(dx.expr() * dx.expr(), axis<1>); // x twice in one pass: both from registers
  check_close(Tensor<float, shape<Rows>>(sum(x * x, axis<1>)), cuda::to_host(r), 1e-5, "sum of squares along rows");
  r = max(dx.expr(), axis<1>);
  check_close(Tensor<float, shape<Rows>>(max(x, axis<1>)), cuda::to_host(r), 0, "max along rows");
  r = var(dx.expr(), axis<1>);
  check_close(Tensor<float, shape<Rows>>(var(x, axis<1>)), cuda::to_host(r), 1e-5, "var along rows");
}
} // namespace

TEST_CASE("row-fused composites and row reductions match the CPU at the vector path's boundaries") {
  TENFOLD_REQUIRE_DEVICE();
  vector_rows<65, 128>();
  vector_rows<19, 1024>();
  vector_rows<19, 1025>();
  vector_rows<11, 4096>();
  vector_rows<3, 32768>();
}
