// Strict TOML reading for validation data (thresholds, case manifests, records): every error
// names the file and line, every unknown key and wrong type is an error, never ignored.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

namespace kvrt::validate {

// Deepest nesting of tables and arrays a TOML file may have, counting each part of a dotted key
// (a.b.c = 1 nests three deep). kvrt's own files nest at most four deep.
constexpr size_t kMaxTomlNesting = 64;

// Throws kvrt::Error(kInput) "FILE:LINE: <what> nests ... more than 64 levels deep" when `text`
// nests deeper than kMaxTomlNesting. A cheap scan, run before toml++ parses, because toml++
// recurses once per level and a deep enough file overflows the stack.
void check_toml_nesting(std::string_view text, const std::string& path, const std::string& what);

// Parses a TOML file; a missing, special or over-large file (limit kMaxTomlFileBytes), nesting
// deeper than kMaxTomlNesting or a syntax error is a kvrt::Error(kInput), "FILE:LINE:COL:
// description" for syntax. `what` names the kind of file in the message.
toml::table parse_toml_file(const std::string& path, const std::string& what);
// The same for text already read from `path`.
toml::table parse_toml(const std::string& text, const std::string& path, const std::string& what);

// A table inside a parsed file, for typed access with file:line errors.
class TomlView {
 public:
  TomlView(const std::string& file, const toml::table& table, std::string where)
      : file_(file), table_(table), where_(std::move(where)) {}

  // Throws naming the line of the first key not in `allowed`.
  void allow_only(std::initializer_list<std::string_view> allowed) const;

  bool has(std::string_view key) const { return table_.contains(key); }
  std::optional<std::string> string(std::string_view key) const;
  std::optional<int64_t> integer(std::string_view key) const;
  // An integer from min to max, so that a value is never narrowed.
  std::optional<int> integer_in(std::string_view key, int min, int max) const;
  std::optional<double> number(std::string_view key) const;  // integer or float
  std::optional<bool> boolean(std::string_view key) const;
  std::optional<std::vector<std::string>> strings(std::string_view key) const;
  std::optional<std::vector<double>> numbers(std::string_view key) const;
  std::optional<std::vector<int64_t>> integers(std::string_view key) const;

  std::string required_string(std::string_view key) const;
  const toml::table* table(std::string_view key) const;  // nullptr when absent
  const toml::array* array(std::string_view key) const;  // nullptr when absent
  TomlView sub(std::string_view key, const toml::table& t) const;

  // "FILE:LINE: <where>: message" for the node (or the table when the node has no source).
  [[noreturn]] void fail(const toml::node* node, const std::string& message) const;
  [[noreturn]] void fail_key(std::string_view key, const std::string& message) const;
  const std::string& file() const { return file_; }
  const toml::table& raw() const { return table_; }
  int line() const { return int(table_.source().begin.line); }

 private:
  const std::string& file_;
  const toml::table& table_;
  std::string where_;
};

// Quotes a string for writing TOML by hand (basic string with escapes).
std::string toml_quote(std::string_view s);

}  // namespace kvrt::validate
