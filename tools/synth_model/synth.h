// Builds a GGUF of any architecture kvrt runs (llama, qwen2, phi3, gemma2, qwen3, gemma3, smollm3,
// granite, olmo2, mistral3, and phi3 as Phi-4-mini's file has it) with random weights and
// a real tokenizer, for benchmarks and tests. The tensors are those of the architecture's
// description (model/architecture.h: the loader's own table), named and shaped as llama.cpp's
// converter writes them, and the metadata keys are the ones kvrt's loader and llama.cpp read. The
// weights are deterministic for a given seed and scaled so activations stay O(1). With
// `weights_dir` the weights come from raw f32 files instead: the export path of a trained model
// (models/canary).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "io/gguf.h"
#include "tools/synth_model/recipe.h"

namespace kvrt::synth {

struct SynthConfig {
  // general.architecture (a row of model/architecture.cc), or "phi4mini": phi3 with Phi-4-mini's
  // partial rotary, LongRoPE factors and attention factor. Each family's own metadata (RoPE base,
  // scales, YaRN, window pattern) is written with its real models' values.
  std::string arch = "llama";
  int d_model = 1024;
  int n_layers = 8;
  int n_heads = 16;
  int n_kv_heads = 4;
  int head_dim = 64;
  int d_ff = 2816;
  int n_ctx = 16384;  // <arch>.context_length
  int sliding_window =
      4096;  // <arch>.attention.sliding_window, where the architecture has one (Gemma 2's)
  simd::WeightType type =
      simd::WeightType::kF16;        // of every matrix (the bulk type of a mix); norms are F32
  WeightMix mix = WeightMix::kPure;  // kM: llama-quantize's _M recipe (recipe.h)
  // Writes every matrix as F32 holding the values its type (type and mix) decodes to: the same
  // model as the quantized file, in full precision, the reference its logits are checked against.
  bool decoded = false;
  std::string vocab_path;  // GGUF to copy tokenizer.* from; "" = default
  uint64_t seed = 1;
  bool tied =
      false;  // omit output.weight (shares token_embd); refused where the architecture requires it
  // "" = random weights. Else each tensor is read from weights_dir/<tensor name>.f32: raw
  // little-endian f32 in GGUF order (dims[0] fastest, so a torch Linear weight [n_out][n_in] as
  // it is in memory); Q and K rows in the RoPE order of the architecture (interleaved pairs for
  // llama, NeoX halves for the others).
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

// Sets the shape of a real model's layers (--shape): "gemma3-1b" (Gemma-3-1B: 26 layers, d_model
// 1152, 4 query heads and 1 KV head of 256, d_ff 6912, window 512) or "qwen3-0.6b" (Qwen3-0.6B: 28
// layers, d_model 1024, 16 and 8 heads of 128, d_ff 3072, tied). Error(kUsage) for another name.
void apply_shape(SynthConfig& config, std::string_view name);

// Checks the configuration, then streams the model to `out_path` one tensor at a time.
// Throws kvrt::Error on a bad configuration, an unreadable vocabulary or an I/O failure.
SynthSummary write_synth_model(const SynthConfig& config, const std::string& out_path);

}  // namespace kvrt::synth
