#include "validate/settings.h"

#include <cstdlib>

#include "common/data_dir.h"
#include "common/error.h"
#include "validate/toml_util.h"

namespace kvrt::validate {

std::string default_validation_dir() {
  if (const char* d = std::getenv("KVRT_VALIDATION_DIR"); d && *d) return d;
  return data_dir() + "/validation";
}

namespace {

// A setting from `kv = "SETTING"` (kv::parse_setting) and then the single-field keys, each read
// by the same field parser; errors name the line of the key.
kv::KvConfig read_kv(const TomlView& v) {
  kv::SettingReader r;
  const auto field = [&](std::string_view key, const std::optional<std::string>& value) {
    if (!value) return;
    try {
      if (key == "kv") r.text(*value);
      else r.field(key, *value);
    } catch (const Error& e) {
      v.fail_key(key, e.what());
    }
  };
  const auto text = [](std::optional<int64_t> x) {
    return x ? std::optional<std::string>(std::to_string(*x)) : std::nullopt;
  };
  field("kv", v.string("kv"));
  for (const char* key : {"k", "v", "k_axis"}) field(key, v.string(key));
  for (const char* key : {"group", "residual", "sinks"}) field(key, text(v.integer(key)));
  if (const std::optional<bool> r = v.boolean("rotate")) field("rotate", *r ? "1" : "0");
  return r.finish();
}

}  // namespace

std::vector<Setting> read_settings(const std::string& path) {
  const toml::table doc = parse_toml_file(path, "settings file");
  const TomlView top(path, doc, "");
  top.allow_only({"setting"});
  const toml::array* arr = top.array("setting");
  if (!arr || arr->empty()) top.fail(nullptr, "defines no [[setting]]");
  std::vector<Setting> out;
  for (const auto& node : *arr) {
    if (!node.is_table()) top.fail(&node, "each [[setting]] must be a table");
    const TomlView v(path, *node.as_table(), "setting");
    v.allow_only(
        {"label", "kv", "k", "v", "group", "k_axis", "residual", "rotate", "sinks", "matmul"});
    Setting s;
    s.label = v.required_string("label");
    s.kv = read_kv(v);
    if (const std::optional<std::string> m = v.string("matmul")) {
      try {
        s.matmul = ops::parse_matmul_precision(*m);
      } catch (const Error& e) {
        v.fail_key("matmul", e.what());
      }
    }
    out.push_back(s);
  }
  return out;
}

Setting negative_control(float scale_noise) {
  Setting s;
  s.label = "NEG CONTROL";
  s.kv.k_format = kv::Format::kQ8;  // q8/q8 passes undamaged, so only the damage can fail it
  s.kv.v_format = kv::Format::kQ8;
  s.scale_noise = scale_noise;
  return s;
}

std::string setting_label(const kv::KvConfig& kv, ops::MatmulPrecision matmul) {
  std::string label =
      std::string(kv::format_name(kv.k_format)) + "/" + kv::format_name(kv.v_format);
  if (kv.k_axis == kv::KeyAxis::kChannel) label += " ch";
  if (kv.residual > 0) label += " r" + std::to_string(kv.residual);
  if (kv.rotate != !kv.is_f32())
    label += kv.rotate ? " rot" : " norot";  // unlike the text form's default
  if (kv.sinks > 0) label += " sinks" + std::to_string(kv.sinks);
  const std::string name = kv.name();  // per-layer formats follow the fields of every setting
  if (const size_t at = name.find('['); at != std::string::npos)
    label += " " + name.substr(name.rfind(',', at) + 1);
  if (matmul != ops::MatmulPrecision::kF32)
    label += std::string(" ") + ops::matmul_precision_name(matmul);
  return label;
}

}  // namespace kvrt::validate
