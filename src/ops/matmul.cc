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
// Products of one x (Q, K and V; gate and up) run as a group in one loop of the pool, x rounded or
// quantized once. On oneDNN, gate and up also apply the FFN's activation a block of columns at a
// time (run_glu), while the block is in cache, and up's columns are never written out.
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
#include "ops/row_items.h"
#include "ops/transformer_ops.h"
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

  // Whether a product of m rows of x runs on the decode kernels (else on oneDNN, where built).
  bool decode(int64_t m) const { return rows == MatmulRows::kEachAlone || m <= kDecodeMaxTokens; }

#if KVRT_HAVE_DNNL
  // What one thread of the pool uses for its blocks of W: its own oneDNN GEMM, run on one thread.
  struct ThreadGemm {
    DnnlGemm gemm{1};
    std::vector<float> widened;    // f32 products: [kWidenRows][n_in]
    std::vector<uint16_t> w_bf16;  // [kWidenRows][n_in]
    std::vector<float> y_block;    // [n_rows][kWidenRows]
    std::vector<float> y_up;       // [n_rows][kWidenRows]: run_glu's up block
  };

  // Calls fn(product, j0, nb, thread's gemm) on the pool for every block of kWidenRows rows of W
  // of each product of the group: rows j0..j0+nb of W give columns j0..j0+nb of its y.
  template <class Fn>
  void for_w_blocks(std::span<const Product> group, Fn&& fn) {
    GroupItems items;
    for (const Product& p : group) items.add((p.w->n_out + kWidenRows - 1) / kWidenRows);
    pool->run(items.total(), [&](int64_t item, int t) {
      const size_t i = items.product(item);
      const int64_t j0 = (item - items.first[i]) * kWidenRows;
      fn(group[i], j0, std::min(kWidenRows, group[i].w->n_out - j0), threads[size_t(t)]);
    });
  }

  // Before the blocks of products of x: at bf16, x rounded once into x_bf16 (on the pool).
  void prepare(const float* x, int64_t m, std::span<const Product> group) {
    if (precision != MatmulPrecision::kBf16) return;
    const int64_t n_in = group[0].w->n_in;
    for (const Product& p : group)
      if (p.w->type != simd::WeightType::kBF16 && p.w->type != simd::WeightType::kF32 &&
          !weight_kernels(p.w->type).to_bf16)
        throw Error(std::string("matmul bf16: no to_bf16 kernel for ") +
                        simd::weight_type_traits(p.w->type).name + " weights on the " +
                        simd::isa_name() + " rung",
                    ErrorKind::kInternal);
    const auto to_bf16 = weight_kernels(simd::WeightType::kBF16).from_float;
    grow(x_bf16, m * n_in);
    constexpr int64_t kRowsPerItem = 16;
    pool->run((m + kRowsPerItem - 1) / kRowsPerItem, [&](int64_t item, int) {
      const int64_t i0 = item * kRowsPerItem, n = std::min(kRowsPerItem, m - i0);
      to_bf16(x + i0 * n_in, n * n_in, reinterpret_cast<uint8_t*>(x_bf16.data() + i0 * n_in));
    });
  }

  // y[m][nb] (dense) = x · (rows j0..j0+nb of W)ᵀ through oneDNN. f32: W other than F32 widened
  // first (the type's to_float); bf16: x_bf16 by W rounded in one pass (the type's to_bf16; F32
  // rows through BF16's from_float), W stored as BF16 read in place.
  void block_product(const float* x, int64_t m, const WeightMatrix& w, int64_t j0, int64_t nb,
                     ThreadGemm& g, float* y) {
    if (precision == MatmulPrecision::kF32) {
      const float* rows = reinterpret_cast<const float*>(w.row(j0));
      if (w.type != simd::WeightType::kF32) {
        grow(g.widened, nb * w.n_in);
        weight_kernels(w.type).to_float(w.row(j0), nb * w.n_in, g.widened.data());
        rows = g.widened.data();
      }
      return g.gemm.run(x, m, rows, nb, w.n_in, y, nb);
    }
    const uint16_t* rows = reinterpret_cast<const uint16_t*>(w.row(j0));
    if (w.type != simd::WeightType::kBF16) {
      grow(g.w_bf16, nb * w.n_in);
      if (const auto round = weight_kernels(w.type).to_bf16)
        round(w.row(j0), nb * w.n_in, g.w_bf16.data());
      else
        weight_kernels(simd::WeightType::kBF16)
            .from_float(reinterpret_cast<const float*>(w.row(j0)), nb * w.n_in,
                        reinterpret_cast<uint8_t*>(g.w_bf16.data()));
      rows = g.w_bf16.data();
    }
    g.gemm.run_bf16(x_bf16.data(), m, rows, nb, w.n_in, y, nb);
  }

  // y_block [m][nb] into columns of y (row stride ldy): oneDNN 2.6 runs its brgemm kernels
  // (brg:avx512_core, brg:avx512_core_bf16) only for a dense y, and falls back to gemm:jit (f32,
  // slower) or an emulated bf16 for a block of columns written in place.
  static void copy_columns(const float* y_block, int64_t m, int64_t nb, float* y, int64_t ldy) {
    for (int64_t i = 0; i < m; ++i) std::copy_n(y_block + i * nb, nb, y + i * ldy);
  }

  // The block's columns of p.y: written by oneDNN straight into y when they are all of it, else
  // into the thread's y_block, then copied.
  void gemm(const float* x, int64_t m, std::span<const Product> group) {
    prepare(x, m, group);
    for_w_blocks(group, [&](const Product& p, int64_t j0, int64_t nb, ThreadGemm& g) {
      if (nb == p.w->n_out) return block_product(x, m, *p.w, j0, nb, g, p.y);
      grow(g.y_block, m * nb);
      block_product(x, m, *p.w, j0, nb, g, g.y_block.data());
      copy_columns(g.y_block.data(), m, nb, p.y + j0, p.w->n_out);
    });
  }

  // h = glu(x · gateᵀ, x · upᵀ), a block of columns per item: both products of the block, then
  // glu on them while they are in cache, and only h's columns written.
  void gemm_glu(const float* x, int64_t m, const WeightMatrix& gate, const WeightMatrix& up,
                simd::GluKernel glu, float* h) {
    const Product both[] = {{&gate, h}, {&up, nullptr}};
    prepare(x, m, both);
    for_w_blocks(std::span(both, 1), [&](const Product&, int64_t j0, int64_t nb, ThreadGemm& g) {
      float* y = h;
      if (nb != gate.n_out) {
        grow(g.y_block, m * nb);
        y = g.y_block.data();
      }
      grow(g.y_up, m * nb);
      block_product(x, m, gate, j0, nb, g, y);
      block_product(x, m, up, j0, nb, g, g.y_up.data());
      glu(y, g.y_up.data(), m * nb);
      if (y != h) copy_columns(y, m, nb, h + j0, gate.n_out);
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
  const Product p{&w, y};
  run(x, m, std::span(&p, 1));
}

void Matmul::run(const float* x, int64_t m, std::span<const Product> group) {
  KVRT_ASSERT(!group.empty() && group.size() <= kMaxGroup);
  for (const Product& p : group) KVRT_ASSERT(p.w->n_in == group[0].w->n_in);
  const bool decode = impl_->decode(m);
#if KVRT_HAVE_DNNL
  if (!decode) {
    impl_->gemm(x, m, group);
    impl_->gemm_name = impl_->dnnl_name();
    return;
  }
#endif
  const auto packed = [&](const Product& p) { return decode && impl_->packed.handles(*p.w); };
  if (std::all_of(group.begin(), group.end(), packed)) {
    impl_->packed.run(x, m, group);
    impl_->gemv_name = impl_->packed.name();
    return;
  }
  for (const Product& p : group) {
    if (packed(p)) {
      impl_->packed.run(x, m, std::span(&p, 1));
      impl_->gemv_name = impl_->packed.name();
      continue;
    }
    impl_->blocked.run(x, m, *p.w, p.y);
    if (decode) impl_->gemv_name = impl_->blocked.name();
  }
}

void Matmul::run_glu(const float* x, int64_t m, const WeightMatrix& gate, const WeightMatrix& up,
                     simd::GluKernel glu, float* gate_y, float* up_y) {
  KVRT_ASSERT(gate.n_in == up.n_in && gate.n_out == up.n_out);
#if KVRT_HAVE_DNNL
  if (!impl_->decode(m)) {
    impl_->gemm_glu(x, m, gate, up, glu, gate_y);
    impl_->gemm_name = impl_->dnnl_name();
    return;
  }
#endif
  const Product both[] = {{&gate, gate_y}, {&up, up_y}};
  run(x, m, both);
  ops::glu(glu, gate_y, up_y, m * gate.n_out, *impl_->pool);
}

size_t Matmul::scratch_bytes(int n_threads, MatmulPrecision precision, const MatmulPlan& plan) {
  size_t bytes = BlockedMatmul::scratch_floats(n_threads, plan.n_in_widened) * sizeof(float);
#if KVRT_HAVE_DNNL
  const size_t threads = size_t(std::max(1, n_threads));
  bytes += 2 * threads * size_t(plan.n_rows * kWidenRows) * sizeof(float);  // y_block, y_up
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
    bytes += (g.widened.size() + g.y_block.size() + g.y_up.size()) * sizeof(float) +
             g.w_bf16.size() * sizeof(uint16_t);
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
    Impl::grow(g.y_up, plan.n_rows * kWidenRows);
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
