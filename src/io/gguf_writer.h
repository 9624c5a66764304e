// A small GGUF v3 writer: metadata of every value type, and tensors converted from f32 data to
// any weight type with a reference codec (simd/weights/types.h: F32, F16, BF16, Q8_0). Tensor
// data is produced chunk by chunk while writing, so a model larger than memory can be written one
// tensor at a time.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "io/gguf.h"

namespace kvrt::io {

// Fills elements [begin, begin + n) of a tensor (flat, dims[0] fastest). Called in increasing
// order of `begin`, once per element.
using TensorFill = std::function<void(int64_t begin, int64_t n, float* out)>;

// Encodes n f32 values (n a multiple of the block size) with the type's reference from-float
// into dst, which holds the tensor type's byte size for n elements. Q8_0 is llama.cpp's
// reference block: an f16 scale d = max|x| / 127, then 32 int8 codes round(x / d).
void encode_tensor_data(simd::WeightType type, const float* src, int64_t n, uint8_t* dst);

// Bytes a tensor of n elements takes in `type` (n a multiple of the block size).
uint64_t tensor_bytes(simd::WeightType type, int64_t n);

class GgufWriter {
 public:
  // Scalars. Keys are unique; adding one twice throws kvrt::Error.
  void add_u8(std::string_view key, uint8_t v);
  void add_i8(std::string_view key, int8_t v);
  void add_u16(std::string_view key, uint16_t v);
  void add_i16(std::string_view key, int16_t v);
  void add_u32(std::string_view key, uint32_t v);
  void add_i32(std::string_view key, int32_t v);
  void add_u64(std::string_view key, uint64_t v);
  void add_i64(std::string_view key, int64_t v);
  void add_f32(std::string_view key, float v);
  void add_f64(std::string_view key, double v);
  void add_bool(std::string_view key, bool v);
  void add_string(std::string_view key, std::string_view v);

  // Arrays. `elem_type` is a scalar type; `raw` holds n_elems little-endian values of it.
  void add_array(std::string_view key, GgufType elem_type, const void* raw, uint64_t n_elems);
  void add_string_array(std::string_view key, std::span<const std::string> v);
  void add_f32_array(std::string_view key, std::span<const float> v);
  void add_i32_array(std::string_view key, std::span<const int32_t> v);

  // Copies one metadata value read from another GGUF file, arrays included.
  void add_value(std::string_view key, const GgufValue& v);

  // Sets general.alignment (a power of two; default 32) and writes it as a u32 key.
  void set_alignment(uint32_t alignment);

  // Declares a tensor (1 to 4 dims, ggml order); its data comes from `fill` during write().
  void add_tensor(std::string_view name, std::vector<int64_t> dims, simd::WeightType type,
                  TensorFill fill);
  // Same, from data in memory (copied): data.size() must equal the product of dims.
  void add_tensor(std::string_view name, std::vector<int64_t> dims, simd::WeightType type,
                  std::span<const float> data);

  // Writes the file and returns the bytes written (also to a device or a pipe, whose size cannot
  // be asked afterwards); throws kvrt::Error naming the path on any I/O failure (and then removes
  // the partial file if it is a regular file).
  uint64_t write(const std::string& path) const;

 private:
  struct PendingTensor {
    std::string name;
    std::vector<int64_t> dims;
    simd::WeightType type;
    int64_t n_elements;
    TensorFill fill;
  };

  template <typename T>
  void add_scalar(std::string_view key, GgufType type, T v);
  void begin_kv(std::string_view key, GgufType type);  // rejects general.alignment
  void start_kv(std::string_view key, GgufType type);
  void write_tensor_infos(std::string& out) const;
  uint64_t write_body(std::FILE* f, const std::string& path) const;  // bytes written

  std::string kv_bytes_;  // serialized metadata entries, in insertion order
  uint64_t n_kv_ = 0;
  std::unordered_set<std::string> keys_;
  uint32_t alignment_ = 32;
  std::vector<PendingTensor> tensors_;
  std::unordered_set<std::string> tensor_names_;
};

}  // namespace kvrt::io
