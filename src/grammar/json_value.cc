#include "grammar/json_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "common/error.h"
#include "grammar/utf8_ranges.h"

namespace kvrt::grammar {
namespace {

class Reader {
 public:
  Reader(std::string_view text, const JsonLimits& limits, std::string_view what)
      : text_(text), limits_(limits), what_(what) {}

  Json run() {
    if (text_.size() > limits_.max_bytes)
      fail("it has " + std::to_string(text_.size()) + " bytes, more than the limit of " +
           std::to_string(limits_.max_bytes));
    skip_ws();
    Json v = value(0);
    skip_ws();
    if (pos_ != text_.size()) fail("unexpected text after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(std::string(what_) + ": invalid JSON at byte " + std::to_string(pos_) + ": " + why);
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  Json value(int depth) {
    Json v;
    const char c = peek();
    if (c == '{' || c == '[') {
      if (depth >= limits_.max_depth)
        fail("nested deeper than " + std::to_string(limits_.max_depth) + " levels");
      ++pos_;
      skip_ws();
      const char close = c == '{' ? '}' : ']';
      v.type = c == '{' ? Json::Type::kObject : Json::Type::kArray;
      if (peek() == close) {
        ++pos_;
        return v;
      }
      while (true) {
        if (c == '{') {
          if (peek() != '"') fail("expected a member name");
          std::string key = string();
          skip_ws();
          expect(':');
          skip_ws();
          v.members.push_back({std::move(key), value(depth + 1)});
        } else {
          v.items.push_back(value(depth + 1));
        }
        skip_ws();
        if (peek() == ',') {
          ++pos_;
          skip_ws();
          continue;
        }
        expect(close);
        return v;
      }
    }
    if (c == '"') {
      v.type = Json::Type::kString;
      v.text = string();
      return v;
    }
    for (std::string_view word : {"true", "false", "null"}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        v.type = word == "null" ? Json::Type::kNull : Json::Type::kBool;
        v.boolean = word == "true";
        return v;
      }
    }
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    fail("expected a value");
  }

  Json number() {
    const size_t start = pos_;
    auto digits = [&] {
      const size_t from = pos_;
      while (peek() >= '0' && peek() <= '9') ++pos_;
      if (pos_ == from) fail("expected a digit");
    };
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else {
      digits();
    }
    if (peek() == '.') {
      ++pos_;
      digits();
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      digits();
    }
    Json v;
    v.type = Json::Type::kNumber;
    v.text = std::string(text_.substr(start, pos_ - start));
    return v;
  }

  uint32_t hex4() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = peek();
      int d = (c >= '0' && c <= '9')   ? c - '0'
              : (c >= 'a' && c <= 'f') ? c - 'a' + 10
              : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                       : -1;
      if (d < 0) fail("expected 4 hexadecimal digits after \\u");
      v = v * 16 + uint32_t(d);
      ++pos_;
    }
    return v;
  }

  std::string string() {
    ++pos_;  // '"'
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) fail("unterminated string");
      const uint8_t c = uint8_t(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) fail("a control character in a string");
      if (c == '\\') {
        ++pos_;
        const char e = peek();
        ++pos_;
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            uint32_t cp = hex4();
            if (cp >= 0xD800 && cp <= 0xDBFF && text_.substr(pos_, 2) == "\\u") {
              pos_ += 2;
              const uint32_t lo = hex4();
              if (lo < 0xDC00 || lo > 0xDFFF) fail("a lone surrogate escape");
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xD800 && cp <= 0xDFFF) {
              fail("a lone surrogate escape");
            }
            append_utf8(cp, out);
            break;
          }
          default: --pos_; fail("unknown escape");
        }
        continue;
      }
      // One UTF-8 character, checked.
      const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
      if (n == 0 || pos_ + size_t(n) > text_.size()) fail("invalid UTF-8");
      uint32_t cp = n == 1 ? c : c & (0x7F >> n);
      for (int i = 1; i < n; ++i) {
        const uint8_t b = uint8_t(text_[pos_ + size_t(i)]);
        if ((b & 0xC0) != 0x80) fail("invalid UTF-8");
        cp = (cp << 6) | (b & 0x3F);
      }
      static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
      if (cp < kMin[n] || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF))
        fail("invalid UTF-8");
      out.append(text_.substr(pos_, size_t(n)));
      pos_ += size_t(n);
    }
  }

  std::string_view text_;
  const JsonLimits& limits_;
  std::string_view what_;
  size_t pos_ = 0;
};

}  // namespace

const Json* Json::find(std::string_view key) const {
  for (auto it = members.rbegin(); it != members.rend(); ++it)
    if (it->first == key) return &it->second;
  return nullptr;
}

double Json::number() const { return std::strtod(text.c_str(), nullptr); }

bool Json::is_integer() const {
  if (type != Type::kNumber) return false;
  if (text.find_first_of(".eE") == std::string::npos) return true;
  const double v = number();
  return std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9007199254740992.0;
}

bool json_equal(const Json& a, const Json& b) {
  if (a.type != b.type) return false;
  switch (a.type) {
    case Json::Type::kNull: return true;
    case Json::Type::kBool: return a.boolean == b.boolean;
    case Json::Type::kNumber: return canonical_number(a) == canonical_number(b);
    case Json::Type::kString: return a.text == b.text;
    case Json::Type::kArray:
      return a.items.size() == b.items.size() &&
             std::equal(a.items.begin(), a.items.end(), b.items.begin(), json_equal);
    case Json::Type::kObject:
      if (a.members.size() != b.members.size()) return false;
      for (const auto& [k, v] : a.members) {
        const Json* w = b.find(k);
        if (w == nullptr || !json_equal(v, *w)) return false;
      }
      return true;
  }
  return false;
}

Json parse_json(std::string_view text, const JsonLimits& limits, std::string_view what) {
  return Reader(text, limits, what).run();
}

std::string canonical_number(const Json& number) {
  const std::string& t = number.text;
  if (t.find_first_of(".eE") == std::string::npos) return t == "-0" ? "0" : t;
  const double v = number.number();
  if (v == 0) return "0";
  if (std::fabs(v) < 9007199254740992.0 && v == std::floor(v)) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, int64_t(v));
    return std::string(buf, r.ptr);
  }
  if (!std::isfinite(v)) return t;  // beyond double's range: kept as written
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round trip
  return std::string(buf, r.ptr);
}

void append_json_string(std::string_view utf8, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (char ch : utf8) {
    const uint8_t c = uint8_t(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

std::string to_json(const Json& v) {
  std::string out;
  switch (v.type) {
    case Json::Type::kNull: return "null";
    case Json::Type::kBool: return v.boolean ? "true" : "false";
    case Json::Type::kNumber: return canonical_number(v);
    case Json::Type::kString: append_json_string(v.text, out); return out;
    case Json::Type::kArray:
      out += '[';
      for (size_t i = 0; i < v.items.size(); ++i) out += (i ? "," : "") + to_json(v.items[i]);
      return out + ']';
    case Json::Type::kObject:
      out += '{';
      for (size_t i = 0; i < v.members.size(); ++i) {
        if (i) out += ',';
        append_json_string(v.members[i].first, out);
        out += ':' + to_json(v.members[i].second);
      }
      return out + '}';
  }
  return out;
}

}  // namespace kvrt::grammar
