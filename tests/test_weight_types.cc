// The weight types without llama.cpp's fixtures: kvrt's encoders round-trip through the decoders
// within each type's rounding, the decoders follow ggml's layouts on hand-built blocks, and files
// with blocks that do not fit (partial rows, truncated data, an unknown type id) are refused naming
// the tensor. Every rung's to_float against the reference codec: tests/checkasm.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "quant_types.h"
#include "simd/weights/blocks.h"
#include "simd/weights/types.h"
#include "test_util.h"

using namespace kvrt;
using simd::WeightType;

namespace {

using test::kQuantTypes;

std::vector<float> gaussian(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = dist(rng);
  return x;
}

std::vector<uint8_t> encode(WeightType type, const std::vector<float>& x) {
  const simd::WeightTypeTraits& t = simd::weight_type_traits(type);
  std::vector<uint8_t> bytes(size_t(t.row_bytes(int64_t(x.size()))));
  t.from_float_ref(x.data(), int64_t(x.size()), bytes.data());
  return bytes;
}

std::vector<float> decode(WeightType type, const std::vector<uint8_t>& bytes, size_t n) {
  std::vector<float> y(n);
  simd::weight_type_traits(type).to_float_ref(bytes.data(), int64_t(n), y.data());
  return y;
}

std::string error_of(const std::string& path) {
  try {
    io::GgufFile f(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("kvrt's encoders round-trip through the decoders within each type's rounding") {
  // Bounds on rms(error) / rms(x) for N(0, 1) values: a uniform step over a block's range of about
  // ±2.5σ (32 values) or ±3σ (super-blocks) gives step / sqrt(12) per value; the bound is that
  // with a margin of 1.5x for the scale rounding. Q2_K's 4 levels and Q3_K's 8 are coarse.
  struct Case {
    WeightType type;
    double bound;
  } cases[] = {{WeightType::kQ8_0, 0.01},  {WeightType::kQ4_0, 0.15}, {WeightType::kQ4_1, 0.12},
               {WeightType::kQ5_0, 0.075}, {WeightType::kQ5_1, 0.06}, {WeightType::kIQ4_NL, 0.13},
               {WeightType::kQ2_K, 0.45},  {WeightType::kQ3_K, 0.25}, {WeightType::kQ4_K, 0.12},
               {WeightType::kQ5_K, 0.06},  {WeightType::kQ6_K, 0.03}};
  const std::vector<float> x = gaussian(256 * 64, 3);
  for (const Case& c : cases) {
    const std::vector<float> y = decode(c.type, encode(c.type, x), x.size());
    double err = 0, ref = 0;
    for (size_t i = 0; i < x.size(); ++i)
      err += double(y[i] - x[i]) * double(y[i] - x[i]), ref += double(x[i]) * x[i];
    const double rel = std::sqrt(err / ref);
    INFO(simd::weight_type_name(c.type) << " relative rms error " << rel);
    CHECK(rel < c.bound);
    CHECK(rel > 0.0);
  }
}

TEST_CASE("zero blocks encode and decode to zeros") {
  const std::vector<float> x(512, 0.0f);
  for (WeightType type : kQuantTypes) {
    INFO(simd::weight_type_name(type));
    const std::vector<float> y = decode(type, encode(type, x), x.size());
    for (float v : y) CHECK(v == 0.0f);
  }
}

TEST_CASE("decoders follow ggml's layouts on hand-built blocks") {
  SUBCASE("Q4_0: value j in the low nibble of byte j, value j + 16 in its high nibble") {
    simd::BlockQ4_0 b{};
    b.d = f32_to_f16(0.5f);
    b.qs[3] = 0x1F;  // value 3: 15 - 8 = 7; value 19: 1 - 8 = -7
    std::vector<float> y(32);
    simd::weight_type_traits(WeightType::kQ4_0)
        .to_float_ref(reinterpret_cast<uint8_t*>(&b), 32, y.data());
    CHECK(y[3] == 3.5f);
    CHECK(y[19] == -3.5f);
    CHECK(y[0] == -4.0f);
  }
  SUBCASE("Q5_1: the fifth bit of value j is bit j of qh") {
    simd::BlockQ5_1 b{};
    b.d = f32_to_f16(1.0f);
    b.m = f32_to_f16(-2.0f);
    b.qh[2] = 0x01;  // value 16 gets 16
    std::vector<float> y(32);
    simd::weight_type_traits(WeightType::kQ5_1)
        .to_float_ref(reinterpret_cast<uint8_t*>(&b), 32, y.data());
    CHECK(y[16] == 14.0f);
    CHECK(y[15] == -2.0f);
  }
  SUBCASE("Q4_K: sub-block 5's 6-bit scale and min are split over the 12 scale bytes") {
    simd::BlockQ4_K b{};
    b.d = f32_to_f16(1.0f);
    b.dmin = f32_to_f16(0.25f);
    // sub-block 5: scale 37 = 0b100101 (low 4 bits in scales[9], top 2 in scales[1] bits 6-7),
    // min 18 = 0b010010 (low 4 in scales[9] high nibble, top 2 in scales[5] bits 6-7)
    b.scales[9] = uint8_t(0x5 | (0x2 << 4));
    b.scales[1] = uint8_t(0x2 << 6);
    b.scales[5] = uint8_t(0x1 << 6);
    b.qs[64 + 7] = 0x30;  // sub-block 5 is the high nibbles of bytes 64..95: value 160 + 7 gets 3
    std::vector<float> y(256);
    simd::weight_type_traits(WeightType::kQ4_K)
        .to_float_ref(reinterpret_cast<uint8_t*>(&b), 256, y.data());
    CHECK(y[167] == 37.0f * 3.0f - 0.25f * 18.0f);
    CHECK(y[160] == -0.25f * 18.0f);
  }
  SUBCASE("Q6_K: value 200 = 128 + 2 * 32 + 8 has its low bits in the high nibble of ql[64 + 8]") {
    simd::BlockQ6_K b{};
    b.d = f32_to_f16(2.0f);
    for (auto& s : b.scales) s = 1;
    b.scales[200 / 16] = -3;
    b.ql[64 + 8] = 0x70;  // low 4 bits 7
    b.qh[32 + 8] = 0x20;  // bits 4-5: top bits 2 → code 7 | 32 = 39, value 39 - 32 = 7
    std::vector<float> y(256);
    simd::weight_type_traits(WeightType::kQ6_K)
        .to_float_ref(reinterpret_cast<uint8_t*>(&b), 256, y.data());
    CHECK(y[200] == 2.0f * -3.0f * 7.0f);
    CHECK(y[0] == 2.0f * -32.0f);
  }
}

TEST_CASE("the GGUF writer and reader keep every type's blocks") {
  test::TempDir tmp;
  const std::vector<float> x = gaussian(512, 5);
  io::GgufWriter w;
  for (WeightType type : kQuantTypes) w.add_tensor(simd::weight_type_name(type), {256, 2}, type, x);
  w.write(tmp / "all.gguf");
  io::GgufFile f(tmp / "all.gguf");
  for (WeightType type : kQuantTypes) {
    INFO(simd::weight_type_name(type));
    const io::GgufTensor* t = f.find_tensor(simd::weight_type_name(type));
    REQUIRE(t != nullptr);
    CHECK(t->type == type);
    const std::vector<uint8_t> expected = encode(type, x);
    REQUIRE(t->n_bytes == expected.size());
    CHECK(std::memcmp(t->data, expected.data(), expected.size()) == 0);
  }
}

TEST_CASE("partial blocks, truncated blocks and unknown type ids are refused naming the tensor") {
  test::TempDir tmp;
  const std::vector<float> x = gaussian(512, 9);
  {
    io::GgufWriter w;
    CHECK_THROWS_WITH_AS(w.add_tensor("w", {128, 4}, WeightType::kQ4_K, x),
                         doctest::Contains("tensor 'w': Q4_K needs rows of a multiple of 256"),
                         Error);
  }
  // A Q4_K tensor re-declared with rows of 128: the reader refuses it before touching its data.
  io::GgufWriter w;
  w.add_tensor("blk.0.ffn_up.weight", {256, 2}, WeightType::kQ4_K, x);
  w.write(tmp / "ok.gguf");
  std::string bytes = test::read_file(tmp / "ok.gguf");
  const size_t name_at = bytes.find("blk.0.ffn_up.weight") + std::strlen("blk.0.ffn_up.weight");
  const size_t dims_at = name_at + 4, type_at = dims_at + 16;  // n_dims u32, two u64 dims, type u32

  std::string partial = bytes;
  const uint64_t row128 = 128, rows4 = 4;
  std::memcpy(&partial[dims_at], &row128, 8);
  std::memcpy(&partial[dims_at + 8], &rows4, 8);
  std::ofstream(tmp / "partial.gguf", std::ios::binary) << partial;
  CHECK(error_of(tmp / "partial.gguf")
            .find("tensor 'blk.0.ffn_up.weight' row of 128 elements is not a multiple of "
                  "the Q4_K block size (256)") != std::string::npos);

  std::string unknown = bytes;
  const uint32_t type99 = 99;
  std::memcpy(&unknown[type_at], &type99, 4);
  std::ofstream(tmp / "unknown.gguf", std::ios::binary) << unknown;
  CHECK(error_of(tmp / "unknown.gguf").find("tensor 'blk.0.ffn_up.weight' has unknown type 99") !=
        std::string::npos);

  // Cut inside the second super-block (144 bytes each).
  std::ofstream(tmp / "cut.gguf", std::ios::binary) << bytes.substr(0, bytes.size() - 100);
  const std::string cut = error_of(tmp / "cut.gguf");
  INFO(cut);
  CHECK(cut.find("tensor 'blk.0.ffn_up.weight' data (288 bytes") != std::string::npos);
  CHECK(cut.find("runs past the end of the file") != std::string::npos);
}
