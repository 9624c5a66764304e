// GGUF v3 reader over a read-only mmap. Every header field, length, offset and size is
// bounds-checked while parsing; errors name the file, the key or tensor, and the byte offset.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/mmap_file.h"
#include "simd/weights/types.h"

namespace kvrt::io {

// Metadata value types, numbered as in the GGUF specification.
enum class GgufType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

// Bytes of one value of a scalar type; 0 for string, array and numbers outside the enum.
size_t gguf_scalar_size(GgufType t);

struct GgufValue {
  GgufType type = GgufType::kU8;
  uint64_t file_offset = 0;  // where the value starts, for error messages
  // Scalars (the member matching `type` is set; integers also fill both u and i).
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0.0;
  std::string_view s;
  // Arrays: element type, count and the raw bytes in the mapping (already bounds-checked).
  GgufType elem_type = GgufType::kU8;
  uint64_t n_elems = 0;
  const uint8_t* elems = nullptr;
};

struct GgufTensor {
  std::string name;
  std::vector<int64_t> dims;  // ggml order: dims[0] is the contiguous (row) dimension
  simd::WeightType type = simd::WeightType::kF32;  // a row of simd/weights/types.h
  uint64_t file_offset = 0;                        // absolute byte offset of the data in the file
  uint64_t n_bytes = 0;
  int64_t n_elements = 0;
  const uint8_t* data = nullptr;
};

class GgufFile {
 public:
  explicit GgufFile(const std::string& path);  // throws kvrt::Error

  const std::string& path() const { return file_->path(); }
  uint32_t version() const { return version_; }
  uint64_t file_size() const { return file_->size(); }
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const std::vector<GgufTensor>& tensors() const { return tensors_; }

  const GgufValue* find(std::string_view key) const;
  const GgufTensor* find_tensor(std::string_view name) const;
  // Drops the resident pages of a tensor kvrt has copied or reads only a row at a time
  // (MmapFile::release).
  void release(const GgufTensor& t) const { file_->release(t.data, t.n_bytes); }
  // The n bytes at p, inside a tensor's data, read from the file (MmapFile::read).
  void read(const uint8_t* p, size_t n, void* dst) const { file_->read(p, n, dst); }

  // Typed getters: a missing key or a wrong type is an Error naming file and key.
  std::string_view get_string(std::string_view key) const;
  uint64_t get_uint(std::string_view key) const;
  double get_float(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  std::vector<std::string_view> get_string_array(std::string_view key) const;
  std::vector<float> get_float_array(std::string_view key) const;
  std::vector<int32_t> get_int_array(std::string_view key) const;

  // Optional variants return the fallback when the key is absent (a wrong type still throws).
  std::string_view get_string_or(std::string_view key, std::string_view fallback) const;
  uint64_t get_uint_or(std::string_view key, uint64_t fallback) const;
  double get_float_or(std::string_view key, double fallback) const;
  bool get_bool_or(std::string_view key, bool fallback) const;

  [[noreturn]] void fail(const std::string& what) const;

 private:
  const GgufValue& require(std::string_view key, GgufType type) const;
  void parse();
  void place_tensor_data(uint64_t infos_end, uint64_t alignment);

  std::unique_ptr<MmapFile> file_;
  uint32_t version_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<GgufTensor> tensors_;
};

}  // namespace kvrt::io
