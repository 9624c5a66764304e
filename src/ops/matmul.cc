// Matmul: picks the kernel for each product. Decode-sized products (ops/decode_size.h) stream W
// once through the blocked tiles, in W's stored type; larger products go to oneDNN, with W other
// than F32 widened kWidenRows rows at a time (the type's to_float kernel) into an L2-sized buffer.
#include <omp.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kvrt_config.h"
#include "ops/decode_size.h"
#include "ops/matmul.h"
#include "ops/matmul_blocked.h"
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
  std::string description;

  explicit Impl(int n_threads)
      : n_threads(n_threads), blocked(n_threads)
#if KVRT_HAVE_DNNL
        , gemm(n_threads)
#endif
  {}

  void describe(const char* gemm_name) {
    description = std::string("gemm ") + gemm_name + ", gemv " + blocked.name();
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

Matmul::Matmul(int n_threads) : impl_(std::make_unique<Impl>(std::max(1, n_threads))) {
  impl_->describe(KVRT_HAVE_DNNL ? "none" : impl_->blocked.name());  // oneDNN's name once it ran
}
Matmul::~Matmul() = default;

void Matmul::run(const float* x, int64_t m, const WeightMatrix& w, float* y) {
#if KVRT_HAVE_DNNL
  if (m > kDecodeMaxTokens) {
    impl_->gemm_run(x, m, w, y);
    impl_->describe(impl_->gemm.implementation());
    return;
  }
#endif
  impl_->blocked.run(x, m, w, y);
}

size_t Matmul::scratch_bytes(int n_threads, int64_t n_in) {
  size_t floats = BlockedMatmul::scratch_floats(n_threads, n_in);
#if KVRT_HAVE_DNNL
  floats += size_t(kWidenRows * n_in);
#endif
  return floats * sizeof(float);
}

size_t Matmul::bytes_allocated() const {
  size_t floats = impl_->blocked.scratch_floats_allocated();
#if KVRT_HAVE_DNNL
  floats += impl_->widened.size();
#endif
  return floats * sizeof(float);
}

void Matmul::reserve(int64_t n_in) {
  impl_->blocked.reserve(n_in);
#if KVRT_HAVE_DNNL
  impl_->widened.resize(std::max(impl_->widened.size(), size_t(kWidenRows * n_in)));
#endif
}

const char* Matmul::implementation() const { return impl_->description.c_str(); }

std::string matmul_backends() {
  const std::string blocked = BlockedMatmul(1).name();
#if KVRT_HAVE_DNNL
  return dnnl_library_name() + " (prefill), " + blocked + " (decode)";
#else
  return blocked + " (prefill and decode; built without oneDNN)";
#endif
}

}  // namespace kvrt::ops
