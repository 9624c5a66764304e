// What a KV cache stores: the format of keys and of values (kv/formats.h), and how they are
// grouped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kv/blocks.h"
#include "kv/tiles.h"

namespace kvrt::kv {

enum class KeyAxis : uint8_t {
  kToken,    // groups along head_dim, one token at a time
  kChannel,  // groups along tokens, per channel (KIVI); needs a residual window
};

// One side of one layer stored in its own format: a per-layer field k[LIST]=, v[LIST]= or
// layers[LIST]= (both sides) expands to one entry per listed layer and side.
struct LayerFormat {
  int layer = 0;  // negative counts from the last layer (-1 = last) until resolve_layers
  TileRole side = TileRole::kKey;
  Format format = Format::kF32;
};

struct KvConfig {
  Format k_format = Format::kF32;
  Format v_format = Format::kF32;
  int group_size =
      0;  // values per quantization group; 0 = the largest that fits, up to 32 (kv/cache_layout.h)
  KeyAxis k_axis = KeyAxis::kToken;
  int residual = 0;     // most recent tokens kept in FP32 before quantization
  bool rotate = false;  // orthonormal Hadamard rotation of K (and Q) and V (kv/rotation.h); the
                        // text form defaults it on for quantized settings (SettingReader)
  int sinks = 0;        // first positions kept in FP32 (attention sinks), K and V
  std::vector<LayerFormat> layers;  // per-layer formats over k_format / v_format; later entries win

  // Every layer's keys and values are f32 (sinks and windows change nothing then).
  bool is_f32() const;
  // The format of one side of layer `layer` (a resolved index, see resolve_layers).
  Format format(TileRole side, int layer) const;
  // Canonical text (parse_setting reads it back), used in reports and validation records, e.g.
  // "k=q4,v=q8,g=32,axis=token,r=0,rot=0"; then ",sinks=N" when N > 0 and the per-layer formats
  // that differ from k and v, grouped by format: ",layers[0,3]=q8,k[1]=f32" (ascending indices;
  // layers[...] where both sides of a layer take that format).
  std::string name() const;
};

// The setting with its layer indices made absolute for a model of n_layers layers: negative
// indices count from the last layer, one entry per layer and side (the last given), entries equal
// to k_format / v_format dropped, sorted. kvrt::Error(kUsage) names an index outside the model.
KvConfig resolve_layers(const KvConfig& c, int n_layers);

// The text form of a KV setting: one parser for the CLI (--kv), bench (--settings), the C API
// (kvrt_kv_config_parse) and TOML (validation/settings.toml).
//   setting := field ("," field)*
//   field   := FORMAT                       keys and values in this format ("q8"), first field only
//            | KEY "=" VALUE                k, v (formats), g (group), axis (token | channel),
//                                           r (residual), rot (0 | 1), sinks (FP32 first positions)
//            | KEY "[" LIST "]" "=" FORMAT  k, v or layers (both sides): the format of some layers;
//                                           LIST := INDEX ("," INDEX)*, negative from the last
//                                           layer
// Fields apply left to right; omitted ones keep their defaults. A per-layer field overrides k and
// v for its layers wherever it stands; of two per-layer fields for one layer the later wins.
// Commas inside brackets do not split fields: k=q4,v=q4,layers[0,1,-2,-1]=q8.
// rot not given: on when the setting quantizes anything (SettingReader::finish).
KvConfig parse_setting(std::string_view text);  // kvrt::Error(kUsage) naming the bad field
// One KEY=VALUE field applied to c; KEY may also be a long name (group, k_axis, residual, rotate).
void apply_setting_field(KvConfig& c, std::string_view key, std::string_view value);

// A setting read in pieces (--kv and the single-field flags, a settings file's kv and keys), left
// to right as parse_setting reads its fields; finish() then settles the rotation once every field
// is known: unless a rot field was given, a setting that quantizes any side of any layer is
// rotated, one that stores only f32 is not. Canonical names always spell rot, so a name read back
// keeps its rotation whatever the default.
class SettingReader {
 public:
  void text(std::string_view setting);                       // parse_setting's fields
  void field(std::string_view key, std::string_view value);  // apply_setting_field's
  bool rotation_given() const { return rotation_given_; }
  KvConfig finish() const;

 private:
  KvConfig c_;
  bool rotation_given_ = false;
};
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
