// The codecs of every weight type (the slots to_float, from_float and to_bf16): bit for bit as the
// type's reference codec (to_bf16: its widening, then f32_to_bf16) on encoded random values; and on
// the edge cases of their kind: every f16 value widened, every bf16 rounding case, the activation
// quantizers' ties and empty blocks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "checkasm.h"
#include "common/half.h"
#include "simd/weights/types.h"
#include "weight_operands.h"

namespace kvrt::checkasm {
namespace {

using simd::WeightType;

// n values of N(0, 1).
std::vector<float> gaussian(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  return test::gaussian(n, rng);
}

const simd::WeightKernels& slots(const simd::Kernels& k, WeightType t) {
  return k.weight[simd::weight_index(t)];
}

// 8 blocks of 256 values (or 2048 plain values), encoded by the reference, decoded by the slot.
// The scalar rung's slots are the reference codecs, so a type has a slot only where it has a
// reference (activation formats: from_float alone).
void check_codec(WeightType type, const Rung& r) {
  const simd::WeightTypeTraits& t = simd::weight_type_traits(type);
  const std::vector<float> x = gaussian(256 * 8, 11);
  const int64_t n = int64_t(x.size());
  std::vector<uint8_t> bytes(size_t(t.row_bytes(n))), ref_bytes(bytes.size());
  REQUIRE(bool(t.from_float_ref));
  t.from_float_ref(x.data(), n, ref_bytes.data());
  INFO(std::string(t.name));
  if (const auto from_float = slots(r.k, type).from_float) {
    from_float(x.data(), n, bytes.data());
    CHECK(bytes == ref_bytes);
  }
  if (const auto to_float = slots(r.k, type).to_float) {
    std::vector<float> y(x.size()), ref(x.size());
    to_float(ref_bytes.data(), n, y.data());
    t.to_float_ref(ref_bytes.data(), n, ref.data());
    CHECK(std::memcmp(y.data(), ref.data(), y.size() * sizeof(float)) == 0);
  }
  if (const auto to_bf16 = slots(r.k, type).to_bf16) {
    // the encoded values, then random bytes: scales of every kind (subnormal, infinite, NaN)
    std::vector<uint8_t> noise(ref_bytes.size());
    std::mt19937 rng(5);
    for (uint8_t& b : noise) b = uint8_t(rng());
    for (const std::vector<uint8_t>* in : {&ref_bytes, &noise}) {
      std::vector<uint16_t> y(x.size()), ref(x.size());
      std::vector<float> widened(x.size());
      to_bf16(in->data(), n, y.data());
      t.to_float_ref(in->data(), n, widened.data());
      for (size_t i = 0; i < x.size(); ++i) ref[i] = f32_to_bf16(widened[i]);
      CHECK(y == ref);
    }
  }
}

std::vector<BenchCall> bench_codec(WeightType type, const Rung& r) {
  const simd::WeightTypeTraits& t = simd::weight_type_traits(type);
  const int64_t n = 4096;
  auto x = std::make_shared<std::vector<float>>(gaussian(size_t(n), 1));
  auto bytes = std::make_shared<std::vector<uint8_t>>(size_t(t.row_bytes(n)));
  t.from_float_ref(x->data(), n, bytes->data());
  const std::string name = std::string("weight.") + t.name + ".";
  std::vector<BenchCall> calls;
  if (const auto to_float = slots(r.k, type).to_float)
    calls.push_back({name + "to_float", [=] { to_float(bytes->data(), n, x->data()); }});
  if (const auto from_float = slots(r.k, type).from_float)
    calls.push_back({name + "from_float", [=] { from_float(x->data(), n, bytes->data()); }});
  if (const auto to_bf16 = slots(r.k, type).to_bf16; to_bf16 && type != WeightType::kF16) {
    auto out = std::make_shared<std::vector<uint16_t>>(size_t(n));
    calls.push_back({name + "to_bf16", [=] { to_bf16(bytes->data(), n, out->data()); }});
  }
  return calls;
}

std::vector<BenchCall> bench_f16_to_bf16(const Rung& r) {
  const int64_t n = 4096;
  auto bytes = std::make_shared<std::vector<uint8_t>>(size_t(2 * n));
  simd::weight_type_traits(WeightType::kF16)
      .from_float_ref(gaussian(size_t(n), 1).data(), n, bytes->data());
  auto out = std::make_shared<std::vector<uint16_t>>(size_t(n));
  const auto to_bf16 = slots(r.k, WeightType::kF16).to_bf16;
  return {{"weight.F16.to_bf16", [=] { to_bf16(bytes->data(), n, out->data()); }}};
}

void check_f16_widening(const Rung& r) {
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);
  std::vector<float> out(all.size());
  slots(r.k, WeightType::kF16)
      .to_float(reinterpret_cast<const uint8_t*>(all.data()), int64_t(all.size()), out.data());
  int n_bad = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const float ref = f16_to_f32(all[i]);
    n_bad += std::isnan(ref) ? !std::isnan(out[i]) : out[i] != ref;
  }
  CHECK(n_bad == 0);
}

// Every f16 value rounded to bf16 in one pass, as widening it and rounding the f32 would.
void check_f16_to_bf16(const Rung& r) {
  std::vector<uint16_t> all(65536 + 7);  // a tail shorter than a vector too
  for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);
  std::vector<uint16_t> out(all.size());
  slots(r.k, WeightType::kF16)
      .to_bf16(reinterpret_cast<const uint8_t*>(all.data()), int64_t(all.size()), out.data());
  int n_bad = 0;
  for (size_t i = 0; i < all.size(); ++i) n_bad += out[i] != f32_to_bf16(f16_to_f32(all[i]));
  CHECK(n_bad == 0);
}

// Every bf16 value with the low halves that decide rounding: exact, below, at and above the tie,
// the largest; infinities and NaNs (quieted) come with the top half 0x7f80 / 0xff80 and up.
void check_bf16_rounding(const Rung& r) {
  std::vector<uint32_t> bits;
  for (uint32_t hi = 0; hi < 0x10000u; ++hi)
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
      bits.push_back(hi << 16 | lo);
  std::vector<float> x(bits.size());
  std::memcpy(x.data(), bits.data(), bits.size() * sizeof(float));
  std::vector<uint16_t> out(x.size());
  slots(r.k, WeightType::kBF16)
      .from_float(x.data(), int64_t(x.size()), reinterpret_cast<uint8_t*>(out.data()));
  int64_t n_bad = 0;
  for (size_t i = 0; i < x.size(); ++i) n_bad += out[i] != f32_to_bf16(x[i]);
  CHECK(n_bad == 0);
}

// The activation formats of the decode products, on ties, an all-zero block of every size and a
// block led by a negative value.
void check_activations(const Rung& r) {
  std::vector<float> x = gaussian(2816, 7);
  x[0] = 127.0f;  // a step of 1 (Q8_K: -1): every other code of the first 32 values is a tie
  for (int j = 1; j < 32; ++j) x[size_t(j)] = float(j - 16) + 0.5f;
  std::fill(x.begin() + 256, x.begin() + 512, 0.0f);
  x[700] = -1e3f;
  for (WeightType act : {WeightType::kQ8_0, WeightType::kQ8_1, WeightType::kQ8_K}) {
    const simd::WeightTypeTraits& t = simd::weight_type_traits(act);
    std::vector<uint8_t> ref(size_t(t.row_bytes(int64_t(x.size())))), got(ref.size());
    t.from_float_ref(x.data(), int64_t(x.size()), ref.data());
    slots(r.k, act).from_float(x.data(), int64_t(x.size()), got.data());
    INFO(std::string(t.name));
    CHECK(got == ref);
  }
}

const bool kRegistered = [] {
  for (int i = 0; i < simd::kNumWeightTypes; ++i) {
    const simd::WeightTypeTraits* t = simd::find_weight_type(uint32_t(i));
    if (t == nullptr || (t->to_float_ref == nullptr && t->from_float_ref == nullptr)) continue;
    const WeightType type = t->type;
    const std::string name = std::string("weight.") + t->name + ".";
    add({std::string("codec ") + t->name,
         {name + "to_float", name + "from_float", name + "to_bf16"},
         false,
         [type](const Rung& r) { check_codec(type, r); },
         [type](const Rung& r) { return bench_codec(type, r); }});
  }
  add({"f16 widening", {"weight.F16.to_float"}, true, check_f16_widening, nullptr});
  add({"bf16 rounding", {"weight.BF16.from_float"}, true, check_bf16_rounding, nullptr});
  add({"f16 to bf16", {"weight.F16.to_bf16"}, false, check_f16_to_bf16, bench_f16_to_bf16});
  add({"activation quantizers",
       {"weight.Q8_0.from_float", "weight.Q8_1.from_float", "weight.Q8_K.from_float"},
       true,
       check_activations,
       nullptr});
  return true;
}();

}  // namespace
}  // namespace kvrt::checkasm
