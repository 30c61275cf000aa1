// A step (core/step.hpp): statements over slots planned as one arena (plan/step.hpp), run on the CPU.
// A two-layer MLP's training step written as statements gives the gradients of the same step written as
// separate evaluations into tensors, in an arena no larger than the slots and temporaries alive at once.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>
#include <tenfold/autodiff/backward.hpp>
#include <tenfold/dist/communicator.hpp>
#include <tenfold/tenfold.hpp>

#include "counting_new.hpp"

using namespace tenfold;

namespace {
constexpr index_t B = 24, In = 12, H = 40, Out = 5;

inline constexpr auto linear1 = [](const auto& x, const auto& w, const auto& b) { return matmul(x, w) + b; };
inline constexpr auto act = [](const auto& a) { return tanh(a); };
inline constexpr auto head = [](const auto& h, const auto& w, const auto& b, const auto& y) {
  return mean(square(matmul(h, w) + b - y));
};

struct model {
  Tensor<float, shape<In, H>> w1;
  Tensor<float, shape<H>> b1;
  Tensor<float, shape<H, Out>> w2;
  Tensor<float, shape<Out>> b2;
  explicit model(std::uint64_t seed) {
    rng g(seed);
    w1 = normal<shape<In, H>>(g) * 0.3f, b1 = normal<shape<H>>(g) * 0.1f;
    w2 = normal<shape<H, Out>>(g) * 0.3f, b2 = normal<shape<Out>>(g) * 0.1f;
  }
};
struct grads {
  Tensor<float, shape<In, H>> w1;
  Tensor<float, shape<H>> b1;
  Tensor<float, shape<H, Out>> w2;
  Tensor<float, shape<Out>> b2;
  Tensor<float> loss;
};

// The step's values: the pre-activation and activation of the hidden layer, and their gradients.
struct values {
  slot<float, shape<B, H>, struct a_> a;
  slot<float, shape<B, H>, struct h_> h;
  slot<float, shape<B, H>, struct gh_> gh;
  slot<float, shape<B, H>, struct ga_> ga;
};

template <class X, class Y>
auto training_step(const values& v, model& m, grads& g, const X& x, const Y& y, std::vector<float>& seen) {
  auto [l, dh, dw2, db2] = value_and_grad([&y](const auto& h, const auto& w, const auto& b) { return head(h, w, b, y); }, v.h,
                                          m.w2, m.b2);
  auto [da] = vjp(act, v.gh, v.a);
  auto [dw1, db1] = vjp([&x](const auto& w, const auto& b) { return linear1(x, w, b); }, v.ga, m.w1, m.b1);
  return statements(assign(v.a, linear1(x, m.w1, m.b1)), assign(v.h, act(v.a)),
                    statements(assign(g.loss, l), assign(v.gh, dh), assign(g.w2, dw2), assign(g.b2, db2)),
                    host([&seen](auto gh) { seen.assign(gh.begin(), gh.end()); }, v.gh), assign(v.ga, da),
                    assign(g.w1, dw1), assign(g.b1, db1));
}
using step_type = decltype(training_step(std::declval<const values&>(), std::declval<model&>(), std::declval<grads&>(),
                                         std::declval<const Tensor<float, shape<B, In>>&>(),
                                         std::declval<const Tensor<float, shape<B, Out>>&>(), std::declval<std::vector<float>&>()));
using P = step_plan<step_type>;
constexpr index_t slot_bytes = B * H * 4; // 24 x 40 floats: 3840 bytes, a multiple of 64

// Four slots, each alive over a stretch of the step: a (written 1st, read by h and by ga's statement),
// h (read by the loss and its gradients), gh (read by the host statement and ga), ga (read by dw1, db1).
static_assert(P::slots == 4);
static_assert(P::bytes == P::lower_bound && P::bytes < P::total); // (a, h, gh and one temporary: ga takes h's place)
static_assert(P::lower_bound >= 3 * slot_bytes); // a, h and gh are alive together when gh is written
// a is read where ga is written (the derivative of tanh reads a): the two are alive together, apart.
constexpr index_t a_at = P::slot_offset<a_>(), ga_at = P::slot_offset<ga_>();
static_assert(a_at + slot_bytes <= ga_at || ga_at + slot_bytes <= a_at);
static_assert(P::slot_offset<h_>() % 64 == 0 && P::slot_offset<gh_>() + slot_bytes <= P::bytes);
} // namespace

TEST_CASE("a training step as statements gives the gradients of the same step evaluated tensor by tensor", "[step]") {
  rng r(7);
  const Tensor<float, shape<B, In>> x = normal<shape<B, In>>(r);
  const Tensor<float, shape<B, Out>> y = normal<shape<B, Out>>(r);
  model m(11);
  grads g, want;
  std::vector<float> seen;
  alignas(64) static std::byte arena[P::bytes];
  values v;
  run_step(training_step(v, m, g, x, y, seen), arena);

  // The same step as separate evaluations into tensors.
  Tensor<float, shape<B, H>> a = linear1(x, m.w1, m.b1), h = act(a), gh, ga;
  auto [l, dh, dw2, db2] = value_and_grad([&y](const auto& h_, const auto& w, const auto& b) { return head(h_, w, b, y); }, h,
                                          m.w2, m.b2);
  want.loss = l, gh = dh, want.w2 = dw2, want.b2 = db2;
  auto [da] = vjp(act, gh, a);
  ga = da;
  auto [dw1, db1] = vjp([&x](const auto& w, const auto& b) { return linear1(x, w, b); }, ga, m.w1, m.b1);
  want.w1 = dw1, want.b1 = db1;

  CHECK(g.loss() == want.loss());
  CHECK(g.loss() > 0.1f);
  REQUIRE(seen.size() == std::size_t(B * H));
  for (index_t i = 0; i < B * H; ++i) REQUIRE(seen[std::size_t(i)] == gh.data()[i]);
  auto same = [](const auto& p, const auto& q) {
    for (index_t i = 0; i < p.size(); ++i)
      if (p.data()[i] != q.data()[i]) return false;
    return true;
  };
  CHECK(same(g.w2, want.w2));
  CHECK(same(g.b2, want.b2));
  CHECK(same(g.w1, want.w1));
  CHECK(same(g.b1, want.b1));
  float norm = 0;
  for (float e : g.w1) norm += e * e;
  CHECK(norm > 1e-6f);

  // Again, counting allocations: none (the host statement's vector keeps its capacity).
  CHECK(allocations_during([&] { run_step(training_step(v, m, g, x, y, seen), arena); }) == 0);
  CHECK(same(g.w1, want.w1));
}

TEST_CASE("run_step refuses an arena too small or misaligned, before running anything", "[step]") {
  rng r(8);
  const Tensor<float, shape<B, In>> x = normal<shape<B, In>>(r);
  const Tensor<float, shape<B, Out>> y = normal<shape<B, Out>>(r);
  model m(12);
  grads g;
  g.loss = full<float, shape<>>(-1.0f);
  std::vector<float> seen;
  values v;
  alignas(64) static std::byte arena[P::bytes + 64];
  CHECK_THROWS_WITH(run_step(training_step(v, m, g, x, y, seen), std::span<std::byte>(arena, P::bytes - 1)),
                    Catch::Contains("this step needs"));
  CHECK_THROWS_WITH(run_step(training_step(v, m, g, x, y, seen), std::span<std::byte>(arena + 4, P::bytes)),
                    Catch::Contains("64-byte aligned"));
  CHECK(g.loss() == -1.0f);
  CHECK(seen.empty());
}

// README.md's example (docs:readme_step checks that the lines between readme:begin and readme:end are
// the README's): a two-layer step with a host statement between its gradients.
TEST_CASE("README: a training step as statements", "[step][readme]") {
  constexpr index_t B = 16, D = 8, H = 32, O = 4;
  rng r(3);
  const Tensor<float, shape<B, D>> x = normal<shape<B, D>>(r);
  const Tensor<float, shape<B, O>> y = normal<shape<B, O>>(r);
  const Tensor<float, shape<D, H>> W1 = normal<shape<D, H>>(r) * 0.3f;
  const Tensor<float, shape<H, O>> W2 = normal<shape<H, O>>(r) * 0.3f;
  Tensor<float> L;
  Tensor<float, shape<D, H>> G1;
  Tensor<float, shape<H, O>> G2;
  dist::single_process comm;
// readme:begin
slot<float, shape<B, H>, struct h_> h; // the tag names the slot
slot<float, shape<B, H>, struct gh_> gh;
auto [loss, dh, dw2] = value_and_grad([&](const auto& h_, const auto& w) { return mse_loss(matmul(h_, w), y); }, h, W2);
auto [dw1] = vjp([&](const auto& w) { return tanh(matmul(x, w)); }, gh, W1);
auto s = statements(assign(h, tanh(matmul(x, W1))), assign(L, loss), assign(gh, dh), assign(G2, dw2),
                    host([&](auto m) { comm.allreduce(m); }, G2), assign(G1, dw1));
using P = step_plan<decltype(s)>; // P::bytes, P::lower_bound, P::total: compile-time constants
alignas(64) static std::byte arena[P::bytes];
run_step(s, arena);
// readme:end
  static_assert(P::slots == 2 && P::bytes == P::lower_bound);
  // The same gradients through value_and_grad of the whole network, one expression each.
  auto [l2, g1, g2] = value_and_grad(
      [&](const auto& w1, const auto& w2) { return mse_loss(matmul(tanh(matmul(x, w1)), w2), y); }, W1, W2);
  Tensor<float> want_l = l2;
  Tensor<float, shape<D, H>> want1 = g1;
  Tensor<float, shape<H, O>> want2 = g2;
  CHECK(L() == Approx(want_l()).epsilon(1e-5));
  for (index_t i = 0; i < G1.size(); ++i) REQUIRE(G1.data()[i] == Approx(want1.data()[i]).epsilon(1e-4).margin(1e-6));
  for (index_t i = 0; i < G2.size(); ++i) REQUIRE(G2.data()[i] == Approx(want2.data()[i]).epsilon(1e-4).margin(1e-6));
}
