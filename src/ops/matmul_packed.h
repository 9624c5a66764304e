// Decode products on W in its stored type (simd/weights/decode.h) for matmul.cc: the rows of x
// are quantized once per product, or group of products, into the weight type's activation blocks
// (Q8_0, Q8_1 or Q8_K, by the from_float slot of that format; F16 W takes x's F32 rows as they
// are) and, for a kernel with a layout of its own, laid out by it, then the pool's threads claim
// items of contiguous rows of W (ops/row_items.h), each running the type's decode kernel over
// them: W is read once, packed, straight from the map. The memory of both is allocated by
// reserve(); run() grows it only for a product larger than reserved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/thread_pool.h"
#include "ops/matmul.h"
#include "simd/kernels.h"

namespace kvrt::ops {

class PackedDecode {
 public:
  explicit PackedDecode(ThreadPool& pool);
  // Whether run() computes y = x · Wᵀ for W: a weight type with a decode kernel. Each row of y
  // is the same whatever m (every output is a dot product of its own).
  bool handles(const WeightMatrix& w) const;
  // The products of a group (Matmul::run) in one loop of the pool; x is quantized and laid out
  // once for all of them when their types share the activation format and layout, else once each.
  void run(const float* x, int64_t m, std::span<const Product> group);
  // The activation rows (blocks and layouts) of products of up to m rows of up to n_in values,
  // allocated now.
  void reserve(int64_t m, int64_t n_in);
  static size_t scratch_bytes(int64_t m, int64_t n_in);
  size_t bytes_allocated() const { return act_.size() + sizeof(Line) * lay_.size(); }
  const char* name() const { return name_.c_str(); }  // "kvrt-packed:<isa of the decode kernels>"

 private:
  void grow(size_t act_bytes, size_t lay_bytes);  // to at least these

  ThreadPool* pool_;
  const simd::Kernels* kernels_;
  std::string name_;
  struct alignas(64) Line {
    uint8_t bytes[64];
  };
  std::vector<uint8_t> act_;  // [m][activation row bytes]: x quantized (not for F32 activations)
  std::vector<Line> lay_;     // [m][laid-out row bytes / 64]: act_ laid out by the decode kernel
};

}  // namespace kvrt::ops
