// What a KV cache stores: the format of keys and of values (kv/formats.h), and how they are grouped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kv/blocks.h"

namespace kvrt::kv {

enum class KeyAxis : uint8_t {
  kToken,    // groups along head_dim, one token at a time
  kChannel,  // groups along tokens, per channel (KIVI); needs a residual window
};

struct KvConfig {
  Format k_format = Format::kF32;
  Format v_format = Format::kF32;
  int group_size = 0;            // values per quantization group, 8..128 power of two; 0 = min(32, head_dim)
  KeyAxis k_axis = KeyAxis::kToken;
  int residual = 0;              // most recent tokens kept in FP32 before quantization
  bool rotate = false;           // orthonormal Hadamard rotation of K (and Q) and V; head_dim power of two
  float debug_scale_noise = 0;   // negative control for validation tests only: relative error put on scales

  bool is_f32() const { return k_format == Format::kF32 && v_format == Format::kF32; }
  // Canonical name used in reports and validation records, e.g. "k=q4,v=q8,g=32,axis=token,r=0,rot=0".
  std::string name() const;
};

const char* format_name(Format f);           // the format's row name: "f32", "q8", ...
Format parse_format(std::string_view name);  // throws kvrt::Error(kUsage) listing the valid names
const char* key_axis_name(KeyAxis a);
KeyAxis parse_key_axis(std::string_view name);  // "token" or "channel"

}  // namespace kvrt::kv
