// Matmul: picks the kernel for each product. Decode-sized products (ops/decode_size.h) on W of a
// quantized type run as integer dot products on its packed blocks (matmul_packed.cc); other
// decode-sized products stream W once through the blocked tiles, in W's stored type; larger
// products go to oneDNN, with W other than F32 widened kWidenRows rows at a time (the type's
// to_float kernel) into an L2-sized buffer, and the columns of y they give written densely, then
// copied into y (oneDNN's fast kernels want a dense y).
// At bf16 precision, x is rounded to bf16 once per call and W kWidenRows rows at a time (to_float,
// then the BF16 type's from_float), except W stored as BF16, which oneDNN reads in place.
//
// W is rounded per call rather than once at load: a bf16 copy of the weights would cost 2 bytes
// per parameter for the life of the model (for an F16 model, as much again as the file; for a
// 4-bit one, 3.5 times the file), while rounding per call is a small part of a prefill product
// (docs/performance.md measures it).
#include <omp.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
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
constexpr int64_t kWidenRows = 256;  // W rows widened (or rounded to bf16) per oneDNN call

#if KVRT_HAVE_DNNL
const simd::WeightKernels& weight_kernels(simd::WeightType t) { return simd::kernels().weight[simd::weight_index(t)]; }
#endif

// Rows of x the packed decode kernels quantize at most in one call.
int64_t decode_rows(MatmulRows rows, const MatmulPlan& plan) {
  return rows == MatmulRows::kEachAlone ? std::max<int64_t>(plan.n_rows, 1) : kDecodeMaxTokens;
}
}  // namespace

const char* matmul_precision_name(MatmulPrecision p) { return p == MatmulPrecision::kBf16 ? "bf16" : "f32"; }

MatmulPrecision parse_matmul_precision(std::string_view name) {
  for (MatmulPrecision p : {MatmulPrecision::kF32, MatmulPrecision::kBf16})
    if (name == matmul_precision_name(p)) return p;
  throw Error("unknown matmul precision '" + std::string(name) + "' (valid: f32, bf16)", ErrorKind::kUsage);
}

std::string bf16_unavailable(const std::vector<simd::Isa>& runnable, simd::Isa isa) {
  if (!KVRT_HAVE_DNNL) return "this kvrt was built without oneDNN, which runs the bf16 products";
  if (std::find(runnable.begin(), runnable.end(), simd::Isa::kAvx512Bf16) == runnable.end()) {
    std::string rungs;
    for (simd::Isa r : runnable) rungs += (rungs.empty() ? "" : ", ") + std::string(simd::isa_to_string(r));
    return "this CPU does not run the avx512-bf16 rung (it runs: " + rungs + ")";
  }
  if (isa != simd::Isa::kAvx512 && isa != simd::Isa::kAvx512Vnni && isa != simd::Isa::kAvx512Bf16)
    return std::string("this process runs the ") + simd::isa_to_string(isa) +
           " kernels (KVRT_ISA), below the AVX-512 that bf16 products need";
  return "";
}

void require_matmul_precision(MatmulPrecision p) {
  if (p == MatmulPrecision::kF32) return;
  std::string why = bf16_unavailable(simd::runnable_isas(), simd::process_isa());
#if KVRT_HAVE_DNNL
  if (why.empty()) {
    const DnnlBf16Kernel k = dnnl_bf16_kernel();
    if (!k.native) why = "oneDNN offers no native bf16 kernel on this CPU (it picked " + k.name + ", which emulates bf16)";
  }
#endif
  if (!why.empty()) throw Error("--matmul bf16 cannot run here: " + why + "; use --matmul f32", ErrorKind::kUsage);
}

struct Matmul::Impl {
  int n_threads;
  MatmulPrecision precision;
  MatmulRows rows;
  BlockedMatmul blocked;
  PackedDecode packed;
  const char* gemm_name = "none";  // the kernels of the last product of each kind
  const char* gemv_name;
  std::string description;         // built by implementation(): run() allocates nothing

  Impl(int n_threads, MatmulPrecision precision, MatmulRows rows)
      : n_threads(n_threads), precision(precision), rows(rows), blocked(n_threads), packed(n_threads)
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
  void gemm_f32(const float* x, int64_t m, const WeightMatrix& w, float* y) {
    if (w.type == simd::WeightType::kF32) {
      gemm.run(x, m, static_cast<const float*>(w.data), w.n_out, w.n_in, y, w.n_out);
      return;
    }
    const auto to_float = weight_kernels(w.type).to_float;
    grow(widened, kWidenRows * w.n_in);
    if (w.n_out > kWidenRows) grow(y_block, m * kWidenRows);
    for (int64_t j0 = 0; j0 < w.n_out; j0 += kWidenRows) {
      const int64_t nb = std::min(kWidenRows, w.n_out - j0);
#pragma omp parallel for num_threads(n_threads) schedule(static)
      for (int64_t r = 0; r < nb; ++r) to_float(w.row(j0 + r), w.n_in, widened.data() + r * w.n_in);
      if (nb == w.n_out) {
        gemm.run(x, m, widened.data(), nb, w.n_in, y, w.n_out);
        continue;
      }
      gemm.run(x, m, widened.data(), nb, w.n_in, y_block.data(), nb);
      copy_columns(m, nb, y + j0, w.n_out);
    }
  }

  // y_block [m][nb] into columns of y (row stride ldy): oneDNN 2.6 runs its brgemm kernels
  // (brg:avx512_core, brg:avx512_core_bf16) only for a dense y, and falls back to gemm:jit (f32,
  // slower) or an emulated bf16 for a block of columns written in place.
  void copy_columns(int64_t m, int64_t nb, float* y, int64_t ldy) {
#pragma omp parallel for num_threads(n_threads) schedule(static)
    for (int64_t i = 0; i < m; ++i) std::copy_n(y_block.data() + i * nb, nb, y + i * ldy);
  }

  // The same with x and W rounded to bf16; W rows other than F32 pass through FP32 first (one row
  // per thread, in L1), which rounds exactly as rounding the stored value would.
  void gemm_bf16(const float* x, int64_t m, const WeightMatrix& w, float* y) {
    const auto to_bf16 = weight_kernels(simd::WeightType::kBF16).from_float;
    grow(x_bf16, m * w.n_in);
    to_bf16(x, m * w.n_in, reinterpret_cast<uint8_t*>(x_bf16.data()));
    if (w.type == simd::WeightType::kBF16) {
      gemm.run_bf16(x_bf16.data(), m, static_cast<const uint16_t*>(w.data), w.n_out, w.n_in, y, w.n_out);
      return;
    }
    const auto to_float = w.type == simd::WeightType::kF32 ? nullptr : weight_kernels(w.type).to_float;
    grow(w_bf16, kWidenRows * w.n_in);
    if (to_float) grow(widened, n_threads * w.n_in);
    if (w.n_out > kWidenRows) grow(y_block, m * kWidenRows);
    for (int64_t j0 = 0; j0 < w.n_out; j0 += kWidenRows) {
      const int64_t nb = std::min(kWidenRows, w.n_out - j0);
#pragma omp parallel for num_threads(n_threads) schedule(static)
      for (int64_t r = 0; r < nb; ++r) {
        const float* row = reinterpret_cast<const float*>(w.row(j0 + r));
        if (to_float) {
          float* f = widened.data() + omp_get_thread_num() * w.n_in;
          to_float(w.row(j0 + r), w.n_in, f);
          row = f;
        }
        to_bf16(row, w.n_in, reinterpret_cast<uint8_t*>(w_bf16.data() + r * w.n_in));
      }
      if (nb == w.n_out) {
        gemm.run_bf16(x_bf16.data(), m, w_bf16.data(), nb, w.n_in, y, w.n_out);
        continue;
      }
      gemm.run_bf16(x_bf16.data(), m, w_bf16.data(), nb, w.n_in, y_block.data(), nb);
      copy_columns(m, nb, y + j0, w.n_out);
    }
  }

  template <class T>
  static void grow(std::vector<T>& v, int64_t n) { v.resize(std::max(v.size(), size_t(n))); }

  DnnlGemm gemm;
  std::vector<float> widened;    // f32: [kWidenRows][n_in]; bf16: [n_threads][n_in]
  std::vector<uint16_t> x_bf16;  // [n_rows][n_in]
  std::vector<uint16_t> w_bf16;  // [kWidenRows][n_in]
  std::vector<float> y_block;    // [n_rows][kWidenRows]
#endif
};

Matmul::Matmul(int n_threads, MatmulPrecision precision, MatmulRows rows) {
  require_matmul_precision(precision);
  impl_ = std::make_unique<Impl>(std::max(1, n_threads), precision, rows);
}
Matmul::~Matmul() = default;

MatmulPrecision Matmul::precision() const { return impl_->precision; }
int Matmul::n_threads() const { return impl_->n_threads; }

void Matmul::run(const float* x, int64_t m, const WeightMatrix& w, float* y) {
  const bool decode = impl_->rows == MatmulRows::kEachAlone || m <= kDecodeMaxTokens;
#if KVRT_HAVE_DNNL
  if (!decode) {
    if (impl_->precision == MatmulPrecision::kBf16) impl_->gemm_bf16(x, m, w, y);
    else impl_->gemm_f32(x, m, w, y);
    impl_->gemm_name = impl_->gemm.implementation();
    return;
  }
#endif
  if (decode && impl_->packed.handles(w)) {
    impl_->packed.run(x, m, w, y);
    impl_->gemv_name = impl_->packed.name();
    return;
  }
  impl_->blocked.run(x, m, w, y);
  if (decode) impl_->gemv_name = impl_->blocked.name();
}

size_t Matmul::scratch_bytes(int n_threads, MatmulPrecision precision, const MatmulPlan& plan) {
  size_t bytes = BlockedMatmul::scratch_floats(n_threads, plan.n_in_widened) * sizeof(float);
#if KVRT_HAVE_DNNL
  if (precision == MatmulPrecision::kBf16) {
    bytes += size_t(std::max(1, n_threads) * plan.n_in_widened) * sizeof(float);
    bytes += size_t((plan.n_rows + kWidenRows) * plan.n_in) * sizeof(uint16_t);
    bytes += size_t(plan.n_rows * kWidenRows) * sizeof(float);
  } else {
    bytes += size_t(kWidenRows * plan.n_in_widened) * sizeof(float);
    if (plan.n_in_widened > 0) bytes += size_t(plan.n_rows * kWidenRows) * sizeof(float);
  }
#else
  (void)precision;
#endif
  return bytes + PackedDecode::scratch_bytes(kDecodeMaxTokens, plan.n_in_widened);
}

size_t Matmul::bytes_allocated() const {
  size_t bytes = impl_->blocked.scratch_floats_allocated() * sizeof(float);
#if KVRT_HAVE_DNNL
  bytes += (impl_->widened.size() + impl_->y_block.size()) * sizeof(float) +
           (impl_->x_bf16.size() + impl_->w_bf16.size()) * sizeof(uint16_t);
#endif
  return bytes + impl_->packed.bytes_allocated();
}

void Matmul::reserve(const MatmulPlan& plan) {
  impl_->blocked.reserve(plan.n_in_widened);
  impl_->packed.reserve(decode_rows(impl_->rows, plan), plan.n_in_widened);
#if KVRT_HAVE_DNNL
  if (impl_->rows == MatmulRows::kEachAlone) return;  // no call reaches oneDNN
  if (impl_->precision == MatmulPrecision::kBf16) {
    Impl::grow(impl_->widened, impl_->n_threads * plan.n_in_widened);
    Impl::grow(impl_->x_bf16, plan.n_rows * plan.n_in);
    Impl::grow(impl_->w_bf16, kWidenRows * plan.n_in);
    Impl::grow(impl_->y_block, plan.n_rows * kWidenRows);
  } else {
    Impl::grow(impl_->widened, kWidenRows * plan.n_in_widened);
    if (plan.n_in_widened > 0) Impl::grow(impl_->y_block, plan.n_rows * kWidenRows);
  }
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
