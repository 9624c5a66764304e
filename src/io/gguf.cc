#include "io/gguf.h"

#include <cstring>
#include <limits>
#include <unordered_set>

#include "common/error.h"

namespace kvrt::io {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
constexpr uint64_t kMaxDims = 4;
constexpr uint64_t kMaxStringBytes = uint64_t{1} << 30;

const char* value_type_name(GgufType t) {
  static const char* names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                "bool", "string", "array", "u64", "i64", "f64"};
  auto i = static_cast<uint32_t>(t);
  return i < 13 ? names[i] : "unknown";
}

bool is_integer(GgufType t) {
  return gguf_scalar_size(t) != 0 && t != GgufType::kF32 && t != GgufType::kF64 &&
         t != GgufType::kBool;
}

// Bounds-checked little-endian cursor over the mapping.
class Cursor {
 public:
  Cursor(const GgufFile& f, const uint8_t* base, size_t size) : f_(f), base_(base), size_(size) {}

  uint64_t pos() const { return pos_; }
  uint64_t size() const { return size_; }
  uint64_t left() const { return size_ - pos_; }
  const uint8_t* here() const { return base_ + pos_; }

  void need(uint64_t n, const char* what) {
    if (n > size_ - pos_)
      f_.fail("truncated at byte offset " + std::to_string(pos_) + " while reading " + what +
              " (needs " + std::to_string(n) + " bytes, " + std::to_string(size_ - pos_) +
              " left)");
  }
  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string_view read_string(const char* what) {
    uint64_t at = pos_;
    uint64_t n = read<uint64_t>(what);
    if (n > kMaxStringBytes || n > size_ - pos_)
      f_.fail("string length " + std::to_string(n) + " at byte offset " + std::to_string(at) +
              " (" + what + ") runs past the end of the file");
    std::string_view s(reinterpret_cast<const char*>(base_ + pos_), n);
    pos_ += n;
    return s;
  }
  void skip(uint64_t n, const char* what) {
    need(n, what);
    pos_ += n;
  }

 private:
  const GgufFile& f_;
  const uint8_t* base_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

void read_scalar(Cursor& c, GgufType t, GgufValue& v, const std::string& key) {
  const char* what = key.c_str();
  switch (t) {
    case GgufType::kU8:
      v.u = c.read<uint8_t>(what);
      v.i = int64_t(v.u);
      break;
    case GgufType::kI8:
      v.i = c.read<int8_t>(what);
      v.u = uint64_t(v.i);
      break;
    case GgufType::kU16:
      v.u = c.read<uint16_t>(what);
      v.i = int64_t(v.u);
      break;
    case GgufType::kI16:
      v.i = c.read<int16_t>(what);
      v.u = uint64_t(v.i);
      break;
    case GgufType::kU32:
      v.u = c.read<uint32_t>(what);
      v.i = int64_t(v.u);
      break;
    case GgufType::kI32:
      v.i = c.read<int32_t>(what);
      v.u = uint64_t(v.i);
      break;
    case GgufType::kU64:
      v.u = c.read<uint64_t>(what);
      v.i = int64_t(v.u);
      break;
    case GgufType::kI64:
      v.i = c.read<int64_t>(what);
      v.u = uint64_t(v.i);
      break;
    case GgufType::kF32: v.f = c.read<float>(what); break;
    case GgufType::kF64: v.f = c.read<double>(what); break;
    case GgufType::kBool:
      v.u = c.read<uint8_t>(what);
      v.i = int64_t(v.u);
      break;
    case GgufType::kString: v.s = c.read_string(what); break;
    default: break;
  }
}

struct Header {
  uint32_t version;
  uint64_t n_tensors;
  uint64_t n_kv;
};

Header read_header(Cursor& c, const GgufFile& f) {
  if (c.size() < 4 || c.read<uint32_t>("magic") != kMagic)
    f.fail("bad magic (expected the bytes 'GGUF' at offset 0)");
  Header h;
  h.version = c.read<uint32_t>("version");
  if (h.version != 2 && h.version != 3)
    f.fail("unsupported GGUF version " + std::to_string(h.version) +
           " (kvrt reads versions 2 and 3)");
  h.n_tensors = c.read<uint64_t>("tensor count");
  h.n_kv = c.read<uint64_t>("metadata count");
  // Each entry needs at least 8+4 bytes (kv) or 8+4+4+8 bytes (tensor): reject absurd counts early.
  if (h.n_kv > c.size() / 12)
    f.fail("metadata count " + std::to_string(h.n_kv) + " is impossible for the file size");
  if (h.n_tensors > c.size() / 24)
    f.fail("tensor count " + std::to_string(h.n_tensors) + " is impossible for the file size");
  return h;
}

// An array value: its element type and count, and its bytes skipped (strings one by one, since
// each carries its own length). `v.elems` points at the raw elements in the mapping.
void read_array(Cursor& c, const GgufFile& f, const std::string& key, GgufValue& v) {
  const uint32_t et = c.read<uint32_t>(key.c_str());
  if (et > static_cast<uint32_t>(GgufType::kF64) || et == uint32_t(GgufType::kArray))
    f.fail("metadata array '" + key + "' has unsupported element type " + std::to_string(et));
  v.elem_type = static_cast<GgufType>(et);
  v.n_elems = c.read<uint64_t>(key.c_str());
  v.elems = c.here();
  if (v.elem_type == GgufType::kString) {
    if (v.n_elems > c.left() / 8)
      f.fail("array '" + key + "' claims " + std::to_string(v.n_elems) +
             " strings, more than the file can hold");
    for (uint64_t e = 0; e < v.n_elems; ++e) c.read_string(key.c_str());
  } else {
    const uint64_t es = gguf_scalar_size(v.elem_type);
    if (v.n_elems > c.left() / es)
      f.fail("array '" + key + "' of " + std::to_string(v.n_elems) + " elements at byte offset " +
             std::to_string(v.file_offset) + " runs past the end of the file");
    c.skip(v.n_elems * es, key.c_str());
  }
}

std::vector<std::pair<std::string, GgufValue>> read_metadata(Cursor& c, const GgufFile& f,
                                                             uint64_t n_kv) {
  std::vector<std::pair<std::string, GgufValue>> kv;
  std::unordered_set<std::string> seen;
  kv.reserve(n_kv);
  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key(c.read_string("metadata key"));
    if (!seen.insert(key).second) f.fail("duplicate metadata key '" + key + "'");
    GgufValue v;
    v.file_offset = c.pos();
    const uint32_t raw = c.read<uint32_t>(key.c_str());
    if (raw > static_cast<uint32_t>(GgufType::kF64))
      f.fail("metadata key '" + key + "' has unknown value type " + std::to_string(raw) +
             " at byte offset " + std::to_string(v.file_offset));
    v.type = static_cast<GgufType>(raw);
    if (v.type == GgufType::kArray) read_array(c, f, key, v);
    else read_scalar(c, v.type, v, key);
    kv.emplace_back(std::move(key), v);
  }
  return kv;
}

// One tensor info: name (not one of `names`, which it joins), shape, type and its size in bytes;
// the offset stays relative to the data section until place_tensor_data.
GgufTensor read_tensor_info(Cursor& c, const GgufFile& f, std::unordered_set<std::string>& names) {
  GgufTensor ti;
  ti.name = std::string(c.read_string("tensor name"));
  if (!names.insert(ti.name).second) f.fail("duplicate tensor '" + ti.name + "'");
  const uint32_t n_dims = c.read<uint32_t>(ti.name.c_str());
  if (n_dims == 0 || n_dims > kMaxDims)
    f.fail("tensor '" + ti.name + "' has " + std::to_string(n_dims) +
           " dimensions (1 to 4 allowed)");
  ti.n_elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    const uint64_t dim = c.read<uint64_t>(ti.name.c_str());
    if (dim == 0 || dim > (uint64_t{1} << 40) ||
        uint64_t(ti.n_elements) > uint64_t(std::numeric_limits<int64_t>::max()) / dim)
      f.fail("tensor '" + ti.name + "' has an invalid dimension " + std::to_string(dim));
    ti.dims.push_back(int64_t(dim));
    ti.n_elements *= int64_t(dim);
  }
  const uint64_t type_at = c.pos();
  const uint32_t raw_type = c.read<uint32_t>(ti.name.c_str());
  const simd::WeightTypeTraits* info = simd::find_weight_type(raw_type);
  if (!info)
    f.fail("tensor '" + ti.name + "' has unknown type " + std::to_string(raw_type) +
           " at byte offset " + std::to_string(type_at));
  ti.type = info->type;
  if (ti.dims[0] % info->block != 0)
    f.fail("tensor '" + ti.name + "' row of " + std::to_string(ti.dims[0]) +
           " elements is not a multiple of the " + info->name + " block size (" +
           std::to_string(info->block) + ")");
  const uint64_t n_blocks = uint64_t(ti.n_elements / info->block);
  if (n_blocks > std::numeric_limits<uint64_t>::max() / uint64_t(info->block_bytes))
    f.fail("tensor '" + ti.name + "' is too large (" + std::to_string(ti.n_elements) +
           " elements of " + info->name + ")");
  ti.n_bytes = n_blocks * uint64_t(info->block_bytes);
  ti.file_offset = c.read<uint64_t>(ti.name.c_str());
  return ti;
}

std::vector<GgufTensor> read_tensor_infos(Cursor& c, const GgufFile& f, uint64_t n_tensors) {
  std::vector<GgufTensor> tensors;
  std::unordered_set<std::string> names;
  tensors.reserve(n_tensors);
  for (uint64_t t = 0; t < n_tensors; ++t) tensors.push_back(read_tensor_info(c, f, names));
  return tensors;
}

}  // namespace

size_t gguf_scalar_size(GgufType t) {
  switch (t) {
    case GgufType::kU8:
    case GgufType::kI8:
    case GgufType::kBool: return 1;
    case GgufType::kU16:
    case GgufType::kI16: return 2;
    case GgufType::kU32:
    case GgufType::kI32:
    case GgufType::kF32: return 4;
    case GgufType::kU64:
    case GgufType::kI64:
    case GgufType::kF64: return 8;
    default: return 0;
  }
}

GgufFile::GgufFile(const std::string& path) : file_(std::make_unique<MmapFile>(path)) { parse(); }

void GgufFile::fail(const std::string& what) const {
  throw Error("'" + path() + "' is not a valid GGUF model: " + what);
}

void GgufFile::parse() {
  Cursor c(*this, file_->data(), file_->size());
  const Header h = read_header(c, *this);
  version_ = h.version;
  kv_ = read_metadata(c, *this, h.n_kv);
  const uint64_t alignment = get_uint_or("general.alignment", 32);
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    fail("general.alignment " + std::to_string(alignment) + " is not a power of two");
  tensors_ = read_tensor_infos(c, *this, h.n_tensors);
  place_tensor_data(c.pos(), alignment);
}

// Turns the tensor infos' offsets, relative to the aligned data section, into absolute ones and
// pointers into the mapping, checking that each tensor's bytes lie inside the file.
void GgufFile::place_tensor_data(uint64_t infos_end, uint64_t alignment) {
  const uint64_t size = file_->size();
  const uint64_t data_start = (infos_end + alignment - 1) / alignment * alignment;
  if (data_start > size && !tensors_.empty())
    fail("tensor data section starts at byte offset " + std::to_string(data_start) +
         ", past the end of the file (" + std::to_string(size) + " bytes)");
  for (auto& ti : tensors_) {
    const uint64_t rel = ti.file_offset;
    if (rel % alignment != 0)
      fail("tensor '" + ti.name + "' data offset " + std::to_string(rel) + " is not aligned to " +
           std::to_string(alignment));
    if (rel > size - data_start || ti.n_bytes > size - data_start - rel)
      fail("tensor '" + ti.name + "' data (" + std::to_string(ti.n_bytes) +
           " bytes at byte offset " + std::to_string(data_start + rel) +
           ") runs past the end of the file (" + std::to_string(size) + " bytes)");
    ti.file_offset = data_start + rel;
    ti.data = file_->data() + ti.file_offset;
  }
}

const GgufValue* GgufFile::find(std::string_view key) const {
  for (const auto& [k, v] : kv_)
    if (k == key) return &v;
  return nullptr;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

const GgufValue& GgufFile::require(std::string_view key, GgufType type) const {
  const GgufValue* v = find(key);
  if (!v) fail("missing required metadata key '" + std::string(key) + "'");
  bool ok = v->type == type || (is_integer(type) && is_integer(v->type)) ||
            (type == GgufType::kF64 && (v->type == GgufType::kF32 || v->type == GgufType::kF64));
  if (!ok)
    fail("metadata key '" + std::string(key) + "' has type " + value_type_name(v->type) +
         ", expected " + value_type_name(type));
  return *v;
}

std::string_view GgufFile::get_string(std::string_view key) const {
  return require(key, GgufType::kString).s;
}
uint64_t GgufFile::get_uint(std::string_view key) const {
  const GgufValue& v = require(key, GgufType::kU64);
  if (v.i < 0 && v.type != GgufType::kU64)
    fail("metadata key '" + std::string(key) + "' is negative (" + std::to_string(v.i) + ")");
  return v.u;
}
double GgufFile::get_float(std::string_view key) const { return require(key, GgufType::kF64).f; }
bool GgufFile::get_bool(std::string_view key) const { return require(key, GgufType::kBool).u != 0; }

std::string_view GgufFile::get_string_or(std::string_view key, std::string_view fb) const {
  return find(key) ? get_string(key) : fb;
}
uint64_t GgufFile::get_uint_or(std::string_view key, uint64_t fb) const {
  return find(key) ? get_uint(key) : fb;
}
double GgufFile::get_float_or(std::string_view key, double fb) const {
  return find(key) ? get_float(key) : fb;
}
bool GgufFile::get_bool_or(std::string_view key, bool fb) const {
  return find(key) ? get_bool(key) : fb;
}

std::vector<std::string_view> GgufFile::get_string_array(std::string_view key) const {
  const GgufValue& v = require(key, GgufType::kArray);
  if (v.elem_type != GgufType::kString)
    fail("metadata array '" + std::string(key) + "' does not hold strings");
  std::vector<std::string_view> out;
  out.reserve(v.n_elems);
  const uint8_t* p = v.elems;
  for (uint64_t e = 0; e < v.n_elems; ++e) {  // lengths were validated by parse()
    uint64_t n;
    std::memcpy(&n, p, 8);
    out.emplace_back(reinterpret_cast<const char*>(p + 8), n);
    p += 8 + n;
  }
  return out;
}

std::vector<float> GgufFile::get_float_array(std::string_view key) const {
  const GgufValue& v = require(key, GgufType::kArray);
  std::vector<float> out(v.n_elems);
  if (v.elem_type == GgufType::kF32) {
    std::memcpy(out.data(), v.elems, v.n_elems * 4);
  } else if (v.elem_type == GgufType::kF64) {
    for (uint64_t e = 0; e < v.n_elems; ++e) {
      double d;
      std::memcpy(&d, v.elems + 8 * e, 8);
      out[e] = float(d);
    }
  } else {
    fail("metadata array '" + std::string(key) + "' does not hold floats");
  }
  return out;
}

std::vector<int32_t> GgufFile::get_int_array(std::string_view key) const {
  const GgufValue& v = require(key, GgufType::kArray);
  if (!is_integer(v.elem_type))
    fail("metadata array '" + std::string(key) + "' does not hold integers");
  size_t es = gguf_scalar_size(v.elem_type);
  std::vector<int32_t> out(v.n_elems);
  for (uint64_t e = 0; e < v.n_elems; ++e) {
    const uint8_t* p = v.elems + es * e;
    switch (v.elem_type) {
      case GgufType::kU8: out[e] = p[0]; break;
      case GgufType::kI8: out[e] = int8_t(p[0]); break;
      case GgufType::kU16: {
        uint16_t x;
        std::memcpy(&x, p, 2);
        out[e] = x;
        break;
      }
      case GgufType::kI16: {
        int16_t x;
        std::memcpy(&x, p, 2);
        out[e] = x;
        break;
      }
      case GgufType::kU32: {
        uint32_t x;
        std::memcpy(&x, p, 4);
        out[e] = int32_t(x);
        break;
      }
      case GgufType::kI32: {
        int32_t x;
        std::memcpy(&x, p, 4);
        out[e] = x;
        break;
      }
      default: {
        int64_t x;
        std::memcpy(&x, p, 8);
        out[e] = int32_t(x);
        break;
      }
    }
  }
  return out;
}

}  // namespace kvrt::io
