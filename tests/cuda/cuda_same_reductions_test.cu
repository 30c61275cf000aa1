// Repeated reductions on the device (plan/same_reductions.hpp, plan/row_slots.hpp): a row kernel
// computes a reduction read twice once, when the launch finds the operands alike, and each occurrence
// otherwise. Counted with a reduction whose device combine counts its calls; values against the CPU.
#include "cuda_test_support.hpp"

using namespace tenfold;
using test::check_close;

namespace same_reductions {
__device__ unsigned long long device_combines;

// A plain sum whose combine counts its calls on the device.
struct counted_sum : ops::reduction<counted_sum, ops::reduce_result::same> {
  static constexpr std::string_view name = "counted_sum";
  template <class A>
  TENFOLD_HD static constexpr A identity() {
    return A(0);
  }
  template <class A, class X>
  TENFOLD_HD static A combine(A acc, X x, index_t) {
#ifdef __CUDA_ARCH__
    atomicAdd(&device_combines, 1ull);
#endif
    return acc + A(x);
  }
  template <class A>
  TENFOLD_HD static A merge(A a, A b) {
    return a + b;
  }
  template <class A>
  TENFOLD_HD static A finalize(A a, index_t) {
    return a;
  }
};
template <class X>
auto row_sum(X&& x) {
  return reduce<counted_sum>(std::forward<X>(x), axis<-1>, keepdims);
}

void reset() {
  const unsigned long long zero = 0;
  TENFOLD_CUDA_CHECK(cudaMemcpyToSymbol(device_combines, &zero, sizeof zero));
}
unsigned long long combines() {
  unsigned long long n = 0;
  TENFOLD_CUDA_CHECK(cudaDeviceSynchronize());
  TENFOLD_CUDA_CHECK(cudaMemcpyFromSymbol(&n, device_combines, sizeof n));
  return n;
}
} // namespace same_reductions
using namespace same_reductions;

TEST_CASE("a row kernel computes a reduction read twice once, and look-alikes each", "[same_reductions]") {
  TENFOLD_REQUIRE_DEVICE();
  constexpr index_t rows = 24, cols = 517;
  using S = shape<rows, cols>;
  const auto a = test::random_tensor<float, S>(-2, 2, 51);
  const auto b = test::random_tensor<float, S>(-1, 3, 52);
  const auto da = cuda::to_device(a);
  const auto db = cuda::to_device(b);
  cuda::Tensor<float, S> o;
  constexpr unsigned long long once = rows * cols;

  reset();
  o = da.expr() - row_sum(da.expr()) + row_sum(da.expr()) * 0.5f;
  CHECK(combines() == once);
  check_close(Tensor<float, S>(a - row_sum(a) + row_sum(a) * 0.5f), cuda::to_host(o), 1e-5, "twice", 1.0);

  reset(); // nested in another's operand, as layer_norm's variance
  o = (da.expr() - row_sum(da.expr()) * (1.0f / cols)) * row_sum(square(da.expr() - row_sum(da.expr()) * (1.0f / cols))) * (1.0f / cols);
  CHECK(combines() == 2 * once);
  check_close(Tensor<float, S>((a - row_sum(a) * (1.0f / cols)) * row_sum(square(a - row_sum(a) * (1.0f / cols))) * (1.0f / cols)),
              cuda::to_host(o), 1e-5, "nested", 1.0);

  reset(); // one type, other tensors
  o = (da.expr() - row_sum(da.expr())) * (db.expr() - row_sum(db.expr()));
  CHECK(combines() == 2 * once);
  // Compared at the scale of the factors: where a is close to its row's sum, the product is small but
  // carries |b - sum b| (~516) times the rounding of that sum (~3e-6 in another summation order).
  check_close(Tensor<float, S>((a - row_sum(a)) * (b - row_sum(b))), cuda::to_host(o), 1e-5, "look-alikes", 1e3);

  reset(); // one reduction at two rows
  o = da.expr() - row_sum(da.expr()) + flip<0>(row_sum(da.expr()));
  CHECK(combines() == 2 * once);
  check_close(Tensor<float, S>(a - row_sum(a) + flip<0>(row_sum(a))), cuda::to_host(o), 1e-5, "flipped", 1.0);

  // The composites: softmax of two alike tensors in one kernel, layer_norm, log_softmax.
  o = softmax(da.expr()) + softmax(db.expr());
  check_close(Tensor<float, S>(softmax(a) + softmax(b)), cuda::to_host(o), 1e-5, "softmax(a) + softmax(b)", 1.0);
  const auto g = test::random_tensor<float, shape<cols>>(0.5, 1.5, 53);
  const auto h = test::random_tensor<float, shape<cols>>(-1, 1, 54);
  const auto dg = cuda::to_device(g);
  const auto dh = cuda::to_device(h);
  o = layer_norm(da.expr(), dg.expr(), dh.expr());
  check_close(Tensor<float, S>(layer_norm(a, g, h)), cuda::to_host(o), 1e-5, "layer_norm", 1.0);
  o = log_softmax(da.expr());
  check_close(Tensor<float, S>(log_softmax(a)), cuda::to_host(o), 1e-5, "log_softmax", 1.0);
}
