// decoder: trains the byte-level GPT of model.hpp on Debian's fortunes (corpus.hpp) with AdamW, as
// bench/decoder_torch.py trains the same model in PyTorch.
//
//   decoder [--iters N] [--seed N] [--corpus DIR] [--out DIR]
//
// lr 1e-3 with 100 warm-up iterations then cosine decay to 1e-4, betas 0.9/0.99, weight decay 0.1 on
// matrices, gradients clipped at norm 1; batches of 12 windows of 64 bytes. Prints the training loss as it
// goes, writes DIR/loss.csv (every iteration's loss), DIR/loss.png (the curve) and
// DIR/checkpoint.safetensors (the weights by name, with the vocabulary as metadata), and last "final
// validation loss X after N iterations in S s": the mean loss of 200 validation batches drawn with a
// fixed seed (S: training time, evaluation excluded). Every 500 iterations the loss of 20 of those
// batches is printed and plotted.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <tenfold/io/parameters.hpp>

#include "corpus.hpp"
#include "plot.hpp"
#include "trainer.hpp"

namespace {
using namespace tenfold;
using namespace gpt;
using clock_type = std::chrono::steady_clock;

// The corpus's distinct bytes (Debian 12's fortunes-min and fortunes: 114) and the batch size.
constexpr index_t vocab = 114, batch = 12;

struct options {
  long iters = 2000;
  std::uint64_t seed = 1;
  std::string corpus = "/usr/share/games/fortunes", out = "decoder_out";
};

[[noreturn]] void usage(const char* what) {
  std::fprintf(stderr, "decoder: %s\nusage: decoder [--iters N] [--seed N] [--corpus DIR] [--out DIR]\n", what);
  std::exit(2);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    auto count = [&](const std::string& s) {
      char* end = nullptr;
      const long long v = std::strtoll(s.c_str(), &end, 10);
      if (s.empty() || *end != '\0' || v < 0) usage(("not a non-negative integer: " + a + " " + s).c_str());
      return v;
    };
    if (a == "--iters") o.iters = long(count(value()));
    else if (a == "--seed") o.seed = std::uint64_t(count(value()));
    else if (a == "--corpus") o.corpus = value();
    else if (a == "--out") o.out = value();
    else usage(("unknown option " + a).c_str());
  }
  return o;
}

double seconds(clock_type::time_point a, clock_type::time_point b) { return std::chrono::duration<double>(b - a).count(); }
} // namespace

int main(int argc, char** argv) try {
  const options o = parse(argc, argv);
  const corpus text = corpus::load(o.corpus);
  if (text.vocab() != vocab)
    throw error(detail::message("decoder: the corpus in ", o.corpus, " has ", text.vocab(), " distinct bytes; this program is built for ",
                                vocab, " (set DECODER_VOCAB)"));
  auto p = std::make_unique<parameters<vocab>>(o.seed);
  auto t = std::make_unique<trainer<vocab, batch>>();
  std::printf("decoder: %zu fortune files, %zu bytes, vocabulary %zu; %ld parameters; %ld iterations of %ld x %ld\n",
              text.files, text.tokens.size(), text.vocab(), long(parameters<vocab>::count), o.iters, long(batch), long(context));
  std::filesystem::create_directories(o.out);
  std::ofstream csv(o.out + "/loss.csv");
  csv << "iteration,loss,lr,grad_norm\n";
  // The mean loss of the first `batches` validation batches (always the same ones).
  auto validation = [&](int batches) {
    rng val(12345);
    double total = 0;
    for (int i = 0; i < batches; ++i) {
      draw_windows(text, text.split, text.tokens.size(), batch, context, val, t->ids, t->targets);
      total += t->evaluate(*p);
    }
    return total / batches;
  };
  std::vector<double> curve;
  std::vector<std::pair<long, double>> curve_val;
  double val_loss = 0;
  rng data(o.seed + 1);
  double train_s = 0, recent = 0;
  long recent_n = 0;
  for (long it = 0; it < o.iters; ++it) {
    const auto t0 = clock_type::now();
    draw_windows(text, 0, text.split, batch, context, data, t->ids, t->targets);
    const float lr = optim::cosine_lr(it, o.iters, 1e-3f, 100, 1e-4f);
    const float loss = t->step(*p, lr);
    train_s += seconds(t0, clock_type::now());
    csv << it + 1 << ',' << loss << ',' << lr << ',' << t->last_norm << '\n';
    recent += loss, ++recent_n;
    curve.push_back(loss);
    if ((it + 1) % 250 == 0 || it + 1 == o.iters) {
      std::printf("iteration %ld/%ld: train loss %.4f (last %ld), %.1f s\n", it + 1, o.iters, recent / double(recent_n), recent_n, train_s);
      std::fflush(stdout);
      recent = 0, recent_n = 0;
    }
    if ((it + 1) % 500 == 0 && it + 1 < o.iters) {
      curve_val.emplace_back(it + 1, validation(20));
      std::printf("  validation loss %.4f (20 batches)\n", curve_val.back().second);
    }
  }
  val_loss = validation(200);
  curve_val.emplace_back(o.iters, val_loss);
  if (!plot_loss(o.out + "/loss.png", curve, curve_val)) throw error("decoder: cannot write " + o.out + "/loss.png");
  std::string bytes; // the vocabulary, id order, as hex
  for (auto b : text.bytes) bytes += "0123456789abcdef"[b >> 4], bytes += "0123456789abcdef"[b & 15];
  io::save_parameters(o.out + "/checkpoint.safetensors", *p, {{"vocabulary", bytes}});
  std::printf("final validation loss %.4f after %ld iterations in %.0f s\n", val_loss, o.iters, train_s);
#if defined(TENFOLD_TRACE) // (a build with -DTENFOLD_TRACE=1 in every unit: where the time went, nest by nest)
  std::fprintf(stderr, "%s", tenfold::trace::summary().c_str());
#endif
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "decoder: %s\n", e.what());
  return 1;
}
