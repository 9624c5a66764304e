// The decode products on aarch64 of the 32-value types: Q4_0, Q5_0, IQ4_NL and Q8_0 against Q8_0
// activations, Q4_1 and Q5_1 against Q8_1 (AffineQuad, below) (the decode slot, DecodeArgs of
// simd/kernels.h): included by
// weights/decode_neon-inl.h, after the rung's
//   int32x4_t q4_sums(const BlockQ4_0* x, const BlockQ8_0* y)   Σ q a of blocks x[k], y[k] in lane
//   k < 4
// which takes Q4_0's nibbles as they are, q = 0..15 (valid signed bytes for sdot, and |q a| <=
// 1920 for vmull_s8). Once per product (the lay slot), each activation row is laid out as Quads: 4
// blocks' codes as they are, their scales as f32 and their biases -c Σ a, the last quad padded
// with zero blocks. Q4_0's W codes enter with c = 8: Σ q a - 8 Σ a is the scalar twin's exact
// integer sum Σ (q - 8) a, with no subtraction of 8 per W code; the others' codes are signed
// bytes already (codes(), c = 0). The 4 blocks' sums are gathered into one vector by pairwise
// adds, their 4 W scales widened in one fcvtl, and one FMA per quad adds d_w d_a Σ, as the
// twin's d_w d_a Σ per block; only the order of the float sums differs. No software read-ahead:
// unmeasured here (qemu), unlike x86's.

namespace {

struct alignas(16) Quad {
  BlockQ8_0 y[4];
  float d[4];
  int32_t bias[4];  // -c Σ a
};

// The quads of one activation row of nb blocks for W codes offset by c, the last one padded with
// zero blocks.
template <int c>
void quads(const BlockQ8_0* y, int64_t nb, Quad* q) {
  for (int64_t b = 0; b < (nb + 3) / 4 * 4; ++b) {
    Quad& quad = q[b / 4];
    const int k = int(b % 4);
    if (b < nb) quad.y[k] = y[b];
    else std::memset(&quad.y[k], 0, sizeof(BlockQ8_0));
    quad.d[k] = b < nb ? h(y[b].d) : 0.0f;
    quad.bias[k] =
        b < nb ? -c * (vaddlvq_s8(vld1q_s8(y[b].qs)) + vaddlvq_s8(vld1q_s8(y[b].qs + 16))) : 0;
  }
}

// Σ q a of blocks x[k] (codes()) and the 32 activation codes at a + k a_stride, in lane k < 4.
template <class Block>
inline int32x4_t block_sums(const Block* x, const int8_t* a, size_t a_stride) {
  int32x4_t s[4];
  for (int k = 0; k < 4; ++k) s[k] = dot32_lanes(codes(x[k]), a + k * a_stride);
  return vpaddq_s32(vpaddq_s32(s[0], s[1]), vpaddq_s32(s[2], s[3]));
}

// Σ q a of blocks x[k], y[k] in lane k < 4.
template <class Block>
inline int32x4_t quad_sums(const Block* x, const BlockQ8_0* y) {
  if constexpr (std::is_same_v<Block, BlockQ4_0>) return q4_sums(x, y);
  else return block_sums(x, y[0].qs, sizeof(BlockQ8_0));
}

// The f16 field (scale or min) of the 4 blocks at x as f32.
template <class Block>
inline float32x4_t f16x4(const Block* x, uint16_t Block::*field) {
  uint16x4_t v = vdup_n_u16(x[0].*field);
  v = vset_lane_u16(x[1].*field, v, 1);
  v = vset_lane_u16(x[2].*field, v, 2);
  v = vset_lane_u16(x[3].*field, v, 3);
  return vcvt_f32_f16(vreinterpret_f16_u16(v));
}

// acc + the products of the 4 blocks at x and quad's.
template <class Block>
inline float32x4_t quad_step(const Block* x, const Quad& quad, float32x4_t acc) {
  const int32x4_t isum = vaddq_s32(quad_sums(x, quad.y), vld1q_s32(quad.bias));
  const float32x4_t d = vmulq_f32(f16x4(x, &Block::d), vld1q_f32(quad.d));
  return vfmaq_f32(acc, d, vcvtq_f32_s32(isum));
}

template <class Block, class QuadT>
void decode_quad_rows(const DecodeArgs& a) {
  const int64_t nb = a.n_in / kQK, full = nb / 4, nq = (nb + 3) / 4;
  Block tail[4] = {};  // the last nb % 4 blocks of a W row, then zero blocks
  for (int j = 0; j < a.n_rows; ++j) {
    const Block* x = reinterpret_cast<const Block*>(a.w + size_t(j) * a.w_stride);
    if (full < nq) std::memcpy(tail, x + 4 * full, size_t(nb - 4 * full) * sizeof(Block));
    for (int i = 0; i < a.m; ++i) {
      const QuadT* q = reinterpret_cast<const QuadT*>(a.act + size_t(i) * a.act_stride);
      float32x4_t acc = vdupq_n_f32(0.0f);
      for (int64_t k = 0; k < full; ++k) acc = quad_step(x + 4 * k, q[k], acc);
      if (full < nq) acc = quad_step(tail, q[full], acc);
      a.y[size_t(i) * a.y_stride + size_t(j)] = vaddvq_f32(acc);
    }
  }
}

// c: the offset of the W codes as quad_sums takes them.
template <class Block, int c>
constexpr DecodeKernel decode_quads() {
  return Layout<BlockQ8_0, kQK, Quad, 4, quads<c>>::kernel(decode_quad_rows<Block, Quad>);
}

// Q4_1 and Q5_1 (d q + m) against Q8_1 activations the same way: codes q as they are (codes()),
// and per block m_w s_a (Q8_1's s = d_a Σ a), 4 mins widened in one fcvtl, one more FMA per quad.
struct alignas(16) AffineQuad {
  int8_t qs[4][kQK];
  float d[4];
  float s[4];
};

void affine_quads(const BlockQ8_1* y, int64_t nb, AffineQuad* q) {
  for (int64_t b = 0; b < (nb + 3) / 4 * 4; ++b) {
    AffineQuad& quad = q[b / 4];
    const int k = int(b % 4);
    if (b < nb) std::memcpy(quad.qs[k], y[b].qs, kQK);
    else std::memset(quad.qs[k], 0, kQK);
    quad.d[k] = b < nb ? h(y[b].d) : 0.0f;
    quad.s[k] = b < nb ? h(y[b].s) : 0.0f;
  }
}

template <class Block>
inline float32x4_t quad_step(const Block* x, const AffineQuad& quad, float32x4_t acc) {
  const int32x4_t isum = block_sums(x, quad.qs[0], kQK);
  const float32x4_t d = vmulq_f32(f16x4(x, &Block::d), vld1q_f32(quad.d));
  acc = vfmaq_f32(acc, d, vcvtq_f32_s32(isum));
  return vfmaq_f32(acc, f16x4(x, &Block::m), vld1q_f32(quad.s));
}

template <class Block>
constexpr DecodeKernel decode_affine_quads() {
  return Layout<BlockQ8_1, kQK, AffineQuad, 4, affine_quads>::kernel(
      decode_quad_rows<Block, AffineQuad>);
}

}  // namespace
