#!/usr/bin/env python3
"""Writes the test vectors of tenfold::io::wordpiece (tests/wordpiece_test.cpp) from the reference tokenizer.

    pip install tokenizers transformers
    python scripts/wordpiece_vectors.py [--vocab tests/data/wordpiece/vocab.txt] [--out tests/data/wordpiece]

Reference: Hugging Face's BertTokenizerFast (the `tokenizers` library, Rust) built from the vocabulary with
do_lower_case=True, truncation=True; what sentence-transformers uses for all-MiniLM-L6-v2. Two more fast
builds must agree with it (tokenizers' BertWordPieceTokenizer, and the model's own tokenizer.json when
--tokenizer-json names it); the slow Python BertTokenizer (BertTokenizerLegacy in transformers 5) is
compared too, and where it disagrees the case is marked "slow_differs" and the fast ids are kept.

Writes into --out:
  cases.jsonl      one JSON object a line: {"group", "text", "max_length", "ids", "tokens"[, "slow_differs"]}
  codepoints.txt   what the reference's normaliser and pre-tokenizer make of "a" + chr(c) + "b" for every
                   code point c, where that is not the one word itself (format: the file's first lines)
"""
import argparse
import json
import os
import random
import sys
import unicodedata

import tokenizers
import transformers
from tokenizers import BertWordPieceTokenizer, Tokenizer

MAX_LENGTH = 256


def english():
    return [
        "Hello, world!",
        "The quick brown fox jumps over the lazy dog.",
        "This is a sentence embedding model.",
        "A man is eating food.",
        "A man is riding a horse.",
        "Two dogs are playing in the snow.",
        "I can't believe it's not butter!",
        "She said, \"Don't go there.\"",
        "They're going to the store; we'll meet them later.",
        "What time is it? It's half past three.",
        "The U.S.A. and the U.K. signed the treaty in 1945.",
        "Mr. Smith's dog barked at Mrs. Jones's cat.",
        "e-mail, re-enter, state-of-the-art, well-known",
        "The cat sat on the mat.",
        "Machine learning is a subset of artificial intelligence.",
        "Transformers use self-attention to model long-range dependencies.",
        "Tokenization splits text into smaller units called tokens.",
        "WordPiece was used for BERT; SentencePiece for many later models.",
        "Paris is the capital of France.",
        "Water boils at 100 degrees Celsius at sea level.",
        "To be, or not to be, that is the question.",
        "All that glitters is not gold.",
        "The weather today is sunny with a chance of rain in the afternoon.",
        "Please turn off your phones during the presentation.",
        "Can you recommend a good book about the history of mathematics?",
        "The stock market fell sharply after the announcement.",
        "He plays the piano, the violin and the cello.",
        "Our results improve the state of the art by 3.2 points.",
        "Antidisestablishmentarianism is a long word.",
        "Pneumonoultramicroscopicsilicovolcanoconiosis",
        "supercalifragilisticexpialidocious",
        "unbelievably, unquestionably, undeniably",
        "Internationalization and localization",
        "HELLO WORLD IN CAPITALS",
        "MiXeD CaSe TeXt",
        "iPhone, eBay, YouTube, McDonald's, O'Reilly",
        "The year 2023 was warmer than 2022.",
        "COVID-19 vaccines were developed in record time.",
        "GPT-4, BERT-base, T5-large and LLaMA-2-70B",
        "It costs $19.99 (plus tax) or about 20 euros.",
        "Call me at 555-123-4567 or +1 (800) 555-0199.",
        "Section 3.2.1 describes the algorithm in detail.",
        "x = y + z * 2 - (a / b) % c",
        "if (a < b && c > d) { return a <= b || c >= d; }",
        "#hashtag @mention ~tilde ^caret `backtick` |pipe| \\backslash",
        "a_b_c snake_case CamelCase kebab-case dot.case",
        "hello",
        "a",
        "I",
        "ok",
        "Zzzzz...",
        "The end.",
        "A sentence without a final period",
        "Thanks!!!",
        "Really???",
        "Wait... what?!",
        "(parenthetical) [bracketed] {braced} <angled>",
        "\"double quoted\" 'single quoted'",
        "The year's best films, according to critics, were surprisingly diverse.",
        "Deep learning models require large amounts of labelled data.",
        "The mitochondria is the powerhouse of the cell.",
        "Photosynthesis converts light energy into chemical energy.",
        "Shakespeare wrote 39 plays and 154 sonnets.",
        "The Great Wall of China is visible from low Earth orbit under some conditions.",
        "Ribonucleic acid, deoxyribonucleic acid, adenosine triphosphate",
        "Tokyo, Beijing, Seoul, Moscow, Cairo, Lagos, Lima, Sydney",
    ]


def accented():
    return [
        "café", "naïve", "Ångström", "Zürich", "résumé", "façade", "São Paulo", "Kraków", "Dvořák",
        "Øresund", "Þórr and Óðinn", "Łódź", "İstanbul", "Straße", "STRASSE", "ẞ", "ﬁnancial ﬂow",
        "Crème brûlée is a dessert.", "Pokémon", "El Niño", "Beyoncé", "Citroën", "Señor Muñoz",
        "jalapeño piñata", "coöperate reëlect", "Ærøskøbing", "Œuvre complète", "Ça va? Très bien.",
        "À bientôt", "ÉCOLE ÉLÉMENTAIRE", "Mötley Crüe", "Häagen-Dazs", "Ōsaka Tōkyō", "Ḥasan",
        "ǅemal ǈubljana ǋ", "ĳssel", "ſ long s", "Ṁ ṁ Ẁ ẁ Ỳ ỳ", "Ⅻ Ⅳ ⅲ", "ＡＢＣ ａｂｃ",
    ]


def languages():
    return [
        # German
        "Ich möchte ein Bier, bitte.", "Die Größe des Hauses überrascht uns.",
        "Donaudampfschifffahrtsgesellschaftskapitän", "Schöne Grüße aus Köln!",
        # French
        "Je ne sais pas où il est allé.", "L'été dernier, nous sommes allés à la plage.",
        "Où est la bibliothèque ?", "« Bonjour », dit-elle.",
        # Spanish
        "¿Dónde está la estación de tren?", "¡Qué sorpresa! Mañana será otro día.",
        "El pingüino comió camarón.",
        # Portuguese, Italian
        "Não sei, coração.", "Perché è così difficile?", "Città, università, caffè",
        # Polish, Czech, Turkish, Romanian
        "Zażółć gęślą jaźń.", "Příliš žluťoučký kůň úpěl ďábelské ódy.", "Çok güzel bir gün, değil mi?",
        "Știință și învățământ",
        # Vietnamese
        "Tiếng Việt có dấu rất phức tạp.", "Xin chào, tôi tên là Nguyễn.", "Hà Nội và Thành phố Hồ Chí Minh",
        "Phở bò tái chín",
        # Nordic, Hungarian
        "Smørrebrød og rødgrød med fløde", "Árvíztűrő tükörfúrógép", "Hyvää päivää",
        # Greek
        "Καλημέρα κόσμε", "ΟΔΟΣ ΣΟΦΟΚΛΕΟΥΣ", "Ἀθῆναι, ἡ πόλις", "άέήίόύώ ΐΰ",
        # Cyrillic
        "Привет, мир!", "Съешь же ещё этих мягких французских булок.", "Ёжик в тумане", "Україна, Київ",
        # Arabic, Hebrew (with and without vowel marks)
        "مرحبا بالعالم", "اللُّغَةُ العَرَبِيَّةُ", "שָׁלוֹם עוֹלָם", "שלום עולם",
        # Indic, Thai, others
        "नमस्ते दुनिया", "हिन्दी भाषा", "বাংলা ভাষা", "தமிழ்", "สวัสดีครับ", "ქართული", "Հայերեն", "አማርኛ",
    ]


def cjk():
    return [
        "中文", "我爱北京天安门。", "你好，世界！", "今天天气很好，我们去公园吧。", "機器學習是人工智慧的一個分支。",
        "日本語のテキストです。", "東京タワーに行きました", "ひらがなとカタカナと漢字", "カタカナ", "ｶﾀｶﾅ（半角）",
        "한국어 텍스트", "안녕하세요, 세계!", "대한민국 서울특별시", "ᄀᄁᄂ ㄱㄴㄷ",
        "中文English混合text", "BERT是一个模型", "2023年10月1日", "「引用」『二重』【括弧】〈山〉《书》",
        "。、・〜ー", "　全角スペース　", "豈 更 車", "𠀀𠀁𪜀𫝀", "𫠠𫠡 𫤠", "⺀⻳ ⼀⿕", "〇〡〢〣",
        "ㄅㄆㄇ", "中a文b字", "漢字かな交じり文", "一二三四五六七八九十百千万億",
    ]


def emoji():
    return [
        "I love it 😍", "😀😃😄😁", "Family: 👨‍👩‍👧‍👦", "Thumbs up 👍🏽 and 👍🏿", "Flags 🇫🇷 🇯🇵 🇺🇸",
        "Keycap 1️⃣ #️⃣", "Heart ❤️ vs ❤", "☺ ☹ ☃ ★ ♥", "🏳️‍🌈 rainbow flag", "🧑‍💻 coder", "👩🏽‍🚀",
        "emoji😀inside", "🙂🙃", "✨✨✨", "🍕 pizza 🍔 burger", "©️ ®️ ™", "⚠️ warning", "😀 🫠 🥰",
    ]


def punctuation():
    return [
        "!!!...???", "?!?!", "...", "…", "Hello…world", "wait—what", "pages 10–20", "a - b -- c --- d",
        "«guillemets»", "„German quotes“", "“smart quotes” and ‘single’", "¿¡Qué!?", "‹›", "†‡•‰′″",
        "¶§¤", "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", "(((nested)))", "[[[", "]]]", "::::", "a.b.c.d",
        "...hello...", "'''triple'''", "@@@###$$$", "¡¡¡hola!!!", "、。，", "·•◦", "⁂⁑⁕", "«»„“—…",
        "semi;colon:colon", "under_score", "tilde~tilde", "end.", ".start",
    ]


def controls():
    return [
        "a\x00b", "a\x01b", "a\x07b", "a\x1bb", "a\x7fb", "a\x85b", "a\x9fb", "a\u200bb", "a\u200cb",
        "a\u200db", "a\u200eb", "a\u2066b\u2069", "\ufeffBOM at start", "a\u00adb", "soft\u00adhyphen",
        "a\ufffdb", "\ufffd", "a\x0bb", "a\x0cb", "a\x1cb\x1db\x1eb\x1fb", "a\u2028b", "a\u2029b",
        "a\U000e0001b", "a\ue000b", "a\U000f0000b", "\x00\x00\x00", "\x01hello\x02world\x03",
    ]


def whitespace():
    return [
        "", " ", "   ", "\t", "\n", "\r\n", " \t\n ", "hello\tworld", "hello\nworld", "hello\r\nworld",
        "  leading", "trailing  ", "multiple     spaces", "non\u00a0breaking", "narrow\u202fspace",
        "thin\u2009space", "em\u2003space", "ideographic\u3000space", "ogham\u1680space", "a\u205fb",
        "mongolian\u180evowel", "\t\ttabs\t\t", "line1\nline2\nline3", "para\n\npara",
    ]


def combining():
    return [
        "e\u0301", "cafe\u0301", "a\u0308", "A\u030a", "n\u0303", "o\u0302\u0301", "Z\u0335\u0311a\u0336\u033f",
        "\u0301at start", "after space \u0301x", "!\u0301", "x\u20dd", "1\u20e3", "क्षत्रिय", "e\u0327\u0301",
        "q\u0323\u0307", "q\u0307\u0323", "Ṩ", "s\u0323\u0307", "H̸̡̪̯ͨ͊̽̅̾̎Ȩ̬̩̾͛ͪ̈́̀́͘ ̶̧̨̱̹̭̯ͧ̾ͬC̷̙̲̝͖ͭ̏ͥͮ͟Oͮ͏̮̪̝͍M̲̖͊̒ͪͩͬ̚̚͜Ȇ̴̟̟͙̞ͩ͌͝S̨̥̫͎̭ͯ̿̔̀ͅ",
        "\u0e01\u0e34", "\u05e9\u05c1", "ｶﾞ", "\u3099\u309a",
    ]


def numbers():
    return [
        "3.14159", "1,000,000", "2024-01-01", "12:30:45", "½ ¼ ¾", "x² + y³", "① ② ③", "Ⅻ", "٠١٢٣٤٥",
        "０１２３", "१२३", "10^6", "1e-12", "-42", "+3.5%", "#1", "0x7fffffff", "3rd 21st 100th",
        "1234567890123456789012345678901234567890",
    ]


def urls():
    return [
        "https://www.example.com/path/to/page?query=1&other=two#anchor",
        "Visit http://example.org or ftp://files.example.net/pub/",
        "user.name+tag@example.co.uk", "C:\\Program Files\\App\\app.exe", "/usr/local/bin/python3",
        "<html><body>Hi</body></html>", "{\"key\": \"value\", \"n\": [1, 2, 3]}", "print('hello')",
        "SELECT * FROM users WHERE id = 1;", "git commit -m \"fix\"", "www.example.com", "github.com/owner/repo",
    ]


def special_tokens():
    return [
        "hello [MASK] world", "[CLS] hi [SEP]", "a[MASK]b", "[mask] lower case", "[UNK]", "[PAD][PAD]",
        "[[SEP]]", "[unused0] is not special", "[ MASK ]", "[MASK][MASK][MASK]", "[MA\u200bSK]", "[SEP",
        "[CLS]\u0301", "Ⅻ[SEP]中", "\u3000[MASK]\u3000",
    ]


def long_words():
    word100 = "ab" * 50
    return [
        word100,  # 100 code points: WordPiece splits it
        word100 + "a",  # 101: [UNK]
        "x" * 100, "x" * 101, "hello " + "z" * 150 + " world",
        "é" * 100, "é" * 101,  # counted after NFD and mark stripping (still one code point each)
        "e\u0301" * 100,  # 200 code points in the text, 100 after the marks are dropped
        "A" * 100 + "\u0301",
        "a" * 99 + "!" + "b" * 99,  # punctuation splits: two short words
        "中" * 120,  # CJK characters are words of their own
        "한" * 101, "가" * 33,  # Hangul syllables decompose: 33 of them are 99 jamo, 34 would be 102
        "가" * 34,
        "abc" * 40 + " ok",
        "the" * 33 + "x",
        "un" + "believable" * 9,
        "Ü" * 100,
    ]


def truncated():
    words = ("the quick brown fox jumps over the lazy dog while tokenizers count every piece of the text "
             "carefully and without mercy").split()
    cases = []
    for n in (120, 200, 253, 254, 255, 256, 300, 600):
        cases.append(" ".join(words[i % len(words)] for i in range(n)))
    cases.append(" ".join(["unbelievably"] * 130))  # pieces of one word straddle the cut
    cases.append("中" * 300)
    cases.append("hello, " * 200)
    cases.append(" ".join(["[MASK]"] * 300))
    cases.append("word " * 253 + "[SEP] after")
    cases.append("Ångström résumé naïve " * 60)
    return cases


def other_max_lengths():
    return [
        ("Hello, world!", 2), ("Hello, world!", 3), ("Hello, world!", 4), ("unbelievably", 3),
        ("unbelievably", 4), ("a [MASK] b", 3), ("", 2), ("The quick brown fox jumps over the lazy dog.", 8),
        ("The quick brown fox jumps over the lazy dog.", 512), ("中" * 600, 512), ("hello " * 1000, 512),
    ]


def scripts_and_symbols():
    # Other categories: symbols (S*), marks (Mc, Me), letters of other scripts, letter numbers.
    return [
        "∑∏∫√∞≠≤≥", "→←↑↓⇒", "€£¥₩₹₿", "♠♣♥♦", "°C °F", "µm μm", "Ω Ω", "K K", "Å Å", "ℌ ℍ ℕ",
        "☐☑☒", "⌘⌥⇧", "♩♪♫", "⛄⛅", "𝐀𝐁𝐂 𝒜 𝔄", "𐍈 Gothic", "ᚠᚢᚦ runes", "ꦗꦮ", "ߒߞߏ",
    ]


def reference_quirks():
    # Where the fast and the slow reference part (tenfold follows the fast one): final sigma, an unassigned
    # code point, the CJK block U+2B820..U+2B91F.
    return ["ΣΑΣ ΟΔΟΣ", "ὈΔΥΣΣΕΎΣ", "x\u0378y", "\u0378", "a\U0002b820b", "a\U0002b91fb", "a\U0002b920b"]


def random_texts(n=60, seed=20240615):
    # Text drawn from a pool of characters of many kinds, reproducibly.
    pool = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    pool += list(" \t\n\r\u00a0\u3000\u2028")
    pool += list(".,;:!?'\"()[]{}-_/\\@#$%^&*+=<>|~`«»„“”‘’—–…¿¡·、。，！？「」")
    pool += list("àáâãäåæçèéêëìíîïñòóôõöøùúûüýÿÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÑÒÓÔÕÖØÙÚÛÜÝßœŒłŁđĐ")
    pool += list("αβγδεζηθΑΒΓΔΣσςπΩабвгдеёжзАБВГДЕЁЖЗ")
    pool += list("中文字日本語漢字北京東京你我他的是了在有")
    pool += list("あいうえおかきくけこアイウエオカキクケコー")
    pool += list("한국어안녕하세요대서울")
    pool += ["\u0301", "\u0308", "\u0323", "\u0327", "\u20dd", "\u200b", "\u200d", "\u00ad", "\ufeff", "\x00",
             "\x07", "\x7f", "\ufffd", "\U0001F600", "\U0001F44D", "\U0001F3FD", "\u2764", "\ufe0f", "[MASK]",
             "[SEP]", "[CLS]", "##", "\U000e0001"]
    rng = random.Random(seed)
    out = []
    for i in range(n):
        length = rng.choice([1, 2, 3, 5, 8, 13, 21, 40, 80, 200])
        out.append("".join(rng.choice(pool) for _ in range(length)))
    # Words made of vocabulary-friendly letters, so that WordPiece splits (not [UNK]s) are exercised.
    letters = "etaoinshrdlucmfwypvbgkqjxz"
    for i in range(40):
        out.append(" ".join("".join(rng.choice(letters) for _ in range(rng.randint(1, 18)))
                            for _ in range(rng.randint(1, 12))))
    return out


def all_cases():
    groups = [
        ("english", english()), ("accented", accented()), ("languages", languages()), ("cjk", cjk()),
        ("emoji", emoji()), ("punctuation", punctuation()), ("control", controls()),
        ("whitespace", whitespace()), ("combining", combining()), ("numbers", numbers()), ("urls", urls()),
        ("special_tokens", special_tokens()), ("long_words", long_words()), ("truncated", truncated()),
        ("symbols", scripts_and_symbols()), ("quirks", reference_quirks()), ("random", random_texts()),
    ]
    cases = [(g, t, MAX_LENGTH) for g, texts in groups for t in texts]
    cases += [("max_length", t, m) for t, m in other_max_lengths()]
    # A few of the English sentences a second time, upper-cased, and run together into a paragraph.
    cases += [("english_upper", t.upper(), MAX_LENGTH) for t in english()[:20]]
    cases.append(("paragraph", " ".join(english()), MAX_LENGTH))
    cases.append(("paragraph", "\n".join(languages()), MAX_LENGTH))
    return cases


def load_vocab(path):
    with open(path, encoding="utf-8") as f:
        return {line.rstrip("\n"): i for i, line in enumerate(f)}


def fast_tokenizer(vocab_path):
    """transformers' BertTokenizerFast from the vocabulary (in transformers 5 that is BertTokenizer)."""
    if int(transformers.__version__.split(".")[0]) >= 5:
        return transformers.BertTokenizerFast(vocab=load_vocab(vocab_path), do_lower_case=True)
    return transformers.BertTokenizerFast(vocab_file=vocab_path, do_lower_case=True)


def slow_tokenizer(vocab_path):
    cls = getattr(transformers, "BertTokenizerLegacy", None)
    if cls is None:  # transformers 4: BertTokenizer is the Python one
        cls = transformers.BertTokenizer
    return cls(vocab_path, do_lower_case=True)


def hangul_nfd(c):
    """A Hangul syllable's canonical decomposition into jamo: Unicode's arithmetic (chapter 3.12), no table."""
    s = c - 0xAC00
    if not 0 <= s < 11172:
        return chr(c)
    lead, vowel, trail = 0x1100 + s // 588, 0x1161 + (s % 588) // 28, 0x11A7 + s % 28
    return chr(lead) + chr(vowel) + (chr(trail) if trail != 0x11A7 else "")


def codepoint_table(path):
    """What the reference's normaliser and pre-tokenizer do with "a" + chr(c) + "b", for every code point."""
    backend = tokenizers.normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None,
                                                    lowercase=True)
    pre = tokenizers.pre_tokenizers.BertPreTokenizer()
    hexs = lambda s: ".".join("%x" % ord(ch) for ch in s)
    runs = []  # [kind, first, last]
    singles = []
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        ch = chr(c)
        words = [w for w, _ in pre.pre_tokenize_str(backend.normalize_str("a" + ch + "b"))]
        kind = None
        if words == ["a" + ch + "b"]:
            continue
        if words == ["a" + hangul_nfd(c) + "b"] and hangul_nfd(c) != ch:
            kind = "H"
        elif words == ["ab"]:
            kind = "R"
        elif words == ["a", "b"]:
            kind = "W"
        elif words == ["a", ch, "b"]:
            kind = "S"
        if kind is None and len(words) == 1 and words[0].startswith("a") and words[0].endswith("b"):
            singles.append("M %x %s" % (c, hexs(words[0][1:-1])))
        elif kind is None:
            singles.append("N %x %s" % (c, " ".join(hexs(w) for w in words)))
        elif runs and runs[-1][0] == kind and runs[-1][2] == c - 1:
            runs[-1][2] = c
        else:
            runs.append([kind, c, c])
    lines = ["%s %x %x" % (k, a, b) for k, a, b in runs] + singles
    lines.sort(key=lambda l: int(l.split()[1], 16))
    with open(path, "w", encoding="ascii") as f:
        f.write("# What Hugging Face's BertNormalizer(lowercase=True, strip accents) + BertPreTokenizer (tokenizers %s)\n"
                % tokenizers.__version__)
        f.write("# make of the text \"a\" + chr(c) + \"b\" for every code point c (not surrogates), by\n")
        f.write("# scripts/wordpiece_vectors.py. Code points in hex. Not listed: the one word a<c>b, unchanged.\n")
        f.write("#   R first last: removed (\"ab\")      W first last: whitespace (\"a\" \"b\")\n")
        f.write("#   S first last: a word of its own (\"a\" <c> \"b\")\n")
        f.write("#   H first last: Hangul syllables, one word a<the syllable's jamo>b (Unicode's arithmetic decomposition)\n")
        f.write("#   M c x: one word a<x>b, x given as its code points joined by '.'\n")
        f.write("#   N c word...: the words, each as its code points joined by '.'\n")
        for line in lines:
            f.write(line + "\n")
    return len(lines)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    data = os.path.join(here, "..", "tests", "data", "wordpiece")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", default=os.path.join(data, "vocab.txt"))
    ap.add_argument("--tokenizer-json", help="a tokenizer.json of the same vocabulary (e.g. all-MiniLM-L6-v2's)")
    ap.add_argument("--out", default=data)
    args = ap.parse_args()

    fast = fast_tokenizer(args.vocab)
    slow = slow_tokenizer(args.vocab)
    plain = BertWordPieceTokenizer(args.vocab, lowercase=True)
    model = Tokenizer.from_file(args.tokenizer_json) if args.tokenizer_json else None
    if model is not None:
        model.no_padding()

    cases = all_cases()
    slow_differs = 0
    with open(os.path.join(args.out, "cases.jsonl"), "w", encoding="utf-8") as f:
        for group, text, max_length in cases:
            ids = fast(text, truncation=True, max_length=max_length)["input_ids"]
            plain.enable_truncation(max_length)
            others = [("tokenizers' BertWordPieceTokenizer", plain.encode(text).ids)]
            if model is not None:
                model.enable_truncation(max_length)
                others.append(("tokenizer.json", model.encode(text).ids))
            for name, other in others:
                if other != ids:
                    sys.exit("%s disagrees with BertTokenizerFast on %r:\n  %s\n  %s" % (name, text, other, ids))
            record = {"group": group, "text": text, "max_length": max_length, "ids": ids,
                      "tokens": fast.convert_ids_to_tokens(ids)}
            slow_ids = slow(text, truncation=True, max_length=max_length)["input_ids"]
            if slow_ids != ids:
                record["slow_differs"] = slow_ids
                slow_differs += 1
                print("slow BertTokenizer differs on %r:\n  fast %s\n  slow %s" % (
                    text, fast.convert_ids_to_tokens(ids), slow.convert_ids_to_tokens(slow_ids)), file=sys.stderr)
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    n = codepoint_table(os.path.join(args.out, "codepoints.txt"))
    print("%d cases (%d where the slow tokenizer differs), %d code point lines; tokenizers %s, transformers %s, "
          "Python's unicodedata %s" % (len(cases), slow_differs, n, tokenizers.__version__, transformers.__version__,
                                       unicodedata.unidata_version))


if __name__ == "__main__":
    main()
