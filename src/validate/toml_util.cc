#include "validate/toml_util.h"

#include "common/error.h"
#include "common/regular_file.h"

namespace kvrt::validate {

toml::table parse_toml_file(const std::string& path, const std::string& what) {
  return parse_toml(read_regular_file(path, what, kMaxTomlFileBytes), path, what);
}

toml::table parse_toml(const std::string& text, const std::string& path, const std::string& what) {
  check_toml_nesting(text, path, what);
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw Error(path + ":" + std::to_string(b.line) + ":" + std::to_string(b.column) + ": " + what +
                " is not valid TOML: " + std::string(e.description()));
  }
}

void TomlView::fail(const toml::node* node, const std::string& message) const {
  const int line =
      node && node->source().begin.line ? int(node->source().begin.line) : this->line();
  throw Error(file_ + ":" + std::to_string(line) + ": " + (where_.empty() ? "" : where_ + ": ") +
              message);
}

void TomlView::fail_key(std::string_view key, const std::string& message) const {
  fail(table_.get(key), "'" + std::string(key) + "' " + message);
}

void TomlView::allow_only(std::initializer_list<std::string_view> allowed) const {
  for (const auto& [key, node] : table_) {
    bool ok = false;
    for (auto a : allowed) ok = ok || key.str() == a;
    if (ok) continue;
    std::string list;
    for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    const int line =
        key.source().begin.line ? int(key.source().begin.line) : int(node.source().begin.line);
    throw Error(file_ + ":" + std::to_string(line) + ": " + (where_.empty() ? "" : where_ + ": ") +
                "unknown key '" + std::string(key.str()) + "' (expected one of: " + list + ")");
  }
}

std::optional<std::string> TomlView::string(std::string_view key) const {
  const toml::node* n = table_.get(key);
  if (!n) return std::nullopt;
  if (!n->is_string()) fail_key(key, "must be a string");
  return n->as_string()->get();
}

std::optional<int64_t> TomlView::integer(std::string_view key) const {
  const toml::node* n = table_.get(key);
  if (!n) return std::nullopt;
  if (!n->is_integer()) fail_key(key, "must be an integer");
  return n->as_integer()->get();
}

std::optional<int> TomlView::integer_in(std::string_view key, int min, int max) const {
  const std::optional<int64_t> x = integer(key);
  if (x && (*x < min || *x > max))
    fail_key(key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
  return x ? std::optional<int>(int(*x)) : std::nullopt;
}

std::optional<double> TomlView::number(std::string_view key) const {
  const toml::node* n = table_.get(key);
  if (!n) return std::nullopt;
  if (n->is_integer()) return double(n->as_integer()->get());
  if (!n->is_floating_point()) fail_key(key, "must be a number");
  return n->as_floating_point()->get();
}

std::optional<bool> TomlView::boolean(std::string_view key) const {
  const toml::node* n = table_.get(key);
  if (!n) return std::nullopt;
  if (!n->is_boolean()) fail_key(key, "must be true or false");
  return n->as_boolean()->get();
}

std::optional<std::vector<std::string>> TomlView::strings(std::string_view key) const {
  const toml::array* a = array(key);
  if (!a) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& e : *a) {
    if (!e.is_string()) fail(&e, "'" + std::string(key) + "' must be an array of strings");
    out.push_back(e.as_string()->get());
  }
  return out;
}

std::optional<std::vector<double>> TomlView::numbers(std::string_view key) const {
  const toml::array* a = array(key);
  if (!a) return std::nullopt;
  std::vector<double> out;
  for (const auto& e : *a) {
    if (e.is_integer()) out.push_back(double(e.as_integer()->get()));
    else if (e.is_floating_point()) out.push_back(e.as_floating_point()->get());
    else fail(&e, "'" + std::string(key) + "' must be an array of numbers");
  }
  return out;
}

std::optional<std::vector<int64_t>> TomlView::integers(std::string_view key) const {
  const toml::array* a = array(key);
  if (!a) return std::nullopt;
  std::vector<int64_t> out;
  for (const auto& e : *a) {
    if (!e.is_integer()) fail(&e, "'" + std::string(key) + "' must be an array of integers");
    out.push_back(e.as_integer()->get());
  }
  return out;
}

std::string TomlView::required_string(std::string_view key) const {
  auto s = string(key);
  if (!s) fail(nullptr, "missing required key '" + std::string(key) + "'");
  return *s;
}

const toml::table* TomlView::table(std::string_view key) const {
  const toml::node* n = table_.get(key);
  if (!n) return nullptr;
  if (!n->is_table()) fail_key(key, "must be a table");
  return n->as_table();
}

const toml::array* TomlView::array(std::string_view key) const {
  const toml::node* n = table_.get(key);
  if (!n) return nullptr;
  if (!n->is_array()) fail_key(key, "must be an array");
  return n->as_array();
}

TomlView TomlView::sub(std::string_view key, const toml::table& t) const {
  return TomlView(file_, t, where_.empty() ? std::string(key) : where_ + "." + std::string(key));
}

std::string toml_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace kvrt::validate
