// The loops and installation shared by the integer tile kernels of every ISA (kv/tiles_avx2.cc,
// kv/tiles_vnni.cc, kv/tiles_neon.cc): query heads taken four at a time (each group's count a
// compile-time constant for the kernel's register arrays), kAccChunk runs of value tokens, and
// the slots of every quantized format.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kv/blocks.h"
#include "kv/tiles.h"
#include "simd/kernels.h"
#include "simd/kernels_scalar.h"

namespace kvrt::simd {

constexpr int kT = kv::kTileTokens;          // positions per tile
constexpr size_t kRun = kv::kKeyCodeStride;  // bytes from one run of key codes to the next

inline int32_t load32(const void* p) {
  int32_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

// fn(std::integral_constant<int, NQ>{}, i0) for i0 = 0, 4, 8, ... < n_q, NQ = min(4, n_q - i0).
template <class Fn>
inline void for_query_groups(int n_q, Fn&& fn) {
  for (int i0 = 0; i0 < n_q; i0 += 4) {
    switch (std::min(4, n_q - i0)) {
      case 1: fn(std::integral_constant<int, 1>{}, i0); break;
      case 2: fn(std::integral_constant<int, 2>{}, i0); break;
      case 3: fn(std::integral_constant<int, 3>{}, i0); break;
      default: fn(std::integral_constant<int, 4>{}, i0); break;
    }
  }
}

// fn(tile, t0) for each key tile of a dot (t0 its first position), prefetching 4 tiles ahead.
template <class Fn>
inline void for_key_tiles(const DotArgs& a, Fn&& fn) {
  for (int t0 = 0; t0 < a.n_rows; t0 += kT) {
    const uint8_t* tile = a.rows + (t0 / kT) * a.row_stride;
    __builtin_prefetch(tile + 4 * a.row_stride);
    fn(tile, t0);
  }
}

// The query codes of queries [i0, i0 + NQ) of a dot over key tiles.
template <int NQ>
struct QueryRows {
  const int8_t* c[NQ];
  QueryRows(const DotArgs& a, int i0) {
    for (int i = 0; i < NQ; ++i) c[i] = a.qc->c + (i0 + i) * a.n;
  }
};

// The value tiles of one kAccChunk run [t0, t1).
struct TileRun {
  const uint8_t* tiles;  // the tile holding t0
  int n_tiles;
  TileRun(const AccArgs& a, int t0, int t1)
      : tiles(a.rows + (t0 / kT) * a.row_stride), n_tiles((t1 - t0 + kT - 1) / kT) {}
};

// Weights of one kAccChunk run (as scalar::acc_tiles_run): w[i][b][t] = round(p d / sw) as int16,
// zero past the run's tokens; sw[i][b] the weight scale, msum[i][b] = Σ p m (asymmetric formats),
// for groups of at least MinGroup values.
template <int NQ, int MinGroup>
struct RunWeights {
  alignas(64) int16_t w[NQ][scalar::kMaxRow / MinGroup][kAccChunk];
  float sw[NQ][scalar::kMaxRow / MinGroup];
  float msum[NQ][scalar::kMaxRow / MinGroup];
  const int16_t* tile(int i, int b, int k) const {
    return w[i][b] + k * kT;
  }  // the weights of tile k of the run
};

// fn(NQ constant, i0, t0, t1) for each kAccChunk run [t0, t1) of the value tokens and query group.
template <class Fn>
inline void for_acc_runs(const AccArgs& a, Fn&& fn) {
  for (int t0 = 0; t0 < a.n_rows; t0 += kAccChunk) {
    const int t1 = std::min(a.n_rows, t0 + kAccChunk);
    for_query_groups(a.n_q, [&](auto nq, int i0) { fn(nq, i0, t0, t1); });
  }
}

// set(format descriptor, its slot) for every quantized format of kv/blocks.h.
template <class Set>
inline void for_each_format_slot(Kernels& t, Set&& set) {
  kv::for_each_quant_format(
      [&](auto f) { set(f, t.format[static_cast<int>(decltype(f)::kFormat)]); });
}

// The tag type of an ISA's tile kernels derives from this: W value dims per column of acc.
template <int W>
struct ColumnDims {
  static constexpr int kColumnDims = W;
};

// The kernels of format F from an ISA's inner kernels. Each kernels_<isa>_int.cc defines, for its
// tag type Isa (a ColumnDims), found by argument-dependent lookup:
//   template <int NQ, class F> void dot_nq(Isa, const DotArgs&, int i0);  queries [i0, i0 + NQ)
//   template <int NQ, class F> void run_weights(Isa, const AccArgs&, int i0, int t0, int t1, const
//   TileRun&, RunWeights<NQ, Isa::kColumnDims>&); template <int NQ, class F> void acc_column(Isa,
//   const AccArgs&, int i0, const TileRun&, const RunWeights<...>&, int col); template <class F,
//   kv::TileRole R> void dequantize_column(Isa, const kv::TileFormat&, const uint8_t* tile, int t,
//   int col, float* x);
//     (optional: prefill) x [8] = dims [8 col, 8 col + 8) of token t
template <class Isa, class F>
void dot_tiles(const DotArgs& a) {
  for_query_groups(a.n_q, [&](auto nq, int i0) { dot_nq<nq(), F>(Isa{}, a, i0); });
}

// Per kAccChunk run: the weights, then each column of kColumnDims dims (inside one group).
template <class Isa, class F>
void acc_tiles(const AccArgs& a) {
  for_acc_runs(a, [&](auto nq, int i0, int t0, int t1) {
    const TileRun run(a, t0, t1);
    RunWeights<nq(), Isa::kColumnDims> r;
    run_weights<nq(), F>(Isa{}, a, i0, t0, t1, run, r);
    for (int col = 0; col < a.n / Isa::kColumnDims; ++col)
      acc_column<nq(), F>(Isa{}, a, i0, run, r, col);
  });
}

// x [16][n]: the tile as FP32 rows, kAccColumnDims dims of one token at a time.
template <class Isa, class F, kv::TileRole R>
void dequantize_tile_of(const uint8_t* tile, int n, int group, float* x) {
  const auto f = kv::TileFormat::of<F>(R, n, group);
  for (int t = 0; t < kT; ++t) {
    for (int col = 0; col < n / kAccColumnDims; ++col)
      dequantize_column<F, R>(Isa{}, f, tile, t, col, x + t * n + col * kAccColumnDims);
  }
}

// dot, acc and the tile dequantization of every quantized format.
template <class Isa>
void install_tiles(Kernels& t) {
  for_each_format_slot(t, [](auto f, FormatKernels& k) {
    using F = decltype(f);
    k.dot = dot_tiles<Isa, F>;
    k.acc = acc_tiles<Isa, F>;
    k.dequantize_tile[static_cast<int>(kv::TileRole::kKey)] =
        dequantize_tile_of<Isa, F, kv::TileRole::kKey>;
    k.dequantize_tile[static_cast<int>(kv::TileRole::kValue)] =
        dequantize_tile_of<Isa, F, kv::TileRole::kValue>;
  });
}

}  // namespace kvrt::simd
