// all-MiniLM-L6-v2 latency and throughput (bench/run_minilm.sh runs it next to PyTorch and ONNX Runtime,
// bench/minilm_peers.py): token ids -> unit-length sentence embeddings, batch 1 x 16 and 1 x 128 tokens
// (latency) and 32 x 128 (throughput), every token real, every buffer in one arena planned at compile
// time (nothing allocated per run). Prints median and minimum milliseconds after warm-up, the arena's
// bytes and the weights' bytes, and the process's peak resident memory after loading and after the runs.
//   tenfold_bench_minilm [MODEL_DIR]   (default: models/all-MiniLM-L6-v2 under the source tree)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <new>
#include <vector>

#include <sys/resource.h>

#include "../examples/minilm/bert.hpp"

using namespace tenfold;

static long peak_rss_kib() { // ru_maxrss: KiB on Linux
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

template <index_t B, index_t S>
void run(const minilm::model& m, int reps) {
  auto ids = std::make_unique<Tensor<std::int32_t, shape<B, S>>>();
  auto mask = std::make_unique<Tensor<float, shape<B, S>>>(full<float, shape<B, S>>(1.0f));
  const Tensor<std::int32_t, shape<B>> lens = full<std::int32_t, shape<B>>(std::int32_t(S));
  for (index_t i = 0; i < B * S; ++i) ids->data()[i] = std::int32_t(1000 + (i * 37) % 20000); // as minilm_peers.py
  using E = decltype(m.forward<B, S>(*ids, *mask, lens));
  constexpr index_t bytes = eval_arena_bytes<Tensor<float, shape<B, minilm::width>>, E>;
  const arena_buffer arena{std::size_t(bytes)}; // (in 2 MiB pages where it is that large, as eval's own)
  Tensor<float, shape<B, minilm::width>> e;
  std::vector<double> ms;
  for (int r = -3; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    eval(e, m.forward<B, S>(*ids, *mask, lens), arena.span());
    if (r >= 0) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("tenfold     B=%-3ld S=%-4ld median %9.2f ms  min %9.2f ms  arena %ld bytes\n", long(B), long(S),
              ms[ms.size() / 2], ms[0], long(bytes));
  std::fflush(stdout);
}

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : TENFOLD_SOURCE_DIR "/models/all-MiniLM-L6-v2";
  auto m = std::make_unique<minilm::model>();
  try {
    io::load_parameters(dir + "/model.safetensors", *m, minilm::model::load_options());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n(scripts/fetch_minilm.sh fetches the model)\n", e.what());
    return 1;
  }
  std::size_t weights = 0;
  m->each([&](std::string_view, const auto& t) { weights += sizeof(float) * std::size_t(t.size()); });
  std::printf("tenfold, weights %zu bytes\n", weights);
  const long loaded = peak_rss_kib();
  run<1, 16>(*m, 200);
  run<1, 128>(*m, 50);
  run<32, 128>(*m, 5);
  std::printf("tenfold     peak RSS %ld KiB (after loading the model: %ld KiB)\n", peak_rss_kib(), loaded);
}
