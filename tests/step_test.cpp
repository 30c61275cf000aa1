// A step (core/step.hpp): statements over slots planned as one arena (plan/step.hpp), run on the CPU.
// A two-layer MLP's training step written as statements gives the gradients of the same step written as
// separate evaluations into tensors, in an arena no larger than the slots and temporaries alive at once.
#include <cstddef>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include <catch2/catch.hpp>
#include <tenfold/autodiff/backward.hpp>
#include <tenfold/autodiff/optim.hpp>
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

// save_forward (plan/save_forward.hpp): the forward GEMMs that the loss and the four gradients all read
// are computed once, into slots, and the step gives the same bits as with each statement recomputing them.
namespace {
// How many nodes of type T the tree of N holds.
template <class T, class N>
constexpr int count_nodes() {
  if constexpr (detail::is_terminal_v<N>) return int(std::is_same_v<T, N>);
  else
    return int(std::is_same_v<T, N>) + []<class... C>(detail::tuple<C...>*) { return (0 + ... + count_nodes<T, C>()); }(
                                            static_cast<detail::children_t<N>*>(nullptr));
}
template <class T, class S>
struct count_in_step;
template <class T, class... S>
struct count_in_step<T, detail::statements_node<S...>> {
  static constexpr int value = (0 + ... + count_in_step<T, S>::value);
};
template <class T, class D, class E>
struct count_in_step<T, detail::assign_stmt<D, E>> {
  static constexpr int value = count_nodes<T, E>();
};

auto whole_step(model& m, grads& g, const Tensor<float, shape<B, In>>& x, const Tensor<float, shape<B, Out>>& y) {
  auto [l, dw1, db1, dw2, db2] = value_and_grad(
      [&y, &x](const auto& w1, const auto& b1, const auto& w2, const auto& b2) { return head(act(linear1(x, w1, b1)), w2, b2, y); },
      m.w1, m.b1, m.w2, m.b2);
  return statements(assign(g.loss, l), assign(g.w1, dw1), assign(g.b1, db1), assign(g.w2, dw2), assign(g.b2, db2));
}
using whole_t = decltype(whole_step(std::declval<model&>(), std::declval<grads&>(), std::declval<const Tensor<float, shape<B, In>>&>(),
                                    std::declval<const Tensor<float, shape<B, Out>>&>()));
using saved_info = plan::saved::step_info<whole_t>;
using saved_t = decltype(save_forward(std::declval<const whole_t&>()));
template <class N>
constexpr int gemm_count() {
  if constexpr (detail::is_terminal_v<N>) return 0;
  else
    return int(plan::is_gemm_driven_v<N>) + []<class... C>(detail::tuple<C...>*) { return (0 + ... + gemm_count<C>()); }(
                                                static_cast<detail::children_t<N>*>(nullptr));
}
template <class S>
struct gemms_in_step;
template <class... S>
struct gemms_in_step<detail::statements_node<S...>> {
  static constexpr int value = (0 + ... + gemms_in_step<S>::value);
};
template <class D, class E>
struct gemms_in_step<detail::assign_stmt<D, E>> {
  static constexpr int value = gemm_count<E>();
};
// Saved: the forward products x w1 and h w2, the backward product g w2^T that dw1 and db1 share, and
// the two elementwise operands that two products each read: h = act(x w1 + b1) (h w2, and hᵀ g for dw2)
// and the logits' gradient g (g w2^T and hᵀ g).
static_assert(saved_info::saved == 5 && step_plan<saved_t>::slots == 5);
static_assert(detail::is_map_node_v<plan::saved::kept_at_t<1, saved_info::kept>> &&
              detail::is_matmul_node_v<plan::saved::kept_at_t<2, saved_info::kept>>);
// x w1 is read by every statement (inside h w2 too); after, by its slot's assignment alone.
using x_w1 = plan::saved::kept_at_t<0, saved_info::kept>;
static_assert(detail::is_matmul_node_v<x_w1> && count_in_step<x_w1, whole_t>::value >= 5 && count_in_step<x_w1, saved_t>::value == 1);
// Each saved value was read at least twice; after, each GEMM once: 3 saved and the 2 backward products
// that reach dw1 and dw2 (x^T ga, h^T g), against 17 before.
static_assert([]<std::size_t... I>(std::index_sequence<I...>) {
  return ((count_in_step<plan::saved::kept_at_t<int(I), saved_info::kept>, whole_t>::value >= 2) && ...);
}(std::make_index_sequence<5>{}));
static_assert(gemms_in_step<saved_t>::value == 5 && gemms_in_step<whole_t>::value > 10);
} // namespace

TEST_CASE("save_forward computes the GEMMs several statements read once, to the same bits", "[step]") {
  rng r(9);
  const Tensor<float, shape<B, In>> x = normal<shape<B, In>>(r);
  const Tensor<float, shape<B, Out>> y = normal<shape<B, Out>>(r);
  model m(13);
  grads want, got;
  using P0 = step_plan<whole_t>;
  using P1 = step_plan<saved_t>;
  alignas(64) static std::byte arena0[P0::bytes];
  alignas(64) static std::byte arena1[P1::bytes];
  run_step(whole_step(m, want, x, y), arena0);
  const auto s = save_forward(whole_step(m, got, x, y));
  run_step(s, arena1);
  auto same = [](const auto& p, const auto& q) { return std::memcmp(p.data(), q.data(), sizeof(float) * std::size_t(p.size())) == 0; };
  CHECK(got.loss() == want.loss());
  CHECK(got.loss() > 0.1f);
  CHECK(same(got.w1, want.w1));
  CHECK(same(got.b1, want.b1));
  CHECK(same(got.w2, want.w2));
  CHECK(same(got.b2, want.b2));
  float norm = 0;
  for (float e : got.w1) norm += e * e;
  CHECK(norm > 1e-6f);
  CHECK(allocations_during([&] { run_step(s, arena1); }) == 0);
  CHECK(same(got.w1, want.w1));
}

TEST_CASE("save_forward refuses a step that writes what a saved value reads, or two values of one type", "[step]") {
  rng r(10);
  const Tensor<float, shape<B, In>> x = normal<shape<B, In>>(r), x2 = normal<shape<B, In>>(r);
  const Tensor<float, shape<B, Out>> y = normal<shape<B, Out>>(r);
  model m(14);
  grads g;
  auto [l, dw1, db1] = value_and_grad([&](const auto& w1, const auto& b1) { return head(act(linear1(x, w1, b1)), m.w2, m.b2, y); }, m.w1, m.b1);
  // An update of w1 between two statements that read x w1.
  CHECK_THROWS_WITH(save_forward(statements(assign(g.loss, l), assign(m.w1, m.w1 * 0.5f), assign(g.w1, dw1))),
                    Catch::Contains("statement 1 writes memory that saved value 0") && Catch::Contains("statement 2 reads it"));
  // The loss over x, a gradient over x2: one lambda's type for both, so one type and two values.
  const auto on = [&](const Tensor<float, shape<B, In>>& xin) {
    return value_and_grad([&xin, &m, &y](const auto& w1) { return head(act(linear1(xin, w1, m.b1)), m.w2, m.b2, y); }, m.w1);
  };
  auto [l1, dw1_x] = on(x);
  auto [l2, dw1_x2] = on(x2);
  static_assert(std::is_same_v<decltype(dw1_x), decltype(dw1_x2)>);
  CHECK_THROWS_WITH(save_forward(statements(assign(g.loss, l1), assign(g.w1, dw1_x2))), Catch::Contains("statement 1 reads a value of the type of saved value"));
  // Updates after the saved statements are fine.
  CHECK_NOTHROW(statements(save_forward(statements(assign(g.loss, l1), assign(g.w1, dw1_x))), assign(m.w1, m.w1 - 0.1f * g.w1)));
  (void)l2, (void)db1;
}

TEST_CASE("save_forward saves a convolution that the loss and its gradient both read", "[step]") {
  rng r(11);
  const Tensor<float, shape<2, 7, 7, 3>> x = normal<shape<2, 7, 7, 3>>(r);
  const Tensor<float, shape<3, 3, 3, 4>> w = normal<shape<3, 3, 3, 4>>(r) * 0.3f;
  auto [l, dw] = value_and_grad([&x](const auto& w_) { return mean(square(relu(conv2d(x, w_, padding<1>, nhwc)) - 0.5f)); }, w);
  Tensor<float> l0, l1;
  Tensor<float, shape<3, 3, 3, 4>> g0, g1;
  const auto s0 = statements(assign(l0, l), assign(g0, dw));
  static_assert(plan::saved::step_info<std::remove_cvref_t<decltype(s0)>>::saved == 1);
  static_assert(plan::is_gemm_driven_v<plan::saved::kept_at_t<0, plan::saved::step_info<std::remove_cvref_t<decltype(s0)>>::kept>>);
  using P0 = step_plan<std::remove_cvref_t<decltype(s0)>>;
  alignas(64) static std::byte arena0[P0::bytes];
  run_step(s0, arena0);
  const auto s2 = save_forward(statements(assign(l1, l), assign(g1, dw)));
  using P1 = step_plan<std::remove_cvref_t<decltype(s2)>>;
  static_assert(P1::slots == 1);
  alignas(64) static std::byte arena1[P1::bytes];
  run_step(s2, arena1);
  CHECK(l1() == l0());
  CHECK(l1() > 0.01f);
  CHECK(std::memcmp(g1.data(), g0.data(), sizeof(float) * std::size_t(g0.size())) == 0);
}

// Attention's gradients with respect to q, k and v as three targets (three tensors, as a decoder's
// trainer keeps its heads): each statement's gradient is a slice of the rows dq | dk | dv of one
// attention gradient node. save_forward computes that node once, into a slot the three read.
TEST_CASE("save_forward saves attention's gradient node that the q, k and v statements share", "[step]") {
  constexpr index_t Bt = 2, H = 8, S = 12, D = 8; // 16 batch elements: the three gradients from one node
  using QS = shape<Bt, H, S, D>;
  rng r(31);
  const Tensor<float, QS> q = normal<QS>(r), k = normal<QS>(r), v = normal<QS>(r), g = normal<QS>(r);
  auto [dq, dk, dv] = vjp([](const auto& q_, const auto& k_, const auto& v_) { return attention(q_, k_, v_, causal); }, g, q, k, v);
  // (each rotated as a decoder's q and k are after it, to read the slot through an expression)
  Tensor<float, QS> want_q, want_k, want_v, got_q, got_k, got_v;
  const auto plain = statements(assign(want_q, dq * 2.0f), assign(want_k, dk - 1.0f), assign(want_v, dv));
  using plain_t = std::remove_cvref_t<decltype(plain)>;
  using info = plan::saved::step_info<plain_t>;
  static_assert(info::saved == 1 && detail::is_attention_grad_node_v<plan::saved::kept_at_t<0, info::kept>>);
  using node = plan::saved::kept_at_t<0, info::kept>;
  static_assert(count_in_step<node, plain_t>::value == 3);
  const auto saved = save_forward(statements(assign(got_q, dq * 2.0f), assign(got_k, dk - 1.0f), assign(got_v, dv)));
  using saved_step = std::remove_cvref_t<decltype(saved)>;
  static_assert(count_in_step<node, saved_step>::value == 1 && step_plan<saved_step>::slots == 1);
  alignas(64) static std::byte arena0[step_plan<plain_t>::bytes];
  alignas(64) static std::byte arena1[step_plan<saved_step>::bytes];
  run_step(plain, arena0);
  run_step(saved, arena1);
  auto same = [](const auto& p, const auto& o) { return std::memcmp(p.data(), o.data(), sizeof(float) * std::size_t(p.size())) == 0; };
  CHECK(same(got_q, want_q));
  CHECK(same(got_k, want_k));
  CHECK(same(got_v, want_v));
  float norm = 0;
  for (float e : got_v) norm += e * e;
  CHECK(norm > 1e-3f);
  // against the node's parts evaluated one by one
  Tensor<float, QS> one_q = dq;
  for (index_t i = 0; i < QS::size; ++i) REQUIRE(got_q.data()[i] == 2.0f * one_q.data()[i]);
  CHECK(allocations_during([&] { run_step(saved, arena1); }) == 0);
}

// A classifier head as in a language model: cross_entropy(norm(x) w). log_softmax binds the logits in a
// let, so the logits' gradient times wᵀ, which the norm's backward reads three times (and its scale's
// gradient once more), reads the let's placeholder: the first round saves the logits, which makes the let
// a plain read of their slot; dropped, the product over it is saved by the second round.
TEST_CASE("save_forward saves a product under a let once the let's value is saved", "[step]") {
  constexpr index_t R = 20, C = 16, K = 11;
  rng r(21);
  const Tensor<float, shape<R, C>> x = normal<shape<R, C>>(r);
  const Tensor<float, shape<C>> gamma = 1.0f + 0.1f * normal<shape<C>>(r);
  const Tensor<float, shape<C, K>> w = normal<shape<C, K>>(r) * 0.4f;
  Tensor<std::int64_t, shape<R>> labels;
  for (index_t i = 0; i < R; ++i) labels(i) = (i * 7) % K;
  const auto norm = [](const auto& x_, const auto& g_) {
    auto c = x_ - mean(x_, axis<-1>, keepdims);
    return c * rsqrt(mean(square(c), axis<-1>, keepdims) + 1e-5f) * g_;
  };
  auto [l, dx, dg, dw] = value_and_grad([&](const auto& x_, const auto& g_, const auto& w_) { return cross_entropy(matmul(norm(x_, g_), w_), labels); },
                                        x, gamma, w);
  struct out {
    Tensor<float> l;
    Tensor<float, shape<R, C>> dx;
    Tensor<float, shape<C>> dg;
    Tensor<float, shape<C, K>> dw;
  } want, got;
  const auto plain = [&](out& o) { return statements(assign(o.l, l), assign(o.dx, dx), assign(o.dg, dg), assign(o.dw, dw)); };
  using plain_t = decltype(plain(want));
  using saved_t = decltype(save_forward(plain(got)));
  // the logits and the normalised x (the logits' product and dw's read it), then the logits' gradient
  // (an operand of both backward products) and its product with wᵀ
  static_assert(plan::saved::step_info<plain_t>::saved == 2 && step_plan<saved_t>::slots == 4);
  static_assert(gemms_in_step<saved_t>::value == 3 && gemms_in_step<plain_t>::value >= 7);
  alignas(64) static std::byte arena0[step_plan<plain_t>::bytes];
  alignas(64) static std::byte arena1[step_plan<saved_t>::bytes];
  run_step(plain(want), arena0);
  const auto s = save_forward(plain(got));
  run_step(s, arena1);
  CHECK(got.l() == want.l());
  CHECK(got.l() > 0.5f);
  CHECK(std::memcmp(got.dx.data(), want.dx.data(), sizeof(float) * std::size_t(R * C)) == 0);
  CHECK(std::memcmp(got.dg.data(), want.dg.data(), sizeof(float) * std::size_t(C)) == 0);
  CHECK(std::memcmp(got.dw.data(), want.dw.data(), sizeof(float) * std::size_t(C * K)) == 0);
  float n = 0;
  for (float e : got.dx) n += e * e;
  CHECK(n > 1e-8f);
  CHECK(allocations_during([&] { run_step(s, arena1); }) == 0);
}

// README.md's save_forward example (docs:readme_save_forward): a plain SGD step of a perceptron.
TEST_CASE("README: save_forward, then the updates", "[step][readme]") {
  constexpr index_t B = 16, D = 8, H = 32, O = 4;
  rng r(4);
  const Tensor<float, shape<B, D>> x = normal<shape<B, D>>(r);
  Tensor<std::int64_t, shape<B>> labels;
  for (index_t i = 0; i < B; ++i) labels(i) = i % O;
  Tensor<float, shape<D, H>> W1 = normal<shape<D, H>>(r) * 0.3f;
  Tensor<float, shape<H, O>> W2 = normal<shape<H, O>>(r) * 0.3f;
  const Tensor<float, shape<D, H>> W1_before = W1;
  const Tensor<float, shape<H, O>> W2_before = W2;
  Tensor<float> L;
  Tensor<float, shape<D, H>> G1;
  Tensor<float, shape<H, O>> G2;
// readme:save_forward:begin
auto [loss, dw1, dw2] = value_and_grad(
    [&](const auto& w1, const auto& w2) { return cross_entropy(matmul(relu(matmul(x, w1)), w2), labels); }, W1, W2);
auto s = statements(save_forward(statements(assign(L, loss), assign(G1, dw1), assign(G2, dw2))),
                    assign(W1, W1 - 0.1f * G1), assign(W2, W2 - 0.1f * G2));
alignas(64) static std::byte arena[step_plan<decltype(s)>::bytes];
run_step(s, arena);
// readme:save_forward:end
  // x w1 and h w2, each read by all three statements; relu(x w1) (h w2's and dw2's operand) and the
  // logits' gradient (dw1's and dw2's)
  static_assert(step_plan<decltype(s)>::slots == 4);
  // The updates ran after the gradients, with them.
  for (index_t i = 0; i < W1.size(); ++i) REQUIRE(W1.data()[i] == W1_before.data()[i] - 0.1f * G1.data()[i]);
  for (index_t i = 0; i < W2.size(); ++i) REQUIRE(W2.data()[i] == W2_before.data()[i] - 0.1f * G2.data()[i]);
  CHECK(L() > 0.5f);
  // The gradients against central differences of the loss (the same expression, at the old weights).
  W1 = W1_before, W2 = W2_before;
  const auto loss_at = [&] { return double(Tensor<float>(loss)()); };
  CHECK(loss_at() == L());
  const auto central = [&](float& w) {
    const float keep = w;
    w = keep + 1e-2f;
    const double up = loss_at();
    w = keep - 1e-2f;
    const double down = loss_at();
    w = keep;
    return (up - down) / 2e-2;
  };
  for (index_t i : {index_t(0), index_t(37), D * H - 1}) CHECK(G1.data()[i] == Approx(central(W1.data()[i])).margin(2e-4));
  for (index_t i : {index_t(0), index_t(50), H * O - 1}) CHECK(G2.data()[i] == Approx(central(W2.data()[i])).margin(2e-4));
  double norm = 0;
  for (float g : G1) norm += double(g) * g;
  CHECK(norm > 1e-4);
}

TEST_CASE("save_forward saves a product over a slot unless a statement between its readers rewrites the slot", "[step]") {
  rng r(12);
  const Tensor<float, shape<B, In>> x = normal<shape<B, In>>(r);
  model m(15);
  slot<float, shape<B, H>, struct sh_> h;
  Tensor<float, shape<B, Out>> o1, o2, q1, q2;
  // h once, then two statements that read h w2.
  const auto once = [&](auto& a, auto& b) {
    return statements(assign(h, act(linear1(x, m.w1, m.b1))), assign(a, matmul(h, m.w2) * 2.0f), assign(b, relu(matmul(h, m.w2))));
  };
  // h halved between them: h w2 is two values, so it stays recomputed.
  const auto twice = [&](auto& a, auto& b) {
    return statements(assign(h, act(linear1(x, m.w1, m.b1))), assign(a, matmul(h, m.w2) * 2.0f), assign(h, h * 0.5f),
                      assign(b, relu(matmul(h, m.w2))));
  };
  using once_t = std::remove_cvref_t<decltype(once(o1, o2))>;
  using twice_t = std::remove_cvref_t<decltype(twice(o1, o2))>;
  static_assert(plan::saved::step_info<once_t>::saved == 1 && plan::saved::step_info<twice_t>::saved == 0);
  // Two groups in one step, each with its own key.
  const auto both = statements(save_forward<struct once_key>(once(o1, o2)), save_forward<struct twice_key>(twice(q1, q2)));
  using P = step_plan<std::remove_cvref_t<decltype(both)>>;
  static_assert(P::slots == 2); // h, and h w2 of the first group
  alignas(64) static std::byte arena[P::bytes];
  run_step(both, arena);
  // Against the same statements without save_forward.
  Tensor<float, shape<B, Out>> want1, want2, want3, want4;
  const auto plain = statements(once(want1, want2), twice(want3, want4));
  alignas(64) static std::byte arena0[step_plan<std::remove_cvref_t<decltype(plain)>>::bytes];
  run_step(plain, arena0);
  auto same = [](const auto& p, const auto& q) { return std::memcmp(p.data(), q.data(), sizeof(float) * std::size_t(p.size())) == 0; };
  CHECK(same(o1, want1));
  CHECK(same(o2, want2));
  CHECK(same(q1, want3));
  CHECK(same(q2, want4));
  // The second group's halved h: its second output is relu of half the first's (before the doubling).
  CHECK(q2.data()[0] == std::max(0.0f, want3.data()[0] * 0.25f));
  float norm = 0;
  for (float e : o2) norm += e * e;
  CHECK(norm > 1e-3f);
}

TEST_CASE("together: elementwise assignments in one pass give the assignments in sequence", "[step][together]") {
  // Adam's update of 5000 elements (several chunks, both threads): the moments written and read back in
  // the same pass, against the three assignments one after another, bit for bit.
  constexpr index_t N = 5000;
  rng gen(7);
  const Tensor<float, shape<N>> g = normal<shape<N>>(gen), p0 = normal<shape<N>>(gen);
  Tensor<float, shape<N>> m0 = normal<shape<N>>(gen) * 0.1f, v0 = square(normal<shape<N>>(gen)) * 0.01f;
  Tensor<float, shape<N>> p = p0, m = m0, v = v0, ps = p0, ms = m0, vs = v0;
  const float b1 = 0.9f, b2 = 0.999f, rate = 3e-3f, scale = 1.2f, eps = 1e-8f;
  eval(together(assign(m, m * b1 + g * (1 - b1)), assign(v, v * b2 + square(g) * (1 - b2)),
                assign(p, p - m * rate / (sqrt(v) * scale + eps))));
  ms = ms * b1 + g * (1 - b1);
  vs = vs * b2 + square(g) * (1 - b2);
  ps = ps - ms * rate / (sqrt(vs) * scale + eps);
  CHECK(std::memcmp(m.data(), ms.data(), sizeof(float) * N) == 0);
  CHECK(std::memcmp(v.data(), vs.data(), sizeof(float) * N) == 0);
  CHECK(std::memcmp(p.data(), ps.data(), sizeof(float) * N) == 0);
  CHECK(p(0) != p0(0)); // (it ran)

  // A destination read through another index map (flip): the group runs one assignment after another,
  // and the result is still the sequence's.
  Tensor<float, shape<N>> a = p0, b = g, as = p0, bs = g;
  eval(together(assign(a, b * 2.0f), assign(b, flip<0>(a) + 1.0f)));
  as = bs * 2.0f;
  bs = flip<0>(as) + 1.0f;
  CHECK(std::memcmp(a.data(), as.data(), sizeof(float) * N) == 0);
  CHECK(std::memcmp(b.data(), bs.data(), sizeof(float) * N) == 0);

  // Inside a step, over slots: the group is one nest, its slots alive across it.
  slot<float, shape<N>, struct tg_s_> s;
  Tensor<float, shape<N>> out, out_ref;
  auto st = statements(assign(s, g * 3.0f), together(assign(s, s + p0), assign(out, s * s - g)));
  std::vector<std::byte> arena_storage(std::size_t(step_plan<decltype(st)>::bytes) + 64);
  void* base = arena_storage.data();
  std::size_t space = arena_storage.size();
  run_step(st, std::span<std::byte>(static_cast<std::byte*>(std::align(64, 1, base, space)), std::size_t(step_plan<decltype(st)>::bytes)));
  out_ref = (g * 3.0f + p0) * (g * 3.0f + p0) - g;
  CHECK(std::memcmp(out.data(), out_ref.data(), sizeof(float) * N) == 0);
}

TEST_CASE("together: the epilogues of one product run it once and give the assignments in sequence", "[step][together]") {
  // gelu and its slope (the decoder's forward keeps both), and the product plus a bias, from one GEMM
  // (150 columns: whole vectors and a scalar end), against each assigned alone, bit for bit.
  constexpr index_t M = 200, K = 96, N = 150;
  rng gen(11);
  const Tensor<float, shape<M, K>> x = normal<shape<M, K>>(gen);
  const Tensor<float, shape<K, N>> w = normal<shape<K, N>>(gen) * 0.2f, w2 = normal<shape<K, N>>(gen) * 0.2f;
  const Tensor<float, shape<N>> bias = normal<shape<N>>(gen);
  Tensor<float, shape<M, N>> act, slope, z, act_ref, slope_ref, z_ref;
  act_ref = gelu_tanh(matmul(x, w));
  slope_ref = ops::call<ops::gelu_tanh_slope>(matmul(x, w));
  z_ref = matmul(x, w) + bias;
  eval(together(assign(act, gelu_tanh(matmul(x, w))), assign(slope, ops::call<ops::gelu_tanh_slope>(matmul(x, w))),
                assign(z, matmul(x, w) + bias)));
  CHECK(std::memcmp(act.data(), act_ref.data(), sizeof(float) * M * N) == 0);
  CHECK(std::memcmp(slope.data(), slope_ref.data(), sizeof(float) * M * N) == 0);
  CHECK(std::memcmp(z.data(), z_ref.data(), sizeof(float) * M * N) == 0);
  CHECK(act(7, 149) != 0.0f); // (it ran, to the last column)

  // A small static product (the unrolled kernels' path, C on the stack): the same.
  {
    const Tensor<float, shape<16, 8>> xs = normal<shape<16, 8>>(gen);
    const Tensor<float, shape<8, 32>> ws = normal<shape<8, 32>>(gen);
    Tensor<float, shape<16, 32>> p1, p2, p1_ref, p2_ref;
    p1_ref = gelu_tanh(matmul(xs, ws));
    p2_ref = matmul(xs, ws) * 3.0f;
    eval(together(assign(p1, gelu_tanh(matmul(xs, ws))), assign(p2, matmul(xs, ws) * 3.0f)));
    CHECK(std::memcmp(p1.data(), p1_ref.data(), sizeof(float) * 16 * 32) == 0);
    CHECK(std::memcmp(p2.data(), p2_ref.data(), sizeof(float) * 16 * 32) == 0);
  }

  // A destination written through a transposed view (not rows of vectors): stored row by row, the same.
  Tensor<float, shape<N, M>> zt;
  auto zt_view = permute<1, 0>(zt);
  eval(together(assign(act, gelu_tanh(matmul(x, w)) * 2.0f), assign(zt_view, matmul(x, w) + bias)));
  for (index_t i = 0; i < M; i += 37)
    for (index_t j = 0; j < N; j += 13) {
      CHECK(zt(j, i) == z_ref(i, j));
      CHECK(act(i, j) == act_ref(i, j) * 2.0f);
    }

  // Two products (another weight): each runs on its own, as in sequence.
  eval(together(assign(act, gelu_tanh(matmul(x, w))), assign(z, matmul(x, w2) + bias)));
  Tensor<float, shape<M, N>> z2_ref = matmul(x, w2) + bias;
  CHECK(std::memcmp(act.data(), act_ref.data(), sizeof(float) * M * N) == 0);
  CHECK(std::memcmp(z.data(), z2_ref.data(), sizeof(float) * M * N) == 0);

  // A value that reads another assignment's destination, and a destination the product reads: one
  // assignment after another, so each sees the one before it.
  constexpr index_t S = 64;
  Tensor<float, shape<S, S>> a = normal<shape<S, S>>(gen), wa = normal<shape<S, S>>(gen) * 0.1f, b, a_seq = a, b_seq;
  eval(together(assign(b, gelu_tanh(matmul(a, wa))), assign(a, matmul(a, wa) * b)));
  b_seq = gelu_tanh(matmul(a_seq, wa));
  a_seq = matmul(a_seq, wa) * b_seq;
  CHECK(std::memcmp(b.data(), b_seq.data(), sizeof(float) * S * S) == 0);
  CHECK(std::memcmp(a.data(), a_seq.data(), sizeof(float) * S * S) == 0);
}

TEST_CASE("together: reductions over one operand run block by block and give the reductions in sequence", "[step][together]") {
  // Batch norm's parameter gradients: per-channel sums over [8, 30, 30, 16] (7200 rows: several blocks,
  // both threads), one spelled as vjp spells it (keepdims, reshaped), and a max: bit for bit each
  // reduction's own result.
  using S = shape<8, 30, 30, 16>;
  rng gen(11);
  const Tensor<float, S> a = normal<S>(gen), g = normal<S>(gen);
  const Tensor<float, shape<16>> mu = normal<shape<16>>(gen), rs = normal<shape<16>>(gen);
  auto xhat = (a - mu) * rs;
  auto gm = where(xhat > 0.0f, g, 0.0f);
  Tensor<float, shape<16>> dg, db, mx, dg_ref, db_ref, mx_ref;
  eval(together(assign(dg, reshape<16>(sum(gm * xhat, axes<0, 1, 2>, keepdims))), assign(db, sum(gm, axes<0, 1, 2>)),
                assign(mx, max(g, axes<0, 1, 2>))));
  dg_ref = reshape<16>(sum(gm * xhat, axes<0, 1, 2>, keepdims));
  db_ref = sum(gm, axes<0, 1, 2>);
  mx_ref = max(g, axes<0, 1, 2>);
  CHECK(std::memcmp(dg.data(), dg_ref.data(), sizeof(float) * 16) == 0);
  CHECK(std::memcmp(db.data(), db_ref.data(), sizeof(float) * 16) == 0);
  CHECK(std::memcmp(mx.data(), mx_ref.data(), sizeof(float) * 16) == 0);
  // (and they are the sums: channel 5 in long double)
  long double want = 0;
  for (index_t n = 0; n < 8; ++n)
    for (index_t i = 0; i < 30; ++i)
      for (index_t j = 0; j < 30; ++j) {
        const float x = (a(n, i, j, 5) - mu(5)) * rs(5);
        if (x > 0.0f) want += g(n, i, j, 5);
      }
  CHECK(std::fabs(static_cast<long double>(db(5)) - want) < 1e-3L);

  // A value that reads another's destination: they run one after another, and s2 sees s1.
  Tensor<float, shape<16>> s1, s2, s1_ref, s2_ref;
  eval(together(assign(s1, sum(g, axes<0, 1, 2>)), assign(s2, sum(g * s1, axes<0, 1, 2>))));
  s1_ref = sum(g, axes<0, 1, 2>);
  s2_ref = sum(g * s1_ref, axes<0, 1, 2>);
  CHECK(std::memcmp(s1.data(), s1_ref.data(), sizeof(float) * 16) == 0);
  CHECK(std::memcmp(s2.data(), s2_ref.data(), sizeof(float) * 16) == 0);

  // Reductions the blocks do not take (whole sums): one after another.
  Tensor<float> t1, t2;
  eval(together(assign(t1, sum(g)), assign(t2, sum(a * g))));
  const Tensor<float> t1_ref = sum(g), t2_ref = sum(a * g);
  CHECK(t1() == t1_ref());
  CHECK(t2() == t2_ref());
  CHECK(t1() != 0.0f);

  // Inside a step, over a slot: one nest, nothing allocated.
  slot<float, S, struct tg_r_> h;
  Tensor<float, shape<16>> u1, u2;
  auto st = statements(assign(h, g * 2.0f), together(assign(u1, sum(h * a, axes<0, 1, 2>)), assign(u2, sum(h, axes<0, 1, 2>))));
  static_assert(step_plan<decltype(st)>::steps == 2 && step_plan<decltype(st)>::temporaries == 0);
  std::vector<std::byte> arena_storage(std::size_t(step_plan<decltype(st)>::bytes) + 64);
  void* base = arena_storage.data();
  std::size_t space = arena_storage.size();
  const std::span<std::byte> arena(static_cast<std::byte*>(std::align(64, 1, base, space)), std::size_t(step_plan<decltype(st)>::bytes));
  run_step(st, arena);
  CHECK(allocations_during([&] { run_step(st, arena); }) == 0);
  const Tensor<float, shape<16>> u1_ref = sum((g * 2.0f) * a, axes<0, 1, 2>), u2_ref = sum(g * 2.0f, axes<0, 1, 2>);
  CHECK(std::memcmp(u1.data(), u1_ref.data(), sizeof(float) * 16) == 0);
  CHECK(std::memcmp(u2.data(), u2_ref.data(), sizeof(float) * 16) == 0);
}

TEST_CASE("together: an optimizer's update allocates nothing", "[step][together]") {
  Tensor<float, shape<64, 70>> p = full<float, shape<64, 70>>(0.5f), g = full<float, shape<64, 70>>(0.25f);
  optim::moments<float, shape<64, 70>> s;
  optim::adam opt({.lr = 1e-2f});
  opt.begin_step();
  opt.update(p, s, g); // (the first parallel nest of a process starts the thread pool)
  CHECK(p(3, 4) == Approx(0.5f - 1e-2f).epsilon(1e-5)); // Adam's first step moves by lr (the sign of g)
  opt.begin_step();
  CHECK(allocations_during([&] { opt.update(p, s, g); }) == 0);
}
