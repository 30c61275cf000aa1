// Kept slots (core/step.hpp): a step's gradients laid out by the plan at the arena's front in the order
// the statements finish them, cut into buckets that run_step hands over as each completes.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
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

// The step's values, and its results: declared in any order; the plan orders the kept ones.
struct values {
  slot<float, shape<B, H>, struct a_> a;
  slot<float, shape<B, H>, struct h_> h;
  slot<float, shape<B, H>, struct gh_> gh;
  slot<float, shape<B, H>, struct ga_> ga;
  slot<float, shape<In, H>, kept<struct w1_>> w1;
  slot<float, shape<H>, kept<struct b1_>> b1;
  slot<float, shape<H, Out>, kept<struct w2_>> w2;
  slot<float, shape<Out>, kept<struct b2_>> b2;
  slot<float, shape<>, kept<struct loss_>> loss;
};

// Statements 0-9: a, h, loss, gh, w2, b2, the host statement (marks), ga, w1, b1.
template <class X, class Y>
auto training_step(const values& v, model& m, const X& x, const Y& y, int& marks) {
  auto [l, dh, dw2, db2] =
      value_and_grad([&y](const auto& h, const auto& w, const auto& b) { return head(h, w, b, y); }, v.h, m.w2, m.b2);
  auto [da] = vjp([](const auto& a) { return tanh(a); }, v.gh, v.a);
  auto [dw1, db1] = vjp([&x](const auto& w, const auto& b) { return linear1(x, w, b); }, v.ga, m.w1, m.b1);
  return statements(assign(v.a, linear1(x, m.w1, m.b1)), assign(v.h, tanh(v.a)), assign(v.loss, l), assign(v.gh, dh),
                    assign(v.w2, dw2), assign(v.b2, db2), host([&marks] { ++marks; }), assign(v.ga, da),
                    assign(v.w1, dw1), assign(v.b1, db1));
}
using step_type = decltype(training_step(std::declval<const values&>(), std::declval<model&>(),
                                         std::declval<const Tensor<float, shape<B, In>>&>(),
                                         std::declval<const Tensor<float, shape<B, Out>>&>(), std::declval<int&>()));
using P = step_plan<step_type>;

// The kept slots at the front, in the order their statements come (loss, w2, b2, w1, b1), each on a
// 64-byte line: 4 -> 64 bytes, 800 -> 832, 20 -> 64, 1920, 160 -> 192.
static_assert(P::kept_bytes == 64 + 832 + 64 + 1920 + 192);
static_assert(P::slot_offset<kept<loss_>>() == 0 && P::slot_offset<kept<w2_>>() == 64 &&
              P::slot_offset<kept<b2_>>() == 896 && P::slot_offset<kept<w1_>>() == 960 &&
              P::slot_offset<kept<b1_>>() == 2880);
// The shared slots come after them.
static_assert(P::slot_offset<a_>() >= P::kept_bytes && P::slot_offset<ga_>() >= P::kept_bytes &&
              P::bytes > P::kept_bytes);

// Buckets of at least 512 bytes: {loss, w2} complete after statement 4, {b2, w1} after 8, {b1} after 9.
constexpr auto buckets = P::buckets<512>;
static_assert(buckets.count == 3);
static_assert(buckets.begin[0] == 0 && buckets.end[0] == 896 && buckets.after[0] == 4);
static_assert(buckets.begin[1] == 896 && buckets.end[1] == 2880 && buckets.after[1] == 8);
static_assert(buckets.begin[2] == 2880 && buckets.end[2] == P::kept_bytes && buckets.after[2] == 9);
// One bucket of everything, or one per kept slot.
static_assert(P::buckets<1 << 20>.count == 1 && P::buckets<1 << 20>.after[0] == 9);
static_assert(P::buckets<1>.count == 5 && P::buckets<1>.after[2] == 5);

struct fired {
  int k, marks;
  std::vector<float> values;
};
} // namespace

TEST_CASE("kept slots: the step's results at the arena's front, the same bits as tensors", "[step][kept]") {
  rng r(7);
  const Tensor<float, shape<B, In>> x = normal<shape<B, In>>(r);
  const Tensor<float, shape<B, Out>> y = normal<shape<B, Out>>(r);
  model m(11);
  alignas(64) static std::byte arena[P::bytes];
  std::memset(arena, 0xff, sizeof arena); // the kept slots' padding is zeroed by the step
  values v;
  int marks = 0;
  run_step(training_step(v, m, x, y, marks), arena);
  CHECK(marks == 1);

  // The same step as separate evaluations into tensors.
  Tensor<float, shape<B, H>> a = linear1(x, m.w1, m.b1), h = tanh(a), gh, ga;
  auto [l, dh, dw2, db2] =
      value_and_grad([&y](const auto& h_, const auto& w, const auto& b) { return head(h_, w, b, y); }, h, m.w2, m.b2);
  Tensor<float> loss = l;
  Tensor<float, shape<H, Out>> w2 = dw2;
  Tensor<float, shape<Out>> b2 = db2;
  gh = dh;
  auto [da] = vjp([](const auto& a_) { return tanh(a_); }, gh, a);
  ga = da;
  auto [dw1, db1] = vjp([&x](const auto& w, const auto& b) { return linear1(x, w, b); }, ga, m.w1, m.b1);
  Tensor<float, shape<In, H>> w1 = dw1;
  Tensor<float, shape<H>> b1 = db1;

  auto same = [](const auto& p, const auto& q) {
    for (index_t i = 0; i < p.size(); ++i)
      if (p.data()[i] != q.data()[i]) return false;
    return true;
  };
  CHECK(P::kept(arena, v.loss)() == loss());
  CHECK(loss() > 0.1f);
  CHECK(same(P::kept(arena, v.w2), w2));
  CHECK(same(P::kept(arena, v.b2), b2));
  CHECK(same(P::kept(arena, v.w1), w1));
  CHECK(same(P::kept(arena, v.b1), b1));
  CHECK(P::kept(arena, v.w1).data() == reinterpret_cast<float*>(arena + 960));
  // padding: after loss (60 bytes), w2 (32), b2 (44), b1 (32); w1 fills its lines
  for (auto [from, to] : {std::pair{4, 64}, std::pair{864, 896}, std::pair{916, 960}, std::pair{3040, 3072}})
    for (int i = from; i < to; ++i) REQUIRE(arena[i] == std::byte{0});

  CHECK_THROWS_WITH(P::kept(std::span<std::byte>(arena, 64), v.w1),
                    Catch::Contains("the arena has 64 bytes") && Catch::Contains(std::to_string(P::bytes)));
}

TEST_CASE("kept slots: each bucket handed over right after the statement that completes it", "[step][kept]") {
  rng r(9);
  const Tensor<float, shape<B, In>> x = normal<shape<B, In>>(r);
  const Tensor<float, shape<B, Out>> y = normal<shape<B, Out>>(r);
  model m(12);
  alignas(64) static std::byte arena[P::bytes];
  values v;
  int marks = 0;
  std::vector<fired> seen;
  seen.reserve(8);
  auto record = [&](int k, std::span<float> b) {
    seen.push_back({k, marks, {}});
    seen.back().values.assign(b.begin(), b.end());
    CHECK(reinterpret_cast<std::byte*>(b.data()) == arena + buckets.begin[k]);
  };
  run_step(training_step(v, m, x, y, marks), arena, on_buckets<float, 512>(record));
  REQUIRE(seen.size() == 3);
  // bucket 0 before the host statement (6), the others after it; in order
  CHECK((seen[0].k == 0 && seen[0].marks == 0));
  CHECK((seen[1].k == 1 && seen[1].marks == 1));
  CHECK((seen[2].k == 2 && seen[2].marks == 1));
  for (int k = 0; k < 3; ++k) {
    const auto& s = seen[std::size_t(k)];
    REQUIRE(s.values.size() == std::size_t(buckets.end[k] - buckets.begin[k]) / 4);
    // what was handed over is what the step left there (nothing wrote it later)
    CHECK(std::memcmp(s.values.data(), arena + buckets.begin[k], s.values.size() * 4) == 0);
  }
  CHECK(seen[0].values[0] == P::kept(arena, v.loss)());
  CHECK(seen[0].values[16] == P::kept(arena, v.w2).data()[0]);
  CHECK(seen[0].values[1] == 0.0f); // the loss's padding

  // The hook allocates nothing of its own.
  int count = 0;
  auto tally = [&count](int, std::span<float> b) { count += int(b.size()); };
  CHECK(allocations_during([&] { run_step(training_step(v, m, x, y, marks), arena, on_buckets<float, 512>(tally)); }) ==
        0);
  CHECK(count == int(P::kept_bytes / 4));
}

// README.md's example (docs:readme_kept): two gradients as kept slots, summed over the ranks bucket by
// bucket while the step goes on.
TEST_CASE("README: gradients as kept slots, each bucket allreduced as the step finishes it", "[step][kept][readme]") {
  constexpr index_t B = 16, D = 8, H = 32, O = 4;
  rng r(3);
  const Tensor<float, shape<B, D>> x = normal<shape<B, D>>(r);
  const Tensor<float, shape<B, O>> y = normal<shape<B, O>>(r);
  const Tensor<float, shape<D, H>> W1 = normal<shape<D, H>>(r) * 0.3f;
  const Tensor<float, shape<H, O>> W2 = normal<shape<H, O>>(r) * 0.3f;
  dist::single_process comm;
  // clang-format off
// readme:kept:begin
slot<float, shape<B, H>, struct h_> h;
slot<float, shape<B, H>, struct gh_> gh;
slot<float, shape<H, O>, kept<struct g2_>> G2; // results: laid out in the order the step finishes them
slot<float, shape<D, H>, kept<struct g1_>> G1;
auto [loss, dh, dw2] = value_and_grad([&](const auto& h_, const auto& w) { return mse_loss(matmul(h_, w), y); }, h, W2);
auto [dw1] = vjp([&](const auto& w) { return tanh(matmul(x, w)); }, gh, W1);
auto s = statements(assign(h, tanh(matmul(x, W1))), assign(gh, dh), assign(G2, dw2), assign(G1, dw1));
using P = step_plan<decltype(s)>;
alignas(64) static std::byte arena[P::bytes];
std::array<dist::single_process::pending, P::buckets<256>.count> sent; // {G2} after statement 2, {G1}
run_step(s, arena, on_buckets<float, 256>([&](int k, std::span<float> b) { sent[k] = comm.allreduce_start(b); }));
for (auto& p : sent) comm.wait(p);
TensorMap<float, shape<D, H>> g1 = P::kept(arena, G1); // in the arena until it runs again
// readme:kept:end
  // clang-format on
  static_assert(P::buckets<256>.count == 2 && P::buckets<256>.after[0] == 2 && P::buckets<256>.after[1] == 3);
  static_assert(P::slot_offset<kept<g2_>>() == 0 && P::slot_offset<kept<g1_>>() == 512);
  auto [l2, want1, want2] = value_and_grad(
      [&](const auto& w1, const auto& w2) { return mse_loss(matmul(tanh(matmul(x, w1)), w2), y); }, W1, W2);
  (void)l2;
  Tensor<float, shape<D, H>> w1 = want1;
  Tensor<float, shape<H, O>> w2 = want2;
  const auto g2 = P::kept(arena, G2);
  for (index_t i = 0; i < w1.size(); ++i) REQUIRE(g1.data()[i] == Approx(w1.data()[i]).margin(1e-6));
  for (index_t i = 0; i < w2.size(); ++i) REQUIRE(g2.data()[i] == Approx(w2.data()[i]).margin(1e-6));
}
