// What a KV cache stores: the format of keys and of values (kv/formats.h), and how they are grouped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kv/blocks.h"

namespace kvrt::kv {

enum class KeyAxis : uint8_t {
  kToken,    // groups along head_dim, one token at a time
  kChannel,  // groups along tokens, per channel (KIVI); needs a residual window
};

struct KvConfig {
  Format k_format = Format::kF32;
  Format v_format = Format::kF32;
  int group_size = 0;            // values per quantization group; 0 = the largest that fits, up to 32 (kv/cache_layout.h)
  KeyAxis k_axis = KeyAxis::kToken;
  int residual = 0;              // most recent tokens kept in FP32 before quantization
  bool rotate = false;           // orthonormal Hadamard rotation of K (and Q) and V; head_dim power of two

  bool is_f32() const { return k_format == Format::kF32 && v_format == Format::kF32; }
  // Canonical text (parse_setting reads it back), used in reports and validation records, e.g.
  // "k=q4,v=q8,g=32,axis=token,r=0,rot=0".
  std::string name() const;
};

// The text form of a KV setting: one parser for the CLI (--kv), bench (--settings), the C API
// (kvrt_kv_config_parse) and TOML (validation/settings.toml).
//   setting := field ("," field)*
//   field   := FORMAT                       keys and values in this format ("q8"), first field only
//            | KEY "=" VALUE                k, v (formats), g (group), axis (token | channel),
//                                           r (residual), rot (0 | 1)
//            | KEY "[" LIST "]" "=" VALUE   a field for some layers only (reserved: an error today)
// Fields apply left to right; omitted ones keep their defaults. Commas inside brackets do not
// split fields, so per-layer fields such as layers[0,1,-2,-1]=q8 fit the grammar.
KvConfig parse_setting(std::string_view text);  // kvrt::Error(kUsage) naming the bad field
// One KEY=VALUE field applied to c; KEY may also be a long name (group, k_axis, residual, rotate).
void apply_setting_field(KvConfig& c, std::string_view key, std::string_view value);
// A list of settings separated by ';' (bench --settings), each parsed by parse_setting, with the
// text of each item. A list without ';' whose items have no '=' or whose fields use ':' (the old
// bench form "f32,q8,k=q8:v=q4") is read as comma-separated settings with ':' between fields.
struct SettingText {
  std::string text;
  KvConfig config;
};
std::vector<SettingText> parse_setting_list(std::string_view text);

const char* format_name(Format f);           // the format's row name: "f32", "q8", ...
Format parse_format(std::string_view name);  // throws kvrt::Error(kUsage) listing the valid names
const char* key_axis_name(KeyAxis a);
KeyAxis parse_key_axis(std::string_view name);  // "token" or "channel"

}  // namespace kvrt::kv
