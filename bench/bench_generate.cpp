// tenfold's side of bench/run_generate.sh (issue 16): examples/decoder's GPT decoded greedily with the KV
// cache of examples/decoder/generator.hpp, the protocol of bench/generate_c.c and bench/generate_torch.py.
//
//   bench_generate CHECKPOINT PROMPT_IDS TOKENS RUNS
//
// Each run prefills the prompt (one pass) and decodes TOKENS tokens (argmax, then one decode step each).
// Prints the ids of the first run, then the prefill's and the decode's rates over all runs. Threads:
// TENFOLD_NUM_THREADS (default: every core).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <tenfold/io/parameters.hpp>

#include "../examples/decoder/generator.hpp"

namespace {
constexpr tenfold::index_t vocab = 114;
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
} // namespace

int main(int argc, char** argv) try {
  if (argc != 5) {
    std::fprintf(stderr, "usage: bench_generate CHECKPOINT PROMPT_IDS TOKENS RUNS\n");
    return 2;
  }
  auto p = std::make_unique<gpt::parameters<vocab>>();
  tenfold::io::load_parameters(std::string(argv[1]), *p);
  std::vector<std::int32_t> prompt;
  std::stringstream ids(argv[2]);
  for (std::string s; std::getline(ids, s, ',');) prompt.push_back(std::int32_t(std::stoi(s)));
  const long tokens = std::atol(argv[3]), runs = std::atol(argv[4]);
  if (prompt.empty() || tokens < 1 || long(prompt.size()) + tokens > gpt::context || runs < 1) {
    std::fprintf(stderr, "bench_generate: the prompt (%zu) and the tokens (%ld) must fit %ld positions\n", prompt.size(), tokens,
                 long(gpt::context));
    return 2;
  }
  auto g = std::make_unique<gpt::generator<vocab>>();
  std::vector<std::int32_t> text;
  text.reserve(std::size_t(gpt::context));
  double prefill_s = 0, decode_s = 0;
  for (long r = 0; r < runs; ++r) {
    text.assign(prompt.begin(), prompt.end());
    double t0 = now();
    auto logits = g->next(*p, text);
    prefill_s += now() - t0;
    t0 = now();
    for (long i = 0; i < tokens; ++i) {
      std::int32_t best = 0;
      for (std::int32_t v = 1; v < vocab; ++v)
        if (logits[std::size_t(v)] > logits[std::size_t(best)]) best = v;
      if (r == 0) std::printf("%d%s", best, i + 1 < tokens ? "," : "\n");
      text.push_back(best);
      logits = g->next(*p, text);
    }
    decode_s += now() - t0;
  }
  std::printf("prefill: %ld tokens in %.6f s (%.0f tokens/s)\n", long(prompt.size()) * runs, prefill_s, double(prompt.size()) * runs / prefill_s);
  std::printf("decode: %ld tokens in %.6f s (%.0f tokens/s)\n", tokens * runs, decode_s, double(tokens * runs) / decode_s);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_generate: %s\n", e.what());
  return 1;
}
