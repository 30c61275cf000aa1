// Sentence embeddings with all-MiniLM-L6-v2, from its Hugging Face files (model.safetensors, vocab.txt):
//
//   minilm "A man is eating food." "A man is eating pasta." ...   embeddings' first values, cosine matrix
//   minilm --file sentences.txt --out embeddings.npy              one sentence per line -> [n, 384] float32
//   minilm --model DIR ...                                        the model folder (default: the one
//                                                                 scripts/fetch_minilm.sh unpacks)
//   minilm --file F --expect REF.npy                              compare with reference embeddings
//                                                                 (exit 1 if a cosine is below 0.99999)
//
// Text -> WordPiece ids (io/wordpiece.hpp, BERT uncased, at most 256 tokens) -> the model (bert.hpp) in
// batches of 8 padded to a static length (embed.hpp) -> unit-length embeddings, as sentence-transformers
// computes them. A missing, damaged or foreign file ends the program with exit status 1 and a message
// naming the file and the problem.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <tenfold/io/npy.hpp>
#include <tenfold/io/wordpiece.hpp>

#include "embed.hpp"

namespace {

struct options {
  std::string model = MINILM_DEFAULT_DIR, file, out, expect;
  std::vector<std::string> sentences;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "minilm: %s\nusage: minilm [--model DIR] [--file FILE] [--out FILE.npy] [sentence ...]\n"
               "  --model DIR   folder with model.safetensors and vocab.txt (default %s; scripts/fetch_minilm.sh)\n"
               "  --file FILE   embed each line of FILE (after the sentences given as arguments)\n"
               "  --out FILE    write the embeddings [n, 384] as float32 .npy\n"
               "  --expect REF  compare with REF.npy [n, 384] (sentence-transformers' embeddings of the same\n"
               "                sentences): exit status 1 if any cosine is below 0.99999\n",
               why, MINILM_DEFAULT_DIR);
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
    if (a == "--model") o.model = value();
    else if (a == "--file") o.file = value();
    else if (a == "--out") o.out = value();
    else if (a == "--expect") o.expect = value();
    else if (a == "-h" || a == "--help") usage("sentence embeddings with all-MiniLM-L6-v2");
    else if (a.rfind("--", 0) == 0) usage(("unknown option " + a).c_str());
    else o.sentences.push_back(a);
  }
  return o;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw tenfold::error("minilm: " + path + ": cannot open");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// Each embedding against the reference's row: the smallest cosine must be at least 0.99999.
bool matches(const std::string& path, const std::vector<float>& e, const std::vector<std::string>& sentences) {
  const auto ref = tenfold::io::load_npy_array<float>(path);
  const std::size_t n = sentences.size(), w = std::size_t(minilm::width);
  if (ref.shape != std::vector<tenfold::index_t>{tenfold::index_t(n), minilm::width})
    throw tenfold::error(tenfold::detail::message("minilm: ", path, ": shape (", ref.shape.empty() ? 0 : ref.shape[0],
                                                  ", ...) of rank ", ref.shape.size(), ", expected (", n, ", ", w, ")"));
  double worst = 2, max_abs = 0;
  std::size_t worst_at = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double dot = 0, aa = 0, bb = 0;
    for (std::size_t k = 0; k < w; ++k) {
      const double a = e[i * w + k], b = ref.data[i * w + k];
      dot += a * b, aa += a * a, bb += b * b, max_abs = std::max(max_abs, std::abs(a - b));
    }
    const double c = dot / std::sqrt(aa * bb);
    if (!(c >= worst)) worst = c, worst_at = i;
  }
  const bool ok = worst >= 0.99999;
  std::printf("against %s: %zu embeddings, smallest cosine %.8f (sentence %zu), largest difference %.2e: %s\n",
              path.c_str(), n, worst, worst_at, max_abs, ok ? "ok (>= 0.99999)" : "FAILED (< 0.99999)");
  return ok;
}

int run(const options& o) {
  using clock = std::chrono::steady_clock;
  std::vector<std::string> sentences = o.sentences;
  if (!o.file.empty())
    for (auto& line : read_lines(o.file)) sentences.push_back(std::move(line));
  if (sentences.empty()) usage("no sentences (give some, or --file)");

  const auto t0 = clock::now();
  const tenfold::io::wordpiece tokenizer(o.model + "/vocab.txt");
  auto model = std::make_unique<minilm::model>(); // 91 MB of weights: on the heap
  tenfold::io::load_parameters(o.model + "/model.safetensors", *model, minilm::model::load_options());
  const auto t1 = clock::now();

  std::vector<std::vector<std::int32_t>> ids;
  std::size_t tokens = 0;
  for (const auto& s : sentences) ids.push_back(tokenizer.encode(s, minilm::max_tokens)), tokens += ids.back().size();
  const std::vector<float> e = minilm::embed(*model, ids);
  const auto t2 = clock::now();

  const std::size_t n = sentences.size(), w = std::size_t(minilm::width);
  const std::size_t shown = std::min<std::size_t>(n, 16);
  for (std::size_t i = 0; i < shown; ++i) {
    std::printf("[%zu] %.60s%s\n    ", i, sentences[i].c_str(), sentences[i].size() > 60 ? "..." : "");
    for (std::size_t k = 0; k < 6; ++k) std::printf("% .5f ", double(e[i * w + k]));
    std::printf("... (%zu tokens)\n", ids[i].size());
  }
  if (n > shown) std::printf("... and %zu more\n", n - shown);
  if (n >= 2) {
    std::printf("cosine similarity%s:\n       ", n > shown ? " (the first 16)" : "");
    for (std::size_t j = 0; j < shown; ++j) std::printf(" [%2zu] ", j);
    std::printf("\n");
    for (std::size_t i = 0; i < shown; ++i) {
      std::printf("  [%2zu]", i);
      for (std::size_t j = 0; j < shown; ++j) {
        double dot = 0;
        for (std::size_t k = 0; k < w; ++k) dot += double(e[i * w + k]) * double(e[j * w + k]);
        std::printf(" %5.3f", dot);
      }
      std::printf("\n");
    }
  }
  if (!o.out.empty()) {
    tenfold::io::save_npy(o.out, std::span<const float>(e), {tenfold::index_t(n), minilm::width});
    std::printf("wrote %s [%zu, %zu]\n", o.out.c_str(), n, w);
  }
  if (!o.expect.empty() && !matches(o.expect, e, sentences)) return 1;
  const double load_s = std::chrono::duration<double>(t1 - t0).count(), run_s = std::chrono::duration<double>(t2 - t1).count();
  std::printf("%zu sentences, %zu tokens: loaded in %.2f s, embedded in %.3f s\n", n, tokens, load_s, run_s);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
