#include "io/gguf_writer.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>

#include "common/error.h"
#include "common/half.h"

namespace kvrt::io {
namespace {

static_assert(std::endian::native == std::endian::little, "GGUF is little-endian");

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
constexpr uint32_t kVersion = 3;
constexpr int64_t kChunkElems = int64_t{1} << 16;  // a multiple of every block size
constexpr std::string_view kAlignmentKey = "general.alignment";

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

void put_string(std::string& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.append(s);
}

// Removes a partly written output, but never a device or anything else that is not a file.
void remove_partial(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) std::filesystem::remove(path, ec);
}

[[noreturn]] void usage_error(const std::string& what) { throw Error(what, ErrorKind::kUsage); }

}  // namespace

uint64_t tensor_bytes(simd::WeightType type, int64_t n) {
  const simd::WeightTypeTraits& t = simd::weight_type_traits(type);
  KVRT_ASSERT(n % t.block == 0);
  return uint64_t(t.row_bytes(n));
}

void encode_tensor_data(simd::WeightType type, const float* src, int64_t n, uint8_t* dst) {
  const simd::WeightTypeTraits& t = simd::weight_type_traits(type);
  KVRT_ASSERT(t.from_float_ref != nullptr && n % t.block == 0);
  t.from_float_ref(src, n, dst);
}

void GgufWriter::start_kv(std::string_view key, GgufType type) {
  if (key.empty()) usage_error("GGUF metadata keys must not be empty");
  if (!keys_.emplace(key).second)
    usage_error("duplicate GGUF metadata key '" + std::string(key) + "'");
  put_string(kv_bytes_, key);
  put<uint32_t>(kv_bytes_, static_cast<uint32_t>(type));
  ++n_kv_;
}

void GgufWriter::begin_kv(std::string_view key, GgufType type) {
  if (key == kAlignmentKey) usage_error("set 'general.alignment' with set_alignment()");
  start_kv(key, type);
}

template <typename T>
void GgufWriter::add_scalar(std::string_view key, GgufType type, T v) {
  begin_kv(key, type);
  put(kv_bytes_, v);
}

void GgufWriter::add_u8(std::string_view k, uint8_t v) { add_scalar(k, GgufType::kU8, v); }
void GgufWriter::add_i8(std::string_view k, int8_t v) { add_scalar(k, GgufType::kI8, v); }
void GgufWriter::add_u16(std::string_view k, uint16_t v) { add_scalar(k, GgufType::kU16, v); }
void GgufWriter::add_i16(std::string_view k, int16_t v) { add_scalar(k, GgufType::kI16, v); }
void GgufWriter::add_u32(std::string_view k, uint32_t v) { add_scalar(k, GgufType::kU32, v); }
void GgufWriter::add_i32(std::string_view k, int32_t v) { add_scalar(k, GgufType::kI32, v); }
void GgufWriter::add_u64(std::string_view k, uint64_t v) { add_scalar(k, GgufType::kU64, v); }
void GgufWriter::add_i64(std::string_view k, int64_t v) { add_scalar(k, GgufType::kI64, v); }
void GgufWriter::add_f32(std::string_view k, float v) { add_scalar(k, GgufType::kF32, v); }
void GgufWriter::add_f64(std::string_view k, double v) { add_scalar(k, GgufType::kF64, v); }
void GgufWriter::add_bool(std::string_view k, bool v) {
  add_scalar<uint8_t>(k, GgufType::kBool, v ? 1 : 0);
}
void GgufWriter::add_string(std::string_view k, std::string_view v) {
  begin_kv(k, GgufType::kString);
  put_string(kv_bytes_, v);
}

void GgufWriter::add_array(std::string_view key, GgufType elem_type, const void* raw,
                           uint64_t n_elems) {
  const size_t es = gguf_scalar_size(elem_type);
  if (es == 0) usage_error("GGUF array '" + std::string(key) + "' needs a scalar element type");
  begin_kv(key, GgufType::kArray);
  put<uint32_t>(kv_bytes_, static_cast<uint32_t>(elem_type));
  put<uint64_t>(kv_bytes_, n_elems);
  kv_bytes_.append(static_cast<const char*>(raw), n_elems * es);
}

void GgufWriter::add_string_array(std::string_view key, std::span<const std::string> v) {
  begin_kv(key, GgufType::kArray);
  put<uint32_t>(kv_bytes_, static_cast<uint32_t>(GgufType::kString));
  put<uint64_t>(kv_bytes_, v.size());
  for (const auto& s : v) put_string(kv_bytes_, s);
}

void GgufWriter::add_f32_array(std::string_view key, std::span<const float> v) {
  add_array(key, GgufType::kF32, v.data(), v.size());
}

void GgufWriter::add_i32_array(std::string_view key, std::span<const int32_t> v) {
  add_array(key, GgufType::kI32, v.data(), v.size());
}

void GgufWriter::add_value(std::string_view key, const GgufValue& v) {
  switch (v.type) {
    case GgufType::kU8: add_u8(key, uint8_t(v.u)); break;
    case GgufType::kI8: add_i8(key, int8_t(v.i)); break;
    case GgufType::kU16: add_u16(key, uint16_t(v.u)); break;
    case GgufType::kI16: add_i16(key, int16_t(v.i)); break;
    case GgufType::kU32: add_u32(key, uint32_t(v.u)); break;
    case GgufType::kI32: add_i32(key, int32_t(v.i)); break;
    case GgufType::kU64: add_u64(key, v.u); break;
    case GgufType::kI64: add_i64(key, v.i); break;
    case GgufType::kF32: add_f32(key, float(v.f)); break;
    case GgufType::kF64: add_f64(key, v.f); break;
    case GgufType::kBool: add_bool(key, v.u != 0); break;
    case GgufType::kString: add_string(key, v.s); break;
    case GgufType::kArray:
      if (v.elem_type != GgufType::kString) {
        add_array(key, v.elem_type, v.elems, v.n_elems);
        break;
      }
      begin_kv(key, GgufType::kArray);
      put<uint32_t>(kv_bytes_, static_cast<uint32_t>(GgufType::kString));
      put<uint64_t>(kv_bytes_, v.n_elems);
      for (uint64_t e = 0, at = 0; e < v.n_elems; ++e) {  // lengths were checked by the reader
        uint64_t len;
        std::memcpy(&len, v.elems + at, 8);
        kv_bytes_.append(reinterpret_cast<const char*>(v.elems + at), 8 + len);
        at += 8 + len;
      }
      break;
  }
}

void GgufWriter::set_alignment(uint32_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    usage_error("GGUF alignment " + std::to_string(alignment) + " is not a power of two");
  start_kv(kAlignmentKey, GgufType::kU32);
  put(kv_bytes_, alignment);
  alignment_ = alignment;
}

void GgufWriter::add_tensor(std::string_view name, std::vector<int64_t> dims, simd::WeightType type,
                            TensorFill fill) {
  const std::string n(name);
  const simd::WeightTypeTraits* t = simd::find_weight_type(static_cast<uint32_t>(type));
  if (t == nullptr || !t->computable() || t->from_float_ref == nullptr)
    usage_error("tensor '" + n + "': the GGUF writer encodes only " +
                simd::computable_weight_type_names());
  if (dims.empty() || dims.size() > 4) usage_error("tensor '" + n + "' needs 1 to 4 dimensions");
  int64_t n_elements = 1;
  for (int64_t d : dims) {
    if (d <= 0) usage_error("tensor '" + n + "' has a dimension " + std::to_string(d));
    n_elements *= d;
  }
  if (dims[0] % t->block != 0)
    usage_error("tensor '" + n + "': " + t->name + " needs rows of a multiple of " +
                std::to_string(t->block) + " elements");
  if (!tensor_names_.insert(n).second) usage_error("duplicate tensor '" + n + "'");
  tensors_.push_back({n, std::move(dims), type, n_elements, std::move(fill)});
}

void GgufWriter::add_tensor(std::string_view name, std::vector<int64_t> dims, simd::WeightType type,
                            std::span<const float> data) {
  auto copy = std::make_shared<std::vector<float>>(data.begin(), data.end());
  int64_t n_elements = 1;
  for (int64_t d : dims) n_elements *= d;
  if (int64_t(copy->size()) != n_elements)
    usage_error("tensor '" + std::string(name) + "' has " + std::to_string(copy->size()) +
                " values for a shape of " + std::to_string(n_elements) + " elements");
  add_tensor(name, std::move(dims), type, [copy](int64_t begin, int64_t n, float* out) {
    std::copy_n(copy->data() + begin, n, out);
  });
}

void GgufWriter::write_tensor_infos(std::string& out) const {
  uint64_t offset = 0;  // relative to the start of the data section
  for (const auto& t : tensors_) {
    put_string(out, t.name);
    put<uint32_t>(out, uint32_t(t.dims.size()));
    for (int64_t d : t.dims) put<uint64_t>(out, uint64_t(d));
    put<uint32_t>(out, static_cast<uint32_t>(t.type));
    put<uint64_t>(out, offset);
    offset += (tensor_bytes(t.type, t.n_elements) + alignment_ - 1) / alignment_ * alignment_;
  }
}

uint64_t GgufWriter::write_body(std::FILE* f, const std::string& path) const {
  uint64_t total = 0;
  auto emit = [&](const void* p, size_t n) {
    if (n != 0 && std::fwrite(p, 1, n, f) != n)
      throw Error("cannot write '" + path + "': " + std::strerror(errno));
    total += n;
  };
  const std::string zeros(alignment_, '\0');
  auto pad = [&](uint64_t written) {
    emit(zeros.data(), size_t((alignment_ - written % alignment_) % alignment_));
  };
  std::string header;
  put<uint32_t>(header, kMagic);
  put<uint32_t>(header, kVersion);
  put<uint64_t>(header, tensors_.size());
  put<uint64_t>(header, n_kv_);
  header += kv_bytes_;
  write_tensor_infos(header);
  emit(header.data(), header.size());
  pad(header.size());

  std::vector<float> chunk;    // [kChunkElems]
  std::vector<uint8_t> bytes;  // [bytes of kChunkElems in the tensor's type]
  for (const auto& t : tensors_) {
    const int64_t chunk_elems = std::min(t.n_elements, kChunkElems);
    chunk.resize(size_t(chunk_elems));
    bytes.resize(tensor_bytes(simd::WeightType::kF32, chunk_elems));  // enough for every type
    for (int64_t begin = 0; begin < t.n_elements; begin += chunk_elems) {
      const int64_t n = std::min(chunk_elems, t.n_elements - begin);
      t.fill(begin, n, chunk.data());
      encode_tensor_data(t.type, chunk.data(), n, bytes.data());
      emit(bytes.data(), tensor_bytes(t.type, n));
    }
    pad(tensor_bytes(t.type, t.n_elements));
  }
  return total;
}

uint64_t GgufWriter::write(const std::string& path) const {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw Error("cannot create '" + path + "': " + std::strerror(errno));
  uint64_t total = 0;
  try {
    total = write_body(f, path);
  } catch (...) {
    std::fclose(f);
    remove_partial(path);
    throw;
  }
  if (std::fclose(f) != 0) {
    const int err = errno;
    remove_partial(path);
    throw Error("cannot write '" + path + "': " + std::strerror(err));
  }
  return total;
}

}  // namespace kvrt::io
