// The parts of the forward pass that compute each row (token) on its own: the embedding, the
// norms, the projections, the feed-forward block and the output head. Only attention reads the
// cache (Session::attend). So the same functions run a chunk of one session's tokens
// (Session::eval) and one token of each of several sessions stepped together (model/lockstep.h),
// and with a Matmul of MatmulRows::kEachAlone each row comes out as it would alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/model.h"
#include "ops/matmul.h"

namespace kvrt::model {

// The activations of up to `rows` rows.
struct Activations {
  Activations(const ModelConfig& c, int rows);
  static size_t floats(const ModelConfig& c, int rows);  // what the constructor allocates
  size_t bytes_allocated() const;

  int rows;
  std::vector<float> x;     // [rows][d_model] residual stream
  std::vector<float> xn;    // [rows][d_model] normalized; a block's output before it joins x
  std::vector<float> q;     // [rows][n_heads * head_dim]
  std::vector<float> k;     // [rows][n_kv_heads * head_dim]
  std::vector<float> v;     // [rows][n_kv_heads * head_dim]
  std::vector<float> attn;  // [rows][n_heads * head_dim] attention's output
  std::vector<float> gate;  // [rows][d_ff]
  std::vector<float> up;    // [rows][d_ff]
};

// The products of a forward pass over up to n_rows rows: the longest W row, and the longest one
// stored in a type other than F32 (for the scratch that widens it).
ops::MatmulPlan products_plan(const Model& m, int n_rows);

// x = the tokens' embeddings, scaled by the model's embedding scale.
void embed_rows(const Model& m, const int32_t* tokens, int n, Activations& a);
// xn = norm(x) (where the layer has a pre-norm); q, k, v = its projections (+ biases), Q and K
// normed where the layer says: a layer up to attention.
void qkv_rows(const Model& m, int layer, int n, ops::Matmul& mm, Activations& a);
// x += residual_scale · Wo · attn, post-normed where the layer says: the layer after attention.
void attention_out_rows(const Model& m, int layer, int n, ops::Matmul& mm, Activations& a);
// x += residual_scale · W_down · (act(W_gate · xn) ⊙ W_up · xn), xn = norm(x) (or x without a
// pre-norm), act = silu or tanh-GELU, post-normed where the layer says.
void ffn_rows(const Model& m, int layer, int n, ops::Matmul& mm, Activations& a);
// logits [n][n_vocab] of the n rows of x [n][d_model]: final norm into xn [n][d_model], output
// head, logit scale, soft-cap.
void logits_rows(const Model& m, const float* x, int n, ops::Matmul& mm, float* xn, float* logits);

}  // namespace kvrt::model
