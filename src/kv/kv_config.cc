#include "kv/kv_config.h"

#include <algorithm>
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
    {"k", "k",
     [](KvConfig& c, std::string_view, std::string_view v) { c.k_format = parse_format(v); }},
    {"v", "v",
     [](KvConfig& c, std::string_view, std::string_view v) { c.v_format = parse_format(v); }},
    {"g", "group",
     [](KvConfig& c, std::string_view k, std::string_view v) { c.group_size = parse_count(k, v); }},
    {"axis", "k_axis",
     [](KvConfig& c, std::string_view, std::string_view v) { c.k_axis = parse_key_axis(v); }},
    {"r", "residual",
     [](KvConfig& c, std::string_view k, std::string_view v) { c.residual = parse_count(k, v); }},
    {"rot", "rotate",
     [](KvConfig& c, std::string_view k, std::string_view v) { c.rotate = parse_flag(k, v); }},
    {"sinks", "sinks",
     [](KvConfig& c, std::string_view k, std::string_view v) { c.sinks = parse_count(k, v); }},
};

// The per-layer keys and the sides they set.
struct LayerKey {
  const char* key;
  bool keys, values;
};
const LayerKey kLayerKeys[] = {{"layers", true, true}, {"k", true, false}, {"v", false, true}};

// KEY[LIST]=FORMAT: one entry per listed layer and side.
void apply_layer_field(KvConfig& c, std::string_view field, std::string_view key,
                       std::string_view value) {
  const size_t open = key.find('['), close = key.find(']');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    bad_field(field, "a layer list is written KEY[i,j,...]=FORMAT");
  if (close + 1 != key.size()) bad_field(field, "nothing may follow ']' but '=FORMAT'");
  const std::string_view name = key.substr(0, open), list = key.substr(open + 1, close - open - 1);
  const LayerKey* lk = nullptr;
  for (const LayerKey& k : kLayerKeys)
    if (name == k.key) lk = &k;
  if (!lk) bad_field(field, "only k, v and layers take a layer list");
  if (list.empty()) bad_field(field, "needs layer indices inside [], e.g. layers[0,-1]=q8");
  const Format format = parse_format(value);
  size_t start = 0;
  while (start <= list.size()) {
    const size_t end = std::min(list.find(',', start), list.size());
    const std::string_view item = list.substr(start, end - start);
    int layer = 0;
    const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), layer);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size())
      bad_field(field, "'" + std::string(item) +
                           "' is not a layer index (an integer; -1 is the last layer)");
    if (lk->keys) c.layers.push_back({layer, TileRole::kKey, format});
    if (lk->values) c.layers.push_back({layer, TileRole::kValue, format});
    start = end + 1;
  }
}

// One entry per (layer, side), the last given, without those equal to the side's own format,
// sorted by layer then side.
std::vector<LayerFormat> normalized(const KvConfig& c, std::vector<LayerFormat> in) {
  std::vector<LayerFormat> out;
  for (auto it = in.rbegin(); it != in.rend(); ++it) {
    const bool seen = std::any_of(out.begin(), out.end(), [&](const LayerFormat& o) {
      return o.layer == it->layer && o.side == it->side;
    });
    if (!seen) out.push_back(*it);
  }
  const auto own = [&](TileRole side) { return side == TileRole::kKey ? c.k_format : c.v_format; };
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const LayerFormat& l) { return l.format == own(l.side); }),
            out.end());
  std::sort(out.begin(), out.end(), [](const LayerFormat& a, const LayerFormat& b) {
    return a.layer != b.layer ? a.layer < b.layer : a.side < b.side;
  });
  return out;
}

std::string index_list(const std::vector<int>& idx) {
  std::string s;
  for (int i : idx) s += (s.empty() ? "" : ",") + std::to_string(i);
  return "[" + s + "]";
}

// ",layers[..]=F,k[..]=F,v[..]=F" for each format F with per-layer entries, in format order.
std::string layer_fields(const std::vector<LayerFormat>& layers) {
  std::string s;
  for (int fi = 0; fi < kNumFormats; ++fi) {
    const Format f = static_cast<Format>(fi);
    std::vector<int> both, keys, values;
    for (const LayerFormat& l : layers) {
      if (l.format != f) continue;
      const bool other = std::any_of(layers.begin(), layers.end(), [&](const LayerFormat& o) {
        return o.layer == l.layer && o.side != l.side && o.format == f;
      });
      if (other && l.side == TileRole::kKey) both.push_back(l.layer);
      if (!other) (l.side == TileRole::kKey ? keys : values).push_back(l.layer);
    }
    const std::string name = format_name(f);
    if (!both.empty()) s += ",layers" + index_list(both) + "=" + name;
    if (!keys.empty()) s += ",k" + index_list(keys) + "=" + name;
    if (!values.empty()) s += ",v" + index_list(values) + "=" + name;
  }
  return s;
}

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

void read_fields(SettingReader& r, std::string_view text, char sep) {
  if (text.empty())
    throw Error("empty KV setting (write a format such as q8, or k=FMT,v=FMT,...)",
                ErrorKind::kUsage);
  const std::vector<std::string_view> fields = split_fields(text, sep);
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string_view f = fields[i];
    const size_t eq = f.find('=');
    if (eq == std::string_view::npos) {
      if (f.find('[') != std::string_view::npos)
        bad_field(f, "a per-layer field needs =FORMAT, e.g. layers[0,-1]=q8");
      if (i > 0)
        bad_field(f, "a bare format name must come first (or write k=" + std::string(f) +
                         " or v=" + std::string(f) + ")");
      r.field("k", f);
      r.field("v", f);
      continue;
    }
    r.field(f.substr(0, eq), f.substr(eq + 1));
  }
}

KvConfig parse_fields(std::string_view text, char sep) {
  SettingReader r;
  read_fields(r, text, sep);
  return r.finish();
}

}  // namespace

const char* format_name(Format f) { return format_traits(f).name; }

Format parse_format(std::string_view name) { return format_traits(name).format; }

const char* key_axis_name(KeyAxis a) { return a == KeyAxis::kToken ? "token" : "channel"; }

KeyAxis parse_key_axis(std::string_view name) {
  if (name == "token") return KeyAxis::kToken;
  if (name == "channel") return KeyAxis::kChannel;
  throw Error("unknown key axis '" + std::string(name) + "' (valid: token, channel)",
              ErrorKind::kUsage);
}

void apply_setting_field(KvConfig& c, std::string_view key, std::string_view value) {
  for (const Field& f : kFields) {
    if (key == f.key || key == f.long_name) return f.set(c, key, value);
  }
  std::string keys;
  for (const Field& f : kFields) keys += (keys.empty() ? "" : ", ") + std::string(f.key);
  throw Error("unknown KV setting key '" + std::string(key) + "' (expected " + keys + ")",
              ErrorKind::kUsage);
}

KvConfig parse_setting(std::string_view text) { return parse_fields(text, ','); }

void SettingReader::text(std::string_view setting) { read_fields(*this, setting, ','); }

void SettingReader::field(std::string_view key, std::string_view value) {
  if (key.find('[') != std::string_view::npos || key.find(']') != std::string_view::npos) {
    apply_layer_field(c_, std::string(key) + "=" + std::string(value), key, value);
    return;
  }
  apply_setting_field(c_, key, value);
  if (key == "rot" || key == "rotate") rotation_given_ = true;
}

KvConfig SettingReader::finish() const {
  KvConfig c = c_;
  if (!rotation_given_) c.rotate = !c.is_f32();
  return c;
}

std::vector<SettingText> parse_setting_list(std::string_view text) {
  const bool old_form =
      text.find(';') == std::string_view::npos &&
      (text.find(':') != std::string_view::npos || text.find('=') == std::string_view::npos);
  std::vector<SettingText> out;
  for (std::string_view item : split_fields(text, old_form ? ',' : ';'))
    out.push_back({std::string(item), parse_fields(item, old_form ? ':' : ',')});
  return out;
}

bool KvConfig::is_f32() const {
  return k_format == Format::kF32 && v_format == Format::kF32 &&
         std::all_of(layers.begin(), layers.end(),
                     [](const LayerFormat& l) { return l.format == Format::kF32; });
}

Format KvConfig::format(TileRole side, int layer) const {
  Format f = side == TileRole::kKey ? k_format : v_format;
  for (const LayerFormat& l : layers)
    if (l.layer == layer && l.side == side) f = l.format;
  return f;
}

std::string KvConfig::name() const {
  std::string s = std::string("k=") + format_name(k_format) + ",v=" + format_name(v_format) +
                  ",g=" + std::to_string(group_size) + ",axis=" + key_axis_name(k_axis) +
                  ",r=" + std::to_string(residual) + ",rot=" + (rotate ? "1" : "0");
  if (sinks > 0) s += ",sinks=" + std::to_string(sinks);
  return s + layer_fields(normalized(*this, layers));
}

KvConfig resolve_layers(const KvConfig& c, int n_layers) {
  KvConfig r = c;
  for (LayerFormat& l : r.layers) {
    if (l.layer < -n_layers || l.layer >= n_layers)
      throw Error("KV setting layer index " + std::to_string(l.layer) + " is outside the model's " +
                      std::to_string(n_layers) + " layers (0.." + std::to_string(n_layers - 1) +
                      ", or -" + std::to_string(n_layers) + "..-1 from the last)",
                  ErrorKind::kUsage);
    if (l.layer < 0) l.layer += n_layers;
  }
  r.layers = normalized(r, r.layers);
  return r;
}

}  // namespace kvrt::kv
