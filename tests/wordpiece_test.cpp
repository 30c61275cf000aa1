// tenfold::io::wordpiece against Hugging Face's BertTokenizerFast (do_lower_case=True): the ids of every
// case in tests/data/wordpiece/cases.jsonl, the normaliser on every code point against codepoints.txt
// (both written by scripts/wordpiece_vectors.py), bad vocabularies, bad text, and batches.
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <tenfold/io/wordpiece.hpp>
#include "temp_dir.hpp"
#include <vector>

using namespace tenfold;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {
std::string data(const std::string& name) {
  return (fs::path(__FILE__).parent_path() / "data/wordpiece" / name).string();
}

const io::wordpiece& bert() {
  static const io::wordpiece tok(data("vocab.txt"));
  return tok;
}

std::string write_file(const std::string& name, const std::string& bytes) {
  static const tenfold_test::temp_directory dir("tenfold_wordpiece_test");
  const std::string path = (dir.path() / name).string();
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  return path;
}

// The text as a C string literal would spell it (control and non-ASCII bytes escaped), for messages.
std::string escaped(std::string_view s) {
  std::string out;
  for (const char ch : s) {
    const auto b = static_cast<unsigned char>(ch);
    if (b == '\\' || b == '"') (out += '\\') += ch;
    else if (b >= 0x20 && b < 0x7f) out += ch;
    else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", b);
      out += buf;
    }
  }
  return out;
}

std::string show(const std::vector<std::int32_t>& ids) {
  std::string s;
  for (const auto id : ids) s += (s.empty() ? "" : " ") + std::to_string(id) + "(" + bert().token(id) + ")";
  return s;
}

std::u32string hex_code_points(const std::string& dotted) { // "61.301.62"
  std::u32string s;
  std::stringstream in(dotted);
  for (std::string part; std::getline(in, part, '.');) s += char32_t(std::stoul(part, nullptr, 16));
  return s;
}

// What the normaliser and pre-tokenizer make of a text: its words.
std::vector<std::u32string> words_of(std::u32string_view text) {
  std::u32string normal;
  io::detail::bert_normalize(text, normal);
  std::vector<std::u32string> words;
  io::detail::bert_pre_tokenize(normal, [&](std::u32string_view w) {
    words.emplace_back(w);
    return true;
  });
  return words;
}

std::string show(const std::vector<std::u32string>& words) {
  std::string s = "[";
  for (const auto& w : words) {
    s += s.size() > 1 ? " \"" : "\"";
    for (const char32_t c : w) {
      char buf[16];
      std::snprintf(buf, sizeof buf, c < 0x80 && c >= 0x20 ? "%c" : "<%x>", unsigned(c));
      s += buf;
    }
    s += '"';
  }
  return s + "]";
}
} // namespace

TEST_CASE("wordpiece: the reference's ids for every case", "[io][wordpiece]") {
  std::ifstream in(data("cases.jsonl"));
  REQUIRE(in);
  int cases = 0, mismatches = 0;
  for (std::string line; std::getline(in, line);) {
    const auto c = nlohmann::json::parse(line);
    const auto text = c["text"].get<std::string>();
    const auto max_length = c["max_length"].get<std::size_t>();
    const auto expected = c["ids"].get<std::vector<std::int32_t>>();
    const auto got = bert().encode(text, max_length);
    ++cases;
    if (got != expected) {
      ++mismatches;
      FAIL_CHECK("case " << cases << " (" << c["group"].get<std::string>() << "), max_length " << max_length << ": \""
                         << escaped(text) << "\"\n  reference: " << show(expected) << "\n  tenfold:   " << show(got));
    }
  }
  CHECK(cases >= 500);
  CHECK(mismatches == 0);
}

TEST_CASE("wordpiece: the normaliser and pre-tokenizer on every code point", "[io][wordpiece]") {
  // codepoints.txt: the reference's words for "a" + c + "b", where they are not that one word.
  std::map<char32_t, std::vector<std::u32string>> reference;
  std::ifstream in(data("codepoints.txt"));
  REQUIRE(in);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::stringstream fields(line);
    std::string kind, first, rest;
    fields >> kind >> first;
    const auto c = char32_t(std::stoul(first, nullptr, 16));
    if (kind == "M" || kind == "N") {
      std::vector<std::u32string> words;
      while (fields >> rest) words.push_back(hex_code_points(rest));
      if (kind == "M") words = {U"a" + words.at(0) + U"b"};
      reference[c] = words;
      continue;
    }
    fields >> rest;
    const auto last = char32_t(std::stoul(rest, nullptr, 16));
    for (char32_t d = c; d <= last; ++d) {
      if (kind == "R") reference[d] = {U"ab"};
      else if (kind == "W") reference[d] = {U"a", U"b"};
      else if (kind == "S") reference[d] = {U"a", std::u32string(1, d), U"b"};
      else if (kind == "H") { // Unicode's Hangul decomposition (chapter 3.12)
        const char32_t s = d - 0xac00, lead = 0x1100 + s / 588, vowel = 0x1161 + s % 588 / 28, trail = 0x11a7 + s % 28;
        reference[d] = {U"a" + std::u32string{lead, vowel} + (trail == 0x11a7 ? U"" : std::u32string(1, trail)) + U"b"};
      } else FAIL("codepoints.txt: unknown kind " << kind);
    }
  }
  REQUIRE(reference.size() > 10000);

  // Where utf8proc (Unicode 15.0) and the reference (Unicode 8.0 categories and decompositions, Unicode 16
  // lower-casing) part: code points assigned after Unicode 8.0 or changed since, listed in
  // unicode_differences.txt. Any other difference, or a listed code point that agrees, fails.
  std::set<char32_t> listed;
  std::ifstream known(data("unicode_differences.txt"));
  REQUIRE(known);
  for (std::string line; std::getline(known, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::stringstream fields(line);
    std::string first, last;
    fields >> first >> last;
    for (auto c = char32_t(std::stoul(first, nullptr, 16)); c <= char32_t(std::stoul(last, nullptr, 16)); ++c)
      listed.insert(c);
  }
  std::string unexpected, agreeing, runs; // runs: the differences in unicode_differences.txt's form
  char32_t run_first = 0, run_last = 0;
  auto end_run = [&] {
    if (run_last == 0) return;
    char buf[40];
    std::snprintf(buf, sizeof buf, "%x %x\n", unsigned(run_first), unsigned(run_last));
    runs += buf;
  };
  int differences = 0;
  for (char32_t c = 0; c < 0x110000; ++c) {
    if (c >= 0xd800 && c <= 0xdfff) continue;
    const std::u32string text = U"a" + std::u32string(1, c) + U"b";
    const auto it = reference.find(c);
    const auto expected = it != reference.end() ? it->second : std::vector<std::u32string>{text};
    const auto got = words_of(text);
    char name[16];
    std::snprintf(name, sizeof name, "U+%04X", unsigned(c));
    if (got == expected) {
      if (listed.count(c)) agreeing += std::string(name) + " ";
      continue;
    }
    ++differences;
    if (!listed.count(c))
      unexpected += std::string(name) + ": reference " + show(expected) + ", tenfold " + show(got) + "\n";
    if (run_last == 0 || c != run_last + 1) end_run(), run_first = c;
    run_last = c;
  }
  end_run();
  INFO("differences as runs:\n" << runs);
  INFO("listed in unicode_differences.txt but agreeing now: " << agreeing);
  INFO("not listed:\n" << unexpected);
  CHECK(unexpected.empty());
  CHECK(agreeing.empty());
  CHECK(differences == int(listed.size()));
}

TEST_CASE("wordpiece: a small vocabulary, piece by piece", "[io][wordpiece]") {
  const std::string vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nun\n##aff\n##able\n##a\nhello\n,\n!\n[MASK]\n##ff\nwé\n";
  const auto tok = io::wordpiece::from_text(vocab, "small");
  CHECK(tok.size() == 14);
  CHECK((tok.pad_id() == 0 && tok.unk_id() == 1 && tok.cls_id() == 2 && tok.sep_id() == 3));
  CHECK(tok.id("##able") == 6);
  CHECK(tok.id("able") == -1);
  CHECK(tok.token(8) == "hello");
  CHECK_THROWS_WITH(tok.token(14), Contains("no token has id 14"));
  CHECK_THROWS_WITH(tok.token(-1), Contains("no token has id -1"));
  using ids = std::vector<std::int32_t>;
  // Longest first: "un" + "##aff" + "##able", not "##a" + "##ff".
  CHECK(tok.encode("unaffable") == ids{2, 4, 5, 6, 3});
  CHECK(tok.encode("UNAFFABLE, hello!") == ids{2, 4, 5, 6, 9, 8, 10, 3});
  CHECK(tok.encode("unaffablex") == ids{2, 1, 3});                   // no piece for "x": the whole word
  CHECK(tok.encode("hello unaffablex hello") == ids{2, 8, 1, 8, 3}); // and only that word
  CHECK(tok.encode("") == ids{2, 3});
  CHECK(tok.encode("  \t\n ") == ids{2, 3});
  // The vocabulary's "wé" is never matched: the text's é loses its accent first.
  CHECK(tok.encode("wé") == ids{2, 1, 3});
  // Special tokens in the text: matched (as the reference does), or read as text.
  CHECK(tok.encode("hello [MASK]!") == ids{2, 8, 11, 10, 3});
  const auto plain = io::wordpiece::from_text(vocab, "small", io::special_tokens_in_text::split);
  CHECK(plain.encode("hello [MASK]!") == ids{2, 8, 1, 1, 1, 10, 3}); // "[", "mask", "]" are not in it
  CHECK(plain.encode("[CLS]") == ids{2, 1, 1, 1, 3});
}

TEST_CASE("wordpiece: words of 100 code points and longer", "[io][wordpiece]") {
  const auto tok = io::wordpiece::from_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\na\n##a\n", "as");
  std::vector<std::int32_t> hundred(102, 5);
  hundred.front() = 2, hundred[1] = 4, hundred.back() = 3;
  CHECK(tok.encode(std::string(100, 'a'), 1000) == hundred);
  CHECK(tok.encode(std::string(101, 'a'), 1000) == std::vector<std::int32_t>{2, 1, 3});
  // Counted after normalisation: 100 a's with an accent each are 200 code points in the text.
  std::string accented;
  for (int i = 0; i < 100; ++i) accented += "a\xcc\x81";
  CHECK(tok.encode(accented, 1000) == hundred);
}

TEST_CASE("wordpiece: max_length", "[io][wordpiece]") {
  const auto& tok = bert();
  const auto full = tok.encode("the quick brown fox jumps over the lazy dog", 512);
  REQUIRE(full.size() == 11);
  for (std::size_t n = 2; n <= 12; ++n) {
    INFO("max_length " << n);
    auto expected = full;
    if (n < full.size()) expected.resize(n - 1), expected.push_back(tok.sep_id());
    CHECK(tok.encode("the quick brown fox jumps over the lazy dog", n) == expected);
  }
  CHECK_THROWS_WITH(tok.encode("hello", 1), Contains("max_length 1 is too small"));
  CHECK_THROWS_WITH(tok.encode("hello", 0), Contains("max_length 0 is too small"));
  // The default: 256.
  std::string long_text;
  for (int i = 0; i < 400; ++i) long_text += "word ";
  CHECK(tok.encode(long_text).size() == 256);
}

TEST_CASE("wordpiece: text that is not UTF-8", "[io][wordpiece]") {
  const auto& tok = bert();
  const auto fails = [&](const std::string& text, const std::string& what) {
    INFO(escaped(text));
    CHECK_THROWS_WITH(tok.encode(text), Contains("tenfold::io::wordpiece: the text is not UTF-8") && Contains(what));
  };
  fails("abc\xff", "at byte 3 (0xff): a byte that never occurs in UTF-8");
  fails("\xc0\xaf", "at byte 0 (0xc0): a byte that never occurs in UTF-8"); // overlong '/'
  fails("ab\x80", "at byte 2 (0x80): a continuation byte where a character should start");
  fails("caf\xc3", "at byte 3 (0xc3): the character is cut short by the end of the text");
  fails("caf\xc3xyz", "at byte 3 (0xc3): the character is cut short by a byte that does not continue it");
  fails("\xe2\x82", "at byte 0 (0xe2): the character is cut short by the end of the text");
  fails("12\xe2\x82x", "at byte 2 (0xe2): the character is cut short by a byte that does not continue it");
  fails("\xe0\x80\xaf", "at byte 0 (0xe0): an overlong encoding");
  fails("\xf0\x80\x80\xaf", "at byte 0 (0xf0): an overlong encoding");
  fails("x\xed\xa0\x80", "at byte 1 (0xed): a surrogate (U+D800..U+DFFF)");
  fails("\xf4\x90\x80\x80", "at byte 0 (0xf4): a code point past U+10FFFF");
  fails("\xf5\x80\x80\x80", "at byte 0 (0xf5): a byte that never occurs in UTF-8");
  fails("ok [MASK] then \xff", "at byte 15"); // checked before anything is tokenized
  // The largest of each length, and U+FFFD itself, are fine.
  CHECK_NOTHROW(tok.encode("\x7f\xdf\xbf\xef\xbf\xbf\xf4\x8f\xbf\xbf\xef\xbf\xbd\xed\x9f\xbf"));
  // A text cut to max_length is still checked to its end.
  CHECK_THROWS_WITH(tok.encode(std::string(1000, 'a') + " b c d \xff", 3), Contains("at byte 1007"));
}

TEST_CASE("wordpiece: bad vocabulary files", "[io][wordpiece]") {
  const std::string good = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n";
  CHECK_NOTHROW(io::wordpiece(write_file("good.txt", good)));
  CHECK(io::wordpiece(write_file("no_final_newline.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello")).id("hello") == 4);
  CHECK(io::wordpiece(write_file("crlf.txt", "[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\nhello\r\n")).id("hello") == 4);
  const auto fails = [](const std::string& name, const std::string& bytes, const std::string& what) {
    const std::string path = write_file(name, bytes);
    INFO(name);
    CHECK_THROWS_WITH(io::wordpiece(path), Contains("tenfold::io::wordpiece: " + path + ": " + what));
  };
  fails("empty.txt", "", "empty file");
  fails("dup.txt", good + "world\nhello\n", "line 7: token \"hello\" twice (first on line 5)");
  fails("blank.txt", "[PAD]\n[UNK]\n\n[CLS]\n[SEP]\n", "line 3: empty line");
  fails("blank_end.txt", good + "\n", "line 6: empty line");
  fails("no_unk.txt", "[PAD]\n[CLS]\n[SEP]\n", "no [UNK] token");
  fails("no_pad.txt", "[UNK]\n[CLS]\n[SEP]\n", "no [PAD] token");
  fails("no_cls.txt", "[PAD]\n[UNK]\n[SEP]\n", "no [CLS] token");
  fails("no_sep.txt", "[PAD]\n[UNK]\n[CLS]\n", "no [SEP] token");
  fails("latin1.txt", good + "caf\xe9\n", "line 6: not UTF-8 at byte 3 (0xe9)");
  const std::string missing = (fs::temp_directory_path() / "tenfold_no_such_vocab.txt").string();
  CHECK_THROWS_WITH(io::wordpiece(missing), Contains(missing + ": cannot open: No such file"));
  const std::string dir = fs::path(write_file("x", "")).parent_path().string();
  CHECK_THROWS_WITH(io::wordpiece(dir), Contains(dir + ": is a directory"));
  CHECK_THROWS_WITH(io::wordpiece::from_text("[PAD]\n", "in memory"),
                    Contains("tenfold::io::wordpiece: in memory: no [UNK]"));
}

TEST_CASE("wordpiece: batches padded to a length, with the attention mask", "[io][wordpiece]") {
  const auto& tok = bert();
  const std::vector<std::string> texts{"Hello, world!", "", "A much longer sentence that will be cut short."};
  const auto b = tok.encode_batch(texts, 8);
  REQUIRE((b.rows == 3 && b.length == 8 && b.ids.size() == 24 && b.mask.size() == 24));
  using ids = std::vector<std::int32_t>;
  CHECK(ids(b.row_ids(0).begin(), b.row_ids(0).end()) == ids{101, 7592, 1010, 2088, 999, 102, 0, 0});
  CHECK(ids(b.row_mask(0).begin(), b.row_mask(0).end()) == ids{1, 1, 1, 1, 1, 1, 0, 0});
  CHECK(ids(b.row_ids(1).begin(), b.row_ids(1).end()) == ids{101, 102, 0, 0, 0, 0, 0, 0});
  CHECK(ids(b.row_mask(1).begin(), b.row_mask(1).end()) == ids{1, 1, 0, 0, 0, 0, 0, 0});
  const auto third = tok.encode(texts[2], 8);
  CHECK(ids(b.row_ids(2).begin(), b.row_ids(2).end()) == third);
  CHECK(ids(b.row_mask(2).begin(), b.row_mask(2).end()) == ids(8, 1));
  // Any range of things that convert to string_view.
  const char* words[] = {"one", "two"};
  CHECK(tok.encode_batch(words, 4).ids == ids{101, 2028, 102, 0, 101, 2048, 102, 0});
  CHECK(tok.encode_batch(std::vector<std::string>{}, 16).ids.empty());

  // pad(): sequences encoded once (e.g. at 256), then padded to a length chosen from the longest.
  std::vector<ids> seqs{tok.encode("short"), tok.encode("a little longer than that")};
  const auto p = tok.pad(seqs, 16);
  CHECK((p.rows == 2 && p.length == 16));
  CHECK(std::count(p.mask.begin(), p.mask.end(), 1) == std::ptrdiff_t(seqs[0].size() + seqs[1].size()));
  CHECK(ids(p.row_ids(1).begin(), p.row_ids(1).begin() + std::ptrdiff_t(seqs[1].size())) == seqs[1]);
  CHECK_THROWS_WITH(tok.pad(seqs, 4), Contains("sequence 1 has 7 tokens, more than the batch's length 4"));
  CHECK_THROWS_WITH(tok.encode_batch(texts, 1), Contains("max_length 1 is too small"));
}
