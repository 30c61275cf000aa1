#pragma once
// The text side of BERT's uncased tokenizer, before WordPiece: UTF-8 in, normalised words out, as Hugging
// Face's tokenizers library does it (BertNormalizer with clean_text, handle_chinese_chars, lowercase and
// accents stripped, then BertPreTokenizer) for BertTokenizerFast(do_lower_case=True). io/wordpiece.hpp
// turns the words into ids.
//
// Normalisation, one code point at a time and in this order: U+0000, U+FFFD and control characters
// (categories Cc, Cf, Co; not tab, newline, carriage return) are removed; whitespace (tab, newline,
// carriage return, Zs, Zl, Zp: Unicode's White_Space less the Cc ones, which were removed) becomes a
// space; a CJK ideograph gets a space on each side; then NFD, nonspacing marks (Mn) dropped, and
// lower-casing. Words are then split at spaces, and every punctuation character (the ASCII
// non-alphanumeric printable ones and Unicode's P*) is a word of its own.
//
// The Unicode data (categories, canonical decompositions and combining classes, lower-case mappings)
// is utf8proc's (Debian's libutf8proc-dev; link -lutf8proc). Only io/ depends on it.
//
// Where the reference itself is not what BERT's Python code does, this follows the reference (the
// fast tokenizer, which sentence-transformers and transformers 5 use):
//  - unassigned code points (Cn) are kept as letters (Python's BasicTokenizer removes them as "C*");
//  - the CJK block starting at U+2B820 is taken from U+2B920 (a typo in tokenizers' is_chinese_char:
//    Python's BERT spaces U+2B820..U+2B91F, the reference does not);
//  - lower-casing is one code point to one, after NFD: capital sigma is always small sigma, never the
//    final form Python's str.lower() gives at the end of a word.
// What remains different is the Unicode version. The reference's categories and decompositions are
// Unicode 8.0's (the unicode_categories and unicode-normalization-alignments crates), its lower-casing
// Rust's (Unicode 16); utf8proc 2.8 is Unicode 15.0. So 624 code points normalise or split differently:
// ones assigned after Unicode 8.0 (Quranic annotation marks U+08D4.., medieval punctuation U+2E43..,
// marks of scripts added since; Unicode 16's new case pairs) or changed since (U+1734, U+166D, U+111C9,
// U+11938). tests/wordpiece_test.cpp compares every code point with the reference and expects exactly
// those (tests/data/wordpiece/unicode_differences.txt). Matching them would take Unicode 8.0's tables.
#include <utf8proc.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "../core/error.hpp"

namespace tenfold::io::detail {

inline std::string hex_byte(unsigned char b) {
  constexpr const char* digits = "0123456789abcdef";
  return {'0', 'x', digits[b >> 4], digits[b & 15]};
}

// Where and why a text is not UTF-8.
struct utf8_problem {
  std::size_t offset = 0; // of the first byte of the bad sequence
  unsigned char byte = 0; // that byte
  const char* why = "";
};

// Decodes strict UTF-8 (Unicode's table 3-7, as Python's bytes.decode and Rust's str take it: no
// overlong forms, no surrogates, nothing past U+10FFFF), appending to `out`. On a bad sequence it stops,
// says where in `problem` and returns false.
inline bool utf8_decode(std::string_view text, std::u32string& out, utf8_problem& problem) {
  out.reserve(out.size() + text.size());
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char b = byte(i);
    if (b < 0x80) {
      out += char32_t(b);
      ++i;
      continue;
    }
    auto fail = [&](const char* why) {
      problem = {i, b, why};
      return false;
    };
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xbf; // the range of the second byte (table 3-7)
    if (b >= 0xc2 && b <= 0xdf) length = 2;
    else if (b >= 0xe0 && b <= 0xef) length = 3, low = b == 0xe0 ? 0xa0 : 0x80, high = b == 0xed ? 0x9f : 0xbf;
    else if (b >= 0xf0 && b <= 0xf4) length = 4, low = b == 0xf0 ? 0x90 : 0x80, high = b == 0xf4 ? 0x8f : 0xbf;
    else if (b < 0xc0) return fail("a continuation byte where a character should start");
    else return fail("a byte that never occurs in UTF-8");
    if (i + 1 < text.size() && (byte(i + 1) < low || byte(i + 1) > high) && (byte(i + 1) & 0xc0) == 0x80)
      return fail(b == 0xed   ? "a surrogate (U+D800..U+DFFF)"
                  : b == 0xf4 ? "a code point past U+10FFFF"
                              : "an overlong encoding");
    char32_t c = b & (0xff >> (length + 1));
    for (std::size_t k = 1; k < length; ++k) {
      if (i + k == text.size()) return fail("the character is cut short by the end of the text");
      if ((byte(i + k) & 0xc0) != 0x80) return fail("the character is cut short by a byte that does not continue it");
      c = (c << 6) | (byte(i + k) & 0x3f);
    }
    out += c;
    i += length;
  }
  return true;
}

// " at byte 3 (0xff): a byte that never occurs in UTF-8"
inline std::string utf8_problem_text(const utf8_problem& p) {
  return tenfold::detail::message(" at byte ", p.offset, " (", hex_byte(p.byte), "): ", p.why);
}

inline void utf8_append(std::string& out, char32_t c) {
  std::uint8_t buf[4];
  const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<std::size_t>(n));
}

inline utf8proc_category_t category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

// Removed by the clean-up (besides U+0000 and U+FFFD). Not Cn: the reference keeps unassigned code points.
// (Cs cannot occur: the decoder refuses surrogates.)
inline bool bert_is_control(char32_t c) {
  if (c == U'\t' || c == U'\n' || c == U'\r') return false;
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_CC || k == UTF8PROC_CATEGORY_CF || k == UTF8PROC_CATEGORY_CO ||
         k == UTF8PROC_CATEGORY_CS;
}

inline bool bert_is_whitespace(char32_t c) {
  if (c == U'\t' || c == U'\n' || c == U'\r' || c == U' ') return true;
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_ZS || k == UTF8PROC_CATEGORY_ZL || k == UTF8PROC_CATEGORY_ZP;
}

// BERT counts every printable ASCII character that is not a letter or digit as punctuation ($, +, ^, `...
// are symbols to Unicode), and Unicode's P* categories beyond.
inline bool bert_is_punctuation(char32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) return true;
  const auto k = category(c);
  return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

// BERT's "Chinese character" blocks (CJK Unified Ideographs and their extensions, the compatibility
// ideographs): code point ranges from BERT's tokenization.py, as the reference has them (U+2B920, not
// U+2B820: see the top of this file). Hangul and kana are not among them: they stay in words.
inline bool bert_is_cjk(char32_t c) {
  return (c >= 0x4e00 && c <= 0x9fff) || (c >= 0x3400 && c <= 0x4dbf) || (c >= 0x20000 && c <= 0x2a6df) ||
         (c >= 0x2a700 && c <= 0x2b73f) || (c >= 0x2b740 && c <= 0x2b81f) || (c >= 0x2b920 && c <= 0x2ceaf) ||
         (c >= 0xf900 && c <= 0xfaff) || (c >= 0x2f800 && c <= 0x2fa1f);
}

inline int combining_class(char32_t c) {
  return utf8proc_get_property(static_cast<utf8proc_int32_t>(c))->combining_class;
}

// The normalised text (see the top of this file), appended to `out`.
inline void bert_normalize(std::u32string_view text, std::u32string& out) {
  // Clean-up and CJK spacing first: the canonical reordering of NFD below must see the text after them.
  std::u32string cleaned;
  cleaned.reserve(text.size());
  for (const char32_t c : text) {
    if (c == 0 || c == 0xfffd || bert_is_control(c)) continue;
    if (bert_is_whitespace(c)) cleaned += U' ';
    else if (bert_is_cjk(c)) (cleaned += U' ', cleaned += c) += U' ';
    else cleaned += c;
  }
  // NFD: each code point's full canonical decomposition, then marks reordered by combining class (a
  // stable sort of each run of non-zero classes: Unicode's canonical ordering).
  std::u32string nfd;
  nfd.reserve(cleaned.size());
  for (const char32_t c : cleaned) {
    if (c < 0x80) {
      nfd += c;
      continue;
    }
    utf8proc_int32_t parts[8]; // no canonical decomposition is longer than 4
    const auto n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), parts, 8, UTF8PROC_DECOMPOSE, nullptr);
    if (n < 0 || n > 8) {
      nfd += c; // not reached for a valid code point
      continue;
    }
    for (utf8proc_ssize_t k = 0; k < n; ++k) {
      const char32_t d = static_cast<char32_t>(parts[k]);
      const int ccc = combining_class(d);
      std::size_t at = nfd.size();
      while (ccc != 0 && at > 0 && combining_class(nfd[at - 1]) > ccc) --at;
      nfd.insert(at, 1, d);
    }
  }
  // Marks dropped, then lower case. utf8proc_tolower is Unicode's simple (one to one) mapping; the
  // reference's full mapping differs only for U+0130 (to i + U+0307), which NFD has already split.
  out.reserve(out.size() + nfd.size());
  for (const char32_t c : nfd) {
    if (c >= 0x80 && category(c) == UTF8PROC_CATEGORY_MN) continue;
    if (c < 0x80) out += (c >= U'A' && c <= U'Z') ? c + 32 : c;
    else out += static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
  }
}

// Calls word(std::u32string_view) for each word of normalised text, in order, while it returns true.
template <class Word>
void bert_pre_tokenize(std::u32string_view text, Word&& word) {
  std::size_t begin = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char32_t c = text[i];
    const bool space = bert_is_whitespace(c);
    if (!space && !bert_is_punctuation(c)) continue;
    if (i > begin && !word(text.substr(begin, i - begin))) return;
    if (!space && !word(text.substr(i, 1))) return;
    begin = i + 1;
  }
  if (text.size() > begin) word(text.substr(begin));
}

} // namespace tenfold::io::detail
