// Builds a llama-architecture GGUF with random weights and a real tokenizer, for benchmarks and
// tests. Metadata keys, tensor names and shapes follow llama.cpp's converter; the weights are
// deterministic for a given seed and scaled so activations stay O(1). With `weights_dir` the
// weights come from raw f32 files instead: the export path of a trained model (tools/canary).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "io/gguf.h"
#include "tools/synth_model/recipe.h"

namespace kvrt::synth {

struct SynthConfig {
  int d_model = 1024;
  int n_layers = 8;
  int n_heads = 16;
  int n_kv_heads = 4;
  int head_dim = 64;
  int d_ff = 2816;
  int n_ctx = 16384;                           // llama.context_length
  simd::WeightType type = simd::WeightType::kF16;  // of every matrix (the bulk type of a mix); norms are F32
  WeightMix mix = WeightMix::kPure;                // kM: llama-quantize's _M recipe (recipe.h)
  std::string vocab_path;                      // GGUF to copy tokenizer.* from; "" = default
  uint64_t seed = 1;
  bool tied = false;  // omit output.weight (shares token_embd)
  // "" = random weights. Else each tensor is read from weights_dir/<tensor name>.f32: raw
  // little-endian f32 in GGUF order (dims[0] fastest, so a torch Linear weight [n_out][n_in] as
  // it is in memory); Q and K rows in the interleaved-pair RoPE order kvrt's llama uses.
  std::string weights_dir;
  std::string name;  // general.name; "" = a name made from the shape
};

struct SynthSummary {
  int64_t n_vocab = 0;
  int64_t n_params = 0;
  uint64_t n_bytes = 0;  // size of the written file
};

// The source tree's tests/data/vocab/ggml-vocab-llama-spm.gguf (a 32000-token llama SPM
// vocabulary); synth_model is a build-tree tool for tests and benchmarks, never installed.
std::string default_vocab_path();

// Checks the configuration, then streams the model to `out_path` one tensor at a time.
// Throws kvrt::Error on a bad configuration, an unreadable vocabulary or an I/O failure.
SynthSummary write_synth_model(const SynthConfig& config, const std::string& out_path);

}  // namespace kvrt::synth
