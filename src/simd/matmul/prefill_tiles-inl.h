// Prefill tiles with the query rows in the lanes (simd/kernels.h: GemmArgs, SoftmaxArgs), over
// xsimd batches: included by kernels_<isa>.cc after kv/row_kernels-inl.h.

// c[i0 + ii][r0 + v L ..] for ii < I, v < V: each step of k loads V vectors of a and broadcasts
// I values of b into V x I accumulators.
template <class A, int V, int I>
inline void gemm_block(const GemmArgs& g, int i0, int r0) {
  constexpr int l = kLanes<A>;
  Vec<A> c[I][V];
  for (int ii = 0; ii < I; ++ii) {
    float* row = g.c + static_cast<size_t>(i0 + ii) * g.n_r + r0;
    for (int v = 0; v < V; ++v)
      c[ii][v] = g.accumulate ? Vec<A>::load_unaligned(row + v * l) : Vec<A>(0.0f);
  }
  const float* b = g.b + i0 * g.b_i;
  const float* a = g.a + r0;
  for (int k = 0; k < g.n_k; ++k, b += g.b_k, a += g.n_r) {
    Vec<A> av[V];
    for (int v = 0; v < V; ++v) av[v] = Vec<A>::load_unaligned(a + v * l);
    for (int ii = 0; ii < I; ++ii) {
      const Vec<A> bv(b[ii * g.b_i]);
      for (int v = 0; v < V; ++v) c[ii][v] = xsimd::fma(bv, av[v], c[ii][v]);
    }
  }
  for (int ii = 0; ii < I; ++ii) {
    float* row = g.c + static_cast<size_t>(i0 + ii) * g.n_r + r0;
    for (int v = 0; v < V; ++v) c[ii][v].store_unaligned(row + v * l);
  }
}

template <class A, int V, int I>
void gemm_rows(const GemmArgs& g, int r0) {
  int i = 0;
  for (; i + I <= g.n_i; i += I) gemm_block<A, V, I>(g, i, r0);
  for (; i < g.n_i; ++i) gemm_block<A, V, 1>(g, i, r0);
}

// Blocks of 2 vectors of rows x 8 values of b on 16 lanes (16 of the 32 registers accumulate;
// faster than 4 x 4, which reloads a twice as often), 2 x 4 on narrower vectors (16 registers).
template <class A>
void gemm_impl(const GemmArgs& g) {
  constexpr int l = kLanes<A>, kV = 2, kI = l == 16 ? 8 : 4;
  int r0 = 0;
  for (; r0 + kV * l <= g.n_r; r0 += kV * l) gemm_rows<A, kV, kI>(g, r0);
  for (; r0 < g.n_r; r0 += l) gemm_rows<A, 1, kI>(g, r0);
}

template <class A>
void softmax_impl(const SoftmaxArgs& a) {
  constexpr int l = kLanes<A>;
  const Vec<A> zero(0.0f), one(1.0f), neg_inf(-INFINITY);
  for (int r = 0; r < a.n_r; r += l) {
    const Vec<A> m_old = Vec<A>::load_unaligned(a.m + r);
    Vec<A> m = m_old;
    for (int j = 0; j < a.n_j; ++j)
      m = xsimd::max(m, Vec<A>::load_unaligned(a.s + static_cast<size_t>(j) * a.n_r + r));
    const auto none = m == neg_inf;  // no visible key yet: exp(s - 0) = 0, nothing rescaled
    const Vec<A> base = xsimd::select(none, zero, m);
    const Vec<A> corr = xsimd::select(none, one, xsimd::exp(m_old - base));
    Vec<A> sum(0.0f);
    for (int j = 0; j < a.n_j; ++j) {
      float* s = a.s + static_cast<size_t>(j) * a.n_r + r;
      const Vec<A> e = xsimd::exp(Vec<A>::load_unaligned(s) - base);
      e.store_unaligned(s);
      sum += e;
    }
    xsimd::fma(Vec<A>::load_unaligned(a.l + r), corr, sum).store_unaligned(a.l + r);
    m.store_unaligned(a.m + r);
    if (xsimd::all(m == m_old)) continue;  // corr is 1 in every lane: o stays
    for (int d = 0; d < a.n_d; ++d) {
      float* o = a.o + static_cast<size_t>(d) * a.n_r + r;
      (Vec<A>::load_unaligned(o) * corr).store_unaligned(o);
    }
  }
}
