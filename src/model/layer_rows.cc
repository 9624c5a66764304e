#include "model/layer_rows.h"

#include <algorithm>

#include "ops/transformer_ops.h"

namespace kvrt::model {

size_t Activations::floats(const ModelConfig& c, int rows) {
  const size_t q = size_t(c.n_heads) * c.head_dim, kv = size_t(c.n_kv_heads) * c.head_dim;
  return size_t(rows) * (2 * size_t(c.d_model) + 2 * q + 2 * kv + 2 * size_t(c.d_ff));
}

Activations::Activations(const ModelConfig& c, int rows)
    : rows(rows),
      x(size_t(rows) * c.d_model),
      xn(x.size()),
      q(size_t(rows) * c.n_heads * c.head_dim),
      k(size_t(rows) * c.n_kv_heads * c.head_dim),
      v(k.size()),
      attn(q.size()),
      gate(size_t(rows) * c.d_ff),
      up(gate.size()) {}

size_t Activations::bytes_allocated() const {
  return (x.size() + xn.size() + q.size() + k.size() + v.size() + attn.size() + gate.size() +
          up.size()) *
         sizeof(float);
}

namespace {

// x += residual_scale * norm(out) (post_norm null: out itself); out [n][d_model].
void residual(const ModelConfig& c, const float* post_norm, int n, ThreadPool& pool, float* out,
              float* x) {
  if (post_norm) ops::rms_norm(out, post_norm, n, c.d_model, c.rms_eps, out, pool);
  if (c.residual_scale != 1.0f) ops::scale(out, int64_t(n) * c.d_model, c.residual_scale);
  ops::add_inplace(x, out, int64_t(n) * c.d_model, pool);
}

// The input of a sublayer: xn = norm(x), or x itself where the layer has no pre-norm.
const float* sublayer_input(const ModelConfig& c, const float* norm, int n, ThreadPool& pool,
                            Activations& a) {
  if (!norm) return a.x.data();
  ops::rms_norm(a.x.data(), norm, n, c.d_model, c.rms_eps, a.xn.data(), pool);
  return a.xn.data();
}

// RMSNorm of n rows of Q or K [n][n_heads * head_dim] in place: each head, or the whole row.
void qk_norm(const ModelConfig& c, const float* w, int n, int n_heads, ThreadPool& pool, float* x) {
  if (c.architecture->qk_norm == QkNorm::kPerHead)
    ops::rms_norm(x, w, n * n_heads, c.head_dim, c.rms_eps, x, pool);
  else ops::rms_norm(x, w, n, n_heads * c.head_dim, c.rms_eps, x, pool);
}

// The kernel of the FFN's gated activation.
simd::GluKernel glu_kernel(Activation a) {
  switch (a) {
    case Activation::kSilu: return simd::kernels().swiglu;
    case Activation::kGeluTanh: break;
  }
  return simd::kernels().geglu;
}

}  // namespace

ops::MatmulPlan products_plan(const Model& m, int n_rows) {
  ops::MatmulPlan p;
  p.n_rows = n_rows;
  const auto take = [&](const ops::WeightMatrix& w) {
    p.n_in = std::max(p.n_in, w.n_in);
    if (w.type != simd::WeightType::kF32) p.n_in_widened = std::max(p.n_in_widened, w.n_in);
  };
  for (const LayerWeights& l : m.weights().layers)
    for (const ops::WeightMatrix* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
      take(*w);
  take(m.weights().output);
  return p;
}

void embed_rows(const Model& m, const int32_t* tokens, int n, Activations& a) {
  const ModelConfig& c = m.config();
  for (int t = 0; t < n; ++t)  // xn's row, free until the first norm, holds the raw row
    m.weights().embedding(tokens[t], &a.x[size_t(t) * c.d_model], &a.xn[size_t(t) * c.d_model]);
  ops::scale(a.x.data(), int64_t(n) * c.d_model, c.embedding_scale);
}

void qkv_rows(const Model& m, int layer, int n, ops::Matmul& mm, Activations& a) {
  const ModelConfig& c = m.config();
  const LayerWeights& lw = m.weights().layers[size_t(layer)];
  const float* in = sublayer_input(c, lw.attn_norm, n, mm.pool(), a);
  const ops::Product qkv[] = {{&lw.wq, a.q.data()}, {&lw.wk, a.k.data()}, {&lw.wv, a.v.data()}};
  mm.run(in, n, qkv);
  const float* bias[] = {lw.bq, lw.bk, lw.bv};
  for (size_t i = 0; i < 3; ++i)
    if (bias[i]) ops::add_bias(qkv[i].y, bias[i], n, int(qkv[i].w->n_out));
  if (lw.q_norm) qk_norm(c, lw.q_norm, n, c.n_heads, mm.pool(), a.q.data());
  if (lw.k_norm) qk_norm(c, lw.k_norm, n, c.n_kv_heads, mm.pool(), a.k.data());
}

void attention_out_rows(const Model& m, int layer, int n, ops::Matmul& mm, Activations& a) {
  const LayerWeights& lw = m.weights().layers[size_t(layer)];
  mm.run(a.attn.data(), n, lw.wo, a.xn.data());
  residual(m.config(), lw.post_attn_norm, n, mm.pool(), a.xn.data(), a.x.data());
}

void ffn_rows(const Model& m, int layer, int n, ops::Matmul& mm, Activations& a) {
  const ModelConfig& c = m.config();
  const LayerWeights& lw = m.weights().layers[size_t(layer)];
  const float* in = sublayer_input(c, lw.ffn_norm, n, mm.pool(), a);
  mm.run_glu(in, n, lw.w_gate, lw.w_up, glu_kernel(c.architecture->activation), a.gate.data(),
             a.up.data());
  mm.run(a.gate.data(), n, lw.w_down, a.xn.data());
  residual(c, lw.post_ffn_norm, n, mm.pool(), a.xn.data(), a.x.data());
}

void logits_rows(const Model& m, const float* x, int n, ops::Matmul& mm, float* xn, float* logits) {
  const ModelConfig& c = m.config();
  ops::rms_norm(x, m.weights().output_norm, n, c.d_model, c.rms_eps, xn, mm.pool());
  mm.run(xn, n, m.weights().output, logits);
  if (c.logit_scale != 1.0f) ops::scale(logits, int64_t(n) * c.n_vocab, 1.0f / c.logit_scale);
  if (c.final_softcap > 0.0f) ops::softcap(logits, int64_t(n) * c.n_vocab, c.final_softcap);
}

}  // namespace kvrt::model
