#include "validate/json_parse.h"

#include <cstdint>

namespace kvrt::validate {
namespace {

// Recursive descent over the grammar of RFC 8259; every function returns false on the first byte
// that does not fit, leaving `at` wherever it stopped.
class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}

  bool value(int depth);
  void space() {
    while (at_ < s_.size() &&
           (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r'))
      ++at_;
  }
  size_t at() const { return at_; }

 private:
  int peek() const { return at_ < s_.size() ? static_cast<unsigned char>(s_[at_]) : -1; }
  bool eat(char c) {
    if (peek() != static_cast<unsigned char>(c)) return false;
    ++at_;
    return true;
  }
  bool word(std::string_view w) {
    if (s_.substr(at_, w.size()) != w) return false;
    at_ += w.size();
    return true;
  }
  bool digits() {  // one or more
    const size_t from = at_;
    while (peek() >= '0' && peek() <= '9') ++at_;
    return at_ > from;
  }
  bool number();
  bool string();
  bool escape();
  bool utf8();
  bool container(char open, char close, bool keys, int depth);

  std::string_view s_;
  size_t at_ = 0;
};

bool Reader::value(int depth) {
  if (depth >= kJsonMaxDepth) return false;  // depth counts from 0 at the outermost value
  switch (peek()) {
    case '{': return container('{', '}', true, depth);
    case '[': return container('[', ']', false, depth);
    case '"': return string();
    case 't': return word("true");
    case 'f': return word("false");
    case 'n': return word("null");
    default: return number();
  }
}

// '{' [ member (',' member)* ] '}' with member = string ':' value; arrays the same without keys.
bool Reader::container(char open, char close, bool keys, int depth) {
  if (!eat(open)) return false;
  space();
  if (eat(close)) return true;
  for (;;) {
    if (keys) {
      if (!string()) return false;
      space();
      if (!eat(':')) return false;
      space();
    }
    if (!value(depth + 1)) return false;
    space();
    if (eat(close)) return true;
    if (!eat(',')) return false;
    space();
  }
}

// '-'? ('0' | [1-9][0-9]*) ('.' [0-9]+)? ([eE] [+-]? [0-9]+)?
bool Reader::number() {
  eat('-');
  if (eat('0')) {
    if (peek() >= '0' && peek() <= '9') return false;  // no leading zeros
  } else if (!digits()) {
    return false;
  }
  if (eat('.') && !digits()) return false;
  if (eat('e') || eat('E')) {
    if (!eat('+')) eat('-');
    if (!digits()) return false;
  }
  return true;
}

bool Reader::escape() {
  const int c = peek();
  ++at_;
  switch (c) {
    case '"':
    case '\\':
    case '/':
    case 'b':
    case 'f':
    case 'n':
    case 'r':
    case 't': return true;
    case 'u':
      for (int i = 0; i < 4; ++i, ++at_) {
        const int h = peek();
        if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F')))
          return false;
      }
      return true;
    default: return false;
  }
}

// One UTF-8 sequence of two to four bytes: no overlong forms, no surrogates, at most U+10FFFF.
bool Reader::utf8() {
  const int b0 = peek();
  int n = 0;
  uint32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) n = 1, cp = uint32_t(b0 & 0x1F);
  else if (b0 >= 0xE0 && b0 <= 0xEF) n = 2, cp = uint32_t(b0 & 0x0F);
  else if (b0 >= 0xF0 && b0 <= 0xF4) n = 3, cp = uint32_t(b0 & 0x07);
  else return false;
  ++at_;
  for (int i = 0; i < n; ++i, ++at_) {
    const int b = peek();
    if (b < 0x80 || b > 0xBF) return false;
    cp = (cp << 6) | uint32_t(b & 0x3F);
  }
  const uint32_t min = n == 1 ? 0x80 : n == 2 ? 0x800 : 0x10000;
  return cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
}

bool Reader::string() {
  if (!eat('"')) return false;
  for (;;) {
    const int c = peek();
    if (c < 0x20) return false;  // the end of the text (-1) or a raw control character
    if (c == '"') {
      ++at_;
      return true;
    }
    if (c == '\\') {
      ++at_;
      if (!escape()) return false;
    } else if (c < 0x80) {
      ++at_;
    } else if (!utf8()) {
      return false;
    }
  }
}

}  // namespace

std::optional<size_t> json_value_end(std::string_view text) {
  Reader r(text);
  r.space();
  if (!r.value(0)) return std::nullopt;
  return r.at();
}

bool json_valid(std::string_view text) {
  const auto end = json_value_end(text);
  if (!end) return false;
  Reader rest(text.substr(*end));
  rest.space();
  return *end + rest.at() == text.size();
}

}  // namespace kvrt::validate
