// Matmul: picks the kernel for each product. Decode-sized products (ops/decode_size.h) on W of a
// type with a decode kernel run on it (matmul_packed.cc: integer dot products on quantized
// blocks, F16 rows widened in registers); other decode-sized products stream W once through the
// blocked tiles, in W's stored type; larger
// products go to oneDNN, with W other than F32 widened kWidenRows rows at a time (the type's
// to_float kernel) into an L2-sized buffer, and the columns of y they give written densely, then
// copied into y (oneDNN's fast kernels want a dense y). The threads of the session's pool
// (common/thread_pool.h) claim the blocks of W rows, each running oneDNN on one thread: no OpenMP
// team, whose joins spin on threads that another process has descheduled.
// At bf16 precision, x is rounded to bf16 once per call and W kWidenRows rows at a time (the type's
// to_bf16), except W stored as BF16, which oneDNN reads in place.
//
// W is rounded per call rather than once at load: a bf16 copy of the weights would cost 2 bytes
// per parameter for the life of the model (for an F16 model, as much again as the file; for a
// 4-bit one, 3.5 times the file), while rounding per call is a small part of a prefill product
// (docs/performance.md measures it).
#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "kvrt_config.h"
#include "ops/decode_size.h"
#include "ops/matmul.h"
#include "ops/matmul_blocked.h"
#include "ops/matmul_packed.h"
#include "simd/dispatch.h"
#include "simd/weights/types.h"
#if KVRT_HAVE_DNNL
#include "ops/matmul_dnnl.h"
#endif

namespace kvrt::ops {
namespace {
// W rows widened (or rounded to bf16) per oneDNN call: a pool item. 128 rows cut even the K and V
// projections of a GQA model (256 rows) into two items.
constexpr int64_t kWidenRows = 128;

#if KVRT_HAVE_DNNL
const simd::WeightKernels& weight_kernels(simd::WeightType t) {
  return simd::kernels().weight[simd::weight_index(t)];
}
#endif

// Rows of x the packed decode kernels quantize at most in one call.
int64_t decode_rows(MatmulRows rows, const MatmulPlan& plan) {
  return rows == MatmulRows::kEachAlone ? std::max<int64_t>(plan.n_rows, 1) : kDecodeMaxTokens;
}
}  // namespace

const char* matmul_precision_name(MatmulPrecision p) {
  return p == MatmulPrecision::kBf16 ? "bf16" : "f32";
}

MatmulPrecision parse_matmul_precision(std::string_view name) {
  for (MatmulPrecision p : {MatmulPrecision::kF32, MatmulPrecision::kBf16})
    if (name == matmul_precision_name(p)) return p;
  throw Error("unknown matmul precision '" + std::string(name) + "' (valid: f32, bf16)",
              ErrorKind::kUsage);
}

std::string bf16_unavailable(const std::vector<simd::Isa>& runnable, simd::Isa isa) {
  if (!KVRT_HAVE_DNNL) return "this kvrt was built without oneDNN, which runs the bf16 products";
  if (std::find(runnable.begin(), runnable.end(), simd::Isa::kAvx512Bf16) == runnable.end()) {
    std::string rungs;
    for (simd::Isa r : runnable)
      rungs += (rungs.empty() ? "" : ", ") + std::string(simd::isa_to_string(r));
    return "this CPU does not run the avx512-bf16 rung (it runs: " + rungs + ")";
  }
  if (isa != simd::Isa::kAvx512 && isa != simd::Isa::kAvx512Vnni && isa != simd::Isa::kAvx512Bf16 &&
      isa != simd::Isa::kAvx512Amx)
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
    if (!k.native)
      why = "oneDNN offers no native bf16 kernel on this CPU (it picked " + k.name +
            ", which emulates bf16)";
  }
#endif
  if (!why.empty())
    throw Error("--matmul bf16 cannot run here: " + why + "; use --matmul f32", ErrorKind::kUsage);
}

struct Matmul::Impl {
  std::shared_ptr<ThreadPool> pool;
  int n_threads;
  MatmulPrecision precision;
  MatmulRows rows;
  BlockedMatmul blocked;
  PackedDecode packed;
  const char* gemm_name = "none";  // the kernels of the last product of each kind
  const char* gemv_name;
  std::string description;  // built by implementation(): run() allocates nothing

  Impl(std::shared_ptr<ThreadPool> pool_, MatmulPrecision precision, MatmulRows rows)
      : pool(std::move(pool_)),
        n_threads(pool->n_threads()),
        precision(precision),
        rows(rows),
        blocked(*pool),
        packed(*pool)
#if KVRT_HAVE_DNNL
        ,
        threads(size_t(n_threads))
#endif
  {
    gemv_name = blocked.name();
    if (!KVRT_HAVE_DNNL) gemm_name = blocked.name();
  }

#if KVRT_HAVE_DNNL
  // What one thread of the pool uses for its blocks of W: its own oneDNN GEMM, run on one thread.
  struct ThreadGemm {
    DnnlGemm gemm{1};
    std::vector<float> widened;    // f32 products: [kWidenRows][n_in]
    std::vector<uint16_t> w_bf16;  // [kWidenRows][n_in]
    std::vector<float> y_block;    // [n_rows][kWidenRows]
  };

  // y = x · Wᵀ through oneDNN, a block of kWidenRows rows of W per pool item: rows j0..j0+nb of
  // W give columns j0..j0+nb of y. W other than F32 is widened first.
  void gemm_f32(const float* x, int64_t m, const WeightMatrix& w, float* y) {
    const auto to_float =
        w.type == simd::WeightType::kF32 ? nullptr : weight_kernels(w.type).to_float;
    pool->run((w.n_out + kWidenRows - 1) / kWidenRows, [&](int64_t block, int t) {
      ThreadGemm& g = threads[size_t(t)];
      const int64_t j0 = block * kWidenRows, nb = std::min(kWidenRows, w.n_out - j0);
      const float* rows = reinterpret_cast<const float*>(w.row(j0));
      if (to_float) {
        grow(g.widened, nb * w.n_in);
        to_float(w.row(j0), nb * w.n_in, g.widened.data());
        rows = g.widened.data();
      }
      if (nb == w.n_out) return g.gemm.run(x, m, rows, nb, w.n_in, y, w.n_out);
      grow(g.y_block, m * nb);
      g.gemm.run(x, m, rows, nb, w.n_in, g.y_block.data(), nb);
      copy_columns(g.y_block.data(), m, nb, y + j0, w.n_out);
    });
  }

  // y_block [m][nb] into columns of y (row stride ldy): oneDNN 2.6 runs its brgemm kernels
  // (brg:avx512_core, brg:avx512_core_bf16) only for a dense y, and falls back to gemm:jit (f32,
  // slower) or an emulated bf16 for a block of columns written in place.
  static void copy_columns(const float* y_block, int64_t m, int64_t nb, float* y, int64_t ldy) {
    for (int64_t i = 0; i < m; ++i) std::copy_n(y_block + i * nb, nb, y + i * ldy);
  }

  // The same with x and W rounded to bf16, W in one pass (the type's to_bf16; F32 rows through
  // BF16's from_float). W stored as BF16 is read in place.
  void gemm_bf16(const float* x, int64_t m, const WeightMatrix& w, float* y) {
    const auto to_bf16 = weight_kernels(simd::WeightType::kBF16).from_float;
    grow(x_bf16, m * w.n_in);
    constexpr int64_t kRowsPerItem = 16;
    pool->run((m + kRowsPerItem - 1) / kRowsPerItem, [&](int64_t item, int) {
      const int64_t i0 = item * kRowsPerItem, n = std::min(kRowsPerItem, m - i0);
      to_bf16(x + i0 * w.n_in, n * w.n_in, reinterpret_cast<uint8_t*>(x_bf16.data() + i0 * w.n_in));
    });
    const bool in_place = w.type == simd::WeightType::kBF16;
    const auto round = weight_kernels(w.type).to_bf16;
    if (!in_place && !round && w.type != simd::WeightType::kF32)
      throw Error(std::string("matmul bf16: no to_bf16 kernel for ") +
                      simd::weight_type_traits(w.type).name + " weights on the " +
                      simd::isa_name() + " rung",
                  ErrorKind::kInternal);
    pool->run((w.n_out + kWidenRows - 1) / kWidenRows, [&](int64_t block, int t) {
      ThreadGemm& g = threads[size_t(t)];
      const int64_t j0 = block * kWidenRows, nb = std::min(kWidenRows, w.n_out - j0);
      const uint16_t* rows = reinterpret_cast<const uint16_t*>(w.row(j0));
      if (!in_place) {
        grow(g.w_bf16, nb * w.n_in);
        if (round) round(w.row(j0), nb * w.n_in, g.w_bf16.data());
        else
          to_bf16(reinterpret_cast<const float*>(w.row(j0)), nb * w.n_in,
                  reinterpret_cast<uint8_t*>(g.w_bf16.data()));
        rows = g.w_bf16.data();
      }
      if (nb == w.n_out) return g.gemm.run_bf16(x_bf16.data(), m, rows, nb, w.n_in, y, w.n_out);
      grow(g.y_block, m * nb);
      g.gemm.run_bf16(x_bf16.data(), m, rows, nb, w.n_in, g.y_block.data(), nb);
      copy_columns(g.y_block.data(), m, nb, y + j0, w.n_out);
    });
  }

  // The kernel oneDNN ran last on a thread that ran one ("none" before any product).
  const char* dnnl_name() const {
    for (const ThreadGemm& g : threads)
      if (std::string_view(g.gemm.implementation()) != "none") return g.gemm.implementation();
    return "none";
  }

  template <class T>
  static void grow(std::vector<T>& v, int64_t n) {
    v.resize(std::max(v.size(), size_t(n)));
  }

  std::vector<ThreadGemm> threads;  // [n_threads]
  std::vector<uint16_t> x_bf16;     // [n_rows][n_in]
#endif
};

Matmul::Matmul(int n_threads, MatmulPrecision precision, MatmulRows rows)
    : Matmul(nullptr, precision, rows, n_threads) {}

Matmul::Matmul(std::shared_ptr<ThreadPool> pool, MatmulPrecision precision, MatmulRows rows)
    : Matmul(std::move(pool), precision, rows, 1) {}

Matmul::Matmul(std::shared_ptr<ThreadPool> pool, MatmulPrecision precision, MatmulRows rows,
               int n_threads) {
  require_matmul_precision(precision);
  if (!pool) pool = std::make_shared<ThreadPool>(std::max(1, n_threads));
  impl_ = std::make_unique<Impl>(std::move(pool), precision, rows);
}
Matmul::~Matmul() = default;

MatmulPrecision Matmul::precision() const { return impl_->precision; }
int Matmul::n_threads() const { return impl_->n_threads; }
ThreadPool& Matmul::pool() const { return *impl_->pool; }

void Matmul::run(const float* x, int64_t m, const WeightMatrix& w, float* y) {
  const bool decode = impl_->rows == MatmulRows::kEachAlone || m <= kDecodeMaxTokens;
#if KVRT_HAVE_DNNL
  if (!decode) {
    if (impl_->precision == MatmulPrecision::kBf16) impl_->gemm_bf16(x, m, w, y);
    else impl_->gemm_f32(x, m, w, y);
    impl_->gemm_name = impl_->dnnl_name();
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
  const size_t threads = size_t(std::max(1, n_threads));
  bytes += threads * size_t(plan.n_rows * kWidenRows) * sizeof(float);  // y_block
  if (precision == MatmulPrecision::kBf16) {
    bytes += (threads * size_t(kWidenRows * plan.n_in) + size_t(plan.n_rows * plan.n_in)) *
             sizeof(uint16_t);
  } else {
    bytes += threads * size_t(kWidenRows * plan.n_in_widened) * sizeof(float);
  }
#else
  (void)precision;
#endif
  return bytes + PackedDecode::scratch_bytes(kDecodeMaxTokens, plan.n_in_widened);
}

size_t Matmul::bytes_allocated() const {
  size_t bytes = impl_->blocked.scratch_floats_allocated() * sizeof(float);
#if KVRT_HAVE_DNNL
  bytes += impl_->x_bf16.size() * sizeof(uint16_t);
  for (const Impl::ThreadGemm& g : impl_->threads)
    bytes +=
        (g.widened.size() + g.y_block.size()) * sizeof(float) + g.w_bf16.size() * sizeof(uint16_t);
#endif
  return bytes + impl_->packed.bytes_allocated();
}

void Matmul::reserve(const MatmulPlan& plan) {
  impl_->blocked.reserve(plan.n_in_widened);
  impl_->packed.reserve(decode_rows(impl_->rows, plan), plan.n_in_widened);
#if KVRT_HAVE_DNNL
  if (impl_->rows == MatmulRows::kEachAlone) return;  // no call reaches oneDNN
  const bool bf16 = impl_->precision == MatmulPrecision::kBf16;
  if (bf16) Impl::grow(impl_->x_bf16, plan.n_rows * plan.n_in);
  for (Impl::ThreadGemm& g : impl_->threads) {
    Impl::grow(g.y_block, plan.n_rows * kWidenRows);
    if (bf16) Impl::grow(g.w_bf16, kWidenRows * plan.n_in);
    else Impl::grow(g.widened, kWidenRows * plan.n_in_widened);
  }
#endif
}

const char* Matmul::implementation() const {
  impl_->description = std::string("gemm ") + impl_->gemm_name + ", gemv " + impl_->gemv_name;
  return impl_->description.c_str();
}

std::string matmul_backends() {
  ThreadPool one(1);
  const std::string blocked = BlockedMatmul(one).name(), packed = PackedDecode(one).name();
#if KVRT_HAVE_DNNL
  return dnnl_library_name() + " (prefill), " + blocked + " (decode), " + packed +
         " (decode, quantized weights)";
#else
  return blocked + " (prefill and decode; built without oneDNN), " + packed +
         " (decode, quantized weights)";
#endif
}

}  // namespace kvrt::ops
