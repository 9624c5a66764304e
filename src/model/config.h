// Hyper-parameters of a llama-architecture model, read from GGUF metadata.
#pragma once

#include <string>

#include "io/gguf.h"

namespace kvrt::model {

// How RoPE pairs the dimensions of a head.
enum class RopePairing {
  kInterleaved,  // (x[2i], x[2i+1]): GGUF llama models (weights permuted by the converter)
  kNeox,         // (x[i], x[i + rope_dim/2]): NeoX / GPT-J style
};

struct ModelConfig {
  std::string arch;   // "llama"
  std::string name;   // general.name, may be empty
  int n_layers = 0;
  int d_model = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int d_ff = 0;
  int n_vocab = 0;
  int n_ctx_train = 0;  // llama.context_length
  float rms_eps = 1e-5f;
  float rope_base = 10000.0f;
  int rope_dim = 0;     // leading dimensions of each head that RoPE rotates
  RopePairing rope_pairing = RopePairing::kInterleaved;
  bool tied_output = false;  // output matrix shared with token_embd

  // Reads and checks every field; a missing key or an inconsistent shape is a kvrt::Error.
  static ModelConfig from_gguf(const io::GgufFile& file);
};

const char* rope_pairing_name(RopePairing p);

}  // namespace kvrt::model
