// Kernel bodies over xsimd batches, compiled once per ISA: included by kernels_<isa>.cc inside
// namespace kvrt::simd::<isa>, after xsimd, the ISA's intrinsics header, kernels_scalar.h and
// kv/blocks.h. Each body is a template over an xsimd architecture A with L = batch size lanes;
// the ISA file picks, per call, the widest A whose lanes fit the row (see pick()).

// L values of a row of codec C (simd/kernels.h) starting at value `off`; for codes narrower than
// a byte the chunk lies inside one run of n / kRuns codes (kv/blocks.h), which the lane choice
// guarantees, and symmetric ones lose their storage bias (kv/blocks.h kCodeBias) or become the
// level they index (q4n). 3-bit codes add their high-bit plane's run times 4.
template <class A, class C>
inline Vec<A> decode_chunk(const uint8_t* row, int off, int n) {
  if constexpr (C::kBits == 32) {
    return Vec<A>::load_unaligned(reinterpret_cast<const float*>(row) + off);
  } else if constexpr (C::kBits == 8) {
    return cvt_i8<A>(row + off);
  } else if constexpr (C::kCodebook) {
    const int run = n / C::kPerByte;
    return cvt_levels<A>(row + off % run, off / run * C::kBits);
  } else {
    const int run = n / C::kPerByte;
    Vec<A> x = cvt_codes<A, C::kLowBits>(row + off % run, off / run * C::kLowBits);
    if constexpr (C::kHighPlane) {
      const int high_run = n / 8;
      x = xsimd::fma(cvt_codes<A, 1>(row + run + off % high_run, off / high_run),
                     Vec<A>(static_cast<float>(1 << C::kLowBits)), x);
    }
    if constexpr (C::kCodeBias != 0) return x - Vec<A>(static_cast<float>(C::kCodeBias));
    else return x;
  }
}

// Whether lanes of A can cover rows of codec C with n values.
template <class A, class C>
inline bool fits(int n) {
  if constexpr (C::kBits >= 8) return n % kLanes<A> == 0;
  else return (n / C::kRuns) % kLanes<A> == 0;
}

// Whether lanes of A can quantize groups of `group` values of format F (one run of codes per
// vector).
template <class A, class F>
inline bool fits_quantize(int group) {
  return (group / F::kRuns) % kLanes<A> == 0;
}

// Row sums are reduced L at a time with one transposing haddp instead of one horizontal add
// per row and query (the horizontal adds would cost more than the multiplies).
template <class A, class C, int NQ>
void dot_nq(const DotArgs& a) {
  constexpr int l = kLanes<A>;
  Vec<A> pend[l];  // pending per-(row, query) vector sums, entry e = (t - t_first) * NQ + i
  alignas(64) float sums[l];
  int n_pend = 0, t_first = 0;
  const auto flush = [&] {
    for (int e = n_pend; e < l; ++e) pend[e] = Vec<A>(0.0f);
    lane_sums<A>(pend, sums);
    for (int e = 0; e < n_pend; ++e)
      a.scores[(e % NQ) * a.scores_stride + t_first + e / NQ] = sums[e];
    n_pend = 0;
  };
  for (int t = 0; t < a.n_rows; ++t) {
    const uint8_t* row = a.rows + t * a.row_stride;
    Vec<A> s[NQ];
    for (int i = 0; i < NQ; ++i) s[i] = Vec<A>(0.0f);
    for (int off = 0; off < a.n; off += l) {
      const Vec<A> x = decode_chunk<A, C>(row, off, a.n);
      for (int i = 0; i < NQ; ++i)
        s[i] = xsimd::fma(Vec<A>::load_unaligned(a.q + i * a.q_stride + off), x, s[i]);
    }
    if (n_pend + NQ > l) flush();
    if (n_pend == 0) t_first = t;
    for (int i = 0; i < NQ; ++i) pend[n_pend++] = s[i];
  }
  if (n_pend > 0) flush();
}

// q·k over channel-axis key tiles (DotArgs; kv/channel_tile.h), a tile at a time: the queries
// scaled per channel (qd = q * d, from the tile's FP16 scales) and q · m, then the tile's code
// rows dotted with qd by dot_nq, plus q · m. One call covers many tiles, so the per-tile work
// is these few vector operations, and the tile after next is fetched meanwhile.
template <class A, class F, int NQ>
void dot_channel_nq(const DotArgs& a) {
  constexpr int l = kLanes<A>;
  alignas(64) float qd[NQ][scalar::kMaxRow];  // [NQ][n] the queries scaled per channel of one tile
  const size_t row = static_cast<size_t>(a.n) * F::kBits / 8;
  for (int t = 0; t < a.n_rows;) {
    const int tt = (a.first + t) % a.group, n = std::min(a.n_rows - t, a.group - tt);
    const uint8_t* tile = a.rows + static_cast<size_t>((a.first + t) / a.group) * a.row_stride;
    __builtin_prefetch(tile + 2 * a.row_stride);
    Vec<A> bias[NQ];
    for (int i = 0; i < NQ; ++i) bias[i] = Vec<A>(0.0f);
    for (int c = 0; c < a.n; c += l) {
      const Vec<A> d = cvt_f16<A>(tile + c * sizeof(kv::Scale));
      for (int i = 0; i < NQ; ++i) {
        const Vec<A> q = Vec<A>::load_unaligned(a.q + i * a.q_stride + c);
        (q * d).store_aligned(qd[i] + c);
        if constexpr (!F::kSymmetric)
          bias[i] = xsimd::fma(q, cvt_f16<A>(tile + (a.n + c) * sizeof(kv::Scale)), bias[i]);
      }
    }
    const uint8_t* codes = tile + kv::channel_codes_offset<F>(a.n) + tt * row;
    dot_nq<A, F, NQ>(
        {qd[0], NQ, scalar::kMaxRow, codes, row, n, a.n, 0, a.scores + t, a.scores_stride});
    if constexpr (!F::kSymmetric) {
      for (int i = 0; i < NQ; ++i) {
        const float b = xsimd::hadd(bias[i]);
        for (int j = 0; j < n; ++j) a.scores[i * a.scores_stride + t + j] += b;
      }
    }
    t += n;
  }
}

template <class A, class C, int NQ>
void acc_nq(const AccArgs& a) {
  for (int off = 0; off < a.n; off += kLanes<A>) {
    Vec<A> o[NQ];
    for (int i = 0; i < NQ; ++i) o[i] = Vec<A>::load_unaligned(a.acc + i * a.acc_stride + off);
    for (int t = 0; t < a.n_rows; ++t) {
      const Vec<A> x = decode_chunk<A, C>(a.rows + t * a.row_stride, off, a.n);
      for (int i = 0; i < NQ; ++i) o[i] = xsimd::fma(Vec<A>(a.p[i * a.p_stride + t]), x, o[i]);
    }
    for (int i = 0; i < NQ; ++i) o[i].store_unaligned(a.acc + i * a.acc_stride + off);
  }
}

// Splits the queries into runs of at most 4 so the accumulators stay in registers.
template <class Args, class F1, class F2, class F3, class F4>
void by_queries(Args a, F1 f1, F2 f2, F3 f3, F4 f4) {
  const int n_q = a.n_q;
  for (int i0 = 0; i0 < n_q; i0 += 4) {
    const int m = std::min(4, n_q - i0);
    if constexpr (std::is_same_v<Args, DotArgs>) {
      a.q = a.q + (i0 ? 4 * a.q_stride : 0);
      a.scores = a.scores + (i0 ? 4 * a.scores_stride : 0);
    } else {
      a.p = a.p + (i0 ? 4 * a.p_stride : 0);
      a.acc = a.acc + (i0 ? 4 * a.acc_stride : 0);
    }
    a.n_q = m;
    if (m == 1) f1(a);
    else if (m == 2) f2(a);
    else if (m == 3) f3(a);
    else f4(a);
  }
}

template <class A, class C>
void dot_rows(const DotArgs& a) {
  by_queries(a, dot_nq<A, C, 1>, dot_nq<A, C, 2>, dot_nq<A, C, 3>, dot_nq<A, C, 4>);
}

template <class A, class F>
void dot_channel_rows(const DotArgs& a) {
  by_queries(a, dot_channel_nq<A, F, 1>, dot_channel_nq<A, F, 2>, dot_channel_nq<A, F, 3>,
             dot_channel_nq<A, F, 4>);
}

template <class A, class C>
void acc_rows(const AccArgs& a) {
  by_queries(a, acc_nq<A, C, 1>, acc_nq<A, C, 2>, acc_nq<A, C, 3>, acc_nq<A, C, 4>);
}

// Codes of one group: round((x - m) * id) clamped against the stored FP16 scales, as
// kv::quantize_group. Each vector takes the codes of one lane of every run of the group (k of
// them), packed into bytes as kv/blocks.h packs them.
template <class A, class F>
void quantize_row(const float* x, int n, int group, uint8_t* row) {
  constexpr int l = kLanes<A>, k = F::kRuns;
  const Vec<A> lim(static_cast<float>(F::kMaxCode));
  const int run = group / k;
  for (int g = 0; g < n / group; ++g) {
    const float* xg = x + g * group;
    uint8_t* block = row + g * F::block_bytes(group);
    kv::GroupScales sc;
    if constexpr (F::kAbsScale) {
      Vec<A> amax(0.0f);
      for (int i = 0; i < group; i += l)
        amax = xsimd::max(amax, xsimd::abs(Vec<A>::load_unaligned(xg + i)));
      sc = kv::store_group_scales<F>(0.0f, lane_max(amax), block);
    } else {
      Vec<A> vmin = Vec<A>::load_unaligned(xg), vmax = vmin;
      for (int i = l; i < group; i += l) {
        const Vec<A> v = Vec<A>::load_unaligned(xg + i);
        vmin = xsimd::min(vmin, v);
        vmax = xsimd::max(vmax, v);
      }
      sc = kv::store_group_scales<F>(lane_min(vmin), lane_max(vmax), block);
    }
    const float id = sc.d != 0 ? 1.0f / sc.d : 0.0f, mn = sc.m;
    const auto code = [&](const float* p) {
      const Vec<A> v = Vec<A>::load_unaligned(p);
      if constexpr (F::kSymmetric)
        return xsimd::to_int(xsimd::clip(xsimd::nearbyint(v * Vec<A>(id)),
                                         Vec<A>(static_cast<float>(F::kMinCode)), lim));
      else
        return xsimd::to_int(
            xsimd::clip(xsimd::nearbyint((v - Vec<A>(mn)) * Vec<A>(id)), Vec<A>(0.0f), lim));
    };
    alignas(64) int32_t c[k][l];
    for (int i = 0; i < run; i += l) {
      for (int s = 0; s < k; ++s) code(xg + i + s * run).store_aligned(c[s]);
      for (int j = 0; j < l; ++j) {
        if constexpr (F::kHighPlane) {  // code i + j + s run: low bits in slot s / 2 of the byte
                                        // of run s % 2, high bit in bit s
          int low[2] = {0, 0}, high = 0;
          for (int s = 0; s < k; ++s) {
            const int stored = c[s][j] + F::kCodeBias;
            low[s % 2] |= (stored & F::kLowMask) << (s / 2 * F::kLowBits);
            high |= (stored >> F::kLowBits & 1) << s;
          }
          uint8_t* codes = block + F::kHeaderBytes + i + j;
          codes[0] = static_cast<uint8_t>(low[0]);
          codes[run] = static_cast<uint8_t>(low[1]);
          codes[2 * run] = static_cast<uint8_t>(high);
        } else {
          int byte = 0;
          for (int s = 0; s < k; ++s)
            byte |= ((c[s][j] + F::kCodeBias) & (F::kBits == 8 ? 0xff : F::kCodeMask))
                    << (s * F::kBits);
          block[F::kHeaderBytes + i + j] = static_cast<uint8_t>(byte);
        }
      }
    }
  }
}

// Number of kv::kQ4NMids below each lane of a = |v| (kv::nearest_q4n_level's k), as a float.
template <class A>
inline Vec<A> q4n_steps(const Vec<A>& a) {
  Vec<A> k(0.0f);
  for (const float m : kv::kQ4NMids)
    k = k + xsimd::select(a > Vec<A>(m), Vec<A>(1.0f), Vec<A>(0.0f));
  return k;
}

// The level nearest each lane of v, as a float: its magnitude summed step by step.
template <class A>
inline Vec<A> q4n_level(const Vec<A>& v) {
  const Vec<A> a = xsimd::abs(v);
  Vec<A> m(static_cast<float>(kv::kQ4NLevels[8]));
  for (int j = 0; j < 7; ++j) {
    const auto gap = static_cast<float>(kv::kQ4NLevels[9 + j] - kv::kQ4NLevels[8 + j]);
    m = m + xsimd::select(a > Vec<A>(kv::kQ4NMids[j]), Vec<A>(gap), Vec<A>(0.0f));
  }
  return xsimd::select(v > Vec<A>(0.0f), m, -m);
}

// kv::nearest_q4n_level of each lane of v.
template <class A>
inline xsimd::batch<int32_t, A> q4n_code(const Vec<A>& v) {
  const Vec<A> k = q4n_steps<A>(xsimd::abs(v));
  return xsimd::to_int(xsimd::select(v > Vec<A>(0.0f), Vec<A>(8.0f) + k, Vec<A>(7.0f) - k));
}

// q4n on lanes of A, as kv::quantize_group_q4n: the same per-value products and comparisons, and
// each candidate's sums in int32 lanes, which are exact in any order (kv::Q4NSearch).
template <class A>
void quantize_row_q4n(const float* x, int n, int group, uint8_t* row) {
  using I = xsimd::batch<int32_t, A>;
  constexpr int l = kLanes<A>;
  const int run = group / 2;
  for (int g = 0; g < n / group; ++g) {
    const float* xg = x + g * group;
    uint8_t* block = row + g * kv::Q4N::block_bytes(group);
    Vec<A> vmax(0.0f);
    for (int i = 0; i < group; i += l)
      vmax = xsimd::max(vmax, xsimd::abs(Vec<A>::load_unaligned(xg + i)));
    kv::Q4NSearch search(lane_max(vmax));
    alignas(64) int32_t fixed[kv::kMaxGroup];  // the values in fixed point (kv::Q4NSearch)
    const Vec<A> amax(search.amax()), one(kv::Q4NSearch::kFixedOne);
    for (int i = 0; i < group && !search.empty(); i += l)
      xsimd::to_int(divide<A>(Vec<A>::load_unaligned(xg + i), amax) * one).store_aligned(fixed + i);
    for (int t = 0; t < kv::kQ4NTries && !search.empty(); ++t) {
      const Vec<A> id(search.inverse_scale(t));
      I sxq(0), sqq(0);
      for (int i = 0; i < group; i += l) {
        const I q = xsimd::to_int(q4n_level<A>(Vec<A>::load_unaligned(xg + i) * id));
        sxq = sxq + I::load_aligned(fixed + i) * q;
        sqq = sqq + q * q;
      }
      search.add(xsimd::hadd(sxq), xsimd::hadd(sqq));
    }
    const float d = kv::store_scale(block, static_cast<float>(search.scale()));
    const Vec<A> id(d != 0 ? 1.0f / d : 0.0f);
    alignas(64) int32_t lo[l], hi[l];
    for (int i = 0; i < run; i += l) {  // code i in the low nibble of byte i, code i + run high
      q4n_code<A>(Vec<A>::load_unaligned(xg + i) * id).store_aligned(lo);
      q4n_code<A>(Vec<A>::load_unaligned(xg + i + run) * id).store_aligned(hi);
      for (int j = 0; j < l; ++j)
        block[sizeof(kv::Scale) + i + j] = static_cast<uint8_t>(lo[j] | hi[j] << 4);
    }
  }
}

// act(gate[i]) · up[i] for n values by vector arithmetic `step`, the tail too (padded): a value's
// result does not depend on where it sits, so a product cut into blocks of columns gives the
// values of the whole.
template <class A, class Step>
void gated_values(float* gate, const float* up, int64_t n, Step&& step) {
  constexpr int l = kLanes<A>;
  int64_t i = 0;
  for (; i + l <= n; i += l)
    step(Vec<A>::load_unaligned(gate + i), Vec<A>::load_unaligned(up + i))
        .store_unaligned(gate + i);
  if (i == n) return;
  alignas(64) float g[l] = {}, u[l] = {};
  std::copy(gate + i, gate + n, g);
  std::copy(up + i, up + n, u);
  step(Vec<A>::load_aligned(g), Vec<A>::load_aligned(u)).store_aligned(g);
  std::copy(g, g + (n - i), gate + i);
}

template <class A>
void swiglu_impl(float* gate, const float* up, int64_t n) {
  gated_values<A>(gate, up, n, [](Vec<A> g, Vec<A> u) {
    return divide<A>(g, Vec<A>(1.0f) + xsimd::exp(-g)) * u;
  });
}

template <class A>
void geglu_impl(float* gate, const float* up, int64_t n) {
  const Vec<A> c(scalar::kGeluSqrt2OverPi), k(scalar::kGeluCoef), half(0.5f), one(1.0f);
  gated_values<A>(gate, up, n, [&](Vec<A> x, Vec<A> u) {
    return half * x * (one + xsimd::tanh(c * x * xsimd::fma(k * x, x, one))) * u;
  });
}

template <class A>
float exp_sum_impl(float* x, int n, float max) {
  constexpr int l = kLanes<A>;
  Vec<A> sum(0.0f);
  int i = 0;
  for (; i + l <= n; i += l) {
    const Vec<A> e = xsimd::exp(Vec<A>::load_unaligned(x + i) - Vec<A>(max));
    e.store_unaligned(x + i);
    sum += e;
  }
  float total = xsimd::hadd(sum);
  for (; i < n; ++i) total += (x[i] = std::exp(x[i] - max));
  return total;
}

template <class A>
void hadamard_impl(float* x, int n) {
  constexpr int l = kLanes<A>;
  for (int h = 1; h < n; h *= 2) {
    for (int i = 0; i < n; i += 2 * h) {
      if (h >= l) {
        for (int j = i; j < i + h; j += l) {
          const Vec<A> u = Vec<A>::load_unaligned(x + j), v = Vec<A>::load_unaligned(x + j + h);
          (u + v).store_unaligned(x + j);
          (u - v).store_unaligned(x + j + h);
        }
      } else {
        for (int j = i; j < i + h; ++j) {
          const float u = x[j], v = x[j + h];
          x[j] = u + v;
          x[j + h] = u - v;
        }
      }
    }
  }
  const float s = 1.0f / std::sqrt(static_cast<float>(n));
  int i = 0;
  for (; i + l <= n; i += l) (Vec<A>::load_unaligned(x + i) * Vec<A>(s)).store_unaligned(x + i);
  for (; i < n; ++i) x[i] *= s;
}
