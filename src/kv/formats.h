// One row per KV format, consulted by every caller (cache, attention, settings, memory plans):
// its name, code geometry, scale type, reference codec and its kernel slot (whose dot_channel
// reads the code rows of its channel tiles). The rows are built from the descriptors of kv/blocks.h
// (kv/formats.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kv/blocks.h"
#include "kv/tiles.h"

namespace kvrt::kv {

enum class ScaleType : uint8_t {
  kNone,
  kF16
};  // f32 has no scales; the quantized formats' are FP16 (kv/blocks.h)
constexpr size_t scale_bytes(ScaleType t) { return t == ScaleType::kF16 ? sizeof(Scale) : 0; }

struct FormatTraits {
  Format format;         // also the slot of its kernels in simd::Kernels::format
  const char* name;      // the same in code, CLI, TOML and records: "f32", "q8", ...
  int bits;              // bits per stored value (32 for f32)
  int planes;            // scale planes per group: 0 (f32), 1 (scale), 2 (scale, minimum)
  int code_bias;         // stored code - q (kv/blocks.h kCodeBias)
  const int8_t* levels;  // q4n: q = levels[stored code] (kv/blocks.h kQ4NLevels); else null
  ScaleType scale_type;
  // Token tiles need head_dim and the group to be multiples of these (kv/tiles.h key runs are
  // 4 dims per slot of a byte, 32 dims for q3's high-bit plane; the value kernels take 8 dims at a
  // time). 1 for f32.
  int key_unit, value_unit;
  // Reference codec of one group of `group` values (kv/blocks.h); null for f32.
  void (*quantize_group)(const float* x, int group, uint8_t* block);
  void (*dequantize_group)(const uint8_t* block, int group, float* x);
  // Moves token t of a tile from a row of blocks (kv/tiles.h tile_store_row); null for f32.
  void (*tile_store_row)(const TileFormat& f, const uint8_t* row, int t, uint8_t* tile);
  // Codec of the channel-axis key tiles of kv/channel_tile.h; null for f32.
  void (*channel_quantize)(const float* x, int group, int head_dim,
                           uint8_t* tile);  // x [G][head_dim]
  void (*channel_dequantize_row)(const uint8_t* tile, int t, int head_dim,
                                 float* x);  // token t of the tile

  bool quantized() const { return format != Format::kF32; }
  size_t header_bytes() const { return static_cast<size_t>(planes) * scale_bytes(scale_type); }
  // Bytes of one group of `group` values, and of a token row of n values (f32: 4 n).
  size_t block_bytes(int group) const {
    return header_bytes() + static_cast<size_t>(group) * bits / 8;
  }
  size_t row_bytes(int n, int group) const {
    return quantized() ? static_cast<size_t>(n / group) * block_bytes(group) : sizeof(float) * n;
  }
  size_t code_bytes(int n) const { return static_cast<size_t>(n) * bits / 8; }  // n bare codes
  // A channel-axis tile of G = group positions (kv/channel_tile.h): n scales (and minimums), then
  // G rows of n codes.
  size_t channel_codes_offset(int n) const { return header_bytes() * n; }
  size_t channel_tile_bytes(int n, int group) const {
    return channel_codes_offset(n) + group * code_bytes(n);
  }
  TileFormat tile(TileRole role, int n, int group) const {
    return {role, bits, planes, code_bias, n, group, levels};
  }
  int unit(TileRole role) const { return role == TileRole::kKey ? key_unit : value_unit; }
};

const FormatTraits& format_traits(Format f);
// The row named `name`; kvrt::Error(kUsage) listing the valid names otherwise.
const FormatTraits& format_traits(std::string_view name);
// "f32, q8, q4, q2, q4s": every format name, for messages and help texts.
const char* format_names();

}  // namespace kvrt::kv
