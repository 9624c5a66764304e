// The kernel table: every SIMD kernel of kvrt behind one set of named function-pointer slots
// (quantize, attention and matrix products). simd/dispatch.cc fills one table per ISA rung:
// the scalar twins first, then each rung the CPU runs overwrites the slots it has kernels for.
// Kernels see raw pointers and the layouts of kv/blocks.h, kv/tiles.h and simd/weights/types.h
// only (all dependency-free).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kv/blocks.h"
#include "kv/tiles.h"
#include "simd/weights/types.h"

namespace kvrt::simd {

// How a row of keys or values is stored for the row kernels, as a template argument: F32Rows
// (FP32 values), or the descriptor F of a format of kv/blocks.h for bare codes without scales (the
// code rows of its channel-axis tiles, kv/channel_tile.h) whose value is the code q of
// kv/blocks.h: int8 for 8-bit codes, else the stored 0..2^bits-1 less kCodeBias (q4s: -8..7),
// or the level a stored code indexes (q4n), packed as kv/blocks.h packs a run of codes (the channel
// kernels read them so).
struct F32Rows {
  static constexpr int kBits = 32;
};
using kv::kAccColumnDims;  // the value-tile kernels take head_dim 8 dims at a time (kv/tiles.h)
constexpr int kMaxQueries = 8;  // queries per dot/acc call (query heads sharing one kv head)

// An FFN's gated activation: gate[i] = act(gate[i]) · up[i] for n values, in place.
using GluKernel = void (*)(float* gate, const float* up, int64_t n);

// Queries quantized once per decode step for the integer dot over key tiles (the slot
// quantize_queries): per query and group of G values q ≈ d * c, int8 codes c (the q8 codec of
// kv/blocks.h). The minimum term of asymmetric formats uses the exact sum of q.
struct QueryCodes {
  const int8_t* c;      // [n_q][n]
  const float* d;       // [n_q][n / group]
  const float* sum;     // [n_q][n / group]  Σ q over the group
  const int32_t* csum;  // [n_q][n / group]  Σ c over the group
};
// The buffers quantize_queries writes the QueryCodes of n_q queries of n values into.
struct QueryBuffers {
  int8_t* c;      // [n_q][n]
  float* d;       // [n_q][n / group]
  float* sum;     // [n_q][n / group]
  int32_t* csum;  // [n_q][n / group]
  QueryCodes view() const { return {c, d, sum, csum}; }
};

// scores[i * scores_stride + t] = q_i · row_t  for i < n_q, t < n_rows.
// Format kernels: `rows` is the key tile holding token 0, tile k at rows + k * row_stride, and q_i
// is taken as qc (quantized), so scores carry q's quantization error (|δq| <= d/2 per value).
// Channel kernels: `rows` is the channel-axis key tile (kv/channel_tile.h, `group` tokens) holding
// token 0, as its token `first`; q_i is exact (FP32 products with the per-channel scales).
struct DotArgs {
  const float* q;  // [n_q][q_stride]
  int n_q;
  size_t q_stride;
  const uint8_t* rows;  // row t at rows + t * row_stride
  size_t row_stride;    // bytes
  int n_rows;
  int n;          // values per row
  int group;      // values per block (format kernels)
  float* scores;  // [n_q][scores_stride]
  size_t scores_stride;
  const QueryCodes* qc = nullptr;  // format kernels only
  int first = 0;                   // channel kernels only
};

// acc_i += sum_t p[i * p_stride + t] * row_t  for i < n_q.
// Format kernels: `rows` is the value tile holding token 0 (as DotArgs). Each run of kAccChunk
// tokens folds p into the value scales, w = p * d, and rounds w to int16 on a scale of max|p| * max
// d / 32767 over the run (relative error <= 2^-16 of that product per weight).
constexpr int kAccChunk = 64;
struct AccArgs {
  const float* p;  // [n_q][p_stride]
  int n_q;
  size_t p_stride;
  const uint8_t* rows;
  size_t row_stride;
  int n_rows;
  int n;
  int group;
  float* acc;  // [n_q][acc_stride]
  size_t acc_stride;
};

// Prefill tiles keep the query rows in the lanes: every operand and result is [k][n_r] with n_r
// query rows (a multiple of kGemmRows, zero-padded by the caller), so K and V rows are read as
// stored (FP32 rows [position][head_dim]) and the softmax runs down the columns.
//   c[i][r] (+)= sum_{k < n_k} b[i * b_i + k * b_k] * a[k][r]     i < n_i, r < n_r
// Q·Kᵀ: a = queries [head_dim][n_r], b = key rows (b_i = head_dim, b_k = 1), c = scores [j][n_r];
// P·V:  a = probabilities [j][n_r], b = value rows (b_i = 1, b_k = head_dim), c += out
// [head_dim][n_r].
struct GemmArgs {
  const float* a;
  const float* b;
  size_t b_i, b_k;
  float* c;
  int n_r, n_i, n_k;
  bool accumulate;
};
// Online softmax of one tile of scores s [n_j][n_r] (-inf where masked), per row r: the running
// max m[r] becomes max(m[r], max_j s[j][r]); s becomes exp(s - max); l[r] and the unnormalized
// output o [n_d][n_r] are scaled by exp(old max - new max), and l[r] gains the sum of the new s.
// A row with no visible key yet (max -inf) keeps s = 0, l = 0 and o as it was.
struct SoftmaxArgs {
  float* s;
  float* m;
  float* l;
  float* o;
  int n_r, n_j, n_d;
};
constexpr int kGemmRows = 16;
// The same products in bf16 (prefill at matmul precision bf16, on AVX512-BF16: vdpbf16ps), every
// operand as pairs of bf16 values along k (a uint32_t: the even k in the low half), summed in f32:
//   c[i][r] (+)= sum_{p < n_kp} b[i * b_i + p * b_k] · a[p][r]     (· of two pairs: a 2-term dot)
// Pairs come from bf16_pairs: dst[i] = bf16(x0[i * step]) | bf16(x1[i * step]) << 16 for i < n,
// rounded to nearest, ties to even; x1 null stands for zeros. Step 1 pairs two rows; a row's own
// consecutive values are pairs with x1 = x0 + 1, step 2.
struct GemmBf16Args {
  const uint32_t* a;
  const uint32_t* b;
  size_t b_i, b_k;
  float* c;
  int n_r, n_i, n_kp;
  bool accumulate;
};

// The kernels of one quantized KV format (kv/blocks.h descriptor F, tiles of kv/tiles.h).
struct FormatKernels {
  void (*dot)(const DotArgs&);          // q·k over key tiles
  void (*dot_channel)(const DotArgs&);  // q·k over channel-axis key tiles
  void (*acc)(const AccArgs&);          // p·V over value tiles
  void (*quantize)(const float* x, int n, int group, uint8_t* row);  // a row of blocks
  // [kv::TileRole]: the 16 tokens of a tile as FP32 rows, x [16][n].
  void (*dequantize_tile[2])(const uint8_t* tile, int n, int group, float* x);
};

// Matrix products y = x · Wᵀ (ops/matmul_blocked.cc drives them). A register tile computes
// y[i * y_stride + j] = Σ_k x[i * x_stride + k] · w[j * w_stride + k] for i < mr, j < nr, k < n_in,
// as full-length dot products over W rows in their stored row-major layout. W is f32 (W = float)
// or IEEE binary16 (W = uint16_t), which the f16 tiles widen in registers: the same operations
// on the same (exactly widened) values, so an f16 tile's y is bit for bit the f32 tile's on the
// widened rows.
template <class W>
struct TileArgs {
  const float* x;  // [mr][x_stride]
  size_t x_stride;
  const W* w;  // [nr][w_stride]
  size_t w_stride;
  float* y;  // [mr][y_stride]
  size_t y_stride;
  int64_t n_in;
  // The W rows of the tile that comes next, [nr][w_stride], read ahead as this one runs (a line
  // of each row per step of k), or null. Without it F16 products on the tiles streamed W from
  // memory well below the rate of a plain read.
  const W* next = nullptr;
};
using MatmulTileArgs = TileArgs<float>;
using MatmulTileArgsF16 = TileArgs<uint16_t>;
constexpr int kMaxTileRows = 4;  // mr: rows of x (and y) per tile
constexpr int kMaxTileCols = 4;  // nr: rows of W (columns of y) per tile
struct MatmulTiles {
  const char* isa;  // the rung that filled them
  int rows;         // the full tile of this ISA is rows x cols; fn[mr - 1][nr - 1] does mr x nr
  int cols;
  void (*fn[kMaxTileRows][kMaxTileCols])(const MatmulTileArgs&);
  void (*f16[kMaxTileRows][kMaxTileCols])(const MatmulTileArgsF16&);  // the same shapes, f16 W
};

// The decode product of a weight type: y[i * y_stride + j] = act_i · w_j for i < m, j < n_rows,
// W rows packed in the type's blocks, activations in its activation format (WeightTypeTraits::act)
// or, for a kernel with a layout of its own (DecodeKernel::lay), laid out by it.
struct DecodeArgs {
  const uint8_t* w;  // row j at w + j * w_stride: n_in values in blocks
  size_t w_stride;   // bytes
  int n_rows;
  const uint8_t* act;  // row i at act + i * act_stride (64-byte aligned where laid out)
  size_t act_stride;   // bytes
  int m;
  int64_t n_in;
  float* y;  // [m][y_stride]
  size_t y_stride;
};

// The decode product on W rows of one type (packed blocks, or F16 values with F32 activation rows).
// A kernel that reads the activations in a layout of its own (groups of blocks with their scales
// widened and their sums, say) has lay: each activation row is laid out once per product, before
// the threads share W's rows, into lay_bytes(n_in) bytes (whole 64-byte lines, the rows' stride)
// at a 64-byte aligned address, and run's act rows are those. Without lay, run reads the activation
// blocks as from_float wrote them. A rung sets the three together.
struct DecodeKernel {
  void (*run)(const DecodeArgs&) = nullptr;
  int64_t (*lay_bytes)(int64_t n_in) = nullptr;
  void (*lay)(const uint8_t* act, int64_t n_in, uint8_t* dst) = nullptr;
  explicit operator bool() const { return run != nullptr; }
};

// Kernels of one weight type, slot weight[weight_index(type)] (null where the type has none).
struct WeightKernels {
  // dst[0 .. n) = the values of n (a whole number of blocks) stored values: W tiles widened for
  // the FP32 products (prefill, and decode without an own product), embedding rows.
  void (*to_float)(const uint8_t* src, int64_t n, float* dst);
  // n FP32 values (whole blocks) into blocks of this type: the activation side of integer products.
  void (*from_float)(const float* x, int64_t n, uint8_t* dst);
  // dst[0 .. n) = n stored values rounded to bf16 in one pass: to_float, then BF16's from_float,
  // bit for bit; the W side of bf16 prefill products. The rungs that run those set it for every
  // stored type but F32 (BF16's from_float) and BF16 (read in place).
  void (*to_bf16)(const uint8_t* src, int64_t n, uint16_t* dst);
  // The decode product on W rows in this type; none: W tiles are widened with to_float and run
  // through the FP32 matmul tiles.
  DecodeKernel decode;
};

struct Kernels {
  const char* isa;              // the top rung of the ladder this table reached, e.g. "avx512-vnni"
  void (*dot)(const DotArgs&);  // FP32 rows
  void (*acc)(const AccArgs&);  // FP32 rows
  // q rows [n_q][q_stride] of n values as int8 codes per group of `group` (QueryCodes).
  void (*quantize_queries)(const float* q, int n_q, size_t q_stride, int n, int group,
                           const QueryBuffers& out);
  FormatKernels format[kv::kNumFormats];         // slot = kv::Format; the f32 slot is empty
  float (*exp_sum)(float* x, int n, float max);  // x = exp(x - max) in place; returns the sum
  GluKernel swiglu;                              // gate = silu(gate) · up (the FFN)
  GluKernel geglu;                               // gate = gelu_tanh(gate) · up (Gemma 2)
  void (*hadamard)(float* x, int n);  // orthonormal fast Walsh–Hadamard, n power of two
  void (*gemm)(const GemmArgs&);      // prefill tiles, rows in lanes
  void (*softmax)(const SoftmaxArgs&);
  void (*gemm_bf16)(const GemmBf16Args&);  // the scalar twins below AVX512-BF16
  void (*bf16_pairs)(const float* x0, const float* x1, int step, int n, uint32_t* dst);
  MatmulTiles matmul;
  WeightKernels weight[kNumWeightTypes];
};

// Calls f(name, slot) for every named function-pointer slot of a table (reports and tests);
// a slot added to Kernels gets its name here.
template <class K, class F>
void for_each_slot(K& k, F&& f) {
  f("attention.dot.f32", k.dot);
  f("attention.acc.f32", k.acc);
  f("attention.quantize_queries", k.quantize_queries);
  kv::for_each_quant_format([&](auto fmt) {
    const std::string name = decltype(fmt)::kName;
    auto& slots = k.format[static_cast<int>(decltype(fmt)::kFormat)];
    f(("attention.dot." + name).c_str(), slots.dot);
    f(("attention.dot_channel." + name).c_str(), slots.dot_channel);
    f(("attention.acc." + name).c_str(), slots.acc);
    f(("quantize." + name).c_str(), slots.quantize);
    f(("prefill.dequantize_k." + name).c_str(), slots.dequantize_tile[0]);
    f(("prefill.dequantize_v." + name).c_str(), slots.dequantize_tile[1]);
  });
  f("softmax.exp_sum", k.exp_sum);
  f("ffn.swiglu", k.swiglu);
  f("ffn.geglu", k.geglu);
  f("rotate.hadamard", k.hadamard);
  f("prefill.gemm", k.gemm);
  f("prefill.softmax", k.softmax);
  f("prefill.gemm_bf16", k.gemm_bf16);
  f("prefill.bf16_pairs", k.bf16_pairs);
  for (int i = 0; i < k.matmul.rows; ++i) {
    for (int j = 0; j < k.matmul.cols; ++j) {
      f(("matmul.tile" + std::to_string(i + 1) + "x" + std::to_string(j + 1)).c_str(),
        k.matmul.fn[i][j]);
      f(("matmul.tile_f16." + std::to_string(i + 1) + "x" + std::to_string(j + 1)).c_str(),
        k.matmul.f16[i][j]);
    }
  }
  for (int t = 0; t < kNumWeightTypes; ++t) {
    const WeightTypeTraits* row = find_weight_type(static_cast<uint32_t>(t));
    if (row == nullptr) continue;
    const std::string name = std::string("weight.") + row->name + ".";
    f((name + "to_float").c_str(), k.weight[t].to_float);
    f((name + "from_float").c_str(), k.weight[t].from_float);
    f((name + "to_bf16").c_str(), k.weight[t].to_bf16);
    f((name + "decode").c_str(), k.weight[t].decode.run);
    f((name + "decode_lay").c_str(), k.weight[t].decode.lay);
  }
}

const char*
isa_name();  // the rung of this process's table, e.g. "avx512-vnni" (see simd/dispatch.h)

}  // namespace kvrt::simd
