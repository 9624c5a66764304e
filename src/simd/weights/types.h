// Weight types: how the values of a tensor are stored, one traits row per type (ggml's
// type_traits is the model). The row says what a type is: name, block size, bytes per block, the
// activation format its integer decode product wants, and its reference codec (to-float,
// from-float, the finiteness check of the loader). Its kernels are the slots weight[type] of the
// dispatched table (simd/kernels.h: to_float, from_float, decode), as ggml's type_traits_cpu; the
// scalar rung fills to_float from the reference. The GGUF reader maps tensor type ids onto these
// rows, so an id kvrt does not know is refused while the file is read, and a known type without a
// codec (not computable) when a weight of it is loaded.
//
// Adding a type: its block struct (with a static_assert on its size), its row in weights/types.cc
// with its reference codec (weight_codecs*.cc), then its kernels per ISA.
#pragma once

#include <cstdint>

#include "simd/weights/blocks.h"  // the block structs of the quantized types

namespace kvrt::simd {

// Numbered as ggml's types, which are the GGUF tensor type ids.
enum class WeightType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ4_NL = 20,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kBF16 = 30,
};
constexpr int kNumWeightTypes = 31;  // type ids are below this: the size of the weight[] slots

constexpr int weight_index(WeightType t) { return static_cast<int>(t); }

struct WeightTypeTraits {
  WeightType type;
  const char* name;     // as ggml and the GGUF tools print it: "F16", "Q8_0"
  int64_t block;        // values per block (1 for plain element types)
  int64_t block_bytes;  // bytes per block
  WeightType act;  // activations of its decode product: kF32, or the blocks they are quantized to
  // Reference codec of n values (whole blocks); null for types kvrt does not compute.
  void (*to_float_ref)(const uint8_t* src, int64_t n, float* dst);
  void (*from_float_ref)(const float* x, int64_t n, uint8_t* dst);
  // Index of the first stored value that is NaN or infinite (scales included), or -1.
  int64_t (*find_non_finite)(const uint8_t* src, int64_t n);

  bool computable() const { return to_float_ref != nullptr; }
  int64_t row_bytes(int64_t n) const { return n / block * block_bytes; }  // n a multiple of block
  // The alignment a tensor of this type needs in memory: the element size of plain types, 2 for
  // blocks (their widest field is an f16 scale).
  int64_t alignment() const { return block == 1 ? block_bytes : 2; }
};

// The row of a type id read from a file; nullptr when kvrt does not know the id.
const WeightTypeTraits* find_weight_type(uint32_t ggml_id);
const WeightTypeTraits& weight_type_traits(WeightType t);  // t must be a known type
const char* weight_type_name(WeightType t);                // "unknown" for an unknown id
// The computable types' names, "F32, F16, BF16, Q8_0", for error messages.
const char* computable_weight_type_names();

}  // namespace kvrt::simd
