#pragma once
// The training text: every fortune file of Debian's `fortunes` package (/usr/share/games/fortunes, the
// files without an extension, in name order; `ascii-art` left out: drawings, not text), the `%` lines that
// separate the cookies replaced by empty lines. 2.5 MB of English prose, quotations and jokes, read
// exactly as bench/decoder_torch.py reads it. Byte level: the vocabulary is the corpus's distinct bytes,
// in byte order; the first 90% is the training split, the rest the validation split.
#include <tenfold/core/error.hpp>
#include <tenfold/core/philox.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace gpt {

struct corpus {
  std::vector<std::uint8_t> tokens; // the text as vocabulary ids
  std::vector<std::uint8_t> bytes;  // id -> byte
  std::array<int, 256> id_of{};     // byte -> id, -1 where the byte does not occur
  std::size_t files = 0, split = 0; // the training split is tokens[0, split)

  static corpus load(const std::string& folder) {
    namespace fs = std::filesystem;
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(folder, ec)) {
      const std::string n = e.path().filename().string();
      if (n.find('.') == std::string::npos && n != "ascii-art" && e.is_regular_file()) names.push_back(n);
    }
    if (ec || names.empty())
      throw tenfold::error("decoder: no fortune files in " + folder + (ec ? " (" + ec.message() + ")" : "") +
                           " (apt-get install fortunes)");
    std::sort(names.begin(), names.end());
    corpus c;
    c.files = names.size();
    std::string text;
    for (const auto& n : names) {
      const std::string path = folder + "/" + n;
      std::ifstream f(path, std::ios::binary);
      std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      if (!f.good() && !f.eof()) throw tenfold::error("decoder: cannot read " + path);
      // each line (the piece after the last newline included, as Python's split) and a newline
      for (std::size_t at = 0;;) {
        const std::size_t end = s.find('\n', at);
        const std::string_view line(s.data() + at, (end == std::string::npos ? s.size() : end) - at);
        if (line != "%") text += line;
        text += '\n';
        if (end == std::string::npos) break;
        at = end + 1;
      }
    }
    std::array<bool, 256> seen{};
    for (unsigned char ch : text) seen[ch] = true;
    c.id_of.fill(-1);
    for (int b = 0; b < 256; ++b)
      if (seen[std::size_t(b)]) c.id_of[std::size_t(b)] = int(c.bytes.size()), c.bytes.push_back(std::uint8_t(b));
    c.tokens.resize(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) c.tokens[i] = std::uint8_t(c.id_of[static_cast<unsigned char>(text[i])]);
    c.split = std::size_t(0.9 * double(c.tokens.size()));
    return c;
  }
  std::size_t vocab() const { return bytes.size(); }
};

// Windows of T + 1 tokens drawn uniformly from [begin, end): the inputs are the first T, the targets the
// last T. One Philox draw per window start.
template <class Ids, class Targets>
void draw_windows(const corpus& c, std::size_t begin, std::size_t end, tenfold::index_t B, tenfold::index_t T,
                  tenfold::rng& g, Ids& ids, Targets& targets) {
  const std::size_t span = end - begin - std::size_t(T) - 1;
  const auto at = g.reserve(std::uint64_t(B));
  for (tenfold::index_t b = 0; b < B; ++b) {
    const double u = tenfold::detail::uniform_at<double>(at.seed, at.offset, b, 0.0, 1.0);
    const std::size_t start = begin + std::min(span - 1, std::size_t(u * double(span)));
    for (tenfold::index_t t = 0; t < T; ++t) {
      ids.data()[b * T + t] = c.tokens[start + std::size_t(t)];
      targets.data()[b * T + t] = c.tokens[start + std::size_t(t) + 1];
    }
  }
}
} // namespace gpt
