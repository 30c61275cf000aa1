// Issue 16's generation (examples/decoder/generator.hpp): decoding with the KV cache gives the tokens, and
// within float rounding the logits, of recomputing the whole window at every token, across the window's
// moves when the text outgrows the cache; a decode step (and a prefill) allocates nothing (operator new
// counted: counting_new.hpp); bad tokens are errors; the step with its position read from memory (what
// the CUDA graph of a decode step runs, position_step.hpp) gives the step's logits.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <vector>

#include <tenfold/sampling.hpp>

#include "../examples/decoder/generator.hpp"
#include "../examples/decoder/position_step.hpp"
#include "counting_new.hpp"

using namespace tenfold;

namespace {
constexpr index_t V = 114;

// Weights with more structure than the initialisation's near-uniform predictions: tensor k holds
// scale * sin(0.7 i + 0.3 k) (norm weights 1 + 0.1 sin(...)), as decoder_test's reference.
std::unique_ptr<gpt::parameters<V>> structured_weights() {
  auto p = std::make_unique<gpt::parameters<V>>();
  int k = 0;
  gpt::each_of(
      [&k](const std::string& name, bool, auto& t) {
        const bool norm = name.find("ln") != std::string::npos;
        const double scale = name == "embed.weight" ? 0.5 : name.ends_with("proj.weight") || name.ends_with("down.weight") ? 0.05 : 0.08;
        for (index_t i = 0; i < index_t(t.size()); ++i) {
          const double s = std::sin(0.7 * double(i) + 0.3 * double(k));
          t.data()[i] = float(norm ? 1 + 0.1 * s : scale * s);
        }
        ++k;
      },
      *p);
  return p;
}
} // namespace

TEST_CASE("generation: the window of a text of n tokens", "[generate]") {
  using G = gpt::generator<V>;
  static_assert(gpt::context == 64);
  CHECK(G::window_begin(1) == 0);
  CHECK(G::window_begin(64) == 0);
  CHECK(G::window_begin(65) == 32); // full: the older half dropped, 33 tokens prefilled
  CHECK(G::window_begin(96) == 32);
  CHECK(G::window_begin(97) == 64);
  CHECK(G::window_begin(200) == 160);
}

TEST_CASE("generation: cached decoding gives the tokens of recomputing the whole window", "[generate]") {
  const auto p = structured_weights();
  auto cached = std::make_unique<gpt::generator<V>>();
  auto full = std::make_unique<gpt::generator<V>>();
  sampler draw(V);
  const sampling s{.temperature = 0.9f, .top_k = 40, .top_p = 0.95f};
  std::vector<std::int32_t> a = {5, 17, 99, 3, 3, 42, 8, 113, 0, 61}, b = a;
  rng ga(11), gb(11);
  double worst = 0, largest = 0;
  int steps = 0;
  // 90 tokens after a prompt of 10: the window moves at 65 and 97 tokens
  for (int i = 0; i < 90; ++i) {
    const auto la = cached->next(*p, a);
    const auto lb = full->next(*p, b, false);
    for (std::size_t j = 0; j < la.size(); ++j)
      worst = std::max(worst, double(std::fabs(la[j] - lb[j]))), largest = std::max(largest, double(std::fabs(lb[j])));
    steps += cached->length == full->length ? 1 : 0;
    a.push_back(std::int32_t(draw(la, s, ga)));
    b.push_back(std::int32_t(draw(lb, s, gb)));
    REQUIRE(a == b);
  }
  INFO("largest logit " << largest << ", worst difference " << worst);
  CHECK(largest > 1.0); // predictions far from uniform: the comparison means something
  CHECK(worst < 1e-4 * largest);
  CHECK(steps == 90);
  CHECK(std::set<std::int32_t>(a.begin() + 10, a.end()).size() > 5); // not one token repeated
}

namespace {
// position_step.hpp's state on the host: what gpt::device_decoder holds on the device.
struct host_position_state {
  static constexpr index_t T = gpt::context;
  Tensor<float, shape<1, gpt::heads, T, gpt::head_dim>> k[gpt::layers], v[gpt::layers];
  rope_tables<float, T, gpt::head_dim> rope;
  const Tensor<float, shape<T, gpt::head_dim>>&cos = rope.cos, &sin = rope.sin;
  Tensor<std::int32_t, shape<1>> id, at, keys;
  Tensor<float, shape<1, gpt::width>> x1, x21, y1;
  Tensor<float, shape<1, 3 * gpt::width>> qkv1;
  Tensor<float, shape<1, gpt::hidden>> a1;
  Tensor<float, shape<1, V>> logits1;
  template <class U, class Sh>
  static const Tensor<U, Sh>& in(const Tensor<U, Sh>& t) {
    return t;
  }
  static auto lengths(const Tensor<std::int32_t, shape<1>>& t) { return key_lengths(t); }
  template <class D, class E>
  void set(D& dst, E&& e) {
    dst = std::forward<E>(e);
  }
};
} // namespace

// What the CUDA graph of a decode step runs (examples/decoder/device_decoder.hpp), on the CPU: the same
// logits as generator::step at every position after a prefill, with the position read from memory.
TEST_CASE("generation: the step with its position read from memory gives generator::step's logits", "[generate]") {
  const auto p = structured_weights();
  auto g = std::make_unique<gpt::generator<V>>();
  auto s = std::make_unique<host_position_state>();
  const std::vector<std::int32_t> prompt = {84, 104, 101, 32, 109, 101};
  g->prefill(*p, prompt);
  for (index_t l = 0; l < gpt::layers; ++l) s->k[l] = g->k[l], s->v[l] = g->v[l];
  std::int32_t token = 97;
  double worst = 0, largest = 0;
  for (index_t at = index_t(prompt.size()); at < gpt::context; ++at) {
    const auto want = g->step(*p, token);
    s->id(0) = token, s->at(0) = std::int32_t(at), s->keys(0) = std::int32_t(at + 1);
    gpt::position_step(*s, *p);
    for (index_t i = 0; i < V; ++i)
      worst = std::max(worst, double(std::fabs(s->logits1(0, i) - want[std::size_t(i)]))), largest = std::max(largest, double(std::fabs(want[std::size_t(i)])));
    token = std::int32_t(std::max_element(want.begin(), want.end()) - want.begin());
  }
  // the caches hold the same keys and values
  for (index_t l = 0; l < gpt::layers; ++l)
    for (index_t i = 0; i < s->k[l].size(); ++i) {
      worst = std::max(worst, double(std::fabs(s->k[l].data()[i] - g->k[l].data()[i])));
      worst = std::max(worst, double(std::fabs(s->v[l].data()[i] - g->v[l].data()[i])));
    }
  INFO("largest logit " << largest << ", worst difference " << worst);
  CHECK(largest > 1.0);
  CHECK(worst < 1e-5 * largest);
}

TEST_CASE("generation: a decode step and a prefill allocate nothing", "[generate][alloc]") {
  const auto p = structured_weights();
  auto g = std::make_unique<gpt::generator<V>>();
  std::vector<std::int32_t> text = {1, 2, 3, 4};
  text.reserve(64);
  g->next(*p, text); // the prefill
  text.push_back(7);
  g->next(*p, text); // a step
  cpu::prepare_scratch(); // each thread's buffers grown to the largest any thread used
  text.push_back(9);
  CHECK(allocations_during([&] { g->next(*p, text); }) == 0);
  CHECK(g->length == 6);
  CHECK(allocations_during([&] { g->next(*p, std::span<const std::int32_t>(text).first(5), false); }) == 0);
  CHECK(g->length == 5);
}

TEST_CASE("generation: tokens outside the vocabulary and empty texts are errors", "[generate]") {
  const auto p = structured_weights();
  auto g = std::make_unique<gpt::generator<V>>();
  const std::vector<std::int32_t> bad = {1, 114}, none;
  CHECK_THROWS_WITH(g->next(*p, bad), Catch::Contains("token 114 is outside the vocabulary of 114"));
  CHECK_THROWS_WITH(g->next(*p, none), Catch::Contains("no tokens"));
}
