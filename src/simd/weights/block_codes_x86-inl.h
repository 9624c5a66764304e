// The codes of the 32-value weight blocks as 32 bytes in value order, for the x86 kernels that
// read packed weights: included inside the ISA's namespace by weights/decode_x86-inl.h (the decode
// products) and weights/to_float_x86-inl.h (the widening to FP32), so each gets its file's -m
// flags.

namespace {

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// 16 bytes of nibbles as 32 bytes in value order: low nibbles (values 0..15), then high ones.
inline __m256i nibbles(const uint8_t* qs) {
  const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(0xF));
}

// 32 bits as 32 bytes: 0xFF where bit j is set.
inline __m256i bit_bytes(uint32_t x) {
  const __m256i byte_of_bit =
      _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303);
  const __m256i all_but_bit = _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe);  // byte k: every bit but k
  const __m256i b =
      _mm256_or_si256(_mm256_shuffle_epi8(_mm256_set1_epi32(int(x)), byte_of_bit), all_but_bit);
  return _mm256_cmpeq_epi8(b, _mm256_set1_epi8(-1));
}
inline __m256i bit_bytes(const uint8_t* qh) {  // 4 bytes, little-endian
  uint32_t x;
  std::memcpy(&x, qh, sizeof x);
  return bit_bytes(x);
}

// Weight codes of the symmetric 32-value types as signed bytes, in value order.
inline __m256i codes(const BlockQ8_0& b) { return load256(b.qs); }
inline __m256i codes(const BlockQ4_0& b) {
  return _mm256_sub_epi8(nibbles(b.qs), _mm256_set1_epi8(8));
}
inline __m256i codes(const BlockQ5_0& b) {  // nibble - 16 where the fifth bit is clear
  return _mm256_or_si256(nibbles(b.qs),
                         _mm256_andnot_si256(bit_bytes(b.qh), _mm256_set1_epi8(char(0xF0))));
}
inline __m256i codes(const BlockIQ4_NL& b) {
  const __m128i grid = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues));
  return _mm256_shuffle_epi8(_mm256_set_m128i(grid, grid), nibbles(b.qs));
}
// ... and of the affine ones as unsigned bytes.
inline __m256i codes(const BlockQ4_1& b) { return nibbles(b.qs); }
inline __m256i codes(const BlockQ5_1& b) {
  return _mm256_or_si256(nibbles(b.qs), _mm256_and_si256(bit_bytes(b.qh), _mm256_set1_epi8(0x10)));
}

}  // namespace
