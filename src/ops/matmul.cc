// Matmul: picks the kernel for each product. Decode-sized products (ops/decode_size.h) on W of a
// quantized type run as integer dot products on its packed blocks (matmul_packed.cc); other
// decode-sized products stream W once through the blocked tiles, in W's stored type; larger
// products go to oneDNN, with W other than F32 widened kWidenRows rows at a time (the type's
// to_float kernel) into an L2-sized buffer.
#include <omp.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kvrt_config.h"
#include "ops/decode_size.h"
#include "ops/matmul.h"
#include "ops/matmul_blocked.h"
#include "ops/matmul_packed.h"
#include "simd/dispatch.h"
#if KVRT_HAVE_DNNL
#include "ops/matmul_dnnl.h"
#endif

namespace kvrt::ops {
namespace {
constexpr int64_t kWidenRows = 256;  // W rows widened per oneDNN call
}  // namespace

struct Matmul::Impl {
  int n_threads;
  BlockedMatmul blocked;
  PackedDecode packed;
  const char* gemm_name = "none";  // the kernels of the last product of each kind
  const char* gemv_name;
  std::string description;         // built by implementation(): run() allocates nothing

  explicit Impl(int n_threads)
      : n_threads(n_threads), blocked(n_threads), packed(n_threads)
#if KVRT_HAVE_DNNL
        , gemm(n_threads)
#endif
  {
    gemv_name = blocked.name();
    if (!KVRT_HAVE_DNNL) gemm_name = blocked.name();
  }

#if KVRT_HAVE_DNNL
  // y = x · Wᵀ through oneDNN; W other than F32 is widened block by block (rows j0..j0+nb of W
  // give columns j0..j0+nb of y).
  void gemm_run(const float* x, int64_t m, const WeightMatrix& w, float* y) {
    if (w.type == simd::WeightType::kF32) {
      gemm.run(x, m, static_cast<const float*>(w.data), w.n_out, w.n_in, y, w.n_out);
      return;
    }
    const auto to_float = simd::kernels().weight[simd::weight_index(w.type)].to_float;
    widened.resize(std::max(widened.size(), size_t(kWidenRows * w.n_in)));
    for (int64_t j0 = 0; j0 < w.n_out; j0 += kWidenRows) {
      const int64_t nb = std::min(kWidenRows, w.n_out - j0);
#pragma omp parallel for num_threads(n_threads) schedule(static)
      for (int64_t r = 0; r < nb; ++r) to_float(w.row(j0 + r), w.n_in, widened.data() + r * w.n_in);
      gemm.run(x, m, widened.data(), nb, w.n_in, y + j0, w.n_out);
    }
  }
  DnnlGemm gemm;
  std::vector<float> widened;  // [kWidenRows][n_in]
#endif
};

Matmul::Matmul(int n_threads) : impl_(std::make_unique<Impl>(std::max(1, n_threads))) {}
Matmul::~Matmul() = default;

void Matmul::run(const float* x, int64_t m, const WeightMatrix& w, float* y) {
#if KVRT_HAVE_DNNL
  if (m > kDecodeMaxTokens) {
    impl_->gemm_run(x, m, w, y);
    impl_->gemm_name = impl_->gemm.implementation();
    return;
  }
#endif
  if (impl_->packed.handles(m, w)) {
    impl_->packed.run(x, m, w, y);
    impl_->gemv_name = impl_->packed.name();
    return;
  }
  impl_->blocked.run(x, m, w, y);
  if (m <= kDecodeMaxTokens) impl_->gemv_name = impl_->blocked.name();
}

size_t Matmul::scratch_bytes(int n_threads, int64_t n_in) {
  size_t floats = BlockedMatmul::scratch_floats(n_threads, n_in);
#if KVRT_HAVE_DNNL
  floats += size_t(kWidenRows * n_in);
#endif
  return floats * sizeof(float) + PackedDecode::scratch_bytes(n_in);
}

size_t Matmul::bytes_allocated() const {
  size_t floats = impl_->blocked.scratch_floats_allocated();
#if KVRT_HAVE_DNNL
  floats += impl_->widened.size();
#endif
  return floats * sizeof(float) + impl_->packed.bytes_allocated();
}

void Matmul::reserve(int64_t n_in) {
  impl_->blocked.reserve(n_in);
  impl_->packed.reserve(n_in);
#if KVRT_HAVE_DNNL
  impl_->widened.resize(std::max(impl_->widened.size(), size_t(kWidenRows * n_in)));
#endif
}

const char* Matmul::implementation() const {
  impl_->description = std::string("gemm ") + impl_->gemm_name + ", gemv " + impl_->gemv_name;
  return impl_->description.c_str();
}

std::string matmul_backends() {
  const std::string blocked = BlockedMatmul(1).name(), packed = PackedDecode(1).name();
#if KVRT_HAVE_DNNL
  return dnnl_library_name() + " (prefill), " + blocked + " (decode), " + packed + " (decode, quantized weights)";
#else
  return blocked + " (prefill and decode; built without oneDNN), " + packed + " (decode, quantized weights)";
#endif
}

}  // namespace kvrt::ops
