// Matmul (blocked GEMM for decode-sized products, oneDNN for larger ones where the build has it)
// against a double-precision loop, for decode (m = 1), odd and prefill-sized shapes, f32, f16 and
// bf16 weights.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/half.h"
#include "kvrt_config.h"
#include "matmul_problem.h"
#include "quant_types.h"
#include "ops/matmul.h"
#include "simd/dispatch.h"

namespace {

using kvrt::ops::Matmul;
using kvrt::ops::WeightMatrix;
using kvrt::simd::WeightType;

using Problem = kvrt::test::MatmulProblem;
using kvrt::test::make_problem;

// Checks y against sum_k x*w in double. The weights the reference sees are exactly the ones the
// kernel sees (bf16 widens to f32 exactly), so the only error is f32 accumulation: any summation
// order of n_in products satisfies |err| <= n_in * u * sum_k |x_k w_k| with u = 2^-24 (plus one
// rounding per product, covered by the factor 2 on n_in).
void check_against_reference(const Problem& p, const std::vector<float>& y) {
  const double u = std::ldexp(1.0, -24);
  int64_t n_bad = 0;
  std::string first_bad;
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n_out; ++j) {
      double sum = 0.0, abs_sum = 0.0;
      for (int64_t k = 0; k < p.n_in; ++k) {
        const double prod = double(p.x[size_t(i * p.n_in + k)]) * double(p.w[size_t(j * p.n_in + k)]);
        sum += prod;
        abs_sum += std::fabs(prod);
      }
      const double bound = 2.0 * double(p.n_in) * u * abs_sum;
      const double got = y[size_t(i * p.n_out + j)];
      if (std::fabs(got - sum) <= bound) continue;
      if (n_bad++ == 0) {
        first_bad = "y[" + std::to_string(i) + "][" + std::to_string(j) + "] = " + std::to_string(got) +
                    ", reference " + std::to_string(sum) + ", bound " + std::to_string(bound);
      }
    }
  }
  INFO("m " << p.m << ", n_out " << p.n_out << ", n_in " << p.n_in << "; first: " << first_bad);
  CHECK(n_bad == 0);
}

std::vector<float> run(Matmul& mm, const Problem& p) {
  std::vector<float> y(size_t(p.m * p.n_out), std::nanf(""));  // every output must be written
  mm.run(p.x.data(), p.m, p.weights(), y.data());
  return y;
}

struct Shape {
  int64_t m, n_out, n_in;
};
// Decode (m = 1), a short prompt with odd sizes everywhere, prefill-sized blocks, sizes below
// one vector so every tile edge and k tail is taken, and more W rows than one widened block (256).
constexpr Shape kShapes[] = {{1, 64, 64},  {1, 257, 1023}, {7, 33, 29},     {64, 100, 130}, {300, 67, 515},
                             {5, 3, 3},    {2, 1, 17},     {300, 256, 64},  {9, 600, 96}};

}  // namespace

TEST_CASE("matmul: f32 weights match a double-precision reference") {
  Matmul mm(2);
  uint32_t seed = 1;
  for (const Shape& s : kShapes) {
    const Problem p = make_problem(s.m, s.n_out, s.n_in, WeightType::kF32, seed++);
    check_against_reference(p, run(mm, p));
  }
  MESSAGE("implementation: " << std::string(mm.implementation()));
}

TEST_CASE("matmul: f16 and bf16 weights match a double-precision reference") {
  Matmul mm(2);
  uint32_t seed = 100;
  for (WeightType type : {WeightType::kF16, WeightType::kBF16}) {
    for (const Shape& s : kShapes) {
      const Problem p = make_problem(s.m, s.n_out, s.n_in, type, seed++);
      check_against_reference(p, run(mm, p));
    }
  }
}

TEST_CASE("matmul: f16 widening of every runnable ISA equals the exact conversion") {
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);
  for (kvrt::simd::Isa isa : kvrt::simd::runnable_isas()) {
    const auto to_float = kvrt::simd::kernels_for(isa).weight[kvrt::simd::weight_index(WeightType::kF16)].to_float;
    std::vector<float> out(all.size());
    to_float(reinterpret_cast<const uint8_t*>(all.data()), int64_t(all.size()), out.data());
    int n_bad = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      const float ref = kvrt::f16_to_f32(all[i]);
      n_bad += std::isnan(ref) ? !std::isnan(out[i]) : out[i] != ref;
    }
    INFO("ISA " << kvrt::simd::isa_to_string(isa));
    CHECK(n_bad == 0);
  }
}

TEST_CASE("matmul: every tile shape of every runnable ISA matches the reference") {
  // Each tile writes its mr x nr corner of a larger strided y and nothing else; k tails are
  // shorter and longer than one vector.
  for (kvrt::simd::Isa isa : kvrt::simd::runnable_isas()) {
    const kvrt::simd::MatmulTiles& tiles = kvrt::simd::kernels_for(isa).matmul;
    INFO("ISA " << kvrt::simd::isa_to_string(isa) << ", tiles " << tiles.isa);
    for (int64_t n_in : {1, 7, 16, 37, 259}) {
      const Problem p = make_problem(tiles.rows + 1, tiles.cols + 1, n_in, WeightType::kF32, uint32_t(n_in));
      for (int mr = 1; mr <= tiles.rows; ++mr) {
        for (int nr = 1; nr <= tiles.cols; ++nr) {
          std::vector<float> y(size_t(p.m * p.n_out), 0.0f);  // [m][n_out]
          tiles.fn[mr - 1][nr - 1]({p.x.data(), size_t(n_in), p.w.data(), size_t(n_in), y.data(), size_t(p.n_out), n_in});
          std::vector<float> corner;  // [mr][nr]
          int n_outside = 0;          // nonzero outputs outside the corner
          for (int64_t i = 0; i < p.m; ++i) {
            for (int64_t j = 0; j < p.n_out; ++j) {
              const float v = y[size_t(i * p.n_out + j)];
              if (i < mr && j < nr) corner.push_back(v);
              else n_outside += v != 0.0f;
            }
          }
          CHECK(n_outside == 0);
          Problem sub = p;  // x and W rows are prefixes of p's, so only the counts change
          sub.m = mr;
          sub.n_out = nr;
          check_against_reference(sub, corner);
        }
      }
    }
  }
}

TEST_CASE("matmul: every f16 tile of every ISA gives the f32 tile's outputs on the widened rows, bit for bit") {
  // F16 decode keeps its numbers: widening in registers does the same operations on the same
  // values as widening a W tile into memory first. Specials (inf, NaN, subnormals) are widened too.
  for (kvrt::simd::Isa isa : kvrt::simd::runnable_isas()) {
    const kvrt::simd::MatmulTiles& tiles = kvrt::simd::kernels_for(isa).matmul;
    INFO("ISA " << kvrt::simd::isa_to_string(isa) << ", tiles " << tiles.isa);
    for (int64_t n_in : {1, 7, 16, 37, 259}) {
      Problem p = make_problem(tiles.rows, tiles.cols, n_in, WeightType::kF16, uint32_t(n_in) + 7);
      for (size_t i = 0; i < p.w_16.size(); i += 11) {  // some subnormals, infinities and a NaN
        p.w_16[i] = uint16_t(i % 3 == 0 ? 0x0001 + i : i % 3 == 1 ? 0x7c00 : 0x7e00);
        p.w[i] = kvrt::f16_to_f32(p.w_16[i]);
      }
      for (int mr = 1; mr <= tiles.rows; ++mr) {
        for (int nr = 1; nr <= tiles.cols; ++nr) {
          std::vector<float> y32(size_t(mr * nr)), y16(size_t(mr * nr));  // [mr][nr]
          tiles.fn[mr - 1][nr - 1]({p.x.data(), size_t(n_in), p.w.data(), size_t(n_in), y32.data(), size_t(nr), n_in});
          tiles.f16[mr - 1][nr - 1]({p.x.data(), size_t(n_in), p.w_16.data(), size_t(n_in), y16.data(), size_t(nr), n_in});
          int n_differ = 0;
          for (size_t i = 0; i < y32.size(); ++i) n_differ += std::bit_cast<uint32_t>(y32[i]) != std::bit_cast<uint32_t>(y16[i]);
          CAPTURE(n_in);
          CAPTURE(mr);
          CAPTURE(nr);
          CAPTURE(std::string(tiles.isa));
          CHECK(n_differ == 0);
        }
      }
    }
  }
}

TEST_CASE("matmul: one and two threads give identical outputs") {
  // Each output is one tile's dot product whichever thread computes it.
  Matmul one(1), two(2);
  for (WeightType type : {WeightType::kF32, WeightType::kF16, WeightType::kBF16}) {
    const Problem p = make_problem(3, 257, 515, type, 7);  // decode-sized: the blocked tiles
    CHECK(run(one, p) == run(two, p));
  }
}

TEST_CASE("matmul: a cached shape reused with new data gives new results") {
  Matmul mm(2);
  const Problem a = make_problem(7, 33, 29, WeightType::kF32, 11);
  const Problem b = make_problem(7, 33, 29, WeightType::kF32, 12);
  check_against_reference(a, run(mm, a));
  check_against_reference(b, run(mm, b));
  CHECK(std::string(mm.implementation()) != "none");
}

TEST_CASE("matmul: decode-sized products on quantized weights run on the packed blocks") {
  // x is quantized to int8 blocks of 32 (or 256) values with a step d <= max|x_block| / 127 and
  // each code within one step of x / d (the f16 rounding of d and of Q8_1's sums included), so
  // |y - x · w| <= Σ_k |w_k| max|x_block(k)| / 127 plus f32 rounding; threads split W's rows and
  // each row's product is one kernel call, so 1 and 2 threads agree bit for bit.
  Matmul one(1), two(2);
  for (WeightType type : kvrt::test::kQuantTypes) {
    const kvrt::simd::WeightTypeTraits& t = kvrt::simd::weight_type_traits(type);
    const int64_t act_block = kvrt::simd::weight_type_traits(t.act).block;
    for (int64_t m : {1, 4}) {
      INFO(t.name << ", m " << m);
      Problem p = make_problem(m, 67, 512, WeightType::kF32, 21);
      std::vector<uint8_t> packed(size_t(t.row_bytes(p.n_out * p.n_in)));
      t.from_float_ref(p.w.data(), p.n_out * p.n_in, packed.data());
      t.to_float_ref(packed.data(), p.n_out * p.n_in, p.w.data());  // the reference sees the decoded weights
      const WeightMatrix w{packed.data(), type, p.n_out, p.n_in};
      std::vector<float> y1(size_t(m * p.n_out)), y2(y1.size());
      one.run(p.x.data(), m, w, y1.data());
      two.run(p.x.data(), m, w, y2.data());
      CHECK(y1 == y2);
      CHECK(std::string(two.implementation()).find("gemv kvrt-packed:") != std::string::npos);
      int64_t n_bad = 0;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < p.n_out; ++j) {
          double exact = 0, abs_sum = 0, bound = 0;
          for (int64_t k0 = 0; k0 < p.n_in; k0 += act_block) {
            float amax = 0;
            for (int64_t k = k0; k < k0 + act_block; ++k) amax = std::max(amax, std::fabs(p.x[size_t(i * p.n_in + k)]));
            for (int64_t k = k0; k < k0 + act_block; ++k) {
              const double wk = p.w[size_t(j * p.n_in + k)], xk = p.x[size_t(i * p.n_in + k)];
              exact += wk * xk;
              abs_sum += std::fabs(wk * xk);
              bound += std::fabs(wk) * amax / 127.0;
            }
          }
          n_bad += std::fabs(y1[size_t(i * p.n_out + j)] - exact) > bound + 1e-5 * abs_sum;
        }
      }
      CHECK(n_bad == 0);
    }
  }
}

TEST_CASE("matmul: prefill-sized products on quantized weights match the product of the decoded weights") {
  // W is widened a block of 256 rows at a time by the type's to_float kernel: 600 rows are two
  // full blocks and a partial one, whose columns of y are written apart and copied in.
  Matmul mm(2);
  for (WeightType type : kvrt::test::kQuantTypes) {
    const kvrt::simd::WeightTypeTraits& t = kvrt::simd::weight_type_traits(type);
    INFO(t.name);
    Problem p = make_problem(9, 600, 512, WeightType::kF32, 31);
    std::vector<uint8_t> packed(size_t(t.row_bytes(p.n_out * p.n_in)));  // W [n_out][n_in] in blocks
    t.from_float_ref(p.w.data(), p.n_out * p.n_in, packed.data());
    t.to_float_ref(packed.data(), p.n_out * p.n_in, p.w.data());  // the reference sees the decoded weights
    std::vector<float> y(size_t(p.m * p.n_out), std::nanf(""));  // every output must be written
    mm.run(p.x.data(), p.m, WeightMatrix{packed.data(), type, p.n_out, p.n_in}, y.data());
    check_against_reference(p, y);
  }
}
