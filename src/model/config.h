// Hyper-parameters of a model, read from GGUF metadata under the keys of its architecture's
// description (model/architecture.h).
#pragma once

#include <string>

#include "io/gguf.h"
#include "model/architecture.h"
#include "ops/transformer_ops.h"

namespace kvrt::model {

struct ModelConfig {
  const Architecture* architecture = nullptr;  // the row of general.architecture
  std::string arch;                            // its name, e.g. "llama"
  std::string name;                            // general.name, may be empty
  int n_layers = 0;
  int d_model = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int d_ff = 0;
  int n_vocab = 0;
  int n_ctx_train = 0;  // <arch>.context_length
  float rms_eps = 1e-5f;
  ops::RopeParams rope;         // every layer's RoPE, but windowed ones with rope_window
  ops::RopeParams rope_window;  // the windowed layers' (Gemma 3), when has_window_rope
  bool has_window_rope = false;
  int rope_dim = 0;  // leading dimensions of each head that RoPE rotates
  RopePairing rope_pairing = RopePairing::kInterleaved;  // the architecture's
  bool tied_output = false;                              // output matrix shared with token_embd
  float attn_softcap = 0.0f;   // attention logit soft-cap (0: none), where the architecture has one
  float final_softcap = 0.0f;  // final logit soft-cap (0: none)
  int sliding_window = 0;      // positions a windowed layer attends to (0: no window)
  int window_period = 0;       // WindowLayers::kPattern's period
  float embedding_scale = 1.0f;  // x = token_embd[token] * embedding_scale
  float query_scale = 0.0f;  // multiplies the queries (the architecture's QueryScale or scale key)
  float residual_scale = 1.0f;  // x += residual_scale * sublayer output
  float logit_scale = 1.0f;     // logits / logit_scale
  // Attention temperature (Llama 4 scaling, Ministral 3): the queries at position pos are
  // multiplied by 1 + attn_temp_scale * ln(floor(pos / attn_temp_floor) + 1); 0: none.
  float attn_temp_scale = 0.0f;
  int attn_temp_floor = 0;

  // The window of a layer: sliding_window where the architecture's window_layers include it, else
  // 0.
  int window_of(int layer) const;
  // Whether layer applies RoPE to its queries and keys (SmolLM3 leaves every fourth out).
  bool rope_at(int layer) const;
  // The RoPE of a layer: rope_window for windowed layers where the architecture has one, else rope.
  bool uses_window_rope(int layer) const { return has_window_rope && window_of(layer) > 0; }

  // Reads and checks every field; a missing key or an inconsistent shape is a kvrt::Error.
  static ModelConfig from_gguf(const io::GgufFile& file);
};

}  // namespace kvrt::model
