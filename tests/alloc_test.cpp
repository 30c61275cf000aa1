// Evaluating into an existing tensor allocates nothing: global operator new is replaced here and
// counted around each evaluation (counting_new.hpp; the thread pool is warmed up first: it allocates
// once, at start).
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <new>

#include <catch2/catch.hpp>
#include <tenfold/tenfold.hpp>

#include <tenfold/dist/communicator.hpp>
#include <tenfold/sampling.hpp>

#include "../examples/fashion_mnist/cnn.hpp"
#include "../examples/transformer_block.hpp"
#include "counting_new.hpp"

using namespace tenfold;

TEST_CASE("the counter sees allocations", "[alloc]") {
  CHECK(allocations_during([] { Tensor<float, shape<1024, 1024>> big; (void)big; }) >= 1);
}

TEST_CASE("evaluation into existing tensors allocates nothing", "[alloc]") {
  using M = shape<512, 1024>; // large enough to use every thread
  Tensor<float, M> a, b, out;
  Tensor<float, shape<1024>> bias;
  Tensor<float, shape<512>> rows;
  Tensor<float, shape<1024>> cols;
  Tensor<float, shape<1024, 512>> t;
  Tensor<float> total;
  Tensor<std::int64_t, shape<512>> am;
  rng g(1);
  a = uniform<M>(g);
  b = normal<M>(g); // warms up the thread pool

  CHECK(allocations_during([&] { out = a * 2.0f + exp(b) - tanh(a); }) == 0);
  CHECK(allocations_during([&] { out = a + bias; }) == 0);
  CHECK(allocations_during([&] { t = transpose(a); }) == 0);
  CHECK(allocations_during([&] { rows = sum(a, axis<1>); }) == 0);
  CHECK(allocations_during([&] { cols = max(a, axis<0>); }) == 0);
  CHECK(allocations_during([&] { total = sum(a * b); }) == 0);
  CHECK(allocations_during([&] { am = argmax(a, axis<1>); }) == 0);
  CHECK(allocations_during([&] { out = cumsum(a, axis<1>); }) == 0);
  CHECK(allocations_during([&] { out = where(a > 0.5f, a, b); }) == 0);
  CHECK(allocations_during([&] { out = uniform<M>(g); }) == 0);
  CHECK(allocations_during([&] { eval(out, sqrt(abs(a)) * reshape<512, 1024>(transpose(t))); }) == 0);
  CHECK(allocations_during([&] { out += a; }) == 0);
}

TEST_CASE("a forward pass with a planned arena allocates nothing", "[alloc][arena]") {
  rng g(2);
  Tensor<float, shape<64, 32>> x = normal<shape<64, 32>>(g);
  Tensor<float, shape<128, 32>> w1 = normal<shape<128, 32>>(g);
  Tensor<float, shape<128>> b1 = normal<shape<128>>(g);
  Tensor<float, shape<16, 128>> w2 = normal<shape<16, 128>>(g);
  Tensor<float, shape<16>> b2 = normal<shape<16>>(g);
  Tensor<float, shape<64, 16>> y;
  auto forward = [&] { return softmax(linear(gelu(linear(x, w1, b1)), w2, b2)); };
  using P = arena_plan<decltype(forward())>;
  static_assert(P::buffers >= 1);
  alignas(64) static std::byte arena[P::bytes];
  eval(y, forward(), arena); // warm-up: the GEMM's per-thread packing buffers are made once
  cpu::prepare_scratch();    // ... on every thread, whichever ran which part
  CHECK(allocations_during([&] { eval(y, forward(), arena); }) == 0);
  CHECK(allocations_during([&] { y = forward(); }) > 0); // without an arena the hidden layer is a heap buffer
}

TEST_CASE("a transformer block's forward pass as a program allocates nothing", "[alloc][program]") {
  using B = encoder_block<32, 64, 4, 128>;
  using R = program<const B, Tensor<float, shape<32, 64>>>;
  rng g(3);
  const B model(g);
  Tensor<float, shape<32, 64>> x = normal<shape<32, 64>>(g), y;
  R run(model); // the arena is allocated here, once
  run(y, x);    // warm-up: the GEMM's per-thread packing buffers are made once
  cpu::prepare_scratch();
  CHECK(allocations_during([&] { run(y, x); }) == 0);
  // And the statements of a stateful model run without allocating either.
  Tensor<float, shape<1, 8>> h, x1 = normal<shape<1, 8>>(g);
  Tensor<float, shape<8, 8>> w = normal<shape<8, 8>>(g);
  struct cell {
    Tensor<float, shape<1, 8>>& h;
    Tensor<float, shape<8, 8>>& w;
    auto state() { return std::tie(h); }
    auto forward(const Tensor<float, shape<1, 8>>& x) { return sequence(update(h, tanh(matmul(h, w) + x)), h * 2.0f); }
  } c{h, w};
  program<cell, Tensor<float, shape<1, 8>>> step(c);
  Tensor<float, shape<1, 8>> out;
  step(out, x1);
  CHECK(allocations_during([&] { step(out, x1); }) == 0);
}

TEST_CASE("attention allocates nothing after its per-thread scratch is made", "[alloc][attention]") {
  // Small enough to run on the calling thread, so that the warm-up makes exactly the scratch it uses.
  rng g(5);
  Tensor<float, shape<2, 64, 32>> q = normal<shape<2, 64, 32>>(g), k = normal<shape<2, 64, 32>>(g), v = q, y;
  y = attention(q, k, v); // warm-up
  CHECK(allocations_during([&] { y = attention(q, k, v); }) == 0);
  CHECK(allocations_during([&] { y = attention(q, k, v, causal); }) == 0);
  CHECK(allocations_during([&] { y = attention(q, k, v, causal, 0.5); }) == 0);
}

TEST_CASE("a training step of the Fashion-MNIST CNN allocates nothing", "[alloc][training]") {
  // examples/fashion_mnist/cnn.hpp: forward stages, vjp of each, batch norm statistics, Adam; the
  // step's statements run in one arena planned at compile time (trainer<B>::plan_for<Comm>), made by
  // the first step.
  using namespace fashion;
  constexpr index_t B = 64;
  auto p = std::make_unique<parameters>(7);
  auto s = std::make_unique<optimizer_state>();
  auto t = std::make_unique<trainer<B>>();
  // The step's plan: 23 slots (stage outputs, their gradients, batch statistics), 3 more for what
  // save_forward keeps (the logits; the dense layer's gradient reads its output h, not its
  // pre-activation; and the two operands that both of the head's backward products read: its input
  // and the logits' gradient) and the statements' temporaries in one arena, laid out at the lower bound
  // (the most bytes alive at any one nest), after the 11 kept slots (the parameters' gradients and the
  // loss, 206,922 floats on 64-byte lines) in two buckets.
  // Before, the stage outputs and gradients were 21.8 MB of tensors beside an 8.3 MB arena.
  using P = trainer<B>::plan_for<dist::single_process>;
  static_assert(P::slots == 23 + 3 + 11);
  static_assert(P::kept_bytes == 827968 && P::buckets<bucket_bytes>.count == 2);
  static_assert(P::bytes == P::lower_bound);
  static_assert(P::bytes * 5 < P::total * 3);                                      // sharing over time (55% of the sum)
  static_assert(P::bytes < 4 * B * (16 * 16 * 16 + 14 * 14 * 9 * 16 + 28 * 28 * 16 * 4)); // below the old way
  optim::adam opt;
  rng g(8), drop(9);
  Tensor<float, shape<B, 28, 28, 1>> x = normal<shape<B, 28, 28, 1>>(g);
  Tensor<std::int64_t, shape<B>> y;
  for (index_t i = 0; i < B; ++i) y(i) = i % 10;
  const shard all{0, B, B}; // the whole batch, in one process
  dist::single_process comm;
  // Warm-up: the GEMM's per-thread packing buffers grow to the largest product each thread has run,
  // and which thread runs which part of a product depends on timing (under ctest -j2 on two cores a
  // worker can sleep through whole products, so no number of warm-up steps is enough):
  // prepare_scratch() grows every thread's buffers to the largest any thread has used.
  const float first = t->step(*p, *s, opt, 1e-3f, x, y, all, drop, comm);
  cpu::prepare_scratch();
  float later = 0;
  CHECK(allocations_during([&] { later = t->step(*p, *s, opt, 1e-3f, x, y, all, drop, comm); }) == 0);
  CHECK(std::isfinite(first));
  CHECK(later < first); // the same batch again, after a step of Adam
  // ZeRO-1's step (dist/sharded_adam.hpp; one process: the share is every gradient): its buffers are
  // made with it and its first update, none after.
  trainer<B>::sharded_optimizer<dist::single_process> sharded(comm, opt.options);
  CHECK(sharded.share_size() == P::kept_bytes / 4);
  (void)t->step(*p, sharded, 1e-3f, x, y, all, drop, comm);
  cpu::prepare_scratch();
  CHECK(allocations_during([&] { later = t->step(*p, sharded, 1e-3f, x, y, all, drop, comm); }) == 0);
  CHECK(std::isfinite(later));
}

TEST_CASE("drawing a token allocates nothing (the sampler's memory is sized once)", "[alloc]") {
  std::vector<float> logits(5000);
  for (std::size_t i = 0; i < logits.size(); ++i) logits[i] = float((i * 37) % 101) * 0.05f;
  sampler s(5000);
  rng g(4);
  long sum = 0;
  CHECK(allocations_during([&] {
          for (int i = 0; i < 100; ++i) sum += s(logits, {0.9f, 50, 0.9f}, g) + s(logits, {}, g) + s(logits, {0.0f, 0, 1.0f}, g);
        }) == 0);
  CHECK(sum > 0);
}
