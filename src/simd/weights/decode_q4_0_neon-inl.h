// The Q4_0 decode product on aarch64 (the decode slot, DecodeArgs of simd/kernels.h): included by
// weights/decode_neon-inl.h, after the rung's
//   int32x4_t q4_sums(const BlockQ4_0* x, const BlockQ8_0* y)   Σ q a of blocks x[k], y[k] in lane
//   k < 4
// which takes the W nibbles as they are, q = 0..15 (valid signed bytes for sdot, and |q a| <= 1920
// for vmull_s8). Once per product (the lay slot), each activation row is laid out as Q4Quads: 4
// blocks' codes as they are, their scales as f32 and their biases -8 Σ a, the last quad padded with
// zero blocks. Σ q a - 8 Σ a is the scalar twin's exact integer sum Σ (q - 8) a, with no
// subtraction of 8 per W code. The 4 W scales of a quad are widened in one fcvtl and one FMA per
// quad adds d_w d_a Σ, as the twin's d_w d_a Σ per block; only the order of the float sums
// differs. No software read-ahead: unmeasured here (qemu), unlike x86's.

namespace {

struct alignas(16) Q4Quad {
  BlockQ8_0 y[4];
  float d[4];
  int32_t bias[4];  // -8 Σ a
};

// The quads of one activation row of nb blocks, the last one padded with zero blocks.
void q4_quads(const BlockQ8_0* y, int64_t nb, Q4Quad* q) {
  for (int64_t b = 0; b < (nb + 3) / 4 * 4; ++b) {
    Q4Quad& quad = q[b / 4];
    const int k = int(b % 4);
    if (b < nb) quad.y[k] = y[b];
    else std::memset(&quad.y[k], 0, sizeof(BlockQ8_0));
    quad.d[k] = b < nb ? h(y[b].d) : 0.0f;
    quad.bias[k] =
        b < nb ? -8 * vaddlvq_s8(vld1q_s8(y[b].qs)) - 8 * vaddlvq_s8(vld1q_s8(y[b].qs + 16)) : 0;
  }
}

// acc + the products of the 4 blocks at x and quad's.
inline float32x4_t q4_quad(const BlockQ4_0* x, const Q4Quad& quad, float32x4_t acc) {
  const int32x4_t isum = vaddq_s32(q4_sums(x, quad.y), vld1q_s32(quad.bias));
  uint16x4_t dw = vdup_n_u16(x[0].d);
  dw = vset_lane_u16(x[1].d, dw, 1);
  dw = vset_lane_u16(x[2].d, dw, 2);
  dw = vset_lane_u16(x[3].d, dw, 3);
  const float32x4_t d = vmulq_f32(vcvt_f32_f16(vreinterpret_f16_u16(dw)), vld1q_f32(quad.d));
  return vfmaq_f32(acc, d, vcvtq_f32_s32(isum));
}

void decode_q4_0_rows(const DecodeArgs& a) {
  const int64_t nb = a.n_in / kQK, full = nb / 4, nq = (nb + 3) / 4;
  BlockQ4_0 tail[4] = {};  // the last nb % 4 blocks of a W row, then zero blocks
  for (int j = 0; j < a.n_rows; ++j) {
    const BlockQ4_0* x = reinterpret_cast<const BlockQ4_0*>(a.w + size_t(j) * a.w_stride);
    if (full < nq) std::memcpy(tail, x + 4 * full, size_t(nb - 4 * full) * sizeof(BlockQ4_0));
    for (int i = 0; i < a.m; ++i) {
      const Q4Quad* q = reinterpret_cast<const Q4Quad*>(a.act + size_t(i) * a.act_stride);
      float32x4_t acc = vdupq_n_f32(0.0f);
      for (int64_t k = 0; k < full; ++k) acc = q4_quad(x + 4 * k, q[k], acc);
      if (full < nq) acc = q4_quad(tail, q[full], acc);
      a.y[size_t(i) * a.y_stride + size_t(j)] = vaddvq_f32(acc);
    }
  }
}

constexpr DecodeKernel decode_q4_0 =
    Layout<BlockQ8_0, kQK, Q4Quad, 4, q4_quads>::kernel(decode_q4_0_rows);

}  // namespace
