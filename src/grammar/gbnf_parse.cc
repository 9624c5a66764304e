// GBNF text to rules over code points, following llama.cpp's grammar-parser: rules end at a
// newline except inside parentheses and after '|' or '::='; '#' starts a comment; a repetition
// applies to the item before it (a whole literal, class, reference or group).
#include <unordered_map>

#include "common/error.h"
#include "grammar/gbnf_ast.h"

namespace kvrt::grammar::detail {
namespace {

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Parser {
 public:
  Parser(std::string_view text, const Limits& limits) : text_(text), limits_(limits) {}

  Ast run() {
    if (text_.size() > limits_.max_text_bytes)
      throw Error("grammar: the text has " + std::to_string(text_.size()) +
                  " bytes, more than the limit of " + std::to_string(limits_.max_text_bytes));
    skip_space(true);
    while (!at_end()) {
      parse_rule();
      skip_space(true);
    }
    return std::move(ast_);
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  [[noreturn]] void fail_at(size_t at, const std::string& what) const {
    int line = 1, column = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else if ((uint8_t(text_[i]) & 0xC0) != 0x80) {
        ++column;  // columns count characters, not bytes
      }
    }
    throw Error("grammar: line " + std::to_string(line) + ", column " + std::to_string(column) +
                ": " + what);
  }
  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }

  // Line and column of `at`, counted on from the last position asked (they only grow while
  // parsing).
  void line_column(size_t at, int& line, int& column) {
    if (at < cursor_.at) cursor_ = {};
    for (; cursor_.at < at; ++cursor_.at) {
      if (text_[cursor_.at] == '\n') {
        ++cursor_.line;
        cursor_.column = 1;
      } else if ((uint8_t(text_[cursor_.at]) & 0xC0) != 0x80) {
        ++cursor_.column;  // columns count characters, not bytes
      }
    }
    line = cursor_.line;
    column = cursor_.column;
  }

  void skip_space(bool newline_ok) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n'))) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\r' && peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string_view parse_name() {
    const size_t start = pos_;
    while (is_word_char(peek())) ++pos_;
    if (pos_ == start) fail("expected a rule name");
    return text_.substr(start, pos_ - start);
  }

  int32_t rule_id(std::string_view name, size_t at) {
    auto [it, added] = ids_.try_emplace(std::string(name), int32_t(ast_.rules.size()));
    if (added) {
      Rule r;
      r.name = std::string(name);
      line_column(at, r.use_line, r.use_column);
      ast_.rules.push_back(std::move(r));
      if (name == "root") ast_.root = it->second;
    }
    return it->second;
  }

  int32_t new_rule(const std::string& owner, Origin origin, size_t at) {
    Rule r;
    r.name = owner;
    r.origin = origin;
    r.defined = true;
    line_column(at, r.line, r.column);
    ast_.rules.push_back(std::move(r));
    return int32_t(ast_.rules.size()) - 1;
  }

  void parse_rule() {
    const size_t start = pos_;
    const std::string_view name = parse_name();
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=")
      fail("expected '::=' after rule name '" + std::string(name) + "'");
    pos_ += 3;
    skip_space(true);
    const int32_t id = rule_id(name, start);
    Rule& r = ast_.rules[size_t(id)];
    if (r.defined)
      fail_at(start, "rule '" + std::string(name) + "' is defined twice (first at line " +
                         std::to_string(r.line) + ")");
    r.defined = true;
    line_column(start, r.line, r.column);
    parse_alternates(id, std::string(name), false, 0);
    if (peek() == '\r') ++pos_;
    if (peek() == '\n') {
      ++pos_;
    } else if (!at_end()) {
      fail(std::string("unexpected '") + peek() + "' (expected a new line or the end of a rule)");
    }
  }

  void parse_alternates(int32_t id, const std::string& owner, bool nested, int depth) {
    std::vector<std::vector<Symbol>> alts(1);
    parse_sequence(alts.back(), owner, nested, depth);
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      alts.emplace_back();
      parse_sequence(alts.back(), owner, nested, depth);
    }
    ast_.rules[size_t(id)].alts = std::move(alts);
  }

  void count_symbols(size_t n) { count_symbols_at(n, pos_); }
  void count_symbols_at(size_t n, size_t at) {
    ast_.n_symbols += n;
    if (ast_.n_symbols > limits_.max_symbols)
      fail_at(at, "the grammar grows beyond " + std::to_string(limits_.max_symbols) +
                      " symbols once its repetitions are written out");
  }

  void push_chars(std::vector<Symbol>& seq, std::vector<CodeRange> ranges) {
    ranges = normalize_ranges(std::move(ranges));
    Symbol s;
    s.first = uint32_t(ast_.ranges.size());
    s.count = uint32_t(ranges.size());
    ast_.ranges.insert(ast_.ranges.end(), ranges.begin(), ranges.end());
    seq.push_back(s);
    count_symbols(1);
  }

  void push_rule(std::vector<Symbol>& seq, int32_t rule) {
    Symbol s;
    s.rule = rule;
    seq.push_back(s);
    count_symbols(1);
  }

  uint32_t parse_hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      int d = -1;
      if (c >= '0' && c <= '9') d = c - '0';
      if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      if (d < 0) fail("expected " + std::to_string(digits) + " hexadecimal digits");
      v = v * 16 + uint32_t(d);
      ++pos_;
    }
    return v;
  }

  // One character of a literal or class: an escape or one UTF-8 character.
  uint32_t parse_char() {
    const size_t start = pos_;
    if (peek() == '\\') {
      const char e = peek(1);
      pos_ += 2;
      uint32_t cp = 0;
      switch (e) {
        case 'x': cp = parse_hex(2); break;
        case 'u': cp = parse_hex(4); break;
        case 'U': cp = parse_hex(8); break;
        case 't': return '\t';
        case 'r': return '\r';
        case 'n': return '\n';
        case '\\':
        case '"':
        case '[':
        case ']': return uint32_t(uint8_t(e));
        default: fail_at(start, std::string("unknown escape '\\") + e + "'");
      }
      if (cp > kMaxCodePoint) fail_at(start, "code point beyond U+10FFFF");
      return cp;
    }
    const uint8_t b = uint8_t(peek());
    const int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (n == 0) fail("invalid UTF-8");
    uint32_t cp = n == 1 ? b : b & (0x7F >> n);
    for (int i = 1; i < n; ++i) {
      const uint8_t c = uint8_t(peek(size_t(i)));
      if ((c & 0xC0) != 0x80) fail("invalid UTF-8");
      cp = (cp << 6) | (c & 0x3F);
    }
    pos_ += size_t(n);
    return cp;
  }

  void parse_literal(std::vector<Symbol>& seq) {
    ++pos_;  // '"'
    while (peek() != '"') {
      if (at_end()) fail("unterminated string literal");
      const uint32_t cp = parse_char();
      push_chars(seq, {{cp, cp}});
    }
    ++pos_;
  }

  void parse_class(std::vector<Symbol>& seq) {
    ++pos_;  // '['
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    std::vector<CodeRange> ranges;
    while (peek() != ']') {
      if (at_end()) fail("unterminated character class");
      const uint32_t lo = parse_char();
      uint32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        const size_t at = pos_;
        hi = parse_char();
        if (hi < lo) fail_at(at, "range end is below its start");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    ranges = normalize_ranges(std::move(ranges));
    push_chars(seq, negated ? complement_ranges(ranges) : ranges);
  }

  size_t parse_count() {
    const size_t start = pos_;
    size_t v = 0;
    while (is_digit(peek())) {
      v = v * 10 + size_t(peek() - '0');
      if (v > limits_.max_symbols) fail_at(start, "repetition count is beyond the limit");
      ++pos_;
    }
    if (pos_ == start) fail("expected a number");
    return v;
  }

  // S{min,max} (max -1: unbounded) over seq[last..]: min copies, then rules that take up to
  // max - min more (llama.cpp's rewrite), or one that takes any number.
  void repeat(std::vector<Symbol>& seq, size_t last, size_t min, long max, const std::string& owner,
              size_t at) {
    const std::vector<Symbol> item(seq.begin() + long(last), seq.end());
    const size_t n_opt = max < 0 ? 1 : size_t(max) - min;
    count_symbols_at(item.size() * (min + n_opt) + 2 * n_opt, at);
    seq.resize(last);
    for (size_t i = 0; i < min; ++i) seq.insert(seq.end(), item.begin(), item.end());
    int32_t prev = -1;
    for (size_t i = 0; i < n_opt; ++i) {
      const int32_t id = new_rule(owner, Origin::kRepeat, at);
      std::vector<Symbol> body = item;
      if (max < 0) {
        body.push_back(Symbol{id});
      } else if (prev >= 0) {
        body.push_back(Symbol{prev});
      }
      ast_.rules[size_t(id)].alts = {std::move(body), {}};
      prev = id;
    }
    if (n_opt > 0) seq.push_back(Symbol{prev});
  }

  void parse_repetition(std::vector<Symbol>& seq, size_t last, const std::string& owner,
                        bool nested) {
    const size_t at = pos_;
    const char op = peek();
    if (last == seq.size()) fail(std::string("'") + op + "' has nothing before it to repeat");
    ++pos_;
    size_t min = 0;
    long max = -1;
    if (op == '+') min = 1;
    if (op == '?') max = 1;
    if (op == '{') {
      skip_space(nested);
      min = parse_count();
      skip_space(nested);
      if (peek() == '}') {
        max = long(min);
      } else if (peek() == ',') {
        ++pos_;
        skip_space(nested);
        if (is_digit(peek())) {
          max = long(parse_count());
          if (size_t(max) < min) fail_at(at, "repetition {m,n} with n below m");
          skip_space(nested);
        }
      }
      if (peek() != '}') fail("expected '}'");
      ++pos_;
    }
    repeat(seq, last, min, max, owner, at);
  }

  void parse_sequence(std::vector<Symbol>& seq, const std::string& owner, bool nested, int depth) {
    size_t last = seq.size();  // where the item a repetition applies to starts
    while (!at_end()) {
      const char c = peek();
      const size_t start = seq.size();
      if (c == '"') {
        parse_literal(seq);
        last = start;
      } else if (c == '[') {
        parse_class(seq);
        last = start;
      } else if (is_word_char(c)) {
        const size_t at = pos_;
        const std::string_view name = parse_name();
        push_rule(seq, rule_id(name, at));
        last = start;
      } else if (c == '(') {
        if (depth + 1 > limits_.max_nesting)
          fail("groups nested deeper than " + std::to_string(limits_.max_nesting));
        const int32_t id = new_rule(owner, Origin::kGroup, pos_);
        ++pos_;
        skip_space(true);
        parse_alternates(id, owner, true, depth + 1);
        if (peek() != ')') fail("expected ')'");
        ++pos_;
        push_rule(seq, id);
        last = start;
      } else if (c == '.') {
        ++pos_;
        push_chars(seq, {{0, kMaxCodePoint}});
        last = start;
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        parse_repetition(seq, last, owner, nested);
        last = seq.size();  // x** is refused, as llama.cpp refuses it
      } else if (c == '<') {
        fail("token references (<...>) are not supported");
      } else {
        break;
      }
      skip_space(nested);
    }
  }

  std::string_view text_;
  const Limits& limits_;
  size_t pos_ = 0;
  struct Cursor {
    size_t at = 0;
    int line = 1, column = 1;
  } cursor_;
  Ast ast_;
  std::unordered_map<std::string, int32_t> ids_;
};

}  // namespace

Ast parse_ast(std::string_view text, const Limits& limits) { return Parser(text, limits).run(); }

}  // namespace kvrt::grammar::detail
