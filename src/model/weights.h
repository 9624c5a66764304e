// Model weights: matrices are views into the mmap in their stored weight type (the matmul kernels
// widen or multiply their blocks a tile at a time); vectors (norms) are F32 views, or FP32 copies
// made once at load from other types. Immutable after load; shareable between sessions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "model/config.h"
#include "ops/matmul.h"

namespace kvrt::model {

struct LayerWeights {
  const float* attn_norm = nullptr;  // [d_model]
  ops::WeightMatrix wq;              // [n_heads * head_dim][d_model]
  ops::WeightMatrix wk;              // [n_kv_heads * head_dim][d_model]
  ops::WeightMatrix wv;              // [n_kv_heads * head_dim][d_model]
  ops::WeightMatrix wo;              // [d_model][n_heads * head_dim]
  const float* ffn_norm = nullptr;   // [d_model]
  ops::WeightMatrix w_gate;          // [d_ff][d_model]
  ops::WeightMatrix w_up;            // [d_ff][d_model]
  ops::WeightMatrix w_down;          // [d_model][d_ff]
};

class Weights {
 public:
  // Checks every tensor's presence, shape and type; errors name the tensor.
  Weights(const io::GgufFile& file, const ModelConfig& config);

  ops::WeightMatrix token_embd;       // [n_vocab][d_model]
  const float* output_norm = nullptr; // [d_model]
  ops::WeightMatrix output;           // [n_vocab][d_model] (token_embd when tied)

  // out[d_model] = token_embd row `token`, widened to FP32.
  void embedding(int32_t token, float* out) const;
  std::vector<LayerWeights> layers;   // [n_layers]

  size_t bytes_mapped() const { return bytes_mapped_; }     // used in place from the file
  size_t bytes_converted() const { return bytes_converted_; }  // FP32 copies owned here

 private:
  // FP32 view of a tensor: in place for F32, else a copy owned here.
  const float* to_f32(const io::GgufFile& file, const io::GgufTensor& t);
  const float* load(const io::GgufFile& file, const std::string& name,
                    const std::vector<int64_t>& dims);
  ops::WeightMatrix load_matrix(const io::GgufFile& file, const std::string& name,
                                int64_t n_out, int64_t n_in);

  std::vector<std::unique_ptr<float[]>> owned_;
  size_t bytes_mapped_ = 0;
  size_t bytes_converted_ = 0;
};

}  // namespace kvrt::model
