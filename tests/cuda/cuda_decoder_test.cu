// examples/decoder's decode step on the device (examples/decoder/device_decoder.hpp: the step captured
// once as a CUDA graph, replayed per token, its position read from device memory) against the CPU
// generator's step: the same logits at every position from the end of a CPU prefill to the cache's
// capacity, one capture for all of them; then the step's errors. And cuda::graph's refusal of the legacy
// stream, which needs no device.
#include "cuda_test_support.hpp"

#include <algorithm>
#include <memory>
#include <vector>

#include "../../examples/decoder/device_decoder.hpp"

using namespace tenfold;

TEST_CASE("cuda::graph: capturing the legacy default stream is a clear error", "[graph]") {
  bool ran = false;
  CHECK_THROWS_WITH(cuda::graph::capture(cuda::stream_ref{}, [&] { ran = true; }), Catch::Contains("legacy default stream"));
  CHECK_FALSE(ran);
  const cuda::graph none;
  CHECK_FALSE(bool(none));
  CHECK_THROWS_WITH(none.launch(cuda::stream_ref{}), Catch::Contains("nothing captured"));
}

TEST_CASE("decoder: the decode step as a CUDA graph gives the CPU's logits at every position", "[decoder]") {
  TENFOLD_REQUIRE_DEVICE();
  constexpr index_t V = 114;
  const auto p = std::make_unique<gpt::parameters<V>>(7);
  const auto cpu = std::make_unique<gpt::generator<V>>();
  const std::vector<std::int32_t> prompt = {84, 104, 101, 32, 109};
  cpu->prefill(*p, prompt);
  gpt::device_decoder<V> dev(*p);
  dev.load(*cpu);
  REQUIRE(dev.length == index_t(prompt.size()));
  std::int32_t token = 97;
  double worst = 0;
  for (index_t at = index_t(prompt.size()); at < gpt::context; ++at) {
    const auto want = cpu->step(*p, token);
    const auto got = dev.step(token);
    const float scale = std::max(1.0f, *std::max_element(want.begin(), want.end(), [](float a, float b) { return std::fabs(a) < std::fabs(b); }));
    for (index_t i = 0; i < V; ++i) worst = std::max(worst, double(std::fabs(got[i] - want[i]) / scale));
    INFO("position " << at << ": worst difference so far " << worst);
    REQUIRE(worst <= 1e-4);
    token = std::int32_t(std::max_element(want.begin(), want.end()) - want.begin()); // greedy, as both would pick
  }
  CHECK(dev.steps == gpt::context - index_t(prompt.size()));
  CHECK(dev.captures == 1);
  CHECK_THROWS_WITH(dev.step(1), Catch::Contains("the cache is full"));
  gpt::device_decoder<V> fresh(*p);
  CHECK_THROWS_WITH(fresh.step(V), Catch::Contains("outside the vocabulary"));
  CHECK_THROWS_WITH(fresh.step(-1), Catch::Contains("outside the vocabulary"));
}
