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
    v.allow_only({"label", "k", "v", "group", "k_axis", "residual", "rotate"});
    Setting s;
    s.label = v.required_string("label");
    try {
      s.kv.k_format = kv::parse_format(v.string("k").value_or("f32"));
      s.kv.v_format = kv::parse_format(v.string("v").value_or("f32"));
      s.kv.k_axis = kv::parse_key_axis(v.string("k_axis").value_or("token"));
    } catch (const Error& e) {
      v.fail(nullptr, e.what());
    }
    s.kv.group_size = int(v.integer("group").value_or(0));
    s.kv.residual = int(v.integer("residual").value_or(0));
    if (s.kv.group_size < 0 || s.kv.residual < 0) v.fail(nullptr, "'group' and 'residual' must not be negative");
    s.kv.rotate = v.boolean("rotate").value_or(false);
    out.push_back(s);
  }
  return out;
}

Setting negative_control(float scale_noise) {
  Setting s;
  s.label = "NEG CONTROL";
  s.kv.k_format = kv::Format::kQ8;  // q8/q8 passes undamaged, so only the damage can fail it
  s.kv.v_format = kv::Format::kQ8;
  s.kv.debug_scale_noise = scale_noise;
  return s;
}

std::string setting_label(const kv::KvConfig& kv) {
  std::string label = std::string(kv::format_name(kv.k_format)) + "/" + kv::format_name(kv.v_format);
  if (kv.k_axis == kv::KeyAxis::kChannel) label += " ch";
  if (kv.residual > 0) label += " r" + std::to_string(kv.residual);
  if (kv.rotate) label += " rot";
  return label;
}

}  // namespace kvrt::validate
