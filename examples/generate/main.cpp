// generate: continues a prompt with the byte-level GPT that examples/decoder trained, from its checkpoint,
// with a KV cache (examples/decoder/generator.hpp): the prompt prefilled in one pass, then one decode step
// per token, each token drawn with temperature, top-k and top-p from Philox (tenfold::sampler: the same
// seed gives the same text) and printed as it comes.
//
//   generate [--checkpoint FILE] [--prompt TEXT] [--tokens N] [--seed N] [--temperature T] [--top-k K]
//            [--top-p P] [--threads N] [--device cpu|cuda]
//
// --device cuda (where the build has CUDA): each decode step is one replay of a CUDA graph captured once
// (examples/decoder/device_decoder.hpp); the prompt's and the moved window's prefills run on the CPU.
// The checkpoint (default decoder_out/checkpoint.safetensors) holds the weights by name and the
// vocabulary (its bytes in id order, as hex) as metadata. The last line reads "N tokens in S s
// (X tokens/s)": the decode steps alone, the prefill is timed on the line before.
#include <chrono>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <tenfold/io/parameters.hpp>
#include <tenfold/sampling.hpp>

#include "../decoder/generator.hpp"
#ifdef GENERATE_CUDA
#include "device.hpp"
#endif

namespace {
using namespace tenfold;
using clock_type = std::chrono::steady_clock;

constexpr index_t vocab = 114; // the fortunes' distinct bytes (examples/decoder)

struct options {
  std::string checkpoint = "decoder_out/checkpoint.safetensors";
  std::string prompt = "The ";
  long tokens = 200;
  std::uint64_t seed = 1;
  sampling s{.temperature = 0.8f, .top_k = 0, .top_p = 0.95f};
  int threads = 0; // 0: the library's default (TENFOLD_NUM_THREADS, else every core)
  bool cuda = false;
};

[[noreturn]] void usage(const std::string& what) {
  std::fprintf(stderr,
               "generate: %s\nusage: generate [--checkpoint FILE] [--prompt TEXT] [--tokens N] [--seed N] [--temperature T] "
               "[--top-k K] [--top-p P] [--threads N] [--device cpu|cuda]\n",
               what.c_str());
  std::exit(2);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value after " + a);
      return argv[++i];
    };
    auto integer = [&](const std::string& s) {
      char* end = nullptr;
      const long long v = std::strtoll(s.c_str(), &end, 10);
      if (s.empty() || *end != '\0' || v < 0) usage("not a non-negative integer: " + a + " " + s);
      return v;
    };
    auto real = [&](const std::string& s) {
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      if (s.empty() || *end != '\0') usage("not a number: " + a + " " + s);
      return float(v);
    };
    if (a == "--checkpoint") o.checkpoint = value();
    else if (a == "--prompt") o.prompt = value();
    else if (a == "--tokens") o.tokens = long(integer(value()));
    else if (a == "--seed") o.seed = std::uint64_t(integer(value()));
    else if (a == "--temperature") o.s.temperature = real(value());
    else if (a == "--top-k") o.s.top_k = int(integer(value()));
    else if (a == "--top-p") o.s.top_p = real(value());
    else if (a == "--threads") o.threads = int(integer(value()));
    else if (a == "--device") {
      const std::string d = value();
      if (d != "cpu" && d != "cuda") usage("--device is cpu or cuda, not " + d);
      o.cuda = d == "cuda";
    }
    else usage("unknown option " + a);
  }
  if (o.prompt.empty()) usage("the prompt is empty");
  if (!(o.s.temperature >= 0)) usage("--temperature must be 0 (greedy) or more");
  if (!(o.s.top_p > 0 && o.s.top_p <= 1)) usage("--top-p must be in (0, 1]");
  return o;
}

double seconds(clock_type::time_point a, clock_type::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// The vocabulary from the checkpoint's metadata: its bytes in id order, two hex digits each.
std::vector<unsigned char> read_vocabulary(const io::safetensors_file& file, const std::string& path) {
  const auto& meta = file.metadata();
  const auto it = meta.find("vocabulary");
  if (it == meta.end()) throw error(path + ": no 'vocabulary' in the metadata (not a checkpoint of examples/decoder)");
  const std::string& hex = it->second;
  auto digit = [&](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw error(path + ": the metadata's vocabulary is not hex: '" + std::string(1, c) + "'");
  };
  if (hex.size() != 2 * std::size_t(vocab))
    throw error(detail::message(path, ": the vocabulary holds ", hex.size() / 2, " bytes; this program is built for ", vocab));
  std::vector<unsigned char> bytes;
  for (std::size_t i = 0; i < hex.size(); i += 2) bytes.push_back(static_cast<unsigned char>(digit(hex[i]) * 16 + digit(hex[i + 1])));
  return bytes;
}
} // namespace

int main(int argc, char** argv) try {
  const options o = parse(argc, argv);
  if (o.threads > 0) setenv("TENFOLD_NUM_THREADS", std::to_string(o.threads).c_str(), 1); // before the pool starts
  const io::safetensors_file file(o.checkpoint);
  const std::vector<unsigned char> bytes = read_vocabulary(file, o.checkpoint);
  auto p = std::make_unique<gpt::parameters<vocab>>();
  io::load_parameters(file, *p);
  int id_of[256];
  std::fill(std::begin(id_of), std::end(id_of), -1);
  for (std::size_t i = 0; i < bytes.size(); ++i) id_of[bytes[i]] = int(i);

  std::vector<std::int32_t> text;
  text.reserve(o.prompt.size() + std::size_t(o.tokens));
  for (unsigned char c : o.prompt) {
    if (id_of[c] < 0)
      throw error(std::string("the prompt's byte 0x") + "0123456789abcdef"[c >> 4] + "0123456789abcdef"[c & 15] +
                  " is not in the model's vocabulary (" + o.checkpoint + ")");
    text.push_back(id_of[c]);
  }
  auto g = std::make_unique<gpt::generator<vocab>>();
#ifdef GENERATE_CUDA
  static_assert(gpt::generate_vocab == vocab);
  gpt::device_stepper_ptr device = o.cuda ? gpt::make_device_stepper(*p) : nullptr;
#else
  if (o.cuda) throw error("--device cuda: this build has no CUDA (configure with -DTENFOLD_CUDA=ON)");
#endif
  // The logits after the text: on the device a decode step where its cache holds the window up to the
  // text's last token, else (and on the CPU) the generator's next() (a step, or a prefill of the window).
  std::size_t window = gpt::generator<vocab>::window_begin(text.size());
  auto next_logits = [&]() -> std::span<const float> {
    const std::size_t w = gpt::generator<vocab>::window_begin(text.size());
#ifdef GENERATE_CUDA
    if (device) {
      if (w == window && std::size_t(gpt::cached_length(*device)) + 1 == text.size() - w)
        return gpt::device_step(*device, text.back());
      const auto l = g->next(*p, text); // the window's prefill
      gpt::load_cache(*device, *g);
      window = w;
      return l;
    }
#endif
    window = w;
    return g->next(*p, text);
  };
  sampler draw(vocab);
  rng r(o.seed);

  std::fwrite(o.prompt.data(), 1, o.prompt.size(), stdout);
  const auto t0 = clock_type::now();
  auto logits = next_logits(); // the prompt's window, in one pass
  const double prefill_s = seconds(t0, clock_type::now());
  const std::size_t prompt_window = text.size() - gpt::generator<vocab>::window_begin(text.size());
  // Each token: drawn from the logits at hand, printed, then one decode step for the logits after it
  // (where the window is full: the prefill of its newer half). Timed: the drawing and the steps.
  const auto t1 = clock_type::now();
  for (long i = 0; i < o.tokens; ++i) {
    const std::int32_t next = std::int32_t(draw(logits, o.s, r));
    text.push_back(next);
    std::fputc(bytes[std::size_t(next)], stdout);
    std::fflush(stdout);
    logits = next_logits();
  }
  const double decode_s = seconds(t1, clock_type::now());
  std::printf("\nprefill: %zu tokens in %.2f ms\n", prompt_window, 1e3 * prefill_s);
  std::printf("%ld tokens in %.3f s (%.0f tokens/s)\n", o.tokens, decode_s, decode_s > 0 ? double(o.tokens) / decode_s : 0.0);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "generate: %s\n", e.what());
  return 1;
}
