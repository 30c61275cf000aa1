// Issue 16's decoder (examples/decoder): the loss and every parameter's gradient of one batch against
// PyTorch's, in float64, for the same model (bench/decoder_torch.py), weights and batch
// (tests/data/decoder_reference.py wrote decoder_reference.inc); then AdamW steps on one batch lower its
// loss, and a training step allocates nothing (operator new counted: counting_new.hpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>

#include "../examples/decoder/trainer.hpp"
#include "counting_new.hpp"
#include "data/decoder_reference.inc"

using namespace tenfold;

namespace {
constexpr index_t V = 114, B = 2;

// The reference's weights: tensor k holds scale * sin(0.7 i + 0.3 k) (norm weights 1 + 0.1 sin(...)).
void fill_reference(gpt::parameters<V>& p) {
  int k = 0;
  gpt::each_of(
      [&k](const std::string& name, bool, auto& t) {
        const bool norm = name.find("ln") != std::string::npos;
        const double scale = name == "embed.weight"                                              ? 0.1
                             : name.ends_with("proj.weight") || name.ends_with("down.weight") ? 0.05
                                                                                              : 0.08;
        for (index_t i = 0; i < index_t(t.size()); ++i) {
          const double s = std::sin(0.7 * double(i) + 0.3 * double(k));
          t.data()[i] = float(norm ? 1 + 0.1 * s : scale * s);
        }
        ++k;
      },
      p);
}
template <class Trainer>
void fill_batch(Trainer& t) {
  for (index_t b = 0; b < B; ++b)
    for (index_t i = 0; i < gpt::context; ++i) {
      const index_t id = (29 * b + 13 * i + 3) % V;
      t.ids(b * gpt::context + i) = std::int32_t(id);
      t.targets(b * gpt::context + i) = (5 * id + 1) % V;
    }
}
} // namespace

TEST_CASE("decoder: loss and gradients equal PyTorch's for the same weights and batch", "[decoder]") {
  auto p = std::make_unique<gpt::parameters<V>>();
  fill_reference(*p);
  auto t = std::make_unique<gpt::trainer<V, B>>();
  fill_batch(*t);
  t->backward(*p); // (two replicas of one window each: the gradient is their mean)
  CHECK(std::fabs(double(t->loss()) - decoder_reference_loss) < 1e-5 * decoder_reference_loss);
  auto grad = std::make_unique<gpt::parameters<V>>();
  t->gradient(*grad);
  int k = 0;
  gpt::each_of(
      [&k](const std::string& name, bool, auto& g) {
        const auto& want = decoder_reference_grads[k++];
        INFO(name);
        REQUIRE(name == want.name);
        const index_t n = index_t(g.size());
        double sum = 0, squares = 0;
        for (index_t i = 0; i < n; ++i) sum += g.data()[i], squares += double(g.data()[i]) * g.data()[i];
        // float32 against float64: relative to the gradient's scale (its root mean square)
        const double rms = std::sqrt(want.squares / double(n));
        CHECK(std::fabs(squares - want.squares) < 1e-3 * want.squares);
        CHECK(std::fabs(sum - want.sum) < 1e-3 * rms * double(n));
        for (int j = 0; j < 8; ++j) {
          const index_t at = (7919 * index_t(j)) % n;
          INFO("element " << at);
          CHECK(std::fabs(double(g.data()[at]) - want.at[j]) < 1e-3 * rms + 1e-4 * std::fabs(want.at[j]));
        }
      },
      *grad);
}

TEST_CASE("decoder: AdamW steps on one batch lower its loss", "[decoder]") {
  auto p = std::make_unique<gpt::parameters<V>>(7);
  auto t = std::make_unique<gpt::trainer<V, B>>();
  fill_batch(*t);
  const float first = t->step(*p, 1e-3f);
  CHECK(std::fabs(first - std::log(float(V))) < 0.2f); // small initial weights: near-uniform predictions
  // after a warm-up (each thread's GEMM buffers grown to the largest any thread used), nothing allocates
  cpu::prepare_scratch();
  float last = first;
  CHECK(allocations_during([&] { last = t->step(*p, 3e-3f); }) == 0);
  // (few steps: the sanitized build takes ~5 s a step)
  for (int i = 0; i < 6; ++i) last = t->step(*p, 3e-3f); // about 2.1 after these 8 steps
  CHECK(last < 0.6f * first);
  CHECK(t->last_norm > 0);
}

TEST_CASE("decoder: the replicas side by side or one after another over the pool give the same floats", "[decoder]") {
  auto p = std::make_unique<gpt::parameters<V>>(7), q = std::make_unique<gpt::parameters<V>>(7);
  auto t = std::make_unique<gpt::trainer<V, B>>(), u = std::make_unique<gpt::trainer<V, B>>();
  u->at_once = false;
  fill_batch(*t), fill_batch(*u);
  const float a = t->step(*p, 1e-3f), b = u->step(*q, 1e-3f);
  CHECK(std::memcmp(&a, &b, sizeof a) == 0);
  CHECK(t->last_norm == u->last_norm);
  gpt::each_of(
      [](const std::string& name, bool, const auto& x, const auto& y) {
        INFO(name);
        CHECK(std::memcmp(x.data(), y.data(), sizeof(float) * x.size()) == 0);
      },
      *p, *q);
  // and each replica's gradient differs from the other's (two different windows), so the mean is not one of them
  CHECK(std::memcmp(t->parts[0]->grad->embed.data(), t->parts[1]->grad->embed.data(), sizeof(float) * t->parts[0]->grad->embed.size()) != 0);
}
