// The avx512-amx rung: the bf16 prefill tiles (simd/kernels.h GemmBf16Args) on AMX. One
// tdpbf16ps multiplies a 16 x 32 bf16 tile of b (rows i, 16 pairs each) by a 16-pair x 16 tile of
// a (the pairs layout as it lies, one row of pairs per p) into 16 x 16 f32 sums of c: 8192
// products, 16 times vdpbf16ps's. Rows of b must be runs of pairs (b_k = 1) and n_r whole tiles;
// the rows and pairs beyond whole tiles, and other calls, go to the rung below.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "simd/kernels_isa.h"

namespace kvrt::simd::avx512amx {
namespace {

constexpr int kRows = 16;   // rows of every tile
constexpr int kPairs = 16;  // pairs in a row of b's tile, rows of a's tile
constexpr int kBytes = 64;  // bytes of every tile row

// Tiles 0, 1: two 16 x 16 blocks of c side by side; 2: b; 3, 4: a for the two blocks.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {kBytes, kBytes, kBytes, kBytes, kBytes};
  uint8_t rows[16] = {kRows, kRows, kRows, kRows, kRows};
};

void (*below)(const GemmBf16Args&);  // the avx512-bf16 rung's gemm_bf16

// c rows [0, n_i) and pairs [0, n_kp), all whole tiles; c columns in blocks of 32, then of 16.
void tiles(const GemmBf16Args& g) {
  static const TileConfig config;
  _tile_loadconfig(&config);
  const size_t ldc = size_t(g.n_r) * sizeof(float), lda = size_t(g.n_r) * sizeof(uint32_t);
  const size_t ldb = g.b_i * sizeof(uint32_t);
  for (int i0 = 0; i0 < g.n_i; i0 += kRows) {
    const uint32_t* b = g.b + i0 * g.b_i;
    float* c = g.c + size_t(i0) * g.n_r;
    int r0 = 0;
    for (; r0 + 2 * kRows <= g.n_r; r0 += 2 * kRows) {
      if (g.accumulate) {
        _tile_loadd(0, c + r0, ldc);
        _tile_loadd(1, c + r0 + kRows, ldc);
      } else {
        _tile_zero(0);
        _tile_zero(1);
      }
      for (int p = 0; p < g.n_kp; p += kPairs) {
        const uint32_t* a = g.a + size_t(p) * g.n_r + r0;
        _tile_loadd(2, b + p, ldb);
        _tile_loadd(3, a, lda);
        _tile_loadd(4, a + kRows, lda);
        _tile_dpbf16ps(0, 2, 3);
        _tile_dpbf16ps(1, 2, 4);
      }
      _tile_stored(0, c + r0, ldc);
      _tile_stored(1, c + r0 + kRows, ldc);
    }
    if (r0 < g.n_r) {
      if (g.accumulate) _tile_loadd(0, c + r0, ldc);
      else _tile_zero(0);
      for (int p = 0; p < g.n_kp; p += kPairs) {
        _tile_loadd(2, b + p, ldb);
        _tile_loadd(3, g.a + size_t(p) * g.n_r + r0, lda);
        _tile_dpbf16ps(0, 2, 3);
      }
      _tile_stored(0, c + r0, ldc);
    }
  }
  _tile_release();
}

void gemm(const GemmBf16Args& g) {
  const int n_i = g.n_i / kRows * kRows, n_kp = g.n_kp / kPairs * kPairs;
  if (g.b_k != 1 || g.n_r % kRows != 0 || n_i == 0 || n_kp == 0) return below(g);
  GemmBf16Args whole = g;
  whole.n_i = n_i;
  whole.n_kp = n_kp;
  tiles(whole);
  if (n_kp < g.n_kp) {  // the remaining pairs of the same rows, added
    GemmBf16Args rest = whole;
    rest.a = g.a + size_t(n_kp) * g.n_r;
    rest.b = g.b + n_kp;
    rest.n_kp = g.n_kp - n_kp;
    rest.accumulate = true;
    below(rest);
  }
  if (n_i < g.n_i) {  // the remaining rows
    GemmBf16Args rest = g;
    rest.b = g.b + n_i * g.b_i;
    rest.c = g.c + size_t(n_i) * g.n_r;
    rest.n_i = g.n_i - n_i;
    below(rest);
  }
}

}  // namespace

void install(Kernels& t) {
  below = t.gemm_bf16;
  t.gemm_bf16 = gemm;
}

}  // namespace kvrt::simd::avx512amx
