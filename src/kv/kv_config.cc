#include "kv/kv_config.h"

#include <string>

#include "common/error.h"
#include "kv/formats.h"

namespace kvrt::kv {

const char* format_name(Format f) { return format_traits(f).name; }

Format parse_format(std::string_view name) { return format_traits(name).format; }

const char* key_axis_name(KeyAxis a) { return a == KeyAxis::kToken ? "token" : "channel"; }

KeyAxis parse_key_axis(std::string_view name) {
  if (name == "token") return KeyAxis::kToken;
  if (name == "channel") return KeyAxis::kChannel;
  throw Error("unknown key axis '" + std::string(name) + "' (valid: token, channel)", ErrorKind::kUsage);
}

std::string KvConfig::name() const {
  std::string s = std::string("k=") + format_name(k_format) + ",v=" + format_name(v_format) +
                  ",g=" + std::to_string(group_size) + ",axis=" + key_axis_name(k_axis) +
                  ",r=" + std::to_string(residual) + ",rot=" + (rotate ? "1" : "0");
  if (debug_scale_noise != 0) s += ",noise=" + std::to_string(debug_scale_noise);
  return s;
}

}  // namespace kvrt::kv
