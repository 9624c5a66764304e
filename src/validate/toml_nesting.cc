// A bound on how deeply a TOML text nests, checked before toml++ parses it: toml++ builds and
// frees nested tables recursively, and a key of tens of thousands of dotted parts overflows the
// stack (its own limit covers nested arrays and inline tables, not dotted keys).
#include <string>
#include <vector>

#include "common/error.h"
#include "validate/toml_util.h"

namespace kvrt::validate {
namespace {

// Walks the text outside strings and comments. The nesting at a point is about the number of
// tables or arrays a value there sits in: every open '[' or '{' counts one plus the dotted parts
// of the key before it, and the key being read counts its parts (a.b.c: three). A dot in a value
// (a float, a time) counts as at most one part and a table header's brackets as one more level,
// so the count never undercounts and overcounts by at most two.
class NestingScan {
 public:
  NestingScan(std::string_view text, const std::string& path, const std::string& what)
      : text_(text), path_(path), what_(what) {}

  void run() {
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (c == '"' || c == '\'') {
        skip_string(c);
        continue;
      }
      if (c == '#') {
        while (at_ < text_.size() && text_[at_] != '\n') ++at_;
        continue;
      }
      step(c);
      ++at_;
    }
  }

 private:
  void step(char c) {
    switch (c) {
      case '\n': ++line_; [[fallthrough]];
      case '=':
      case ',': dots_ = 0; break;
      case '.':
        ++dots_;
        check();
        break;
      case '[':
      case '{':
        open_.push_back(dots_ + 1);
        depth_ += dots_ + 1;
        dots_ = 0;
        check();
        break;
      case ']':
      case '}':
        if (!open_.empty()) {
          depth_ -= open_.back();
          open_.pop_back();
        }
        dots_ = 0;
        break;
      default: break;
    }
  }

  void check() const {
    if (depth_ + dots_ + 1 <= kMaxTomlNesting) return;
    throw Error(path_ + ":" + std::to_string(line_) + ": " + what_ +
                " nests keys, tables or arrays more than " + std::to_string(kMaxTomlNesting) +
                " levels deep");
  }

  // Skips a basic ("...", with escapes) or literal ('...') string, one-line or multi-line.
  void skip_string(char quote) {
    const std::string_view triple = quote == '"' ? R"(""")" : "'''";
    const bool multi = text_.substr(at_, 3) == triple;
    at_ += multi ? 3 : 1;
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (c == '\\' && quote == '"') {
        if (at_ + 1 < text_.size() && text_[at_ + 1] == '\n') ++line_;
        at_ += 2;
        continue;
      }
      if (c == '\n') {
        ++line_;
        if (!multi) return;  // toml++ reports the unterminated string
      }
      if (c == quote && (!multi || text_.substr(at_, 3) == triple)) {
        at_ += multi ? 3 : 1;
        while (multi && at_ < text_.size() && text_[at_] == quote)
          ++at_;  // up to two quotes end the content
        return;
      }
      ++at_;
    }
  }

  std::string_view text_;
  const std::string& path_;
  const std::string& what_;
  size_t at_ = 0;
  int line_ = 1;
  size_t dots_ = 0;   // dots since the last '=', ',', bracket or line end
  size_t depth_ = 0;  // nesting of the open brackets, with the key parts that led into them
  std::vector<size_t> open_;
};

}  // namespace

void check_toml_nesting(std::string_view text, const std::string& path, const std::string& what) {
  NestingScan(text, path, what).run();
}

}  // namespace kvrt::validate
