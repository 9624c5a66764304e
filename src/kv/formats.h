// One row per KV format: its name, block geometry and reference codec (see kv/blocks.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kv/kv_config.h"

namespace kvrt::kv {

struct FormatTraits {
  Format format;
  const char* name;
  int bits;             // bits per stored value
  size_t header_bytes;  // scale (and minimum) bytes per block; 0 for f32
  // Reference codecs of a row of n values (n a multiple of group) as blocks of `group` values.
  void (*quantize_ref)(const float* x, int n, int group, uint8_t* row);
  void (*dequantize_ref)(const uint8_t* row, int n, int group, float* x);

  size_t block_bytes(int group) const { return header_bytes + static_cast<size_t>(group) * bits / 8; }
  size_t row_bytes(int n, int group) const { return static_cast<size_t>(n / group) * block_bytes(group); }
};

const FormatTraits& format_traits(Format f);

}  // namespace kvrt::kv
