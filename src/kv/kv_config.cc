#include "kv/kv_config.h"

#include <charconv>
#include <string>

#include "common/error.h"
#include "kv/formats.h"

namespace kvrt::kv {

namespace {

[[noreturn]] void bad_field(std::string_view field, const std::string& why) {
  throw Error("KV setting field '" + std::string(field) + "': " + why, ErrorKind::kUsage);
}

int parse_count(std::string_view key, std::string_view value) {
  int v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || v < 0)
    bad_field(std::string(key) + "=" + std::string(value), "needs a non-negative integer");
  return v;
}

bool parse_flag(std::string_view key, std::string_view value) {
  if (value == "1" || value == "true") return true;
  if (value == "0" || value == "false") return false;
  bad_field(std::string(key) + "=" + std::string(value), "needs 0 or 1");
}

// The fields of a setting: canonical key (as KvConfig::name prints it), long name, setter.
struct Field {
  const char* key;
  const char* long_name;
  void (*set)(KvConfig& c, std::string_view key, std::string_view value);
};

const Field kFields[] = {
    {"k", "k", [](KvConfig& c, std::string_view, std::string_view v) { c.k_format = parse_format(v); }},
    {"v", "v", [](KvConfig& c, std::string_view, std::string_view v) { c.v_format = parse_format(v); }},
    {"g", "group", [](KvConfig& c, std::string_view k, std::string_view v) { c.group_size = parse_count(k, v); }},
    {"axis", "k_axis", [](KvConfig& c, std::string_view, std::string_view v) { c.k_axis = parse_key_axis(v); }},
    {"r", "residual", [](KvConfig& c, std::string_view k, std::string_view v) { c.residual = parse_count(k, v); }},
    {"rot", "rotate", [](KvConfig& c, std::string_view k, std::string_view v) { c.rotate = parse_flag(k, v); }},
};

// Splits on `sep` outside [brackets].
std::vector<std::string_view> split_fields(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] == '[') ++depth;
    if (i < text.size() && text[i] == ']') --depth;
    if (i == text.size() || (text[i] == sep && depth == 0)) {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

KvConfig parse_fields(std::string_view text, char sep) {
  if (text.empty()) throw Error("empty KV setting (write a format such as q8, or k=FMT,v=FMT,...)", ErrorKind::kUsage);
  KvConfig c;
  const std::vector<std::string_view> fields = split_fields(text, sep);
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string_view f = fields[i];
    const size_t eq = f.find('=');
    if (eq == std::string_view::npos) {
      if (i > 0) bad_field(f, "a bare format name must come first (or write k=" + std::string(f) + " or v=" + std::string(f) + ")");
      c.k_format = c.v_format = parse_format(f);
      continue;
    }
    const std::string_view key = f.substr(0, eq);
    if (key.find('[') != std::string_view::npos) bad_field(f, "per-layer fields are not supported yet");
    apply_setting_field(c, key, f.substr(eq + 1));
  }
  return c;
}

}  // namespace

const char* format_name(Format f) { return format_traits(f).name; }

Format parse_format(std::string_view name) { return format_traits(name).format; }

const char* key_axis_name(KeyAxis a) { return a == KeyAxis::kToken ? "token" : "channel"; }

KeyAxis parse_key_axis(std::string_view name) {
  if (name == "token") return KeyAxis::kToken;
  if (name == "channel") return KeyAxis::kChannel;
  throw Error("unknown key axis '" + std::string(name) + "' (valid: token, channel)", ErrorKind::kUsage);
}

void apply_setting_field(KvConfig& c, std::string_view key, std::string_view value) {
  for (const Field& f : kFields) {
    if (key == f.key || key == f.long_name) return f.set(c, key, value);
  }
  std::string keys;
  for (const Field& f : kFields) keys += (keys.empty() ? "" : ", ") + std::string(f.key);
  throw Error("unknown KV setting key '" + std::string(key) + "' (expected " + keys + ")", ErrorKind::kUsage);
}

KvConfig parse_setting(std::string_view text) { return parse_fields(text, ','); }

std::vector<SettingText> parse_setting_list(std::string_view text) {
  const bool old_form = text.find(';') == std::string_view::npos &&
                        (text.find(':') != std::string_view::npos || text.find('=') == std::string_view::npos);
  std::vector<SettingText> out;
  for (std::string_view item : split_fields(text, old_form ? ',' : ';')) out.push_back({std::string(item), parse_fields(item, old_form ? ':' : ',')});
  return out;
}

std::string KvConfig::name() const {
  std::string s = std::string("k=") + format_name(k_format) + ",v=" + format_name(v_format) +
                  ",g=" + std::to_string(group_size) + ",axis=" + key_axis_name(k_axis) +
                  ",r=" + std::to_string(residual) + ",rot=" + (rotate ? "1" : "0");
  return s;
}

}  // namespace kvrt::kv
