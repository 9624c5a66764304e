// Model weights, loaded as the architecture's description says (model/tensors.h binds them):
// matrices are views into the mmap in their stored weight type (the matmul kernels widen or
// multiply their blocks a tile at a time); vectors (norms) are F32 views, or FP32 copies made once
// at load from other types. A tensor whose data is not aligned for its type (general.alignment
// smaller than the type's) is copied once into aligned memory instead. Immutable after load;
// shareable between sessions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "model/config.h"
#include "model/tensors.h"
#include "ops/matmul.h"

namespace kvrt::model {

struct LayerWeights {
  const float* attn_norm = nullptr;  // [d_model]; null: attention reads x itself (olmo2)
  ops::WeightMatrix wq;              // [n_heads * head_dim][d_model]
  ops::WeightMatrix wk;              // [n_kv_heads * head_dim][d_model]
  ops::WeightMatrix wv;              // [n_kv_heads * head_dim][d_model]
  const float* bq = nullptr;         // [n_heads * head_dim] added to Wq·x (qwen2); null: none
  const float* bk = nullptr;         // [n_kv_heads * head_dim]
  const float* bv = nullptr;         // [n_kv_heads * head_dim]
  // RMSNorm weights of Q and K (the architecture's QkNorm): [head_dim] per head, or the whole
  // width [n_heads * head_dim] / [n_kv_heads * head_dim]; null: none.
  const float* q_norm = nullptr;
  const float* k_norm = nullptr;
  ops::WeightMatrix wo;                   // [d_model][n_heads * head_dim]
  const float* post_attn_norm = nullptr;  // [d_model] on the attention output (gemma2); null: none
  const float* ffn_norm = nullptr;        // [d_model]; null: the FFN reads x itself (olmo2)
  ops::WeightMatrix w_gate;               // [d_ff][d_model]
  ops::WeightMatrix w_up;                 // [d_ff][d_model]
  ops::WeightMatrix w_down;               // [d_model][d_ff]
  const float* post_ffn_norm = nullptr;   // [d_model] on the FFN output (gemma2); null: none
};

class Weights {
 public:
  // Checks every tensor's presence, shape, type, alignment and values (NaN or infinity is an
  // error); errors name the file and the tensor.
  Weights(const io::GgufFile& file, const ModelConfig& config);

  ops::WeightMatrix token_embd;        // [n_vocab][d_model]
  const float* output_norm = nullptr;  // [d_model]
  ops::WeightMatrix output;            // [n_vocab][d_model] (token_embd when tied)
  const float* rope_freqs =
      nullptr;  // [rope_dim / 2] divisor of each RoPE pair's angle (Llama 3); null: none
  // LongRoPE's divisors (Phi-4-mini) [rope_dim / 2], for contexts up to and past
  // rope.scaling.original_context_length; null: none.
  const float* rope_factors_short = nullptr;
  const float* rope_factors_long = nullptr;
  // The divisors a session of n_ctx positions turns its RoPE pairs by (null: none).
  const float* rope_factors(int n_ctx, int orig_ctx) const;

  // out[d_model] = token_embd row `token`, widened to FP32; raw: row_bytes() of scratch, where a
  // row of an untied token_embd is read from the file (its pages stay out of memory).
  void embedding(int32_t token, float* out, void* raw) const;
  std::vector<LayerWeights> layers;  // [n_layers]

  size_t bytes_mapped() const { return bytes_mapped_; }  // used in place from the file
  size_t bytes_converted() const {
    return bytes_converted_;
  }  // FP32 copies and aligned copies owned here

 private:
  // t's data, copied if misaligned for its type (then the file's pages are released).
  const uint8_t* aligned_data(const io::GgufFile& file, const io::GgufTensor& t);
  const float* load_vector(const io::GgufFile& file, const io::GgufTensor& t);
  const float* load_rope_factors(const io::GgufFile& file,
                                 const io::GgufTensor* t);  // null t: null
  ops::WeightMatrix load_matrix(const io::GgufFile& file, const io::GgufTensor& t);
  void load_layer(const io::GgufFile& file, const ModelConfig& c, const RoleTensors& roles,
                  LayerWeights& l);

  std::vector<std::unique_ptr<float[]>> owned_;  // FP32 vectors and aligned copies
  const io::GgufFile* embd_file_ = nullptr;      // token_embd's rows read from it, not the map
  size_t bytes_mapped_ = 0;
  size_t bytes_converted_ = 0;
};

}  // namespace kvrt::model
