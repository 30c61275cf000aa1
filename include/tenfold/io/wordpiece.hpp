#pragma once
// BERT's uncased WordPiece tokenizer: text to token ids, as Hugging Face's BertTokenizerFast with
// do_lower_case=True (the tokenizer of all-MiniLM-L6-v2 and the other uncased BERTs) gives them.
//
//   io::wordpiece tok("model/vocab.txt");
//   std::vector<std::int32_t> ids = tok.encode("Hello, world!");  // [CLS] hello , world ! [SEP]: 101 7592 1010 2088
//   999 102 io::token_batch b = tok.encode_batch(sentences, 32);          // [n, 32] ids and attention mask
//
// The vocabulary is a text file, one token per line, the id being the line's number from 0; a token
// "##x" is the piece x continuing a word. encode(): the text (UTF-8) is normalised and split into words
// (io/bert_text.hpp: control characters removed, whitespace normalised, CJK ideographs spaced, NFD with
// nonspacing marks removed, lower case, punctuation split); each word becomes the longest vocabulary
// token that starts it, then the longest "##" token that continues it, and so on; a word with a part no
// token covers, or longer than 100 code points, is [UNK] as a whole. [CLS] and [SEP] frame the ids,
// which are cut to max_length (default 256, the two included). As in the reference, the special tokens
// [PAD], [UNK], [CLS], [SEP] and [MASK] written in the text itself ("a [MASK] b") are those tokens, not
// words: special_tokens_in_text::split reads them as text instead (the reference's
// split_special_tokens=True).
//
// Errors are tenfold::error: a vocabulary file that cannot be read, is empty, has an empty line, a token
// twice, a line that is not UTF-8 or lacks [PAD], [UNK], [CLS] or [SEP] names the file (and the line);
// text that is not UTF-8 names the byte offset; a max_length below 2 says so.
// Needs utf8proc (Debian's libutf8proc-dev; link -lutf8proc).
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "../core/error.hpp"
#include "bert_text.hpp"
#include "file.hpp"

namespace tenfold::io {

// Whether "[MASK]" and the other special tokens written in a text are those tokens (as Hugging Face's
// tokenizers take them by default) or plain text ("[", "mask", "]").
enum class special_tokens_in_text { match, split };

// Token ids of several texts padded to one length, row-major [rows, length]: ids holds [PAD] after each
// text's tokens, mask holds 1 for a token and 0 for padding (the model's attention mask).
struct token_batch {
  std::size_t rows = 0, length = 0;
  std::vector<std::int32_t> ids, mask;

  std::span<const std::int32_t> row_ids(std::size_t row) const { return std::span(ids).subspan(row * length, length); }
  std::span<const std::int32_t> row_mask(std::size_t row) const {
    return std::span(mask).subspan(row * length, length);
  }
};

// What encode_batch() takes: a vector of strings, an array of C strings...
template <class R>
concept text_range =
    std::ranges::input_range<const R> && std::convertible_to<std::ranges::range_reference_t<const R>, std::string_view>;

class wordpiece {
 public:
  // The longest word WordPiece splits; a longer one is [UNK] (the reference's max_input_chars_per_word).
  static constexpr std::size_t max_word_chars = 100;

  explicit wordpiece(const std::string& vocab_file, special_tokens_in_text special = special_tokens_in_text::match)
      : special_(special) {
    const detail::mapped_file file(who, vocab_file);
    const auto bytes = file.bytes();
    load(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), vocab_file);
  }

  // A vocabulary held in memory; `name` stands for the file in errors.
  static wordpiece from_text(std::string_view vocab, const std::string& name,
                             special_tokens_in_text special = special_tokens_in_text::match) {
    return wordpiece(vocab, name, special);
  }

  // [CLS], the text's tokens (cut to max_length - 2), [SEP].
  std::vector<std::int32_t> encode(std::string_view text, std::size_t max_length = 256) const {
    if (max_length < 2)
      throw tenfold::error(tenfold::detail::message(who, ": max_length ", max_length,
                                                    " is too small: [CLS] and [SEP] alone take 2 tokens"));
    std::u32string chars;
    if (detail::utf8_problem p; !detail::utf8_decode(text, chars, p))
      throw tenfold::error(tenfold::detail::message(who, ": the text is not UTF-8", detail::utf8_problem_text(p)));
    const std::size_t room = max_length - 1; // [SEP] comes last
    std::vector<std::int32_t> ids{cls_};
    std::u32string normal;
    std::size_t begin = 0; // of the text not yet tokenized
    auto words_before = [&](std::size_t end) {
      normal.clear();
      detail::bert_normalize(std::u32string_view(chars).substr(begin, end - begin), normal);
      detail::bert_pre_tokenize(normal, [&](std::u32string_view w) { return add_word(w, ids, room); });
    };
    if (special_ == special_tokens_in_text::match) {
      for (std::size_t i = 0; i < chars.size() && ids.size() < room; ++i) {
        if (chars[i] != U'[') continue;
        for (const auto& [token, id] : specials_) {
          if (std::u32string_view(chars).substr(i, token.size()) != token) continue;
          words_before(i);
          if (ids.size() < room) ids.push_back(id);
          begin = i + token.size();
          i = begin - 1;
          break;
        }
      }
    }
    if (ids.size() < room) words_before(chars.size());
    ids.push_back(sep_);
    return ids;
  }

  // encode() of each text, cut to `length` and padded to it.
  template <text_range Texts>
  token_batch encode_batch(const Texts& texts, std::size_t length) const {
    std::vector<std::vector<std::int32_t>> sequences;
    for (const auto& text : texts) sequences.push_back(encode(std::string_view(text), length));
    return pad(sequences, length);
  }

  // Sequences of ids (from encode()) padded with [PAD] to `length`; one longer than that is an error.
  token_batch pad(std::span<const std::vector<std::int32_t>> sequences, std::size_t length) const {
    token_batch b{sequences.size(), length, {}, {}};
    b.ids.assign(b.rows * length, pad_);
    b.mask.assign(b.rows * length, 0);
    for (std::size_t r = 0; r < b.rows; ++r) {
      const auto& s = sequences[r];
      if (s.size() > length)
        throw tenfold::error(tenfold::detail::message(who, ": sequence ", r, " has ", s.size(),
                                                      " tokens, more than the batch's length ", length));
      std::copy(s.begin(), s.end(), b.ids.begin() + std::ptrdiff_t(r * length));
      std::fill_n(b.mask.begin() + std::ptrdiff_t(r * length), s.size(), 1);
    }
    return b;
  }

  std::size_t size() const { return tokens_.size(); }
  const std::string& token(std::int32_t id) const {
    if (id < 0 || std::size_t(id) >= tokens_.size())
      throw tenfold::error(
          tenfold::detail::message(who, ": no token has id ", id, " (the vocabulary has ", tokens_.size(), ")"));
    return tokens_[std::size_t(id)];
  }
  // The id of a token, or -1 where the vocabulary has none.
  std::int32_t id(std::string_view token) const {
    const auto it = ids_.find(token);
    return it == ids_.end() ? -1 : it->second;
  }
  std::int32_t pad_id() const { return pad_; }
  std::int32_t unk_id() const { return unk_; }
  std::int32_t cls_id() const { return cls_; }
  std::int32_t sep_id() const { return sep_; }

 private:
  static constexpr const char* who = "tenfold::io::wordpiece";

  struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  using token_map = std::unordered_map<std::string, std::int32_t, string_hash, std::equal_to<>>;

  wordpiece(std::string_view vocab, const std::string& name, special_tokens_in_text special) : special_(special) {
    load(vocab, name);
  }

  void load(std::string_view text, const std::string& file) {
    auto fail = [&](const std::string& what) { detail::file_fail(who, file, what); };
    if (text.empty()) fail("empty file: a vocabulary has one token per line");
    std::size_t line = 0;
    std::u32string chars; // of the line (only checked)
    for (std::size_t pos = 0; pos < text.size(); ++line) {
      const std::size_t end = std::min(text.find('\n', pos), text.size());
      std::string_view token = text.substr(pos, end - pos);
      pos = end + 1;
      if (token.ends_with('\r')) token.remove_suffix(1); // a Windows line end, as tokenizers' reader takes it
      auto at = [&](const auto&... what) { fail(tenfold::detail::message("line ", line + 1, ": ", what...)); };
      if (token.empty()) at("empty line (a vocabulary has one token per line)");
      chars.clear();
      if (detail::utf8_problem p; !detail::utf8_decode(token, chars, p)) at("not UTF-8", detail::utf8_problem_text(p));
      if (line > std::size_t(std::numeric_limits<std::int32_t>::max())) at("more tokens than int32 ids can number");
      const auto id = static_cast<std::int32_t>(line);
      if (const auto [it, added] = ids_.try_emplace(std::string(token), id); !added)
        at("token \"", token, "\" twice (first on line ", it->second + 1, ")");
      if (token.size() > 2 && token.starts_with("##")) continuations_.try_emplace(std::string(token.substr(2)), id);
      tokens_.emplace_back(token);
    }
    auto special = [&](std::string_view token) {
      const std::int32_t i = id(token);
      if (i < 0)
        fail(tenfold::detail::message("no ", token, " token (a BERT vocabulary has [PAD], [UNK], [CLS], [SEP])"));
      return i;
    };
    pad_ = special("[PAD]"), unk_ = special("[UNK]"), cls_ = special("[CLS]"), sep_ = special("[SEP]");
    for (const std::string_view token : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"})
      if (const std::int32_t i = id(token); i >= 0)
        specials_.emplace_back(std::u32string(token.begin(), token.end()), i);
  }

  // WordPiece of one word: its ids appended to `ids` while it holds fewer than `room`. Returns whether
  // there is room left.
  bool add_word(std::u32string_view word, std::vector<std::int32_t>& ids, std::size_t room) const {
    if (word.size() > max_word_chars) {
      ids.push_back(unk_);
      return ids.size() < room;
    }
    std::string utf8;
    std::vector<std::size_t> at{0}; // byte offset of each code point, and the end
    for (const char32_t c : word) detail::utf8_append(utf8, c), at.push_back(utf8.size());
    const std::size_t first = ids.size();
    for (std::size_t start = 0; start < word.size();) {
      std::size_t end = word.size();
      const token_map& tokens = start == 0 ? ids_ : continuations_;
      for (; end > start; --end) {
        const auto it = tokens.find(std::string_view(utf8).substr(at[start], at[end] - at[start]));
        if (it == tokens.end()) continue;
        ids.push_back(it->second);
        break;
      }
      if (end == start) { // nothing covers this part: the whole word is unknown
        ids.resize(first);
        ids.push_back(unk_);
        break;
      }
      start = end;
    }
    if (ids.size() > room) ids.resize(room);
    return ids.size() < room;
  }

  special_tokens_in_text special_;
  std::vector<std::string> tokens_;                               // by id
  token_map ids_;                                                 // every token
  token_map continuations_;                                       // "##x" tokens, keyed by x
  std::vector<std::pair<std::u32string, std::int32_t>> specials_; // matched in the text
  std::int32_t pad_ = 0, unk_ = 0, cls_ = 0, sep_ = 0;
};

} // namespace tenfold::io
