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

// Parses a TOML file; a missing, special or over-large file (limit kMaxTomlFileBytes) or a syntax
// error is a kvrt::Error(kInput), "FILE:LINE:COL: description" for syntax. `what` names the kind
// of file in the message.
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
  std::optional<double> number(std::string_view key) const;  // integer or float
  std::optional<bool> boolean(std::string_view key) const;
  std::optional<std::vector<std::string>> strings(std::string_view key) const;
  std::optional<std::vector<double>> numbers(std::string_view key) const;
  std::optional<std::vector<int64_t>> integers(std::string_view key) const;

  std::string required_string(std::string_view key) const;
  const toml::table* table(std::string_view key) const;    // nullptr when absent
  const toml::array* array(std::string_view key) const;    // nullptr when absent
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
