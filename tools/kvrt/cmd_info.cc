// kvrt info: what a model file holds and what this machine will run it with.
#include <cstdio>
#include <map>
#include <string>

#include "command_line.h"
#include "common/data_dir.h"
#include "common/error.h"
#include "common/resident_memory.h"
#include "commands.h"
#include "kv_report.h"
#include "model/model.h"
#include "model_options.h"
#include "ops/matmul.h"
#include "simd/cpu_features.h"
#include "simd/dispatch.h"

namespace kvrt::cli {
namespace {

void print_tensors(const io::GgufFile& f, bool all) {
  std::map<std::string, int> by_type;
  for (const auto& t : f.tensors()) ++by_type[simd::weight_type_name(t.type)];
  std::printf("tensors:        %zu (", f.tensors().size());
  const char* sep = "";
  for (const auto& [type, n] : by_type) {
    std::printf("%s%d %s", sep, n, type.c_str());
    sep = ", ";
  }
  std::printf(")\n");
  if (!all) return;
  for (const auto& t : f.tensors()) {
    std::printf("  %-28s %-5s [", t.name.c_str(), simd::weight_type_name(t.type));
    for (size_t d = 0; d < t.dims.size(); ++d)
      std::printf("%s%lld", d ? ", " : "", (long long)t.dims[d]);
    std::printf("]\n");
  }
}

// kvrt's data directory (validation data, default model), or why it was not found.
std::string data_dir_or_reason() {
  try {
    return data_dir();
  } catch (const Error& e) {
    return std::string("none (") + e.what() + ")";
  }
}

// The dispatch decision: the rung, what the CPU offers, and which rung filled each kernel slot.
void print_dispatch() {
  std::string rungs;
  for (simd::Isa isa : simd::runnable_isas())
    rungs += (rungs.empty() ? "" : ", ") + std::string(simd::isa_to_string(isa));
  std::printf("ISA:            %s (this CPU runs %s; KVRT_ISA chooses)\n", simd::isa_name(),
              rungs.c_str());
  std::printf("CPU features:   %s\n", simd::cpu_features_string(simd::cpu_features()).c_str());
  const char* label = "kernels:        ";
  for (const std::string& line : simd::describe_slots(simd::process_isa())) {
    std::string out;  // wrapped at about 100 columns
    size_t col = 0;
    for (size_t at = 0; at < line.size();) {
      size_t end = line.find(' ', at + 1);
      if (end == std::string::npos) end = line.size();
      if (col > 0 && col + (end - at) > 84) {
        out += "\n                  ";
        col = 2;
        ++at;  // the space
      }
      out += line.substr(at, end - at);
      col += end - at;
      at = end;
    }
    std::printf("%s%s\n", label, out.c_str());
    label = "                ";
  }
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

// What the architecture's row and the file add to a plain llama block, in one line.
std::string features(const model::Model& m) {
  const model::ModelConfig& c = m.config();
  const model::Architecture& a = *c.architecture;
  const model::LayerWeights& l = m.weights().layers.front();
  std::string f = a.activation == model::Activation::kSilu ? "SwiGLU" : "GeGLU (tanh GELU)";
  const auto add = [&f](const std::string& s) { f += ", " + s; };
  for (const model::TensorDesc& t : a.layer_tensors) {
    if (t.role == model::TensorRole::kAttnQkv) add("fused QKV");
    if (t.role == model::TensorRole::kFfnGateUp) add("fused gate/up");
  }
  if (l.bq) add("Q/K/V biases");
  if (m.weights().rope_freqs) add("RoPE frequency factors");
  if (m.weights().rope_factors_short)
    add("LongRoPE factors (long past " + std::to_string(c.rope.orig_ctx) + " positions)");
  if (c.rope.scaling == ops::RopeScaling::kLinear)
    add("linear RoPE scaling x" + num(c.rope.factor));
  if (c.rope.scaling == ops::RopeScaling::kYarn)
    add("YaRN RoPE scaling x" + num(c.rope.factor) + " from " + std::to_string(c.rope.orig_ctx) +
        " positions");
  if (c.rope.attn_factor != 1.0f) add("RoPE attention factor " + num(c.rope.attn_factor));
  if (c.rope_dim < c.head_dim)
    add("partial rotary (" + std::to_string(c.rope_dim) + " of " + std::to_string(c.head_dim) +
        " dims)");
  if (a.nope_period > 0) add("no RoPE on every " + std::to_string(a.nope_period) + "th layer");
  if (a.qk_norm == model::QkNorm::kPerHead) add("per-head Q/K norms");
  if (a.qk_norm == model::QkNorm::kFullWidth) add("full-width Q/K norms");
  if (!l.attn_norm) add("no pre-norms");
  if (a.scales.attention) add("attention scale " + num(c.query_scale));
  if (c.residual_scale != 1.0f) add("residual scale " + num(c.residual_scale));
  if (c.logit_scale != 1.0f) add("logits / " + num(c.logit_scale));
  if (c.attn_temp_scale > 0.0f)
    add("attention temperature " + num(c.attn_temp_scale) + " per " +
        std::to_string(c.attn_temp_floor) + " positions");
  if (c.embedding_scale != 1.0f) add("embeddings x " + num(c.embedding_scale));
  if (c.attn_softcap > 0.0f) add("attention soft-cap " + num(c.attn_softcap));
  if (c.final_softcap > 0.0f) add("final soft-cap " + num(c.final_softcap));
  if (l.post_attn_norm) add("post-attention and post-FFN norms");
  if (c.sliding_window > 0)
    add("sliding window " + std::to_string(c.sliding_window) +
        (a.window_layers == model::WindowLayers::kAll ? " on every layer"
         : c.window_period == 2                       ? " on even layers"
                                : " on " + std::to_string(c.window_period - 1) + " of every " +
                                      std::to_string(c.window_period) + " layers"));
  if (c.has_window_rope) add("windowed layers' RoPE base " + num(c.rope_window.base));
  if (c.head_dim * c.n_heads != c.d_model)
    add("attention width " + std::to_string(c.head_dim * c.n_heads) + " != d_model");
  return f;
}

}  // namespace

int cmd_info(int argc, char** argv) {
  ModelOptions mo;
  bool list_tensors = false;
  CommandLine cl(
      "kvrt info [-m MODEL] [--tensors]",
      "Prints the model's architecture, shapes, tensor types, tokenizer and context\n"
      "length, the SIMD instruction set kvrt selected on this machine, the matrix-product\n"
      "backends and kvrt's data directory.");
  mo.add_to(cl, false);
  cl.add_flag("--tensors", "list every tensor with its type and shape", &list_tensors);
  if (!cl.parse(argc, argv)) return kExitOk;

  auto model = mo.load();
  const model::ModelConfig& c = model->config();
  const model::Tokenizer& tok = model->tokenizer();
  std::printf("file:           %s (%llu bytes, GGUF v%u)\n", model->file().path().c_str(),
              (unsigned long long)model->file().file_size(), model->file().version());
  std::printf("name:           %s\n", c.name.empty() ? "(none)" : c.name.c_str());
  std::printf("architecture:   %s\n", c.arch.c_str());
  std::printf("layers:         %d\n", c.n_layers);
  std::printf("d_model:        %d\n", c.d_model);
  std::printf("heads:          %d query, %d key/value (head_dim %d)\n", c.n_heads, c.n_kv_heads,
              c.head_dim);
  std::printf("d_ff:           %d\n", c.d_ff);
  std::printf("vocabulary:     %d\n", c.n_vocab);
  std::printf("context length: %d\n", c.n_ctx_train);
  std::printf("rms epsilon:    %g\n", double(c.rms_eps));
  std::printf("rope:           base %g, %d dims, %s pairs\n", double(c.rope.base), c.rope_dim,
              model::rope_pairing_name(c.rope_pairing));
  std::printf("output matrix:  %s\n", c.tied_output ? "tied to token_embd" : "separate");
  std::printf("features:       %s\n", features(*model).c_str());
  const model::SessionOptions defaults;  // f32 KV at the model's context, run's default chunk
  const kv::CacheShape shape = model::Session::cache_shape(*model, defaults);
  const kv::CacheLayout layout = kv::plan_cache(defaults.kv, shape);
  std::printf("KV cache (f32): %s\n", layer_kinds(layout).c_str());
  if (!shape.windows.empty()) {
    kv::CacheShape every_position = shape;
    every_position.windows.clear();
    std::printf(
        "KV memory:      %.1f MiB at %d positions; a cache keeping every position on every layer: "
        "%.1f MiB\n",
        double(layout.bytes()) / (1 << 20), shape.n_ctx,
        double(kv::plan_cache(defaults.kv, every_position).bytes()) / (1 << 20));
  }
  print_tensors(model->file(), list_tensors);
  std::printf(
      "weights:        %zu bytes mapped in place, %zu bytes converted to FP32 or copied aligned\n",
      model->weights().bytes_mapped(), model->weights().bytes_converted());
  if (const auto rss = resident_bytes())
    std::printf(
        "resident:       %.1f MiB after loading (file %.1f MiB; a session adds its KV cache and "
        "scratch)\n",
        double(*rss) / (1024.0 * 1024.0), double(model->file().file_size()) / (1024.0 * 1024.0));
  std::printf("tokenizer:      %s (pre-tokenizer %s%s), BOS %d, EOS %d\n",
              std::string(tok.model_name()).c_str(), std::string(tok.pre_name()).c_str(),
              tok.pre_tokenizer_supported() ? "" : ", NOT SUPPORTED", tok.bos_id(), tok.eos_id());
  print_dispatch();
  std::printf("matmul:         %s\n", ops::matmul_backends().c_str());
  std::string bf16 = "available (--matmul bf16)";
  try {
    ops::require_matmul_precision(ops::MatmulPrecision::kBf16);
  } catch (const Error& e) {
    bf16 = e.what();
  }
  std::printf("matmul bf16:    %s\n", bf16.c_str());
  std::printf("data dir:       %s\n", data_dir_or_reason().c_str());
  return kExitOk;
}

}  // namespace kvrt::cli
