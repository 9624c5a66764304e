// The register tiles of the blocked GEMM (simd/kernels.h MatmulTiles): every shape of every rung
// against a double-precision product, and every f16 tile bit for bit as the f32 tile on the
// widened rows.
#include <doctest/doctest.h>

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
  return true;
}();

}  // namespace
}  // namespace kvrt::checkasm
