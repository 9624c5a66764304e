// Names shared by the per-ISA primitives (kv/row_codes_x86-inl.h, kernels_neon.cc) and
// kv/row_kernels-inl.h.

template <class A>
using Vec = xsimd::batch<float, A>;

template <class A>
constexpr int kLanes = static_cast<int>(Vec<A>::size);

// a / b correctly rounded in every lane, as the scalar twins divide: xsimd 8 divides float lanes on
// neon64 by a refined reciprocal estimate, which can land an ulp away.
template <class A>
inline Vec<A> divide(const Vec<A>& a, const Vec<A>& b) {
#if defined(__aarch64__)
  if constexpr (std::is_same_v<A, xsimd::neon64>) return Vec<A>(vdivq_f32(a, b));
#endif
  return a / b;
}

template <class A>
inline float lane_max(const Vec<A>& v) {
  alignas(64) float x[kLanes<A>];
  v.store_aligned(x);
  float m = x[0];
  for (int i = 1; i < kLanes<A>; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

template <class A>
inline float lane_min(const Vec<A>& v) {
  alignas(64) float x[kLanes<A>];
  v.store_aligned(x);
  float m = x[0];
  for (int i = 1; i < kLanes<A>; ++i) m = x[i] < m ? x[i] : m;
  return m;
}
