// synth_model: writes a GGUF of any architecture kvrt runs, with random weights (see synth.h), or a
// chat model made from a small trained one (see chat_model.h).
#include <charconv>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

#include "common/error.h"
#include "tools/synth_model/chat_model.h"
#include "tools/synth_model/synth.h"

namespace {

constexpr const char* kUsage =
    "usage: synth_model -o OUT.gguf [--arch llama] [--d-model 1024] [--n-layers 8]\n"
    "                   [--n-heads 16] [--n-kv-heads 4] [--head-dim 64] [--d-ff 2816]\n"
    "                   [--ctx 16384] [--sliding-window 4096] [--type TYPE] [--decoded]\n"
    "                   [--vocab-from FILE.gguf] [--seed S] [--tied] [--weights-from DIR]\n"
    "                   [--name NAME] [--shape gemma3-1b|qwen3-0.6b]\n"
    "Writes a GGUF of --arch (llama, qwen2, phi3, gemma2, qwen3, gemma3, smollm3, granite,\n"
    "olmo2, mistral3, or phi4mini: phi3 as Phi-4-mini's file has it; the tensors and metadata\n"
    "kvrt's loader and llama.cpp read, each family's own keys with its real models' values;\n"
    "--sliding-window for phi3, gemma2 and gemma3) with random weights (or,\n"
    "with --weights-from, each tensor from the raw little-endian f32 file DIR/<tensor name>.f32)\n"
    "and the tokenizer of --vocab-from (default: the source tree's\n"
    "tests/data/vocab/ggml-vocab-llama-spm.gguf). TYPE (default f16): f32, f16, bf16, q8_0,\n"
    "q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl (every matrix of that type),\n"
    "or q3_k_m, q4_k_m, q5_k_m (llama-quantize's mixes: Q6_K output, more bits in some attn_v /\n"
    "ffn_down layers and phi3's attn_qkv). Row lengths must be whole blocks (32, or 256 for K).\n"
    "--decoded writes every matrix as F32 holding the values TYPE decodes to: the same model as\n"
    "the TYPE file, in full precision. --shape sets the arch and layer shape of a real model\n"
    "(Gemma-3-1B, Qwen3-0.6B); flags after it change single fields.\n"
    "\n"
    "       synth_model -o OUT.gguf --chat-from BASE.gguf [--chat-format FORMAT]\n"
    "Writes a chat model made from a small trained F32 llama such as models/stories260K.gguf:\n"
    "the format's control tokens and Jinja template added (tools/synth_model/chat_model.h).\n"
    "FORMAT: chatml (default), llama3, gemma, phi3, qwen3, smollm3, granite, mistral-v7-tekken, "
    "phi4-mini.\n";

template <typename T>
T parse_number(std::string_view flag, std::string_view text) {
  T v{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size())
    throw kvrt::Error(
        std::string(flag) + " needs a non-negative integer, got '" + std::string(text) + "'",
        kvrt::ErrorKind::kUsage);
  return v;
}

struct Args {
  kvrt::synth::SynthConfig config;
  kvrt::synth::ChatModelConfig chat;  // used when chat.base_path is set
  std::string out_path;
  bool help = false;
};

// Flags that set an int field of the configuration.
constexpr std::pair<std::string_view, int kvrt::synth::SynthConfig::*> kIntFlags[] = {
    {"--d-model", &kvrt::synth::SynthConfig::d_model},
    {"--n-layers", &kvrt::synth::SynthConfig::n_layers},
    {"--n-heads", &kvrt::synth::SynthConfig::n_heads},
    {"--n-kv-heads", &kvrt::synth::SynthConfig::n_kv_heads},
    {"--head-dim", &kvrt::synth::SynthConfig::head_dim},
    {"--d-ff", &kvrt::synth::SynthConfig::d_ff},
    {"--ctx", &kvrt::synth::SynthConfig::n_ctx},
    {"--sliding-window", &kvrt::synth::SynthConfig::sliding_window},
};

// Applies one flag that takes a value; false if `flag` is not such a flag.
bool apply_valued(Args& a, std::string_view flag, std::string_view v) {
  for (const auto& [name, field] : kIntFlags) {
    if (flag == name) {
      a.config.*field = parse_number<int>(flag, v);
      return true;
    }
  }
  if (flag == "-o") {
    a.out_path = std::string(v);
  } else if (flag == "--type") {
    const kvrt::synth::WeightChoice w = kvrt::synth::parse_weight_choice(v);
    a.config.type = w.type;
    a.config.mix = w.mix;
  } else if (flag == "--arch") {
    a.config.arch = std::string(v);
  } else if (flag == "--shape") {
    kvrt::synth::apply_shape(a.config, v);
  } else if (flag == "--vocab-from") {
    a.config.vocab_path = std::string(v);
  } else if (flag == "--chat-from") {
    a.chat.base_path = std::string(v);
  } else if (flag == "--chat-format") {
    a.chat.format = std::string(v);
  } else if (flag == "--weights-from") {
    a.config.weights_dir = std::string(v);
  } else if (flag == "--name") {
    a.config.name = std::string(v);
  } else if (flag == "--seed") {
    a.config.seed = parse_number<uint64_t>(flag, v);
  } else {
    return false;
  }
  return true;
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      a.help = true;
    } else if (flag == "--tied") {
      a.config.tied = true;
    } else if (flag == "--decoded") {
      a.config.decoded = true;
    } else if (i + 1 < argc && apply_valued(a, flag, argv[i + 1])) {
      ++i;
    } else {
      throw kvrt::Error("unknown flag or missing value: '" + std::string(flag) + "'",
                        kvrt::ErrorKind::kUsage);
    }
  }
  if (!a.help && a.out_path.empty())
    throw kvrt::Error("no output file given (-o OUT.gguf)", kvrt::ErrorKind::kUsage);
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parse_args(argc, argv);
    if (a.help) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (!a.chat.base_path.empty()) {
      kvrt::synth::write_chat_model(a.chat, a.out_path);
      std::printf("synth_model: wrote %s: %s with a %s chat template\n", a.out_path.c_str(),
                  a.chat.base_path.c_str(), a.chat.format.c_str());
      return 0;
    }
    const kvrt::synth::SynthSummary s = kvrt::synth::write_synth_model(a.config, a.out_path);
    std::printf("synth_model: wrote %s: %lld params, vocab %lld, %.1f MiB\n", a.out_path.c_str(),
                static_cast<long long>(s.n_params), static_cast<long long>(s.n_vocab),
                double(s.n_bytes) / (1024.0 * 1024.0));
    return 0;
  } catch (const kvrt::Error& e) {
    std::fprintf(stderr, "synth_model: %s\n", e.what());
    if (e.kind() == kvrt::ErrorKind::kUsage) std::fputs(kUsage, stderr);
    return e.kind() == kvrt::ErrorKind::kUsage ? 2 : 1;
  }
}
