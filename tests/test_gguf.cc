// The GGUF reader's contract: malformed files are refused with a kvrt::Error naming the file and
// the problem (never a crash), and files from the writer read back exactly.
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"

#include "test_util.h"

namespace fs = std::filesystem;
using kvrt::io::GgufFile;
using kvrt::io::GgufType;
using kvrt::io::GgufWriter;
using kvrt::simd::WeightType;
using kvrt::test::TempDir;

namespace {

// Hand-assembled GGUF bytes, for files the writer refuses to produce.
struct Bytes {
  std::string b;
  template <typename T>
  Bytes& put(T v) {
    b.append(reinterpret_cast<const char*>(&v), sizeof(T));
    return *this;
  }
  Bytes& str(std::string_view s) {
    put<uint64_t>(s.size());
    b += s;
    return *this;
  }
  Bytes& header(uint64_t n_tensors, uint64_t n_kv) {
    b += "GGUF";
    return put<uint32_t>(3).put(n_tensors).put(n_kv);
  }
  Bytes& kv_string(std::string_view key, std::string_view value) {
    return str(key).put<uint32_t>(uint32_t(GgufType::kString)).str(value);
  }
  Bytes& tensor(std::string_view name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).put<uint32_t>(uint32_t(dims.size()));
    for (uint64_t d : dims) put(d);
    return put(type).put(offset);
  }
  Bytes& pad(size_t alignment) {
    b.resize((b.size() + alignment - 1) / alignment * alignment, '\0');
    return *this;
  }
  Bytes& zeros(size_t n) {
    b.append(n, '\0');
    return *this;
  }
};

void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  REQUIRE(out.good());
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The kvrt::Error message of opening `path`, or "" when it opens.
std::string open_error(const std::string& path) {
  try {
    GgufFile f(path);
  } catch (const kvrt::Error& e) {
    return e.what();
  }
  return "";
}

void check_rejected(const std::string& path, std::string_view bytes, std::string_view problem) {
  write_file(path, bytes);
  const std::string msg = open_error(path);
  INFO("problem: " << problem << "\nmessage: " << msg);
  CHECK(msg.find("'" + path + "'") != std::string::npos);
  CHECK(msg.find(problem) != std::string::npos);
}

// One kv and one F32 tensor [8]. Layout: header 0..24, key 24..44, value type 44..48, value
// 48..71, tensor info 71..106 (name 71..82, n_dims 82..86, dim 86..94, type 94..98, offset
// 98..106), data 128..160.
std::string tiny_file() {
  return Bytes()
      .header(1, 1)
      .kv_string("general.name", "tiny-test-model")
      .tensor("tok", {8}, 0, 0)
      .pad(32)
      .zeros(32)
      .b;
}

}  // namespace

TEST_CASE("the hand-assembled tiny file is valid") {
  TempDir dir;
  const std::string path = (dir / "tiny.gguf");
  write_file(path, tiny_file());
  GgufFile f(path);
  CHECK(f.get_string("general.name") == "tiny-test-model");
  REQUIRE(f.tensors().size() == 1);
  CHECK(f.tensors()[0].file_offset == 128);
  CHECK(f.tensors()[0].n_bytes == 32);
}

TEST_CASE("bad magic is refused") {
  TempDir dir;
  std::string bytes = tiny_file();
  bytes[3] = 'X';
  check_rejected((dir / "magic.gguf"), bytes, "bad magic");
  check_rejected((dir / "short.gguf"), "GG", "bad magic");
  check_rejected((dir / "version.gguf"), Bytes().put<uint32_t>(0x46554747).put<uint32_t>(7).b,
                 "unsupported GGUF version 7");
}

TEST_CASE("a file cut inside the header, a key or the tensor infos is refused") {
  TempDir dir;
  const std::string whole = tiny_file();
  const std::pair<size_t, const char*> cuts[] = {
      {6, "truncated at byte offset 4 while reading version"},
      {12, "truncated at byte offset 8 while reading tensor count"},
      {20, "truncated at byte offset 16 while reading metadata count"},
      {28, "truncated at byte offset 24 while reading metadata key"},
      {40, "string length 12 at byte offset 24 (metadata key) runs past the end of the file"},
      {46, "truncated at byte offset 44 while reading general.name"},
      {60, "string length 15 at byte offset 48 (general.name) runs past the end of the file"},
      {75, "truncated at byte offset 71 while reading tensor name"},
      {84, "truncated at byte offset 82 while reading tok"},
      {90, "truncated at byte offset 86 while reading tok"},
      {100, "truncated at byte offset 98 while reading tok"},
      {110, "tensor data section starts at byte offset 128, past the end of the file (110 bytes)"},
      {150, "tensor 'tok' data (32 bytes at byte offset 128) runs past the end of the file"},
  };
  for (const auto& [len, problem] : cuts)
    check_rejected((dir / ("cut" + std::to_string(len) + ".gguf")), whole.substr(0, len), problem);
}

TEST_CASE("huge string lengths and array counts are refused before any allocation") {
  TempDir dir;
  const uint64_t huge = uint64_t{1} << 62;
  check_rejected((dir / "key.gguf"), Bytes().header(0, 1).put(huge).zeros(64).b,
                 "string length 4611686018427387904 at byte offset 24 (metadata key)");
  check_rejected((dir / "value.gguf"),
                 Bytes().header(0, 1).str("k").put<uint32_t>(8).put(huge).zeros(64).b,
                 "string length 4611686018427387904 at byte offset 37 (k) runs past the end");
  check_rejected(
      (dir / "u32s.gguf"),
      Bytes().header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(4).put(huge).zeros(64).b,
      "array 'k' of 4611686018427387904 elements at byte offset 33 runs past the end");
  check_rejected(
      (dir / "strings.gguf"),
      Bytes().header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(8).put(huge).zeros(64).b,
      "array 'k' claims 4611686018427387904 strings, more than the file can hold");
  check_rejected((dir / "counts.gguf"), Bytes().header(huge, 0).zeros(64).b,
                 "tensor count 4611686018427387904 is impossible for the file size");
}

TEST_CASE("tensor data past the end of the file is refused") {
  TempDir dir;
  check_rejected(
      (dir / "past.gguf"), Bytes().header(1, 0).tensor("w", {8}, 0, 64).pad(32).zeros(64).b,
      "tensor 'w' data (32 bytes at byte offset 128) runs past the end of the file (128 bytes)");
  // A huge aligned offset must not wrap around when added to the data start.
  check_rejected((dir / "wrap.gguf"),
                 Bytes().header(1, 0).tensor("w", {8}, 0, ~uint64_t{31}).pad(32).zeros(32).b,
                 "tensor 'w' data (32 bytes at byte offset");
}

TEST_CASE("unknown tensor types and metadata value types are refused") {
  TempDir dir;
  check_rejected((dir / "ttype.gguf"),
                 Bytes().header(1, 0).tensor("w", {8}, 99, 0).pad(32).zeros(64).b,
                 "tensor 'w' has unknown type 99 at byte offset 45");
  check_rejected((dir / "vtype.gguf"), Bytes().header(0, 1).str("k").put<uint32_t>(13).zeros(16).b,
                 "metadata key 'k' has unknown value type 13 at byte offset 33");
  check_rejected(
      (dir / "etype.gguf"),
      Bytes().header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(9).put<uint64_t>(0).zeros(16).b,
      "metadata array 'k' has unsupported element type 9");
}

TEST_CASE("duplicate keys and tensors are refused") {
  TempDir dir;
  check_rejected(
      (dir / "dupkey.gguf"),
      Bytes().header(0, 2).kv_string("general.name", "a").kv_string("general.name", "b").b,
      "duplicate metadata key 'general.name'");
  check_rejected(
      (dir / "duptensor.gguf"),
      Bytes().header(2, 0).tensor("w", {8}, 0, 0).tensor("w", {8}, 0, 32).pad(32).zeros(64).b,
      "duplicate tensor 'w'");
}

TEST_CASE("misaligned tensor offsets and bad alignments are refused") {
  TempDir dir;
  check_rejected((dir / "misaligned.gguf"),
                 Bytes().header(1, 0).tensor("w", {8}, 0, 4).pad(32).zeros(64).b,
                 "tensor 'w' data offset 4 is not aligned to 32");
  Bytes a64;
  a64.header(1, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(64);
  a64.tensor("w", {8}, 0, 32).pad(64).zeros(128);
  check_rejected((dir / "misaligned64.gguf"), a64.b,
                 "tensor 'w' data offset 32 is not aligned to 64");
  Bytes a48;
  a48.header(0, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(48);
  check_rejected((dir / "align48.gguf"), a48.b, "general.alignment 48 is not a power of two");
}

TEST_CASE("zero dimensions, bad dimension counts and partial blocks are refused") {
  TempDir dir;
  check_rejected((dir / "zero.gguf"),
                 Bytes().header(1, 0).tensor("w", {8, 0}, 0, 0).pad(32).zeros(64).b,
                 "tensor 'w' has an invalid dimension 0");
  check_rejected((dir / "five.gguf"),
                 Bytes().header(1, 0).tensor("w", {1, 1, 1, 1, 1}, 0, 0).pad(32).zeros(64).b,
                 "tensor 'w' has 5 dimensions (1 to 4 allowed)");
  check_rejected((dir / "nodims.gguf"),
                 Bytes().header(1, 0).tensor("w", {}, 0, 0).pad(32).zeros(64).b,
                 "tensor 'w' has 0 dimensions (1 to 4 allowed)");
  check_rejected((dir / "q8row.gguf"),
                 Bytes().header(1, 0).tensor("w", {16}, 8, 0).pad(32).zeros(64).b,
                 "tensor 'w' row of 16 elements is not a multiple of the Q8_0 block size");
  // 2^40 * 2^22 F64 elements: the byte count must not wrap around to a small number.
  check_rejected((dir / "bytes.gguf"),
                 Bytes()
                     .header(1, 0)
                     .tensor("w", {uint64_t{1} << 40, uint64_t{1} << 22}, 28, 0)
                     .pad(32)
                     .zeros(64)
                     .b,
                 "tensor 'w' is too large");
}

namespace {

// Writes one key of every value type, scalar arrays of every element type, a string array and
// F32, F16, BF16 and Q8_0 tensors. Returns the tensor values written.
std::vector<float> write_all_types(const std::string& path, uint32_t alignment) {
  std::vector<float> values(64);  // [2][32]
  for (size_t i = 0; i < values.size(); ++i) values[i] = std::sin(float(i) * 0.7f) * float(i % 9);
  GgufWriter w;
  w.add_u8("t.u8", 200);
  w.add_i8("t.i8", -100);
  w.add_u16("t.u16", 60000);
  w.add_i16("t.i16", -30000);
  w.add_u32("t.u32", 4000000000u);
  w.add_i32("t.i32", -2000000000);
  w.add_u64("t.u64", uint64_t{1} << 60);
  w.add_i64("t.i64", -(int64_t{1} << 60));
  w.add_f32("t.f32", 0.1f);
  w.add_f64("t.f64", 0.1);
  w.add_bool("t.bool", true);
  w.add_string("t.string", std::string("h\0llo", 5));
  const uint8_t u8s[] = {1, 255};
  const int16_t i16s[] = {-5, 7};
  const uint64_t u64s[] = {uint64_t{1} << 40, 3};
  const double f64s[] = {0.5, -2.25};
  const bool bools[] = {true, false};
  w.add_array("a.u8", GgufType::kU8, u8s, 2);
  w.add_array("a.i16", GgufType::kI16, i16s, 2);
  w.add_array("a.u64", GgufType::kU64, u64s, 2);
  w.add_array("a.f64", GgufType::kF64, f64s, 2);
  w.add_array("a.bool", GgufType::kBool, bools, 2);
  w.add_f32_array("a.f32", std::vector<float>{1.5f, -0.25f});
  w.add_i32_array("a.i32", std::vector<int32_t>{-7, 1 << 30});
  w.add_string_array("a.string", std::vector<std::string>{"", "two", "three"});
  w.add_string_array("a.empty", std::vector<std::string>{});
  if (alignment != 32) w.set_alignment(alignment);
  w.add_tensor("f32", {32, 2}, WeightType::kF32, values);
  w.add_tensor("f16", {32, 2}, WeightType::kF16, values);
  w.add_tensor("bf16", {64}, WeightType::kBF16, values);
  w.add_tensor("q8_0", {32, 2}, WeightType::kQ8_0, values);
  w.write(path);
  return values;
}

template <typename T>
T elem(const kvrt::io::GgufValue& v, size_t i) {
  T x;
  std::memcpy(&x, v.elems + i * sizeof(T), sizeof(T));
  return x;
}

void check_all_metadata(const GgufFile& f) {
  CHECK(f.find("t.u8")->type == GgufType::kU8);
  CHECK(f.get_uint("t.u8") == 200);
  CHECK(f.find("t.i8")->i == -100);
  CHECK(f.get_uint("t.u16") == 60000);
  CHECK(f.find("t.i16")->i == -30000);
  CHECK(f.get_uint("t.u32") == 4000000000u);
  CHECK(f.find("t.i32")->type == GgufType::kI32);
  CHECK(f.find("t.i32")->i == -2000000000);
  CHECK(f.get_uint("t.u64") == uint64_t{1} << 60);
  CHECK(f.find("t.i64")->i == -(int64_t{1} << 60));
  CHECK(f.find("t.f32")->type == GgufType::kF32);
  CHECK(f.get_float("t.f32") == double(0.1f));
  CHECK(f.get_float("t.f64") == 0.1);
  CHECK(f.get_bool("t.bool"));
  CHECK(f.get_string("t.string") == std::string_view("h\0llo", 5));
  CHECK(f.get_int_array("a.u8") == std::vector<int32_t>{1, 255});
  CHECK(f.get_int_array("a.i16") == std::vector<int32_t>{-5, 7});
  CHECK(elem<uint64_t>(*f.find("a.u64"), 0) == uint64_t{1} << 40);
  CHECK(f.get_float_array("a.f64") == std::vector<float>{0.5f, -2.25f});
  CHECK(f.find("a.bool")->elem_type == GgufType::kBool);
  CHECK(elem<uint8_t>(*f.find("a.bool"), 0) == 1);
  CHECK(elem<uint8_t>(*f.find("a.bool"), 1) == 0);
  CHECK(f.get_float_array("a.f32") == std::vector<float>{1.5f, -0.25f});
  CHECK(f.get_int_array("a.i32") == std::vector<int32_t>{-7, 1 << 30});
  CHECK(f.get_string_array("a.string") == std::vector<std::string_view>{"", "two", "three"});
  CHECK(f.get_string_array("a.empty").empty());
}

template <typename Encode>
void check_halves(const kvrt::io::GgufTensor& t, const std::vector<float>& values, Encode encode) {
  REQUIRE(t.n_bytes == 2 * values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, t.data + 2 * i, 2);
    REQUIRE(h == encode(values[i]));
  }
}

// Q8_0 from its definition: d16 = f16(max|x| / 127), |x - q*d| within half a step (plus the
// rounding of d to f16), and the largest |x| maps to +-127.
void check_q8_0(const kvrt::io::GgufTensor& t, const std::vector<float>& values) {
  REQUIRE(t.n_bytes == values.size() / 32 * 34);
  for (size_t b = 0; b < values.size() / 32; ++b) {
    const uint8_t* blk = t.data + 34 * b;
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(values[32 * b + j]));
    uint16_t d16;
    std::memcpy(&d16, blk, 2);
    REQUIRE(d16 == kvrt::f32_to_f16(amax / 127.0f));
    const float d = kvrt::f16_to_f32(d16);
    for (int j = 0; j < 32; ++j) {
      const float x = values[32 * b + j];
      const int q = int8_t(blk[2 + j]);
      CHECK(std::fabs(x - float(q) * d) <= 0.5f * d + 128.0f * std::fabs(d - amax / 127.0f));
      if (std::fabs(x) == amax) CHECK(std::abs(q) == 127);
    }
  }
}

}  // namespace

TEST_CASE("writer round trip: every metadata type and every tensor type read back exactly") {
  TempDir dir;
  for (uint32_t alignment : {32u, 64u}) {
    const std::string path = dir / ("all" + std::to_string(alignment) + ".gguf");
    const std::vector<float> values = write_all_types(path, alignment);
    GgufFile f(path);
    CHECK(f.version() == 3);
    CHECK(f.get_uint_or("general.alignment", 32) == alignment);
    check_all_metadata(f);
    REQUIRE(f.tensors().size() == 4);
    for (const auto& t : f.tensors()) CHECK(t.file_offset % alignment == 0);
    const auto* t32 = f.find_tensor("f32");
    CHECK(t32->dims == std::vector<int64_t>{32, 2});
    CHECK(t32->type == WeightType::kF32);
    REQUIRE(t32->n_bytes == 4 * values.size());
    CHECK(std::memcmp(t32->data, values.data(), t32->n_bytes) == 0);
    CHECK(f.find_tensor("f16")->type == WeightType::kF16);
    check_halves(*f.find_tensor("f16"), values, kvrt::f32_to_f16);
    CHECK(f.find_tensor("bf16")->dims == std::vector<int64_t>{64});
    check_halves(*f.find_tensor("bf16"), values, kvrt::f32_to_bf16);
    CHECK(f.find_tensor("q8_0")->type == WeightType::kQ8_0);
    check_q8_0(*f.find_tensor("q8_0"), values);
    // Every tensor, the last one included, is followed by padding to the alignment.
    const auto& last = f.tensors().back();
    CHECK(f.file_size() ==
          (last.file_offset + last.n_bytes + alignment - 1) / alignment * alignment);
  }
}

TEST_CASE("Q8_0 encoding matches llama.cpp's reference block on known values") {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // d = 1: codes are the values themselves
  x[1] = -3.0f;
  x[2] = 42.0f;
  uint8_t out[34];
  kvrt::io::encode_tensor_data(WeightType::kQ8_0, x.data(), 32, out);
  CHECK((out[0] | out[1] << 8) == 0x3c00);
  CHECK(int8_t(out[2]) == 127);
  CHECK(int8_t(out[3]) == -3);
  CHECK(int8_t(out[4]) == 42);
  CHECK(out[5] == 0);
  // d = 2: x / d = +-1.5 and 2.5 round half away from zero, as roundf does.
  x = std::vector<float>(32, 0.0f);
  x[0] = -254.0f;
  x[1] = 3.0f;
  x[2] = -3.0f;
  x[3] = 5.0f;
  kvrt::io::encode_tensor_data(WeightType::kQ8_0, x.data(), 32, out);
  CHECK((out[0] | out[1] << 8) == 0x4000);
  CHECK(int8_t(out[2]) == -127);
  CHECK(int8_t(out[3]) == 2);
  CHECK(int8_t(out[4]) == -2);
  CHECK(int8_t(out[5]) == 3);
  // An all-zero block has scale 0 and zero codes.
  x = std::vector<float>(32, 0.0f);
  kvrt::io::encode_tensor_data(WeightType::kQ8_0, x.data(), 32, out);
  for (uint8_t byte : out) CHECK(byte == 0);
}

TEST_CASE("writer refuses bad input and reports I/O failures naming the path") {
  GgufWriter w;
  w.add_u32("k", 1);
  CHECK_THROWS_AS(w.add_string("k", "again"), kvrt::Error);
  CHECK_THROWS_AS(w.add_u32("general.alignment", 64), kvrt::Error);
  CHECK_THROWS_AS(w.set_alignment(48), kvrt::Error);
  CHECK_THROWS_AS(w.add_tensor("q", {16}, WeightType::kQ8_0, std::vector<float>(16)), kvrt::Error);
  CHECK_THROWS_AS(w.add_tensor("z", {0}, WeightType::kF32, std::vector<float>{}), kvrt::Error);
  CHECK_THROWS_AS(w.add_tensor("n", {4}, WeightType::kF32, std::vector<float>(3)), kvrt::Error);
  CHECK_THROWS_AS(w.add_tensor("t", {256}, WeightType::kQ8_K, std::vector<float>(256)),
                  kvrt::Error);  // an activation format
  w.add_tensor("w", {4}, WeightType::kF32, std::vector<float>(4, 1.0f));
  CHECK_THROWS_AS(w.add_tensor("w", {4}, WeightType::kF32, std::vector<float>(4)), kvrt::Error);
  TempDir dir;
  const std::string bad = (dir / "no_such_dir/out.gguf");
  try {
    w.write(bad);
    FAIL("writing into a missing directory succeeded");
  } catch (const kvrt::Error& e) {
    CHECK(std::string(e.what()).find(bad) != std::string::npos);
  }
}

TEST_CASE("a failed write is an error naming the path, and the partial file is removed") {
  TempDir dir;
  const std::string path = (dir / "big.gguf");
  GgufWriter w;
  w.add_tensor("w", {1 << 16}, WeightType::kF32, std::vector<float>(1 << 16, 1.0f));  // 256 KiB
  // Cap the file size at 64 KiB: writes past it fail with EFBIG instead of raising SIGXFSZ.
  rlimit old_limit{};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit cap = old_limit;
  cap.rlim_cur = 64 * 1024;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &cap) == 0);
  std::string msg;
  try {
    w.write(path);
  } catch (const kvrt::Error& e) {
    msg = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  INFO("message: " << msg);
  CHECK(msg.find("cannot write '" + path + "'") != std::string::npos);
  CHECK_FALSE(fs::exists(path));
}

TEST_CASE("every proper prefix of a valid file is refused with an error, never a crash") {
  TempDir dir;
  const std::string full_path = (dir / "full.gguf");
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_u32("llama.block_count", 2);
  w.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.add_string_array("tokenizer.ggml.tokens", std::vector<std::string>{"<unk>", "a", "bc"});
  w.add_f32_array("tokenizer.ggml.scores", std::vector<float>{0.0f, -1.0f, -2.0f});
  w.add_tensor("norm", {4}, WeightType::kF32, std::vector<float>(4, 1.0f));
  w.add_tensor("q", {32}, WeightType::kQ8_0, std::vector<float>(32, 0.5f));
  w.add_tensor("h", {16}, WeightType::kF16, std::vector<float>(16, 2.0f));  // 32 bytes: no tail pad
  w.write(full_path);
  const std::string whole = read_file(full_path);
  GgufFile full(full_path);
  REQUIRE(full.tensors().back().file_offset + full.tensors().back().n_bytes == whole.size());
  const std::string path = (dir / "prefix.gguf");
  for (size_t len = 0; len < whole.size(); ++len) {
    write_file(path, std::string_view(whole).substr(0, len));
    const std::string msg = open_error(path);
    INFO("prefix length " << len << ": " << msg);
    REQUIRE(msg.find("'" + path + "'") != std::string::npos);
  }
}

TEST_CASE("stories260K.gguf: 48 F32 tensors and its llama metadata") {
  GgufFile f(kvrt::test::stories_path());
  CHECK(f.version() == 3);
  REQUIRE(f.tensors().size() == 48);
  for (const auto& t : f.tensors()) {
    CHECK(t.type == WeightType::kF32);
    CHECK(t.file_offset % 32 == 0);
    CHECK(t.n_bytes == uint64_t(t.n_elements) * 4);
  }
  CHECK(f.get_string("general.architecture") == "llama");
  CHECK(f.get_uint("llama.embedding_length") == 64);
  CHECK(f.get_uint("llama.block_count") == 5);
  CHECK(f.get_uint("llama.attention.head_count") == 8);
  CHECK(f.get_uint("llama.attention.head_count_kv") == 4);
  CHECK(f.get_uint("llama.feed_forward_length") == 172);
  CHECK(f.get_uint("llama.context_length") == 2048);
  CHECK(f.get_float("llama.attention.layer_norm_rms_epsilon") == doctest::Approx(1e-5));
  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  REQUIRE(tokens.size() == 512);
  CHECK(tokens[0] == "<unk>");
  CHECK(tokens[1] == "<s>");
  CHECK(f.get_float_array("tokenizer.ggml.scores").size() == 512);
  CHECK(f.get_int_array("tokenizer.ggml.token_type")[0] == 2);
  CHECK(f.find_tensor("token_embd.weight")->dims == std::vector<int64_t>{64, 512});
  CHECK(f.find_tensor("blk.4.ffn_down.weight")->dims == std::vector<int64_t>{172, 64});
  CHECK_THROWS_AS(f.get_uint("general.name"), kvrt::Error);  // a string, not an integer
}

TEST_CASE("add_value copies metadata from another file, string arrays included") {
  const GgufFile src(kvrt::test::stories_path());
  TempDir dir;
  const std::string path = (dir / "copy.gguf");
  GgufWriter w;
  for (const auto& [key, value] : src.metadata()) w.add_value(key, value);
  w.write(path);
  const GgufFile copy(path);
  REQUIRE(copy.metadata().size() == src.metadata().size());
  for (size_t i = 0; i < src.metadata().size(); ++i) {
    const auto& [key, a] = src.metadata()[i];
    const auto& [key_b, b] = copy.metadata()[i];
    CHECK(key == key_b);
    CHECK(a.type == b.type);
    CHECK(a.u == b.u);
    CHECK(a.f == b.f);
    CHECK(a.s == b.s);
    CHECK(a.n_elems == b.n_elems);
  }
  CHECK(copy.get_string_array("tokenizer.ggml.tokens") ==
        src.get_string_array("tokenizer.ggml.tokens"));
  CHECK(copy.get_float_array("tokenizer.ggml.scores") ==
        src.get_float_array("tokenizer.ggml.scores"));
}
