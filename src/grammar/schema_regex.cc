// JSON Schema `pattern` to GBNF: a subset of ECMAScript regular expressions (docs/grammar.md).
// Supported: literals, '.', classes [...] and [^...] with ranges, \d \D \w \W \s \S, the escapes
// \t \n \r \f \v \0 \xHH \uHHHH and escaped punctuation, groups (...) and (?:...),
// alternatives, the quantifiers * + ? {m} {m,} {m,n} (lazy forms too: the set of strings is the
// same), and ^ and $ at the start and end of the pattern or of its top-level alternatives.
// Refused: backreferences, lookaround, \b and \B, named groups, \p{...}, anchors elsewhere. A
// pattern is unanchored as JSON Schema says: without ^ (or $) any text may come before (after).
#include "grammar/schema_internal.h"

namespace kvrt::grammar::detail {
namespace {

const std::vector<CodeRange> kDigit = {{'0', '9'}};
const std::vector<CodeRange> kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const std::vector<CodeRange> kSpace = {
    {0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
    {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
// '.' matches anything but a line terminator.
const std::vector<CodeRange> kDot = {
    {0, 0x09}, {0x0B, 0x0C}, {0x0E, 0x2027}, {0x202A, kMaxCodePoint}};

class Regex {
 public:
  Regex(SchemaConverter& c, const std::string& pattern, const std::string& path)
      : c_(c), path_(path) {
    for (size_t i = 0; i < pattern.size();) {
      const uint8_t b = uint8_t(pattern[i]);
      const int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : 4;
      uint32_t cp = n == 1 ? b : b & (0x7F >> n);
      for (int k = 1; k < n && i + size_t(k) < pattern.size(); ++k)
        cp = (cp << 6) | (uint8_t(pattern[i + size_t(k)]) & 0x3F);
      cps_.push_back(cp);
      i += size_t(n);
    }
  }

  std::string run() {
    const std::string any = c_.canonical_chars({{0, kMaxCodePoint}}) + "*";
    std::vector<std::string> alts;
    while (true) {
      const bool start = eat('^');
      Part p = concat();
      const bool end = ended_by_dollar_;
      ended_by_dollar_ = false;
      alts.push_back((start ? "" : any + " ") + p.expr + (end ? "" : " " + any));
      if (at_end()) break;
      if (!eat('|')) fail("unbalanced ')'");
    }
    std::string out;
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return alts.size() == 1 ? "(" + out + ")" : "(" + out + ")";
  }

 private:
  struct Part {
    std::string expr;
    bool nullable;
  };

  [[noreturn]] void fail(const std::string& why) const {
    c_.fail(path_, "pattern", why + " (at character " + std::to_string(pos_) + ")");
  }
  bool at_end() const { return pos_ >= cps_.size(); }
  uint32_t peek(size_t ahead = 0) const {
    return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : 0xFFFFFFFF;
  }
  bool eat(uint32_t c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }

  Part alternation() {
    std::vector<Part> alts = {concat()};
    while (eat('|')) alts.push_back(concat());
    if (alts.size() == 1) return alts[0];
    Part out{"(", false};
    for (size_t i = 0; i < alts.size(); ++i) {
      out.expr += (i ? " | " : "") + alts[i].expr;
      out.nullable = out.nullable || alts[i].nullable;
    }
    out.expr += ")";
    return out;
  }

  // A '$' that ends a top-level alternative sets ended_by_dollar_.
  Part concat() {
    Part out{"", true};
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$') {
        ++pos_;
        if (depth_ == 0 && (at_end() || peek() == '|')) {
          ended_by_dollar_ = true;
          break;
        }
        fail("'$' is supported only at the end of the pattern");
      }
      Part a = quantified();
      out.expr += (out.expr.empty() ? "" : " ") + a.expr;
      out.nullable = out.nullable && a.nullable;
    }
    if (out.expr.empty()) out.expr = "\"\"";
    return out;
  }

  bool parse_count(size_t& v) {
    const size_t start = pos_;
    v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > c_.limits().max_count) fail("a repetition count above the limit");
      ++pos_;
    }
    return pos_ > start;
  }

  // {m}, {m,} or {m,n}; else '{' is a literal (ECMAScript's Annex B), and pos_ is unchanged.
  bool brace(size_t& lo, long& hi) {
    const size_t start = pos_;
    ++pos_;
    if (!parse_count(lo)) {
      pos_ = start;
      return false;
    }
    hi = long(lo);
    if (eat(',')) {
      size_t h = 0;
      hi = parse_count(h) ? long(h) : -1;
    }
    if (!eat('}')) {
      pos_ = start;
      return false;
    }
    if (hi >= 0 && size_t(hi) < lo) fail("a repetition {m,n} with n below m");
    return true;
  }

  Part quantified() {
    Part a = atom();
    size_t lo = 0;
    long hi = -1;
    const uint32_t q = peek();
    if (q == '*') {
      ++pos_;
    } else if (q == '+') {
      ++pos_;
      lo = 1;
    } else if (q == '?') {
      ++pos_;
      hi = 1;
    } else if (!(q == '{' && brace(lo, hi))) {
      return a;
    }
    eat('?');  // lazy: the same strings
    if (peek() == '*' || peek() == '+' || peek() == '?' || (peek() == '{' && [&] {
          size_t l2;
          long h2;
          const size_t at = pos_;
          const bool is = brace(l2, h2);
          pos_ = at;
          return is;
        }()))
      fail("a quantifier after a quantifier");
    if (a.nullable && hi < 0) fail("a repetition of something that can match empty text");
    std::string rep =
        q == '*'   ? "*"
        : q == '+' ? "+"
        : q == '?' ? "?"
                   : "{" + std::to_string(lo) + "," + (hi < 0 ? "" : std::to_string(hi)) + "}";
    return {"(" + a.expr + ")" + rep, a.nullable || lo == 0};
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const uint32_t c = peek();
      int d = (c >= '0' && c <= '9')   ? int(c - '0')
              : (c >= 'a' && c <= 'f') ? int(c - 'a' + 10)
              : (c >= 'A' && c <= 'F') ? int(c - 'A' + 10)
                                       : -1;
      if (d < 0) fail("expected " + std::to_string(digits) + " hexadecimal digits");
      v = v * 16 + uint32_t(d);
      ++pos_;
    }
    return v;
  }

  // After '\': a set of code points (one for a plain escape). `in_class`: \b is backspace.
  std::vector<CodeRange> escape(bool in_class) {
    const uint32_t e = peek();
    if (at_end()) fail("a pattern ending in '\\'");
    ++pos_;
    switch (e) {
      case 'd': return kDigit;
      case 'D': return complement_ranges(kDigit);
      case 'w': return kWord;
      case 'W': return complement_ranges(normalize_ranges(kWord));
      case 's': return kSpace;
      case 'S': return complement_ranges(normalize_ranges(kSpace));
      case 't': return {{9, 9}};
      case 'n': return {{10, 10}};
      case 'v': return {{11, 11}};
      case 'f': return {{12, 12}};
      case 'r': return {{13, 13}};
      case '0': return {{0, 0}};
      case 'x': {
        const uint32_t v = hex(2);
        return {{v, v}};
      }
      case 'u': {
        uint32_t v = hex(4);
        if (v >= 0xD800 && v <= 0xDBFF && peek() == '\\' && peek(1) == 'u') {
          pos_ += 2;
          const uint32_t low = hex(4);
          if (low < 0xDC00 || low > 0xDFFF) fail("a lone surrogate");
          v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00);
        }
        return {{v, v}};
      }
      case 'b':
        if (in_class) return {{8, 8}};
        fail("word boundaries (\\b) are not supported");
      case 'B': fail("word boundaries (\\B) are not supported");
      case 'p':
      case 'P': fail("Unicode property classes (\\p) are not supported");
      case 'k': fail("named backreferences are not supported");
      case 'c': fail("control escapes (\\c) are not supported");
      default:
        if (e >= '1' && e <= '9') fail("backreferences are not supported");
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z'))
          fail(std::string("the escape '\\") + char(e) + "' is not supported");
        return {{e, e}};  // escaped punctuation is itself
    }
  }

  std::vector<CodeRange> char_class() {
    ++pos_;  // '['
    const bool negated = eat('^');
    std::vector<CodeRange> ranges;
    while (!eat(']')) {
      if (at_end()) fail("an unterminated character class");
      std::vector<CodeRange> item;
      if (eat('\\')) {
        item = escape(true);
      } else {
        item = {{peek(), peek()}};
        ++pos_;
      }
      if (item.size() == 1 && item[0].lo == item[0].hi && peek() == '-' && peek(1) != ']' &&
          peek(1) != 0xFFFFFFFF) {
        ++pos_;
        std::vector<CodeRange> end;
        if (eat('\\')) {
          end = escape(true);
        } else {
          end = {{peek(), peek()}};
          ++pos_;
        }
        if (end.size() != 1 || end[0].lo != end[0].hi) fail("a range ending in a class escape");
        if (end[0].lo < item[0].lo) fail("a range whose end is below its start");
        item = {{item[0].lo, end[0].lo}};
      }
      ranges.insert(ranges.end(), item.begin(), item.end());
    }
    ranges = normalize_ranges(std::move(ranges));
    return negated ? complement_ranges(ranges) : ranges;
  }

  Part atom() {
    const uint32_t c = peek();
    if (c == '(') {
      ++pos_;
      if (eat('?')) {
        if (!eat(':')) fail("lookaround and named groups are not supported");
      }
      ++depth_;
      Part inner = alternation();
      --depth_;
      if (!eat(')')) fail("an unterminated group");
      return {"(" + inner.expr + ")", inner.nullable};
    }
    if (c == '[') return {c_.canonical_chars(char_class()), false};
    if (c == '.') {
      ++pos_;
      return {c_.canonical_chars(kDot), false};
    }
    if (c == '\\') {
      ++pos_;
      return {c_.canonical_chars(escape(false)), false};
    }
    if (c == '^') fail("'^' is supported only at the start of the pattern");
    if (c == '*' || c == '+' || c == '?') fail("a quantifier with nothing before it");
    if (c == '{') {
      size_t lo;
      long hi;
      const size_t at = pos_;
      if (brace(lo, hi)) {
        pos_ = at;
        fail("a quantifier with nothing before it");
      }
    }
    ++pos_;
    return {c_.canonical_chars({{c, c}}), false};
  }

  SchemaConverter& c_;
  std::string path_;
  std::vector<uint32_t> cps_;
  size_t pos_ = 0;
  int depth_ = 0;
  bool ended_by_dollar_ = false;
};

}  // namespace

std::string SchemaConverter::regex(const std::string& pattern, const std::string& path) {
  if (pattern.size() > limits_.max_pattern_bytes)
    fail(path, "pattern",
         "patterns longer than " + std::to_string(limits_.max_pattern_bytes) +
             " bytes are not supported");
  return Regex(*this, pattern, path).run();
}

}  // namespace kvrt::grammar::detail
