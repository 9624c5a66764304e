// The decode products on packed weight blocks (simd/weights/decode.h): each type's scalar twin
// equals the dot product of the decoded weights and decoded activation blocks. Every rung's kernels
// against the twins, and its activation quantizers: tests/checkasm.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "quant_types.h"
#include "simd/dispatch.h"
#include "weight_operands.h"

using namespace kvrt;
using simd::WeightType;

namespace {

using test::kMaxM;
using test::kQuantTypes;
using test::kRowLengths;
using test::kRows;
using test::magnitude;
using test::make_operands;
using test::Operands;
using test::q8_1_rounding;

}  // namespace

TEST_CASE("each type's scalar decode product is the dot product of the decoded blocks") {
  std::mt19937 rng(5);
  for (WeightType type : kQuantTypes) {
    for (int64_t n : kRowLengths) {
      INFO(simd::weight_type_name(type) << ", n " << n);
      const Operands o = make_operands(type, n, false, rng);
      const auto decode =
          simd::kernels_for(simd::Isa::kScalar).weight[simd::weight_index(type)].decode;
      REQUIRE(bool(decode));
      const std::vector<float> y = test::run(decode, o, kMaxM);
      for (int i = 0; i < kMaxM; ++i) {
        for (int j = 0; j < kRows; ++j) {
          double exact = 0;
          for (int64_t k = 0; k < n; ++k)
            exact += double(o.w_values[j * n + k]) * o.act_values[i * n + k];
          CHECK(std::fabs(y[i * kRows + j] - exact) <=
                1e-5 * magnitude(o, i, j) + q8_1_rounding(o, i, j));
        }
      }
    }
  }
}
