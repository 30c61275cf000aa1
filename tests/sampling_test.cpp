// tenfold::sampler (include/tenfold/sampling.hpp): the filtered distributions against Hugging Face
// transformers' warpers (tests/data/sampling_reference.py), draws against those distributions, greedy
// decoding, determinism, no allocation per draw, and the errors.
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include <catch2/catch.hpp>
#include <tenfold/sampling.hpp>

using namespace tenfold;

namespace {
struct reference_case {
  std::vector<float> logits;
  float temperature;
  int top_k;
  float top_p;
  std::vector<double> probs;
};
const std::vector<reference_case> reference = {
#include "data/sampling_reference.inc"
};
} // namespace

// Compared per logit value: how many tokens of each value are kept, and their probability. (Which of
// several equal logits top_p keeps at its boundary depends on the order transformers' unstable sort
// leaves them in; the count and the mass do not.)
TEST_CASE("the filtered distributions are transformers' (temperature, top-k, top-p)", "[sampling]") {
  int compared = 0, kept_differs = 0;
  double worst = 0;
  for (const auto& c : reference) {
    sampler s(index_t(c.logits.size()));
    std::vector<double> p(c.logits.size());
    s.probabilities(c.logits, {c.temperature, c.top_k, c.top_p}, p);
    std::map<float, std::pair<int, double>> mine, theirs; // logit -> (kept, probability of one)
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (p[i] > 0) mine[c.logits[i]] = {mine[c.logits[i]].first + 1, p[i]};
      if (c.probs[i] > 0) theirs[c.logits[i]] = {theirs[c.logits[i]].first + 1, c.probs[i]};
    }
    kept_differs += mine.size() != theirs.size();
    for (const auto& [logit, m] : mine) {
      const auto t = theirs.find(logit);
      if (t == theirs.end() || t->second.first != m.first) ++kept_differs;
      else worst = std::max(worst, std::abs(m.second - t->second.second));
    }
    ++compared;
  }
  INFO(compared << " cases, worst probability difference " << worst);
  CHECK(compared == 540);
  CHECK(kept_differs == 0);
  CHECK(worst < 1e-6);
}

TEST_CASE("draws follow the filtered distribution; a seed and a counter fix the token", "[sampling]") {
  const std::vector<float> logits = {1.0f, 2.5f, 0.3f, -1.0f, 2.0f, 2.5f};
  sampler s(6);
  for (const sampling opt : {sampling{1.0f, 0, 1.0f}, sampling{0.6f, 0, 1.0f}, sampling{1.0f, 3, 1.0f}, sampling{1.3f, 0, 0.7f}}) {
    std::vector<double> p(6);
    s.probabilities(logits, opt, p);
    constexpr int draws = 40000;
    std::vector<int> count(6);
    for (int d = 0; d < draws; ++d) ++count[std::size_t(s(logits, opt, philox_stream{7, std::uint64_t(d)}))];
    for (std::size_t i = 0; i < 6; ++i) {
      const double sd = std::sqrt(draws * p[i] * (1 - p[i]));
      INFO("token " << i << ": " << count[i] << " draws, expected " << draws * p[i]);
      CHECK(std::abs(count[i] - draws * p[i]) <= 5 * sd + 1e-9);
      if (p[i] == 0) CHECK(count[i] == 0);
    }
  }
  // Determinism: the same (seed, counter) the same token; an rng hands out one counter per token.
  CHECK(s(logits, {}, philox_stream{3, 11}) == s(logits, {}, philox_stream{3, 11}));
  rng a(99), b(99);
  for (int i = 0; i < 50; ++i) CHECK(s(logits, {0.8f, 0, 0.95f}, a) == s(logits, {0.8f, 0, 0.95f}, b));
  CHECK(a.offset() == 50);
}

TEST_CASE("temperature 0 is greedy, top_k 1 too, and top_p keeps at least one token", "[sampling]") {
  const std::vector<float> logits = {0.5f, 3.0f, -2.0f, 3.0f};
  sampler s(4);
  for (std::uint64_t c = 0; c < 20; ++c) {
    CHECK(s(logits, {0.0f, 0, 1.0f}, philox_stream{1, c}) == 1); // the first of the two largest
    CHECK(s(logits, {1.0f, 0, 1e-6f}, philox_stream{1, c}) == 3); // one token: of two tied, the later (transformers' order)
  }
  // top_k 1 keeps both tied largest (ties are not broken, as transformers does).
  std::vector<double> p(4);
  s.probabilities(logits, {1.0f, 1, 1.0f}, p);
  CHECK(p == std::vector<double>{0.0, 0.5, 0.0, 0.5});
  // -inf logits are never drawn.
  const float ninf = -std::numeric_limits<float>::infinity();
  const std::vector<float> masked = {ninf, 0.0f, ninf, 0.0f};
  for (std::uint64_t c = 0; c < 200; ++c) CHECK(s(masked, {}, philox_stream{2, c}) % 2 == 1);
}

TEST_CASE("bad arguments and logits are errors that say what is wrong", "[sampling]") {
  sampler s(3);
  const std::vector<float> ok = {0.0f, 1.0f, 2.0f};
  const float nan = std::numeric_limits<float>::quiet_NaN(), ninf = -std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH(sampler(0), Catch::Contains("at least one token"));
  CHECK_THROWS_WITH(s(std::vector<float>{0.0f, 1.0f}, {}, philox_stream{}), Catch::Contains("the logits hold 2 values, the vocabulary 3"));
  CHECK_THROWS_WITH(s(ok, {-1.0f, 0, 1.0f}, philox_stream{}), Catch::Contains("temperature -1 is not a finite value >= 0"));
  CHECK_THROWS_WITH(s(ok, {nan, 0, 1.0f}, philox_stream{}), Catch::Contains("temperature nan"));
  CHECK_THROWS_WITH(s(ok, {1.0f, -2, 1.0f}, philox_stream{}), Catch::Contains("top_k -2 is negative"));
  CHECK_THROWS_WITH(s(ok, {1.0f, 0, 0.0f}, philox_stream{}), Catch::Contains("top_p 0 is not in (0, 1]"));
  CHECK_THROWS_WITH(s(ok, {1.0f, 0, 1.5f}, philox_stream{}), Catch::Contains("top_p 1.5 is not in (0, 1]"));
  CHECK_THROWS_WITH(s(std::vector<float>{0.0f, nan, 1.0f}, {}, philox_stream{}), Catch::Contains("logit 1 is NaN"));
  CHECK_THROWS_WITH(s(std::vector<float>{ninf, ninf, ninf}, {}, philox_stream{}), Catch::Contains("every logit is -inf"));
}
