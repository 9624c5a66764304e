// The one file that talks to oneDNN (v2 API as in Debian 12's 2.6: matmul::desc, then
// primitive_desc). Primitives and memory objects are cached per shape, so steady-state
// calls only swap data handles and allocate nothing.
#include <dnnl.hpp>

#include <map>
#include <omp.h>
#include <string>
#include <tuple>

#include "common/error.h"
#include "ops/matmul.h"

namespace kvrt::ops {

namespace {
using dnnl::memory;
using Key = std::tuple<int64_t, int64_t, int64_t, int>;  // m, n_out, n_in, weight type

struct Cached {
  dnnl::matmul prim;
  memory src, wei, dst;
  std::string impl;
};
}  // namespace

struct Matmul::Impl {
  int n_threads;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<Key, Cached> cache;
  const char* last_impl = "none";

  Cached& get(int64_t m, const WeightMatrix& w) {
    Key key{m, w.n_out, w.n_in, int(w.type)};
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    if (w.type != WeightType::kF32)
      throw Error("oneDNN matmul: only FP32 weights are wired", ErrorKind::kInternal);
    const auto f32 = memory::data_type::f32;
    memory::desc src_md({m, w.n_in}, f32, memory::format_tag::ab);       // x [m][n_in]
    memory::desc wei_md({w.n_in, w.n_out}, f32, memory::format_tag::ba);  // Wᵀ, W is [n_out][n_in]
    memory::desc dst_md({m, w.n_out}, f32, memory::format_tag::ab);      // y [m][n_out]
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

Matmul::Matmul(int n_threads) : impl_(std::make_unique<Impl>()) { impl_->n_threads = n_threads; }
Matmul::~Matmul() = default;

void Matmul::run(const float* x, int64_t m, const WeightMatrix& w, float* y) {
  Cached& c = impl_->get(m, w);
  c.src.set_data_handle(const_cast<float*>(x));
  c.wei.set_data_handle(const_cast<void*>(w.data));
  c.dst.set_data_handle(y);
  omp_set_num_threads(impl_->n_threads);
  c.prim.execute(impl_->stream,
                 {{DNNL_ARG_SRC, c.src}, {DNNL_ARG_WEIGHTS, c.wei}, {DNNL_ARG_DST, c.dst}});
  impl_->stream.wait();
  impl_->last_impl = c.impl.c_str();
}

const char* Matmul::implementation() const { return impl_->last_impl; }

}  // namespace kvrt::ops
