// BPE pre-tokenizers: the regex sets llama.cpp applies for each tokenizer.ggml.pre, written as
// scanners over code points. llama.cpp applies the regexes of a set one after the other; each
// regex re-splits every current segment into its matches (leftmost first, as std::regex_iterator
// finds them) and the gaps between them. GPT-2's regex uses llama.cpp's hand-written matcher.
// Regex classes follow the Unicode tables: \p{L} letters, \p{N} numbers, \p{P} punctuation,
// \s White_Space (for ASCII exactly the C-locale isspace set).
#include <string_view>

#include "common/error.h"
#include "text/tokenizer_impl.h"
#include "text/unicode.h"

namespace kvrt::model::detail {
namespace {

using namespace unicode;

using Segments = std::vector<size_t>;  // lengths in code points, covering the text in order

struct Text {
  std::vector<uint32_t> cps;   // [n_cps]
  std::vector<uint8_t> flags;  // [n_cps] CpFlag bits of each code point
};

bool is_other(uint8_t f) { return f != 0 && !(f & (kWhitespace | kLetter | kNumber)); }
bool is_ascii_digit(uint32_t c) { return c >= '0' && c <= '9'; }
bool is_cr_lf(uint32_t c) { return c == '\r' || c == '\n'; }
bool in_set(uint32_t c, std::string_view ascii) {
  return c < 0x80 && ascii.find(char(c)) != ascii.npos;
}

// Re-splits every segment at the matches of `match(text, i, end)`, which gives the length of the
// match starting at code point i (0 for none) without reading past `end`.
template <class Match>
Segments split_by(const Text& t, const Segments& segs, Match match) {
  Segments out;
  out.reserve(segs.size() * 2);
  size_t start = 0;
  for (size_t len : segs) {
    const size_t end = start + len;
    size_t prev = start;
    for (size_t i = start; i < end;) {
      const size_t n = match(t, i, end);
      if (n == 0) {
        ++i;
        continue;
      }
      if (i > prev) out.push_back(i - prev);
      out.push_back(n);
      i += n;
      prev = i;
    }
    if (end > prev) out.push_back(end - prev);
    start = end;
  }
  return out;
}

// Regex `C+` for a class given as a predicate on (code point, flags).
template <class Pred>
auto run_of(Pred in_class) {
  return [in_class](const Text& t, size_t i, size_t end) {
    size_t j = i;
    while (j < end && in_class(t.cps[j], t.flags[j])) ++j;
    return j - i;
  };
}

// Regex `\s?C+`.
template <class Pred>
auto space_then_run_of(Pred in_class) {
  return [in_class](const Text& t, size_t i, size_t end) -> size_t {
    const size_t skip = (t.flags[i] & kWhitespace) && i + 1 < end ? 1 : 0;
    if (skip && !in_class(t.cps[i + 1], t.flags[i + 1])) return 0;  // a space alone: no match
    return skip + run_of(in_class)(t, i + skip, end);
  };
}

// Regex `C` (one code point).
template <class Pred>
auto one_of(Pred in_class) {
  return [in_class](const Text& t, size_t i, size_t) -> size_t {
    return in_class(t.cps[i], t.flags[i]) ? 1 : 0;
  };
}

// Regex `[0-9][0-9][0-9]`.
size_t three_digits(const Text& t, size_t i, size_t end) {
  const bool ok = i + 3 <= end && is_ascii_digit(t.cps[i]) && is_ascii_digit(t.cps[i + 1]) &&
                  is_ascii_digit(t.cps[i + 2]);
  return ok ? 3 : 0;
}

// One segment through GPT-2's regex as llama.cpp's matcher reads it:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
void gpt2_segment(const Text& t, size_t begin, size_t end, Segments& out) {
  auto flags = [&](size_t p) -> uint8_t { return p < end ? t.flags[p] : 0; };
  auto at = [&](size_t p) -> uint32_t { return p < end ? t.cps[p] : 0; };
  size_t pos = begin;
  auto add = [&](size_t n) {
    out.push_back(n);
    pos += n;
  };
  while (pos < end) {
    const uint32_t c = t.cps[pos];
    if (c == '\'') {
      const uint32_t c1 = at(pos + 1), c2 = at(pos + 2);
      if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') {
        add(2);
        continue;
      }
      if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
        add(3);
        continue;
      }
    }
    const size_t lead = c == ' ' ? 1 : 0;  // the optional space in front of a word
    auto take_while = [&](auto in_class) {
      size_t j = pos + lead;
      while (in_class(flags(j))) ++j;
      add(j - pos);
    };
    const uint8_t f = flags(pos + lead);
    if (f & kLetter) {
      take_while([](uint8_t g) { return g & kLetter; });
      continue;
    }
    if (f & kNumber) {
      take_while([](uint8_t g) { return g & kNumber; });
      continue;
    }
    if (is_other(f)) {
      take_while(is_other);
      continue;
    }
    size_t n_ws = 0;
    while (flags(pos + n_ws) & kWhitespace) ++n_ws;
    if (n_ws > 1 && pos + n_ws < end) {
      add(n_ws - 1);  // \s+(?!\S): leave the last space to prefix the next word
    } else {
      add(n_ws > 0 ? n_ws : 1);
    }
  }
}

Segments gpt2(const Text& t, const Segments& segs) {
  Segments out;
  out.reserve(t.cps.size() / 2 + 1);
  size_t start = 0;
  for (size_t len : segs) {
    gpt2_segment(t, start, start + len, out);
    start += len;
  }
  return out;
}

uint32_t ascii_lower(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

// The Llama 3 regex's variants: Qwen2's takes one digit at a time, Qwen3.5's counts combining
// marks (\p{M}) as letters.
struct Llama3Style {
  size_t max_digits;  // 3: \p{N}{1,3}; 1: \p{N}
  bool marks_are_letters;
};

// One segment through the Llama 3 regex as llama.cpp's matcher reads it:
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//   \s*[\r\n]+|\s+(?!\S)|\s+
// (Qwen3.5: [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+ and ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*).
size_t llama3_match(const Text& t, size_t pos, size_t end, Llama3Style style) {
  const uint8_t letter = style.marks_are_letters ? (kLetter | kMark) : kLetter;
  const size_t max_digits = style.max_digits;
  auto is_other_here = [&](uint8_t g) { return is_other(g) && !(g & letter); };
  auto flags = [&](size_t p) -> uint8_t { return p < end ? t.flags[p] : 0; };
  auto lower_at = [&](size_t p) -> uint32_t { return p < end ? ascii_lower(t.cps[p]) : 0; };
  const uint32_t c = t.cps[pos];
  const uint8_t f = t.flags[pos];
  if (c == '\'') {
    const uint32_t c1 = lower_at(pos + 1), c2 = lower_at(pos + 2);
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
    if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
  }
  size_t j = pos;
  if (!is_cr_lf(c) && !(f & kNumber) && ((f & letter) || (flags(pos + 1) & letter))) {
    for (++j; flags(j) & letter;) ++j;  // one optional non-letter, then letters
    return j - pos;
  }
  if (f & kNumber) {
    while (j - pos < max_digits && (flags(j) & kNumber)) ++j;
    return j - pos;
  }
  j += c == ' ' ? 1 : 0;
  if (is_other_here(flags(j))) {
    while (is_other_here(flags(j))) ++j;
    while (j < end && is_cr_lf(t.cps[j])) ++j;
    return j - pos;
  }
  size_t n_ws = 0, crlf_end = 0;  // crlf_end: just past the run's last \r or \n
  for (; flags(pos + n_ws) & kWhitespace; ++n_ws)
    if (is_cr_lf(t.cps[pos + n_ws])) crlf_end = n_ws + 1;
  if (crlf_end > 0) return crlf_end;                  // \s*[\r\n]+
  if (n_ws > 1 && pos + n_ws < end) return n_ws - 1;  // \s+(?!\S)
  return n_ws > 0 ? n_ws : 1;                         // \s+, or a code point nothing matches
}

// The regexes of Tekken (Mistral) and GPT-4o (o200k), which llama.cpp runs through std::regex
// (ECMAScript: alternatives in order, greedy quantifiers that backtrack) on text whose non-ASCII
// code points are collapsed to one stand-in per class, so only ASCII letters have a case:
//   [^\r\n\p{L}\p{N}]?U*l+C?|[^\r\n\p{L}\p{N}]?U+l*C?|\p{N}{1,D}| ?[^\s\p{L}\p{N}]+[\r\n/]*|
//   \s*[\r\n]+|\s+(?!\S)|\s+
// where U = ((?=[\p{L}])([^a-z])), l = ((?=[\p{L}])([^A-Z])), C the contractions
// (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]) (GPT-4o only) and D the digits per
// number (Tekken 1, GPT-4o 3).
struct CasedStyle {
  size_t max_digits;
  bool contractions;
};

bool is_letter(uint32_t, uint8_t f) { return f & kLetter; }
bool is_number(uint32_t, uint8_t f) { return f & kNumber; }
bool is_punct(uint32_t, uint8_t f) { return f & kPunctuation; }
bool is_upper_class(uint32_t c, uint8_t f) { return (f & kLetter) && !(c >= 'a' && c <= 'z'); }
bool is_lower_class(uint32_t c, uint8_t f) { return (f & kLetter) && !(c >= 'A' && c <= 'Z'); }
bool is_word_prefix(uint32_t c, uint8_t f) { return !is_cr_lf(c) && !(f & (kLetter | kNumber)); }

// Length of (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]) at i, 0 for none.
size_t contraction_at(const Text& t, size_t i, size_t end) {
  if (i >= end || t.cps[i] != '\'') return 0;
  const uint32_t c1 = i + 1 < end ? ascii_lower(t.cps[i + 1]) : 0;
  const uint32_t c2 = i + 2 < end ? ascii_lower(t.cps[i + 2]) : 0;
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
  return 0;
}

// A run of code points of a class from i; returns its end.
template <class Pred>
size_t run_end(const Text& t, size_t i, size_t end, Pred in_class) {
  while (i < end && in_class(t.cps[i], t.flags[i])) ++i;
  return i;
}

// The two word alternatives: prefix? U* l+ and prefix? U+ l*, with backtracking as ECMAScript
// does it. A prefix code point is a non-letter, so without it neither alternative can match.
size_t cased_word(const Text& t, size_t pos, size_t end, CasedStyle style) {
  const size_t s = is_word_prefix(t.cps[pos], t.flags[pos]) ? pos + 1 : pos;
  const size_t upper_end = run_end(t, s, end, is_upper_class);
  size_t word_end = 0;
  for (size_t k = upper_end + 1; k-- > s && word_end == 0;)  // U* as long as l+ still matches
    if (k < end && is_lower_class(t.cps[k], t.flags[k]))
      word_end = run_end(t, k, end, is_lower_class);
  if (word_end == 0 && upper_end > s)
    word_end = run_end(t, upper_end, end, is_lower_class);  // U+ l*
  if (word_end == 0) return 0;
  return word_end - pos + (style.contractions ? contraction_at(t, word_end, end) : 0);
}

size_t cased_match(const Text& t, size_t pos, size_t end, CasedStyle style) {
  if (const size_t n = cased_word(t, pos, end, style)) return n;
  const uint32_t c = t.cps[pos];
  const uint8_t f = t.flags[pos];
  if (f & kNumber) return run_end(t, pos, std::min(end, pos + style.max_digits), is_number) - pos;
  const size_t s = c == ' ' && pos + 1 < end ? pos + 1 : pos;  // ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
  if (is_other(t.flags[s])) {
    const size_t j = run_end(t, s, end, [](uint32_t, uint8_t g) { return is_other(g); });
    return run_end(t, j, end, [](uint32_t d, uint8_t) { return is_cr_lf(d) || d == '/'; }) - pos;
  }
  const size_t ws_end =
      run_end(t, pos, end, [](uint32_t, uint8_t g) { return (g & kWhitespace) != 0; });
  size_t crlf_end = 0;  // just past the run's last \r or \n
  for (size_t i = pos; i < ws_end; ++i)
    if (is_cr_lf(t.cps[i])) crlf_end = i + 1;
  if (crlf_end > 0) return crlf_end - pos;                        // \s*[\r\n]+
  if (ws_end - pos > 1 && ws_end < end) return ws_end - pos - 1;  // \s+(?!\S)
  return ws_end > pos ? ws_end - pos : 1;  // \s+, or a code point nothing matches
}

// Gemma 4's [^\n]+|[\n]+: runs of newlines and runs of everything else.
size_t newline_run(const Text& t, size_t i, size_t end) {
  const bool newline = t.cps[i] == '\n';
  return run_end(t, i, end, [newline](uint32_t c, uint8_t) { return (c == '\n') == newline; }) - i;
}

auto punct_or(std::string_view ascii) {
  return [ascii](uint32_t c, uint8_t f) { return (f & kPunctuation) || in_set(c, ascii); };
}
// [一-龥ࠀ-一가-퟿]: U+0800..U+9FA5 and U+AC00..U+D7FF.
bool is_cjk(uint32_t c, uint8_t) {
  return (c >= 0x0800 && c <= 0x9FA5) || (c >= 0xAC00 && c <= 0xD7FF);
}

// The whole-regex pre-tokenizers as matchers of split_by; they match at every code point (a
// length of at least 1), so a segment becomes consecutive matches.
auto llama3(Llama3Style style) {
  return [style](const Text& t, size_t i, size_t end) { return llama3_match(t, i, end, style); };
}
auto cased(CasedStyle style) {
  return [style](const Text& t, size_t i, size_t end) { return cased_match(t, i, end, style); };
}

Segments apply_set(PreTokenizer pre, const Text& t, Segments s) {
  switch (pre) {
    case PreTokenizer::kGpt2: return gpt2(t, s);
    case PreTokenizer::kStarcoder:  // \p{N}, then GPT-2
      return gpt2(t, split_by(t, s, one_of(is_number)));
    case PreTokenizer::kFalcon:  // [\p{P}\$\+<=>\^~\|`]+, GPT-2, [0-9][0-9][0-9]
      s = split_by(t, s, run_of(punct_or("$+<=>^~|`")));
      return split_by(t, gpt2(t, s), three_digits);
    case PreTokenizer::kDefault:  // [\p{P}\$\+<=>\^~\|]+, GPT-2, \p{N}+, [0-9][0-9][0-9]
      s = gpt2(t, split_by(t, s, run_of(punct_or("$+<=>^~|"))));
      return split_by(t, split_by(t, s, run_of(is_number)), three_digits);
    case PreTokenizer::kDeepseekCoder:  // [\r\n], \s?\p{L}+, \s?\p{P}+, [CJK]+, \p{N}
      s = split_by(t, s, one_of([](uint32_t c, uint8_t) { return is_cr_lf(c); }));
      s = split_by(t, s, space_then_run_of(is_letter));
      s = split_by(t, s, space_then_run_of(is_punct));
      s = split_by(t, s, run_of(is_cjk));
      return split_by(t, s, one_of(is_number));
    case PreTokenizer::kLlama3: return split_by(t, s, llama3({3, false}));
    case PreTokenizer::kQwen2: return split_by(t, s, llama3({1, false}));
    case PreTokenizer::kQwen35: return split_by(t, s, llama3({1, true}));
    case PreTokenizer::kTekken: return split_by(t, s, cased({1, false}));
    case PreTokenizer::kGpt4o: return split_by(t, s, cased({3, true}));
    case PreTokenizer::kNewlines: return split_by(t, s, newline_run);
    case PreTokenizer::kUnsupported: break;
  }
  KVRT_ASSERT(!"pre-tokenizer not implemented");
  return s;
}

}  // namespace

std::vector<std::string> pre_tokenize(PreTokenizer pre, std::string_view text) {
  Text t;
  t.cps = utf8_to_cps(text);
  t.flags.resize(t.cps.size());
  for (size_t i = 0; i < t.cps.size(); ++i) t.flags[i] = cp_flags(t.cps[i]);
  std::vector<std::string> words;
  if (t.cps.empty()) return words;
  const Segments segs = apply_set(pre, t, Segments{t.cps.size()});
  words.reserve(segs.size());
  size_t start = 0;
  for (size_t len : segs) {
    std::string& w = words.emplace_back();
    for (size_t i = start; i < start + len; ++i) append_utf8(t.cps[i], w);
    start += len;
  }
  return words;
}

}  // namespace kvrt::model::detail
