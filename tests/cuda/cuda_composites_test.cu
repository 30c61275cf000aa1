// The composites that cuda_rows_test.cu does not cover (softmax, log_softmax, layer_norm, rms_norm and
// cross_entropy are there), on the device against the CPU evaluator on the same inputs: every
// composite of ops/composites.hpp runs on both.
#include "cuda_test_support.hpp"

#include <string>

using namespace tenfold;

using test::check_close;

TEST_CASE("l2_normalize, batch_norm, the losses and dropout match the CPU") {
  TENFOLD_REQUIRE_DEVICE();
  using S = shape<6, 40>;
  const auto x = test::random_tensor<float, S>(-2, 2, 31);
  const auto y = test::random_tensor<float, S>(-2, 2, 32);
  Tensor<std::int64_t, shape<6>> labels;
  for (index_t i = 0; i < 6; ++i) labels(i) = (i * 13) % 40;
  const auto dx = cuda::to_device(x);
  const auto dy = cuda::to_device(y);
  const auto dl = cuda::to_device(labels);

  cuda::Tensor<float, S> o;
  o = l2_normalize(dx.expr());
  check_close(Tensor<float, S>(l2_normalize(x)), cuda::to_host(o), 1e-6, "l2_normalize", 1.0);

  cuda::Tensor<float> loss;
  loss = nll_loss(log_softmax(dx.expr()), dl.expr());
  check_close(Tensor<float>(nll_loss(log_softmax(x), labels)), cuda::to_host(loss), 1e-6, "nll_loss", 1.0);
  loss = mse_loss(dx.expr(), dy.expr());
  check_close(Tensor<float>(mse_loss(x, y)), cuda::to_host(loss), 1e-6, "mse_loss", 1.0);
  loss = l1_loss(dx.expr(), dy.expr());
  check_close(Tensor<float>(l1_loss(x, y)), cuda::to_host(loss), 1e-6, "l1_loss", 1.0);
  loss = kl_div(log_softmax(dx.expr()), softmax(dy.expr()));
  check_close(Tensor<float>(kl_div(log_softmax(x), softmax(y))), cuda::to_host(loss), 1e-5, "kl_div", 1.0);

  // Dropout: the mask comes from the counter-based generator, so the same seed gives the same mask.
  rng cpu_gen(77), gpu_gen(77);
  const Tensor<float, S> cpu_drop = dropout(x, 0.3f, cpu_gen);
  o = dropout(dx.expr(), 0.3f, gpu_gen);
  check_close(cpu_drop, Tensor<float, S>(cuda::to_host(o)), 0, "dropout", 1.0);
  index_t dropped = 0;
  for (index_t i = 0; i < S::size; ++i) dropped += cpu_drop.data()[i] == 0.0f;
  CHECK(dropped > S::size / 5); // about 30% of 240 are zero: the mask is not all-keep
  CHECK(dropped < S::size / 2);

  // Inference batch norm, NCHW and NHWC.
  using X4 = shape<2, 3, 5, 7>;
  const auto x4 = test::random_tensor<float, X4>(-2, 2, 33);
  const auto mean = test::random_tensor<float, shape<3>>(-0.5, 0.5, 34);
  const auto var = test::random_tensor<float, shape<3>>(0.5, 2.0, 35);
  const auto gamma = test::random_tensor<float, shape<3>>(0.5, 1.5, 36);
  const auto beta = test::random_tensor<float, shape<3>>(-0.5, 0.5, 37);
  const auto dx4 = cuda::to_device(x4);
  const auto dm = cuda::to_device(mean);
  const auto dv = cuda::to_device(var);
  const auto dgam = cuda::to_device(gamma);
  const auto dbet = cuda::to_device(beta);
  cuda::Tensor<float, X4> bn;
  bn = batch_norm(dx4.expr(), dm.expr(), dv.expr(), dgam.expr(), dbet.expr());
  check_close(Tensor<float, X4>(batch_norm(x4, mean, var, gamma, beta)), cuda::to_host(bn), 1e-6, "batch_norm NCHW", 1.0);
  using X4l = shape<2, 5, 7, 3>;
  const auto x4l = test::random_tensor<float, X4l>(-2, 2, 38);
  const auto dx4l = cuda::to_device(x4l);
  cuda::Tensor<float, X4l> bnl;
  bnl = batch_norm<-1>(dx4l.expr(), dm.expr(), dv.expr(), dgam.expr(), dbet.expr());
  check_close(Tensor<float, X4l>(batch_norm<-1>(x4l, mean, var, gamma, beta)), cuda::to_host(bnl), 1e-6, "batch_norm NHWC", 1.0);
}

// A destination its expression also reads (plan/aliasing.hpp decides it once for both backends; the
// host-side decision is in cuda_host_test.cu): on the device, each form gives the CPU's result, which
// tests/aliasing_test.cpp checks against plain loops.
TEST_CASE("a destination read through another index map gives the CPU's result", "[aliasing]") {
  TENFOLD_REQUIRE_DEVICE();
  constexpr index_t n = 33; // not a multiple of a warp or a tile
  using S = shape<n, n>;
  const auto x0 = test::random_tensor<float, S>(-2, 2, 41);
  const auto w = test::random_tensor<float, S>(-1, 1, 42);
  const auto dw = cuda::to_device(w);
  Tensor<float, S> want;
  cuda::Tensor<float, S> x;
  const auto check = [&](const char* what) { check_close(want, cuda::to_host(x), 1e-5, what, 1.0); };

  x.copy_from(x0);
  x = transpose(x.expr()) + x.expr();
  want = transpose(x0) + x0;
  check("x = transpose(x) + x");
  x.copy_from(x0);
  x = let(x.expr(), [](const auto& p) { return transpose(p); });
  want = transpose(x0);
  check("x = let(x, transpose)");
  x.copy_from(x0);
  x = flip(x.expr()) * x.expr();
  want = flip(x0) * x0;
  check("x = flip(x) * x");
  x.copy_from(x0);
  x = broadcast_to<S>(slice<range<0, 1>>(x.expr()));
  want = broadcast_to<S>(slice<range<0, 1>>(x0));
  check("x = broadcast of its row 0");
  x.copy_from(x0);
  cuda::eval(slice<range<1, n>>(x.out()), slice<range<0, n - 1>>(x.expr()));
  want = x0;
  eval(slice<range<1, n>>(want), slice<range<0, n - 1>>(x0));
  check("rows shifted down by one");
  x.copy_from(x0);
  cuda::eval(slice<range<0, 1>>(x.out()), sum(x.expr(), axis<0>, keepdims));
  want = x0;
  eval(slice<range<0, 1>>(want), sum(x0, axis<0>, keepdims));
  check("row 0 = the column sums");
  x.copy_from(x0);
  x = x.expr() - max(x.expr(), axis<1>, keepdims);
  want = x0 - max(x0, axis<1>, keepdims);
  check("x = x - max(x)");
  x.copy_from(x0);
  x = relu(matmul(x.expr(), dw.expr()) + x.expr());
  want = relu(matmul(x0, w) + x0);
  check("x = relu(x @ w + x)");
}
