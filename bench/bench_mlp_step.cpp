// The gradient step of a two-layer perceptron (784 -> 256 -> 10, ReLU, cross-entropy, batch 128: the
// loss and the four parameter gradients from value_and_grad), run as one step (run_step) with and
// without save_forward (plan/save_forward.hpp). Without it each of the five statements recomputes the
// forward GEMMs it reads (x w1 in all five, h w2 in all five); with it each is computed once into a
// slot. The two give the same bits (checked before timing); "arena_bytes" is
// each step's planned arena.
//   build-bench/bench/tenfold_bench_mlp_step --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include <tenfold/autodiff/backward.hpp>
#include <tenfold/plan/save_forward.hpp>
#include <tenfold/tenfold.hpp>

namespace tf = tenfold;
using tf::index_t;
using tf::shape;
using tf::Tensor;

namespace {
constexpr index_t B = 128, In = 784, H = 256, C = 10;

struct mlp {
  Tensor<float, shape<B, In>> x;
  Tensor<std::int64_t, shape<B>> labels;
  Tensor<float, shape<In, H>> w1;
  Tensor<float, shape<H>> b1;
  Tensor<float, shape<H, C>> w2;
  Tensor<float, shape<C>> b2;
  Tensor<float> loss;
  Tensor<float, shape<In, H>> gw1;
  Tensor<float, shape<H>> gb1;
  Tensor<float, shape<H, C>> gw2;
  Tensor<float, shape<C>> gb2;
  mlp() {
    tf::rng g(5);
    x = tf::uniform<shape<B, In>>(g);
    w1 = tf::normal<shape<In, H>>(g) * 0.05f, b1 = tf::normal<shape<H>>(g) * 0.01f;
    w2 = tf::normal<shape<H, C>>(g) * 0.06f, b2 = tf::normal<shape<C>>(g) * 0.01f;
    for (index_t i = 0; i < B; ++i) labels(i) = (i * 7 + 3) % C;
  }
  auto step() {
    auto [l, dw1, db1, dw2, db2] = tf::value_and_grad(
        [this](const auto& w1_, const auto& b1_, const auto& w2_, const auto& b2_) {
          return tf::cross_entropy(tf::matmul(tf::relu(tf::matmul(x, w1_) + b1_), w2_) + b2_, labels);
        },
        w1, b1, w2, b2);
    return tf::statements(tf::assign(loss, l), tf::assign(gw1, dw1), tf::assign(gb1, db1), tf::assign(gw2, dw2), tf::assign(gb2, db2));
  }
};

template <bool Save>
auto make_step(mlp& m) {
  if constexpr (Save) return tf::save_forward(m.step());
  else return m.step();
}
template <bool Save>
using step_t = decltype(make_step<Save>(std::declval<mlp&>()));

struct arena {
  std::vector<std::byte> bytes;
  std::span<std::byte> span;
  explicit arena(std::size_t n) : bytes(n + 64) {
    void* p = bytes.data();
    std::size_t space = bytes.size();
    span = {static_cast<std::byte*>(std::align(64, n, p, space)), n};
  }
};

template <bool Save>
void step(benchmark::State& state) {
  static auto m = std::make_unique<mlp>();
  using P = tf::step_plan<step_t<Save>>;
  arena a(P::bytes);
  // The two must agree to the bit before either is timed.
  static auto want = [] {
    auto r = std::make_unique<mlp>();
    using Q = tf::step_plan<step_t<false>>;
    arena q(Q::bytes);
    tf::run_step(make_step<false>(*r), q.span);
    return r;
  }();
  tf::run_step(make_step<Save>(*m), a.span);
  const auto same = [](const auto& p, const auto& q) { return std::memcmp(p.data(), q.data(), sizeof(float) * std::size_t(p.size())) == 0; };
  if (!same(m->gw1, want->gw1) || !same(m->gb1, want->gb1) || !same(m->gw2, want->gw2) || !same(m->gb2, want->gb2) || !same(m->loss, want->loss))
    throw std::runtime_error("bench_mlp_step: the step with save_forward differs from the one without");
  for (auto _ : state) {
    tf::run_step(make_step<Save>(*m), a.span);
    benchmark::DoNotOptimize(m->gw1.data());
  }
  state.counters["arena_bytes"] = double(P::bytes);
}
BENCHMARK(step<false>)->Name("mlp_step/recomputed")->Unit(benchmark::kMicrosecond);
BENCHMARK(step<true>)->Name("mlp_step/save_forward")->Unit(benchmark::kMicrosecond);
} // namespace

BENCHMARK_MAIN();
