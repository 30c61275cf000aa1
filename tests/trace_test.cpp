// Built with TENFOLD_TRACE: each evaluated loop nest is recorded and written as Chrome trace JSON.
#define TENFOLD_TRACE 1
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>
#include <tenfold/autodiff/optim.hpp>
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

TEST_CASE("an optimizer's update is one nest: together(...) writes the moments and the parameter in one pass", "[trace]") {
  Tensor<float, shape<300>> p = full<float, shape<300>>(1.0f), g = full<float, shape<300>>(0.5f);
  optim::moments<float, shape<300>> s;
  optim::adam opt;
  opt.begin_step();
  trace::clear();
  opt.update(p, s, g);
  auto ev = trace::events();
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].name.rfind("together(", 0) == 0);
  CHECK(ev[0].shape == "[300]");
  // A destination read through another index map: the assignments one after another.
  Tensor<float, shape<300>> a = g, b = g;
  trace::clear();
  eval(together(assign(a, b * 2.0f), assign(b, flip<0>(a))));
  ev = trace::events();
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].name == "mul(float32[300], float32)");
}
