// Hyper-parameters of a model, read from GGUF metadata under the keys of its architecture's
// description (model/architecture.h).
#pragma once

#include <string>

#include "io/gguf.h"
#include "model/architecture.h"

namespace kvrt::model {

struct ModelConfig {
  const Architecture* architecture = nullptr;  // the row of general.architecture
  std::string arch;   // its name, e.g. "llama"
  std::string name;   // general.name, may be empty
  int n_layers = 0;
  int d_model = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int d_ff = 0;
  int n_vocab = 0;
  int n_ctx_train = 0;  // <arch>.context_length
  float rms_eps = 1e-5f;
  float rope_base = 10000.0f;
  int rope_dim = 0;     // leading dimensions of each head that RoPE rotates
  RopePairing rope_pairing = RopePairing::kInterleaved;  // the architecture's
  bool tied_output = false;  // output matrix shared with token_embd
  float attn_softcap = 0.0f;   // attention logit soft-cap (0: none), where the architecture has one
  float final_softcap = 0.0f;  // final logit soft-cap (0: none)
  int sliding_window = 0;      // positions a windowed layer attends to (0: no window)
  float embedding_scale = 1.0f;  // x = token_embd[token] * embedding_scale
  float query_scale = 0.0f;      // multiplies the queries (the architecture's QueryScale)

  // The window of a layer: sliding_window where the architecture's window_layers include it, else 0.
  int window_of(int layer) const;

  // Reads and checks every field; a missing key or an inconsistent shape is a kvrt::Error.
  static ModelConfig from_gguf(const io::GgufFile& file);
};

}  // namespace kvrt::model
