// The one file that talks to oneDNN (v2 API as in Debian 12's 2.6: matmul::desc, then
// primitive_desc). Primitives and memory objects are cached per shape and type, so steady-state
// calls only swap data handles.
#include "ops/matmul_dnnl.h"

#include <dnnl.hpp>
#include <omp.h>

#include <map>
#include <string>
#include <tuple>

#include "common/error.h"

namespace kvrt::ops {
namespace {

using dnnl::memory;
using Key = std::tuple<int64_t, int64_t, int64_t, int64_t,
                       memory::data_type>;  // m, n, k, ldy, x and w type

struct Cached {
  dnnl::matmul prim;
  memory src, wei, dst;
  std::string impl;
};

// oneDNN built with OpenMP runs a primitive on omp_get_max_threads() threads, read at execute
// time: set it for the call and give the caller's setting back afterwards.
class OmpThreadsScope {
 public:
  explicit OmpThreadsScope(int n_threads) : saved_(omp_get_max_threads()) {
    omp_set_num_threads(n_threads);
  }
  ~OmpThreadsScope() { omp_set_num_threads(saved_); }

 private:
  int saved_;
};

// x [m][k] and wᵀ (w is [n][k]) in `type`, y [m][ldy] in f32.
dnnl::matmul::primitive_desc make_pd(const dnnl::engine& engine, const Key& key) {
  const auto [m, n, k, ldy, type] = key;
  const memory::desc src_md({m, k}, type, memory::format_tag::ab);
  const memory::desc wei_md({k, n}, type, memory::format_tag::ba);
  const memory::desc dst_md({m, n}, memory::data_type::f32, memory::dims{ldy, 1});
  try {
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, wei_md, dst_md), engine);
  } catch (const dnnl::error& e) {
    throw Error(std::string("oneDNN could not create a matmul primitive: ") + e.what(),
                ErrorKind::kInternal);
  }
}

// oneDNN's kernels that run bf16 with the CPU's own instructions name their ISA so
// ("brg:avx512_core_bf16", "brg:avx512_core_amx"); "gemm:jit" or "ref" emulate it.
bool native_bf16(const std::string& impl) {
  return impl.find("bf16") != std::string::npos || impl.find("amx") != std::string::npos;
}

}  // namespace

struct DnnlGemm::Impl {
  int n_threads;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<Key, Cached> cache;
  const char* last_impl = "none";

  Cached& get(const Key& key) {
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    const dnnl::matmul::primitive_desc pd = make_pd(engine, key);
    const std::string impl = pd.impl_info_str();
    if (std::get<4>(key) == memory::data_type::bf16 && !native_bf16(impl))
      throw Error("matmul bf16: oneDNN offers no native bf16 kernel for a " +
                      std::to_string(std::get<0>(key)) + "x" + std::to_string(std::get<2>(key)) +
                      " by " + std::to_string(std::get<1>(key)) +
                      " product on this CPU (it picked " + impl + ", which emulates bf16)",
                  ErrorKind::kUsage);
    Cached c{dnnl::matmul(pd), memory(pd.src_desc(), engine, nullptr),
             memory(pd.weights_desc(), engine, nullptr), memory(pd.dst_desc(), engine, nullptr),
             impl};
    return cache.emplace(key, std::move(c)).first->second;
  }

  void execute(const Key& key, const void* x, const void* w, float* y) {
    Cached& c = get(key);
    c.src.set_data_handle(const_cast<void*>(x));
    c.wei.set_data_handle(const_cast<void*>(w));
    c.dst.set_data_handle(y);
    const OmpThreadsScope threads(n_threads);
    c.prim.execute(stream,
                   {{DNNL_ARG_SRC, c.src}, {DNNL_ARG_WEIGHTS, c.wei}, {DNNL_ARG_DST, c.dst}});
    stream.wait();
    last_impl = c.impl.c_str();
  }
};

DnnlGemm::DnnlGemm(int n_threads) : impl_(std::make_unique<Impl>()) {
  impl_->n_threads = n_threads;
}
DnnlGemm::~DnnlGemm() = default;

void DnnlGemm::run(const float* x, int64_t m, const float* w, int64_t n, int64_t k, float* y,
                   int64_t ldy) {
  impl_->execute({m, n, k, ldy, memory::data_type::f32}, x, w, y);
}

void DnnlGemm::run_bf16(const uint16_t* x, int64_t m, const uint16_t* w, int64_t n, int64_t k,
                        float* y, int64_t ldy) {
  impl_->execute({m, n, k, ldy, memory::data_type::bf16}, x, w, y);
}

const char* DnnlGemm::implementation() const { return impl_->last_impl; }

std::string dnnl_library_name() {
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch);
}

DnnlBf16Kernel dnnl_bf16_kernel() {
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  try {
    const std::string impl =
        make_pd(engine, {64, 64, 64, 64, memory::data_type::bf16}).impl_info_str();
    return {impl, native_bf16(impl)};
  } catch (const Error&) {
    return {"none (no bf16 matmul in this oneDNN build or on this CPU)", false};
  }
}

}  // namespace kvrt::ops
