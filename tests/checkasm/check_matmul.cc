// The register tiles of the blocked GEMM (simd/kernels.h MatmulTiles): every shape of every rung
// against a double-precision product, and every f16 tile bit for bit as the f32 tile on the
// widened rows; the decode product of F16 W against a double-precision product.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "checkasm.h"
#include "common/half.h"
#include "matmul_problem.h"

namespace kvrt::checkasm {
namespace {

using test::make_problem;
using test::MatmulProblem;

// Each tile writes its mr x nr corner of a larger strided y and nothing else; k tails are
// shorter and longer than one vector.
void check_tiles(const Rung& r) {
  const simd::MatmulTiles& tiles = r.k.matmul;
  INFO("tiles " << std::string(tiles.isa));
  for (int64_t n_in : {1, 7, 16, 37, 259}) {
    const MatmulProblem p =
        make_problem(tiles.rows + 1, tiles.cols + 1, n_in, simd::WeightType::kF32, uint32_t(n_in));
    for (int mr = 1; mr <= tiles.rows; ++mr) {
      for (int nr = 1; nr <= tiles.cols; ++nr) {
        std::vector<float> y(size_t(p.m * p.n_out), 0.0f);  // [m][n_out]
        tiles.fn[mr - 1][nr - 1](
            {p.x.data(), size_t(n_in), p.w.data(), size_t(n_in), y.data(), size_t(p.n_out), n_in});
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
        MatmulProblem sub = p;  // x and W rows are prefixes of p's, so only the counts change
        sub.m = mr;
        sub.n_out = nr;
        std::string first_bad;
        const int64_t n_bad = test::count_outside_f32(sub, corner, first_bad);
        INFO("m " << sub.m << ", n_out " << sub.n_out << ", n_in " << sub.n_in
                  << "; first: " << first_bad);
        CHECK(n_bad == 0);
      }
    }
  }
}

// F16 decode keeps its numbers: widening in registers does the same operations on the same
// values as widening a W tile into memory first. Specials (inf, NaN, subnormals) are widened too.
void check_f16_tiles(const Rung& r) {
  const simd::MatmulTiles& tiles = r.k.matmul;
  for (int64_t n_in : {1, 7, 16, 37, 259}) {
    MatmulProblem p =
        make_problem(tiles.rows, tiles.cols, n_in, simd::WeightType::kF16, uint32_t(n_in) + 7);
    for (size_t i = 0; i < p.w_16.size(); i += 11) {  // some subnormals, infinities and a NaN
      p.w_16[i] = uint16_t(i % 3 == 0 ? 0x0001 + i : i % 3 == 1 ? 0x7c00 : 0x7e00);
      p.w[i] = f16_to_f32(p.w_16[i]);
    }
    for (int mr = 1; mr <= tiles.rows; ++mr) {
      for (int nr = 1; nr <= tiles.cols; ++nr) {
        std::vector<float> y32(size_t(mr * nr)), y16(size_t(mr * nr));  // [mr][nr]
        tiles.fn[mr - 1][nr - 1](
            {p.x.data(), size_t(n_in), p.w.data(), size_t(n_in), y32.data(), size_t(nr), n_in});
        tiles.f16[mr - 1][nr - 1](
            {p.x.data(), size_t(n_in), p.w_16.data(), size_t(n_in), y16.data(), size_t(nr), n_in});
        int n_differ = 0;
        for (size_t i = 0; i < y32.size(); ++i)
          n_differ += std::bit_cast<uint32_t>(y32[i]) != std::bit_cast<uint32_t>(y16[i]);
        CAPTURE(n_in);
        CAPTURE(mr);
        CAPTURE(nr);
        CAPTURE(std::string(tiles.isa));
        CHECK(n_differ == 0);
      }
    }
  }
}

// The decode product of F16 W (the decode slot of F16; F32 activation rows): every output within
// f32 rounding of the double-precision product (subnormal weights included), for 1 to 6 rows of x
// (more than the 4 it takes at a time) and rows short of one batch, of whole 4-batch steps and of
// a tail; and every row of x's output bit for bit its output alone (lockstep sessions and thread
// splits rely on it).
void check_f16_decode(const Rung& r) {
  const auto decode = r.k.weight[simd::weight_index(simd::WeightType::kF16)].decode.run;
  REQUIRE(bool(decode));
  constexpr int kRows = 7;
  for (int64_t n_in : {1, 7, 16, 37, 64, 259, 2816}) {
    MatmulProblem p = make_problem(6, kRows, n_in, simd::WeightType::kF16, uint32_t(n_in) + 3);
    for (size_t i = 0; i < p.w_16.size(); i += 13) {  // some subnormals
      p.w_16[i] = uint16_t(0x0001 + i % 0x3ff);
      p.w[i] = f16_to_f32(p.w_16[i]);
    }
    const auto run = [&](int m, int row0) {
      std::vector<float> y(size_t(m * kRows));  // [m][kRows]
      decode({reinterpret_cast<const uint8_t*>(p.w_16.data()), size_t(2 * n_in), kRows,
              reinterpret_cast<const uint8_t*>(p.x.data() + row0 * n_in), size_t(4 * n_in), m, n_in,
              y.data(), size_t(kRows)});
      return y;
    };
    for (int m = 1; m <= 6; ++m) {
      MatmulProblem sub = p;  // the first m rows of x
      sub.m = m;
      const std::vector<float> y = run(m, 0);
      std::string first_bad;
      const int64_t n_bad = test::count_outside_f32(sub, y, first_bad);
      INFO(std::string(r.k.isa) << ": m " << m << ", n_in " << n_in << "; first: " << first_bad);
      CHECK(n_bad == 0);
      for (int i = 0; i < m; ++i) {
        const std::vector<float> alone = run(1, i);
        CHECK(std::equal(alone.begin(), alone.end(), y.begin() + i * kRows));
      }
    }
  }
}

// The full tile of the rung over W rows of 4096 values.
std::vector<BenchCall> bench_tiles(const Rung& r) {
  const simd::MatmulTiles& t = r.k.matmul;
  const int64_t n_in = 4096;
  auto p = std::make_shared<MatmulProblem>(
      make_problem(t.rows, t.cols, n_in, simd::WeightType::kF16, 1));
  auto y = std::make_shared<std::vector<float>>(size_t(t.rows * t.cols));
  const auto fn = t.fn[t.rows - 1][t.cols - 1];
  const auto f16 = t.f16[t.rows - 1][t.cols - 1];
  const std::string shape = std::to_string(t.rows) + "x" + std::to_string(t.cols);
  return {{"matmul.tile" + shape,
           [=] {
             fn({p->x.data(), size_t(n_in), p->w.data(), size_t(n_in), y->data(), size_t(t.cols),
                 n_in});
           }},
          {"matmul.tile_f16." + shape, [=] {
             f16({p->x.data(), size_t(n_in), p->w_16.data(), size_t(n_in), y->data(),
                  size_t(t.cols), n_in});
           }}};
}

// One decode step of 4 rows of x on 7 F16 W rows of 2816 values.
std::vector<BenchCall> bench_f16_decode(const Rung& r) {
  const int64_t n_in = 2816;
  auto p = std::make_shared<MatmulProblem>(make_problem(4, 7, n_in, simd::WeightType::kF16, 2));
  auto y = std::make_shared<std::vector<float>>(4 * 7);
  const auto decode = r.k.weight[simd::weight_index(simd::WeightType::kF16)].decode.run;
  return {{"weight.F16.decode", [=] {
             decode({reinterpret_cast<const uint8_t*>(p->w_16.data()), size_t(2 * n_in), 7,
                     reinterpret_cast<const uint8_t*>(p->x.data()), size_t(4 * n_in), 4, n_in,
                     y->data(), 7});
           }}};
}

// The slot names of every tile shape (simd::for_each_slot), f32 W or f16 W.
std::vector<std::string> tile_slots(const char* prefix) {
  std::vector<std::string> names;
  for (int i = 1; i <= simd::kMaxTileRows; ++i)
    for (int j = 1; j <= simd::kMaxTileCols; ++j)
      names.push_back(prefix + std::to_string(i) + "x" + std::to_string(j));
  return names;
}

const bool kRegistered = [] {
  add({"matmul tiles", tile_slots("matmul.tile"), true, check_tiles, bench_tiles});
  add({"matmul f16 tiles", tile_slots("matmul.tile_f16."), true, check_f16_tiles, nullptr});
  add({"decode F16", {"weight.F16.decode"}, true, check_f16_decode, bench_f16_decode});
  return true;
}();

}  // namespace
}  // namespace kvrt::checkasm
