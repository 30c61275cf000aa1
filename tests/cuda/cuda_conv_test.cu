// Convolutions on the device: conv2d and conv_transpose2d (NCHW and NHWC, stride, padding, dilation,
// groups, output padding), with a fused epilogue and read by a reduction, and their gradients through
// value_and_grad with device parameters, each against the CPU evaluator (whose convolutions the CPU tests
// check against long-double loops). The device runs them directly: a thread per output element, or a block
// per run of outputs where the outputs are few and their sums long (cuda/dot.hpp).
#include "cuda_test_support.hpp"

#include <tenfold/autodiff/backward.hpp>

using namespace tenfold;

using test::check_close;

// Outputs are sums of 18-27 products of magnitude ~0.1-0.5, added in another order on the device: a few
// float roundings of those terms apart (1.1e-7 seen on an H200 for a sum of 18), so values near zero are
// compared at the scale 5e-2 (5e-7 at the relative tolerance 1e-5).
constexpr double conv_scale = 5e-2;

TEST_CASE("conv2d and conv_transpose2d on the device match the CPU", "[conv]") {
  TENFOLD_REQUIRE_DEVICE();
  SECTION("NCHW, stride 2, padding 1, bias and relu in the epilogue; a row sum of it") {
    const auto x = test::random_tensor<float, shape<2, 3, 9, 11>>(-1, 1, 61);
    const auto w = test::random_tensor<float, shape<4, 3, 3, 3>>(-0.5, 0.5, 62);
    const auto b = test::random_tensor<float, shape<4, 1, 1>>(-0.2, 0.2, 63);
    const auto dx = cuda::to_device(x);
    const auto dw = cuda::to_device(w);
    const auto db = cuda::to_device(b);
    const Tensor<float, shape<2, 4, 5, 6>> cpu = relu(conv2d(x, w, stride<2>, padding<1>) + b);
    cuda::Tensor<float, shape<2, 4, 5, 6>> out;
    out = relu(conv2d(dx.expr(), dw.expr(), stride<2>, padding<1>) + db.expr());
    check_close(cpu, cuda::to_host(out), 1e-5, "conv2d NCHW, bias, relu", conv_scale);
    const Tensor<float, shape<2, 4, 5>> cpu_rows = sum(conv2d(x, w, stride<2>, padding<1>), axis<3>);
    cuda::Tensor<float, shape<2, 4, 5>> rows;
    rows = sum(conv2d(dx.expr(), dw.expr(), stride<2>, padding<1>), axis<3>);
    check_close(cpu_rows, cuda::to_host(rows), 1e-5, "row sums of a conv2d (materialised)", conv_scale);
  }
  SECTION("NHWC, 2 groups, dilation 2, padding 2") {
    const auto x = test::random_tensor<float, shape<2, 10, 8, 4>>(-1, 1, 64);
    const auto w = test::random_tensor<float, shape<3, 3, 2, 6>>(-0.5, 0.5, 65);
    const auto dx = cuda::to_device(x);
    const auto dw = cuda::to_device(w);
    const Tensor<float, shape<2, 10, 8, 6>> cpu = conv2d(x, w, dilation<2>, padding<2>, groups<2>, nhwc);
    cuda::Tensor<float, shape<2, 10, 8, 6>> out;
    out = conv2d(dx.expr(), dw.expr(), dilation<2>, padding<2>, groups<2>, nhwc);
    check_close(cpu, cuda::to_host(out), 1e-5, "conv2d NHWC grouped, dilated", conv_scale);
  }
  SECTION("conv_transpose2d NCHW, stride 2, padding 1, output padding 1") {
    const auto x = test::random_tensor<float, shape<1, 4, 5, 6>>(-1, 1, 66);
    const auto w = test::random_tensor<float, shape<4, 3, 3, 3>>(-0.5, 0.5, 67);
    const auto dx = cuda::to_device(x);
    const auto dw = cuda::to_device(w);
    const Tensor<float, shape<1, 3, 10, 12>> cpu = conv_transpose2d(x, w, stride<2>, padding<1>, output_padding<1>);
    cuda::Tensor<float, shape<1, 3, 10, 12>> out;
    out = conv_transpose2d(dx.expr(), dw.expr(), stride<2>, padding<1>, output_padding<1>);
    check_close(cpu, cuda::to_host(out), 1e-5, "conv_transpose2d", conv_scale);
  }
}

TEST_CASE("conv2d's gradients on the device (input and weights) match the CPU", "[conv][grad]") {
  TENFOLD_REQUIRE_DEVICE();
  const auto x = test::random_tensor<float, shape<2, 3, 8, 8>>(-1, 1, 71);
  const auto w = test::random_tensor<float, shape<4, 3, 3, 3>>(-0.5, 0.5, 72);
  const auto r = test::random_tensor<float, shape<2, 4, 4, 4>>(-1, 1, 73);
  const auto f = [](const auto& r_) {
    return [&r_](const auto& x_, const auto& w_) { return sum(relu(conv2d(x_, w_, stride<2>, padding<1>)) * r_); };
  };
  auto [l, gx, gw] = value_and_grad(f(r), x, w);
  const auto dr = cuda::to_device(r);
  const auto dx = cuda::to_device(x);
  const auto dw = cuda::to_device(w);
  const auto dre = dr.expr();
  auto [dev_l, dev_gx, dev_gw] = value_and_grad(f(dre), dx, dw);
  cuda::Tensor<float> loss;
  cuda::Tensor<float, shape<2, 3, 8, 8>> ox;
  cuda::Tensor<float, shape<4, 3, 3, 3>> ow;
  loss = dev_l, ox = dev_gx, ow = dev_gw;
  check_close(Tensor<float>(l), cuda::to_host(loss), 1e-4, "loss", 1e-3);
  check_close(Tensor<float, shape<2, 3, 8, 8>>(gx), cuda::to_host(ox), 1e-4, "d x", 1e-3);
  check_close(Tensor<float, shape<4, 3, 3, 3>>(gw), cuda::to_host(ow), 1e-4, "d w", 1e-3);
}

// NHWC gradients at the CNN's geometry (examples/fashion_mnist): the weights' gradient is a convolution
// over x with the batch as its channels (autodiff/conv_adjoint.hpp), few outputs over long sums, which
// the device runs a block per run of outputs (cuda/dot.hpp); the input's gradient is a transposed
// convolution with fewer than 32768 outputs, there too.
template <index_t B, index_t H, index_t C, index_t OC>
void check_nhwc_gradients(std::uint64_t seed) {
  const auto x = test::random_tensor<float, shape<B, H, H, C>>(-1, 1, seed);
  const auto w = test::random_tensor<float, shape<3, 3, C, OC>>(-0.5, 0.5, seed + 1);
  const auto r = test::random_tensor<float, shape<B, H, H, OC>>(-1, 1, seed + 2);
  const auto f = [](const auto& r_) {
    return [&r_](const auto& x_, const auto& w_) { return sum(conv2d(x_, w_, padding<1>, nhwc) * r_); };
  };
  auto [l, gx, gw] = value_and_grad(f(r), x, w);
  const auto dr = cuda::to_device(r);
  const auto dx = cuda::to_device(x);
  const auto dw = cuda::to_device(w);
  const auto dre = dr.expr();
  auto [dev_l, dev_gx, dev_gw] = value_and_grad(f(dre), dx, dw);
  cuda::Tensor<float> loss;
  cuda::Tensor<float, shape<B, H, H, C>> ox;
  cuda::Tensor<float, shape<3, 3, C, OC>> ow;
  loss = dev_l, ox = dev_gx, ow = dev_gw;
  // Sums of up to 12544 products of magnitude <= 0.5, in other orders: compared at the scale 1.
  check_close(Tensor<float>(l), cuda::to_host(loss), 1e-4, "loss", 1.0);
  check_close(Tensor<float, shape<B, H, H, C>>(gx), cuda::to_host(ox), 2e-4, "d x", 1.0);
  check_close(Tensor<float, shape<3, 3, C, OC>>(gw), cuda::to_host(ow), 2e-4, "d w", 1.0);
}

TEST_CASE("NHWC convolution gradients with few outputs over long sums match the CPU", "[conv][grad]") {
  TENFOLD_REQUIRE_DEVICE();
  SECTION("16 -> 32 channels at 14 x 14, batch 8: d w 4608 outputs of 1568 terms") { check_nhwc_gradients<8, 14, 16, 32>(81); }
  SECTION("1 -> 16 channels at 28 x 28, batch 16: d w 144 outputs of 12544 terms") { check_nhwc_gradients<16, 28, 1, 16>(84); }
  SECTION("2 -> 3 channels at 6 x 6, batch 2: d w of 72 terms, runs of one output") { check_nhwc_gradients<2, 6, 2, 3>(87); }
}
