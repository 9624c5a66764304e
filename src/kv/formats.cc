#include "kv/formats.h"

#include <iterator>
#include <string>

#include "common/error.h"
#include "kv/channel_tile.h"

namespace kvrt::kv {

namespace {

template <class F>
constexpr FormatTraits quant_row() {
  return {.format = F::kFormat,
          .name = F::kName,
          .bits = F::kBits,
          .planes = F::kPlanes,
          .code_bias = F::kCodeBias,
          .levels = F::kCodebook ? kQ4NLevels : nullptr,
          .scale_type = ScaleType::kF16,
          .key_unit = kKeyLaneDims * F::kRuns,
          .value_unit = kAccColumnDims,
          .quantize_group = quantize_group<F>,
          .dequantize_group = dequantize_group<F>,
          .tile_store_row = tile_store_row<F>,
          .channel_quantize = channel_quantize<F>,
          .channel_dequantize_row = channel_dequantize_row<F>};
}

// Indexed by Format. f32 "blocks" are the values themselves.
constexpr FormatTraits kTraits[] = {
    {.format = Format::kF32,
     .name = "f32",
     .bits = 32,
     .planes = 0,
     .code_bias = 0,
     .levels = nullptr,
     .scale_type = ScaleType::kNone,
     .key_unit = 1,
     .value_unit = 1,
     .quantize_group = nullptr,
     .dequantize_group = nullptr,
     .tile_store_row = nullptr,
     .channel_quantize = nullptr,
     .channel_dequantize_row = nullptr},
    quant_row<Q8>(),
    quant_row<Q4>(),
    quant_row<Q2>(),
    quant_row<Q4S>(),
    quant_row<Q4N>(),
    quant_row<Q3>(),
};
static_assert(std::size(kTraits) == kNumFormats);

constexpr bool rows_in_order() {
  for (int i = 0; i < kNumFormats; ++i)
    if (static_cast<int>(kTraits[i].format) != i) return false;
  return true;
}
static_assert(rows_in_order(), "kTraits must be indexed by Format");

}  // namespace

const FormatTraits& format_traits(Format f) { return kTraits[static_cast<int>(f)]; }

const char* format_names() {
  static const std::string names = [] {
    std::string s;
    for (const FormatTraits& t : kTraits) s += (s.empty() ? "" : ", ") + std::string(t.name);
    return s;
  }();
  return names.c_str();
}

const FormatTraits& format_traits(std::string_view name) {
  for (const FormatTraits& t : kTraits)
    if (name == t.name) return t;
  throw Error("unknown KV format '" + std::string(name) + "' (valid: " + format_names() + ")",
              ErrorKind::kUsage);
}

}  // namespace kvrt::kv
