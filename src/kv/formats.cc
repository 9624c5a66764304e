#include "kv/formats.h"

#include <cstring>

#include "kv/blocks.h"

namespace kvrt::kv {

namespace {

void f32_quantize(const float* x, int n, int, uint8_t* row) { std::memcpy(row, x, sizeof(float) * n); }
void f32_dequantize(const uint8_t* row, int n, int, float* x) { std::memcpy(x, row, sizeof(float) * n); }

template <void (*kGroup)(const float*, int, uint8_t*), size_t (*kBlockBytes)(int)>
void quantize_row(const float* x, int n, int group, uint8_t* row) {
  for (int g = 0; g < n / group; ++g) kGroup(x + g * group, group, row + g * kBlockBytes(group));
}

template <void (*kGroup)(const uint8_t*, int, float*), size_t (*kBlockBytes)(int)>
void dequantize_row(const uint8_t* row, int n, int group, float* x) {
  for (int g = 0; g < n / group; ++g) kGroup(row + g * kBlockBytes(group), group, x + g * group);
}

size_t f8(int g) { return q8_block_bytes(g); }
size_t f4(int g) { return q4_block_bytes(g); }

// f32 "blocks" are the values themselves: group g of f32 is 4 g bytes, header 0.
const FormatTraits kTraits[] = {
    {Format::kF32, "f32", 32, 0, f32_quantize, f32_dequantize},
    {Format::kQ8, "q8", 8, kQ8Header, quantize_row<q8_quantize_group, f8>, dequantize_row<q8_dequantize_group, f8>},
    {Format::kQ4, "q4", 4, kQ4Header, quantize_row<q4_quantize_group, f4>, dequantize_row<q4_dequantize_group, f4>},
};

}  // namespace

const FormatTraits& format_traits(Format f) { return kTraits[static_cast<int>(f)]; }

}  // namespace kvrt::kv
