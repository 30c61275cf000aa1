// Built with TENFOLD_TRACE: each evaluated loop nest is recorded and written as Chrome trace JSON.
#define TENFOLD_TRACE 1
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>
#include <tenfold/tenfold.hpp>

using namespace tenfold;

TEST_CASE("tracing records each loop nest with its ops and shape", "[trace]") {
  trace::clear();
  Tensor<float, shape<4, 6>> x = reshape<4, 6>(arange<float, 24>());
  Tensor<float, shape<4, 6>> y = exp(x * 0.1f);                     // one nest
  Tensor<float, shape<4, 6>> c = x - mean(x, axis<0>, keepdims);    // a materialised buffer + the nest
  const auto ev = trace::events();
  REQUIRE(ev.size() == 4);
  CHECK(ev[0].name.find("arange") != std::string::npos);
  CHECK(ev[1].name == "exp(mul(float32[4,6], float32))");
  CHECK(ev[1].shape == "[4,6]");
  CHECK(ev[2].name.find("mean") != std::string::npos); // the buffer is evaluated before its consumer
  CHECK(ev[2].shape == "[1,6]");
  CHECK(ev[3].name.find("sub") != std::string::npos);
  for (const auto& e : ev) CHECK(e.duration_us >= 0);

  // The summary: one line per expression and shape, the costliest first, with its count.
  for (int i = 0; i < 3; ++i) y = exp(x * 0.1f);
  const std::string sum = trace::summary();
  INFO(sum);
  CHECK(sum.find(" in 4 nests\n") != std::string::npos);
  CHECK(sum.find("     4 x  [4,6]  exp(mul(float32[4,6], float32))") != std::string::npos);
  CHECK(std::count(sum.begin(), sum.end(), '\n') == 5);

  const std::string path = "tenfold_trace_test.json";
  trace::write(path);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string json = text.str();
  CHECK(json.front() == '[');
  CHECK(json.find("\"ph\": \"X\"") != std::string::npos);
  CHECK(json.find("\"shape\": \"[1,6]\"") != std::string::npos);
  std::remove(path.c_str());
  CHECK_THROWS_AS(trace::write("/nonexistent-dir/trace.json"), error);
  (void)y;
  (void)c;
}

static_assert(trace::enabled);
