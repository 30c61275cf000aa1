// Reductions over any axes, the row-fused composites (one kernel each, on the generic and the vector
// row kernels) and views, on the device against the CPU evaluator on the same inputs.
#include "cuda_test_support.hpp"

using namespace tenfold;

namespace {
using test::check_close;

// Rows short enough for a warp each, and long enough for a block each.
template <index_t Rows, index_t Cols>
void composites() {
  using S = shape<Rows, Cols>;
  const auto x = test::random_tensor<float, S>(-8, 8, 3);
  const auto g = test::random_tensor<float, shape<Cols>>(0.5, 1.5, 4);
  const auto b = test::random_tensor<float, shape<Cols>>(-1, 1, 5);
  Tensor<std::int64_t, shape<Rows>> labels;
  for (index_t i = 0; i < Rows; ++i) labels(i) = (i * 7) % Cols;
  const auto dx = cuda::to_device(x);
  const auto dg = cuda::to_device(g);
  const auto db = cuda::to_device(b);
  const auto dl = cuda::to_device(labels);
  cuda::Tensor<float, S> out;

  out = softmax(dx.expr());
  check_close(Tensor<float, S>(softmax(x)), cuda::to_host(out), 1e-5, "softmax");
  out = log_softmax(dx.expr());
  check_close(Tensor<float, S>(log_softmax(x)), cuda::to_host(out), 1e-5, "log_softmax");
  out = layer_norm(dx.expr(), dg.expr(), db.expr());
  check_close(Tensor<float, S>(layer_norm(x, g, b)), cuda::to_host(out), 1e-4, "layer_norm", 1.0);
  out = rms_norm(dx.expr(), dg.expr());
  check_close(Tensor<float, S>(rms_norm(x, g)), cuda::to_host(out), 1e-5, "rms_norm");
  cuda::Tensor<float> loss;
  loss = cross_entropy(dx.expr(), dl.expr());
  check_close(Tensor<float>(cross_entropy(x, labels)), cuda::to_host(loss), 1e-5, "cross_entropy");
}
} // namespace

TEST_CASE("row-fused composites match the CPU (a warp per row)") {
  TENFOLD_REQUIRE_DEVICE();
  composites<67, 1000>(); // 67 rows: the last block has 3 of its 8 warps idle
}
TEST_CASE("row-fused composites match the CPU (a block per row)") {
  TENFOLD_REQUIRE_DEVICE();
  composites<9, 5000>();
}

TEST_CASE("reductions over any axes match the CPU") {
  TENFOLD_REQUIRE_DEVICE();
  using S = shape<6, 35, 129>;
  const auto x = test::random_tensor<float, S>(-2, 2, 9);
  const auto dx = cuda::to_device(x);
  {
    cuda::Tensor<float, shape<6, 35>> o;
    o = sum(dx.expr(), axis<2>);
    check_close(Tensor<float, shape<6, 35>>(sum(x, axis<2>)), cuda::to_host(o), 1e-5, "sum, innermost axis");
    o = var(dx.expr(), axis<-1>);
    check_close(Tensor<float, shape<6, 35>>(var(x, axis<-1>)), cuda::to_host(o), 1e-5, "var, innermost axis");
    o = logsumexp(dx.expr(), axis<2>);
    check_close(Tensor<float, shape<6, 35>>(logsumexp(x, axis<2>)), cuda::to_host(o), 1e-6, "logsumexp");
  }
  {
    cuda::Tensor<float, shape<35, 129>> o;
    o = max(dx.expr(), axis<0>);
    check_close(Tensor<float, shape<35, 129>>(max(x, axis<0>)), cuda::to_host(o), 0, "max, leading axis");
  }
  {
    // Few outputs over a leading axis, each element recomputing its row's softmax (a bias gradient
    // under cross-entropy): a warp per output (cuda/evaluator.hpp's few_long_outputs_v).
    const auto logits = test::random_tensor<float, shape<64, 10>>(-3, 3, 10);
    const auto dl = cuda::to_device(logits);
    cuda::Tensor<float, shape<10>> o;
    o = sum(softmax(dl.expr()), axis<0>);
    check_close(Tensor<float, shape<10>>(sum(softmax(logits), axis<0>)), cuda::to_host(o), 1e-5, "sum over rows of softmax");
  }
  {
    // Innermost reductions over 4 elements (a 2 x 2 pool's windows): a thread per output.
    cuda::Tensor<float, shape<6, 35, 43>> o;
    o = max(reshape<6, 35, 43, 3>(dx.expr()), axis<3>);
    check_close(Tensor<float, shape<6, 35, 43>>(max(reshape<6, 35, 43, 3>(x), axis<3>)), cuda::to_host(o), 0, "max over rows of 3");
  }
  {
    cuda::Tensor<float, shape<35>> o;
    o = mean(dx.expr(), axes<0, 2>);
    check_close(Tensor<float, shape<35>>(mean(x, axes<0, 2>)), cuda::to_host(o), 1e-5, "mean, axes 0 and 2");
  }
  {
    cuda::Tensor<float> o;
    o = norm(dx.expr());
    check_close(Tensor<float>(norm(x)), cuda::to_host(o), 1e-5, "norm, all axes");
  }
  {
    // argmax with ties: the first index wins on both backends.
    Tensor<float, shape<4, 300>> t;
    for (index_t i = 0; i < t.size(); ++i) t.data()[i] = float((i * 37) % 11);
    const auto dt = cuda::to_device(t);
    cuda::Tensor<std::int64_t, shape<4>> o;
    o = argmax(dt.expr(), axis<1>);
    const Tensor<std::int64_t, shape<4>> cpu = argmax(t, axis<1>), got = cuda::to_host(o);
    for (index_t i = 0; i < 4; ++i) CHECK(cpu(i) == got(i));
  }
  {
    // Leading axes into few outputs over long ranges (batch norm's statistics): a group per output.
    const auto a = test::random_tensor<float, shape<16, 28, 28, 16>>(-1, 3, 10);
    const auto da = cuda::to_device(a);
    cuda::Tensor<float, shape<16>> o;
    o = sum(da.expr(), axes<0, 1, 2>);
    check_close(Tensor<float, shape<16>>(sum(a, axes<0, 1, 2>)), cuda::to_host(o), 1e-5, "sum over leading axes, 16 outputs", 1.0);
    o = max(da.expr(), axes<0, 1, 2>);
    check_close(Tensor<float, shape<16>>(max(a, axes<0, 1, 2>)), cuda::to_host(o), 0, "max over leading axes, 16 outputs");
    // argmax over a leading axis with ties: the first index still wins (each thread a contiguous run).
    Tensor<float, shape<3000, 7>> t;
    for (index_t i = 0; i < t.size(); ++i) t.data()[i] = float((i * 37) % 11);
    const auto dt = cuda::to_device(t);
    cuda::Tensor<std::int64_t, shape<7>> arg;
    arg = argmax(dt.expr(), axis<0>);
    const Tensor<std::int64_t, shape<7>> cpu = argmax(t, axis<0>), got = cuda::to_host(arg);
    for (index_t i = 0; i < 7; ++i) CHECK(cpu(i) == got(i));
  }
  {
    cuda::Tensor<float, S> o;
    o = cumsum(dx.expr(), axis<1>);
    check_close(Tensor<float, S>(cumsum(x, axis<1>)), cuda::to_host(o), 1e-5, "cumsum");
  }
}

TEST_CASE("views and materialised intermediates match the CPU") {
  TENFOLD_REQUIRE_DEVICE();
  using S = shape<24, 40>;
  const auto x = test::random_tensor<float, S>(-1, 1, 11);
  const auto dx = cuda::to_device(x);
  cuda::Tensor<float, shape<40, 24>> t;
  t = transpose(dx.expr()) * 2.0f + flip<0>(transpose(dx.expr()));
  check_close(Tensor<float, shape<40, 24>>(transpose(x) * 2.0f + flip<0>(transpose(x))), cuda::to_host(t), 1e-6, "transpose + flip");
  cuda::Tensor<float, shape<26, 40>> p;
  p = pad<1, 1, 0, 0>(dx.expr(), 3.0f) + 1.0f;
  check_close(Tensor<float, shape<26, 40>>(pad<1, 1, 0, 0>(x, 3.0f) + 1.0f), cuda::to_host(p), 1e-6, "pad");
  // A reduction read along rows it does not reduce materialises into the arena first.
  cuda::Tensor<float, S> m;
  m = dx.expr() - sum(dx.expr(), axis<0>, keepdims);
  check_close(Tensor<float, S>(x - sum(x, axis<0>, keepdims)), cuda::to_host(m), 1e-5, "column-centred");
  // In place through another index map: evaluated aside.
  cuda::Tensor<float, shape<40, 40>> sq;
  const auto ys = test::random_tensor<float, shape<40, 40>>(-1, 1, 12);
  const auto dys = cuda::to_device(ys);
  sq = dys.expr();
  sq = transpose(sq.expr()) + 1.0f;
  check_close(Tensor<float, shape<40, 40>>(transpose(ys) + 1.0f), cuda::to_host(sq), 0, "x = transpose(x) + 1");
}

TEST_CASE("the vector path reads every leaf where it lies: other tensors of the same type, other rows, views") {
  TENFOLD_REQUIRE_DEVICE();
  using S = shape<12, 1000>;
  const auto x = test::random_tensor<float, S>(-4, 4, 31);
  const auto y = test::random_tensor<float, S>(-4, 4, 32);
  const auto c = test::random_tensor<float, shape<12, 1>>(-1, 1, 33);
  const auto g = test::random_tensor<float, shape<1000>>(0.5, 1.5, 34);
  const auto dx = cuda::to_device(x);
  const auto dy = cuda::to_device(y);
  const auto dc = cuda::to_device(c);
  const auto dg = cuda::to_device(g);
  cuda::Tensor<float, S> out;
  // y has x's type but not its memory: the registers hold x's row, y is read from memory.
  out = softmax(dx.expr()) + dy.expr();
  check_close(Tensor<float, S>(softmax(x) + y), cuda::to_host(out), 1e-5, "softmax(x) + y");
  out = layer_norm(dx.expr() + dy.expr(), dg.expr(), dg.expr());
  check_close(Tensor<float, S>(layer_norm(x + y, g, g)), cuda::to_host(out), 1e-4, "layer_norm(x + y)", 1.0);
  // The reduction reads row 11 - r of x (a flipped leaf), the tail row r: the same memory, other rows.
  out = dx.expr() - max(flip<0>(dx.expr()), axis<1>, keepdims);
  check_close(Tensor<float, S>(x - max(flip<0>(x), axis<1>, keepdims)), cuda::to_host(out), 0, "x - max(flip(x))");
  // A leaf constant along the row (stride 0), inside and outside the reductions.
  out = softmax(dx.expr() * dc.expr()) * dc.expr();
  check_close(Tensor<float, S>(softmax(x * c) * c), cuda::to_host(out), 1e-5, "softmax(x * c) * c");
  // A transposed input (innermost stride 12) and a reversed row (stride -1): the generic kernel.
  const auto t = test::random_tensor<float, shape<1000, 12>>(-4, 4, 35);
  const auto dt = cuda::to_device(t);
  out = softmax(transpose(dt.expr()));
  check_close(Tensor<float, S>(softmax(transpose(t))), cuda::to_host(out), 1e-5, "softmax(transpose(t))");
  out = layer_norm(flip<1>(dx.expr()), dg.expr(), dg.expr());
  check_close(Tensor<float, S>(layer_norm(flip<1>(x), g, g)), cuda::to_host(out), 1e-4, "layer_norm(flip<1>(x))", 1.0);
  // In place: each row is read whole before any of it is written.
  cuda::Tensor<float, S> z;
  z = dx.expr();
  z = softmax(z.expr());
  check_close(Tensor<float, S>(softmax(x)), cuda::to_host(z), 1e-5, "z = softmax(z)");
  // bf16 in (8-byte chunks of 4 for a float destination, 16-byte chunks of 8 for a bf16 one).
  const auto xb = test::random_tensor<bf16, S>(-4, 4, 36);
  const auto dxb = cuda::to_device(xb);
  out = softmax(dxb.expr());
  check_close(Tensor<float, S>(softmax(xb)), cuda::to_host(out), 1e-2, "softmax(bf16) -> f32");
  cuda::Tensor<bf16, S> ob;
  ob = softmax(dxb.expr());
  check_close(Tensor<bf16, S>(softmax(xb)), cuda::to_host(ob), 1e-2, "softmax(bf16) -> bf16");
}
