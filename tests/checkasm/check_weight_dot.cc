// The decode products on packed weight blocks of every quantized weight type
// (simd/weights/decode.h): equal to the scalar twin on blocks from kvrt's encoders and on random
// bytes (every code, including the extremes an encoder never writes), for 1 to 4 activation rows.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "checkasm.h"
#include "quant_types.h"
#include "weight_operands.h"

namespace kvrt::checkasm {
namespace {

using simd::WeightType;
using test::kMaxM;
using test::kRows;

void check_decode(WeightType type, const Rung& r) {
  const auto decode = r.k.weight[simd::weight_index(type)].decode;
  const auto twin = r.scalar.weight[simd::weight_index(type)].decode;
  REQUIRE(bool(decode));
  std::mt19937 rng(6 + simd::weight_index(type));
  for (int64_t n : test::row_lengths(type)) {
    for (bool random_bytes : {false, true}) {
      const test::Operands o = test::make_operands(type, n, random_bytes, rng);
      for (int m = 1; m <= kMaxM; ++m) {
        const std::vector<float> ref = test::run(twin, o, m);
        INFO(std::string(simd::weight_type_name(type))
             << ", n " << n << std::string(random_bytes ? ", random bytes" : ", encoded") << ", m "
             << m);
        const std::vector<float> y = test::run(decode, o, m);
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < kRows; ++j)
            CHECK(std::fabs(y[i * kRows + j] - ref[i * kRows + j]) <=
                  1e-5 * test::magnitude(o, i, j));
      }
    }
  }
}

// One decode step of 4 activation rows on 7 W rows of 2816 values.
std::vector<BenchCall> bench_decode(WeightType type, const Rung& r) {
  std::mt19937 rng(1);
  auto o = std::make_shared<test::Operands>(test::make_operands(type, 2816, false, rng));
  auto y = std::make_shared<std::vector<float>>(kMaxM * kRows);
  const simd::DecodeKernel decode = r.k.weight[simd::weight_index(type)].decode;
  auto rows = std::make_shared<test::KernelRows>(decode, *o);
  return {{std::string("weight.") + simd::weight_type_name(type) + ".decode", [=] {
             decode.run({o->w.data(), o->w_stride(), kRows, rows->act, rows->stride, kMaxM, o->n,
                         y->data(), size_t(kRows)});
           }}};
}

const bool kRegistered = [] {
  for (WeightType type : test::kQuantTypes) {
    const std::string name = simd::weight_type_name(type);
    add({"decode " + name,
         {"weight." + name + ".decode", "weight." + name + ".decode_lay"},
         false,
         [type](const Rung& r) { check_decode(type, r); },
         [type](const Rung& r) { return bench_decode(type, r); }});
  }
  return true;
}();

}  // namespace
}  // namespace kvrt::checkasm
