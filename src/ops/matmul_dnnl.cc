// The one file that talks to oneDNN (v2 API as in Debian 12's 2.6: matmul::desc, then
// primitive_desc). Primitives and memory objects are cached per shape, so steady-state calls
// only swap data handles.
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
using Key = std::tuple<int64_t, int64_t, int64_t, int64_t>;  // m, n, k, ldy

struct Cached {
  dnnl::matmul prim;
  memory src, wei, dst;
  std::string impl;
};

// oneDNN built with OpenMP runs a primitive on omp_get_max_threads() threads, read at execute
// time: set it for the call and give the caller's setting back afterwards.
class OmpThreadsScope {
 public:
  explicit OmpThreadsScope(int n_threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(n_threads); }
  ~OmpThreadsScope() { omp_set_num_threads(saved_); }

 private:
  int saved_;
};

}  // namespace

struct DnnlGemm::Impl {
  int n_threads;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<Key, Cached> cache;
  const char* last_impl = "none";

  Cached& get(int64_t m, int64_t n, int64_t k, int64_t ldy) {
    const Key key{m, n, k, ldy};
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    const auto f32 = memory::data_type::f32;
    const memory::desc src_md({m, k}, f32, memory::format_tag::ab);  // x [m][k]
    const memory::desc wei_md({k, n}, f32, memory::format_tag::ba);  // wᵀ, w is [n][k]
    const memory::desc dst_md({m, n}, f32, memory::dims{ldy, 1});    // y [m][ldy]
    try {
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, wei_md, dst_md), engine);
      Cached c{dnnl::matmul(pd), memory(src_md, engine, nullptr), memory(wei_md, engine, nullptr),
               memory(dst_md, engine, nullptr), pd.impl_info_str()};
      return cache.emplace(key, std::move(c)).first->second;
    } catch (const dnnl::error& e) {
      throw Error(std::string("oneDNN could not create a matmul primitive: ") + e.what(),
                  ErrorKind::kInternal);
    }
  }
};

DnnlGemm::DnnlGemm(int n_threads) : impl_(std::make_unique<Impl>()) { impl_->n_threads = n_threads; }
DnnlGemm::~DnnlGemm() = default;

void DnnlGemm::run(const float* x, int64_t m, const float* w, int64_t n, int64_t k, float* y,
                   int64_t ldy) {
  Cached& c = impl_->get(m, n, k, ldy);
  c.src.set_data_handle(const_cast<float*>(x));
  c.wei.set_data_handle(const_cast<float*>(w));
  c.dst.set_data_handle(y);
  const OmpThreadsScope threads(impl_->n_threads);
  c.prim.execute(impl_->stream,
                 {{DNNL_ARG_SRC, c.src}, {DNNL_ARG_WEIGHTS, c.wei}, {DNNL_ARG_DST, c.dst}});
  impl_->stream.wait();
  impl_->last_impl = c.impl.c_str();
}

const char* DnnlGemm::implementation() const { return impl_->last_impl; }

std::string dnnl_library_name() {
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

}  // namespace kvrt::ops
