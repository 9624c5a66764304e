// The q·k kernel over key tiles (kv/tiles.h) of the NEON rungs, included in the anonymous namespace
// of kv/tiles_neon.cc (neon), kv/tiles_neon_dotprod.cc (sdot) and kv/tiles_neon_i8mm.cc (smmla),
// each compiled with its own -march, after `using Tag = ` the file's tag type, which has
//   Tag::kQuarters                      quarters of a tile (4 tokens each) per step: 1, 2 or 4
//   Tag::Queries<NQ>(a, i0)             the codes of queries [i0, i0 + NQ) as its group_sums reads
//   them group_sums<NQ, F>(Tag, codes, high, queries, b, group, sums)
//                                       sums[i][r] lane e = Σ code q̃_i over group b, token 4 r + e
//                                       of the step whose codes start at `codes` (exact integers;
//                                       q3's high-bit plane of the step at `high`)
// and the float steps the same for all: per group s = fma(sum, d_k d_q, s) (and s = fma(m_k, Σ q,
// s) for asymmetric formats), as the scalar twin. Every step reads whole quarters of its tile (a
// tile is 16 tokens in memory), storing only the scores of tokens below n_rows.

// The 4 FP16 scales (or minimums) at p as floats (fcvtl, exact).
inline float32x4_t load_scales(const uint8_t* p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
}

// Slot S of 16 bytes of stored codes of format F (S * bits up; q3: of its 2-bit plane).
template <class F, int S>
inline uint8x16_t slot_stored(uint8x16_t v) {
  if constexpr (F::kBits == 8) return v;
  else if constexpr (S == F::kPerByte - 1) return vshrq_n_u8(v, S * F::kLowBits);
  else if constexpr (S == 0) return vandq_u8(v, vdupq_n_u8(F::kLowMask));
  else return vandq_u8(vshrq_n_u8(v, S * F::kLowBits), vdupq_n_u8(F::kLowMask));
}

// The 16 bytes of q3's high-bit plane beside run j of 16 dims of its 2-bit plane (kv/tiles.h: a
// byte's bits 4 (j % 2) + s are the high bits of slot s), shifted so that bit s is slot s's; zero
// for the other formats.
template <class F>
inline uint8x16_t high_bits(const uint8_t* high, int j) {
  if constexpr (!F::kHighPlane) {
    return vdupq_n_u8(0);
  } else {
    const uint8x16_t h = vld1q_u8(high + j / 2 * kRun);
    return j % 2 ? vshrq_n_u8(h, 4) : h;
  }
}

// Slot S of 16 bytes of codes of format F as the codes q of kv/blocks.h (signed bytes): int8
// codes as they are, narrower ones 0 .. 2^bits - 1, -8 .. 7 once q4s's bias is taken off, the
// levels q4n's codes index (tbl), or q3's 2-bit codes with bit S of `high` (high_bits) as bit 2,
// less its bias.
template <class F, int S>
inline int8x16_t slot_codes(uint8x16_t v, uint8x16_t high) {
  uint8x16_t c = slot_stored<F, S>(v);
  if constexpr (F::kHighPlane) {
    constexpr int to = F::kLowBits;  // bit S of `high` moved there
    uint8x16_t h = high;
    if constexpr (S > to) h = vshrq_n_u8(high, S - to);
    else if constexpr (S < to) h = vshlq_n_u8(high, to - S);
    c = vorrq_u8(c, vandq_u8(h, vdupq_n_u8(1 << to)));
  }
  if constexpr (F::kCodebook) return vqtbl1q_s8(vld1q_s8(kv::kQ4NLevels), c);
  else if constexpr (F::kCodeBias != 0)
    return vsubq_s8(vreinterpretq_s8_u8(c), vdupq_n_s8(F::kCodeBias));
  else return vreinterpretq_s8_u8(c);
}

// fn(std::integral_constant<int, S>{}) for S = 0 .. N - 1.
template <int N, class Fn, int S = 0>
inline void for_slots(Fn&& fn) {
  if constexpr (S < N) {
    fn(std::integral_constant<int, S>{});
    for_slots<N, Fn, S + 1>(static_cast<Fn&&>(fn));
  }
}

// The 4 query codes at p in every 32-bit lane.
inline int8x16_t query4(const int8_t* p) {
  uint32_t w;
  std::memcpy(&w, p, sizeof w);
  return vreinterpretq_s8_u32(vdupq_n_u32(w));
}

template <int NQ, class F>
void dot_nq(Tag, const DotArgs& a, int i0) {
  constexpr int R = Tag::kQuarters;
  constexpr size_t ss = kv::kScaleStride, quarter_codes = 4 * kv::kKeyLaneDims,
                   quarter_scales = 4 * sizeof(kv::Scale);
  const auto f = kv::TileFormat::of<F>(kv::TileRole::kKey, a.n, a.group);
  const int ng = f.n_groups();
  const QueryCodes& q = *a.qc;
  const typename Tag::template Queries<NQ> qc(a, i0);
  for (int t0 = 0; t0 < a.n_rows; t0 += 4 * R) {
    const uint8_t* tile = a.rows + (t0 / kT) * a.row_stride;
    const int quarter = t0 % kT / 4;
    float32x4_t s[NQ][R];
    for (int i = 0; i < NQ; ++i)
      for (int r = 0; r < R; ++r) s[i][r] = vdupq_n_f32(0.0f);
    for (int b = 0; b < ng; ++b) {
      int32x4_t sums[NQ][R];
      const uint8_t* codes = tile + f.header_bytes() + quarter_codes * quarter;
      group_sums<NQ, F>(Tag{}, codes, codes + f.high_offset(), qc, b, a.group, sums);
      for (int r = 0; r < R; ++r) {
        const float32x4_t d = load_scales(tile + b * ss + quarter_scales * (quarter + r));
        for (int i = 0; i < NQ; ++i) {
          const int g = (i0 + i) * ng + b;
          s[i][r] = vfmaq_f32(s[i][r], vcvtq_f32_s32(sums[i][r]), vmulq_n_f32(d, q.d[g]));
          if constexpr (!F::kSymmetric)
            s[i][r] = vfmaq_f32(s[i][r],
                                load_scales(tile + (ng + b) * ss + quarter_scales * (quarter + r)),
                                vdupq_n_f32(q.sum[g]));
        }
      }
    }
    for (int i = 0; i < NQ; ++i) {
      for (int r = 0; r < R && t0 + 4 * r < a.n_rows; ++r) {
        float* out = a.scores + (i0 + i) * a.scores_stride + t0 + 4 * r;
        if (a.n_rows - t0 - 4 * r >= 4) {
          vst1q_f32(out, s[i][r]);
        } else {
          float x[4];
          vst1q_f32(x, s[i][r]);
          std::copy_n(x, a.n_rows - t0 - 4 * r, out);
        }
      }
    }
  }
}
