#include "tools/synth_model/chat_model.h"

#include <algorithm>
#include <span>

#include "common/error.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "text/chat_template.h"

namespace kvrt::synth {
namespace {

// A format's control tokens and the Jinja template of a real model that uses it.
struct ChatSpec {
  std::string_view format;
  std::vector<std::string_view> tokens;
  std::string_view jinja;
};

const ChatSpec kSpecs[] = {
    {"chatml",
     {"<|im_start|>", "<|im_end|>"},
     "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] "
     "+ "
     "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
     "'<|im_start|>assistant\\n' }}"
     "{% endif %}"},
    {"llama3",
     {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"},
     "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
     "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | "
     "trim + "
     "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
     "{{ content }}{% endfor %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"},
    {"gemma",
     {"<start_of_turn>", "<end_of_turn>"},
     "{% for message in messages %}{% if (message['role'] == 'assistant') %}{% set role = 'model' "
     "%}"
     "{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\\n' + "
     "message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}"
     "{{'<start_of_turn>model\\n'}}{% endif %}"},
    {"phi3",
     {"<|system|>", "<|user|>", "<|assistant|>", "<|end|>"},
     "{{ bos_token }}{% for message in messages %}{{'<|' + message['role'] + '|>' + '\\n' + "
     "message['content'] + '<|end|>\\n' }}{% endfor %}{% if add_generation_prompt %}"
     "{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}{% endif %}"},
    // The newer families: the parts of their real templates (../shared/templates) that name them.
    {"qwen3",
     {"<|im_start|>", "<|im_end|>"},
     "{%- for message in messages %}{%- if message.role == 'assistant' and '</think>' in "
     "message.content %}"
     "{%- set content = message.content.split('</think>')[-1].lstrip('\\n') %}{%- endif %}"
     "{%- if reasoning_content %}{{- '<think>\\n' + reasoning_content.strip('\\n') + "
     "'\\n</think>\\n\\n' }}{%- endif %}"
     "{{- '<|im_start|>' + message.role + '\\n' + content + '<|im_end|>' + '\\n' }}{%- endfor %}"
     "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- if enable_thinking is "
     "defined and "
     "enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}"},
    {"smollm3",
     {"<|im_start|>", "<|im_end|>"},
     "{{- \"<|im_start|>system\\n\" -}}{{- \"## Metadata\\n\\n\" -}}{{- \"Knowledge Cutoff Date: "
     "June 2025\\n\" -}}"
     "{{- \"Reasoning Mode: \" + reasoning_mode + \"\\n\\n\" -}}{%- for message in messages -%}"
     "{{ \"<|im_start|>\" + message.role + \"\\n\" + content + \"<|im_end|>\\n\" }}{%- endfor -%}"},
    {"granite",
     {"<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>"},
     "{%- for message in messages %}{{- '<|start_of_role|>' + message['role'] + '<|end_of_role|>' "
     "+ "
     "message['content'] + '<|end_of_text|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}"
     "{{- '<|start_of_role|>assistant<|end_of_role|>' }}{%- endif %}"},
    {"mistral-v7-tekken",
     {"[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[INST]", "[/INST]"},
     "{{- bos_token }}{%- if messages[0]['role'] == 'system' %}{{- '[SYSTEM_PROMPT]' + "
     "messages[0]['content'] + "
     "'[/SYSTEM_PROMPT]' }}{%- endif %}{%- for message in loop_messages %}{%- if message['role'] "
     "== 'user' %}"
     "{{- '[INST]' + message['content'] + '[/INST]' }}{%- else %}{{- message['content'] + "
     "eos_token }}"
     "{%- endif %}{%- endfor %}"},
    {"phi4-mini",
     {"<|system|>", "<|user|>", "<|assistant|>", "<|end|>"},
     "{% for message in messages %}{{ '<|' + message['role'] + '|>' + message['content'] + "
     "'<|end|>' }}"
     "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% "
     "endif %}"},
};

constexpr int32_t kTypeControl = 3;  // tokenizer.ggml.token_type

const ChatSpec& spec_of(std::string_view format) {
  for (const ChatSpec& s : kSpecs)
    if (s.format == format) return s;
  std::string known;
  for (std::string_view f : chat_model_formats())
    known += (known.empty() ? "" : ", ") + std::string(f);
  throw Error("no chat model recipe for format '" + std::string(format) + "' (use " + known + ")",
              ErrorKind::kUsage);
}

int32_t require_token(const io::GgufFile& base, const std::vector<std::string_view>& tokens,
                      std::string_view text) {
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] == text) return int32_t(i);
  base.fail("the vocabulary has no token '" + std::string(text) + "', which the chat model copies");
}

// Rows of the embedding and output matrices for the new tokens, by the rule in chat_model.h.
struct RowPlan {
  std::vector<int32_t> embed_src, output_src;  // [n_new] row copied from
  std::vector<float> output_scale;             // [n_new]
  int32_t base_eot =
      -1;             // a base token that ends turns (Mistral's </s>): its output row is replaced
  int32_t stop = -1;  // the full stop, whose output row ends turns
};

RowPlan plan_rows(const io::GgufFile& base, const std::vector<std::string_view>& tokens,
                  const ChatSpec& spec) {
  const std::string_view eot = model::ChatTemplate::from_name(spec.format).end_of_turn();
  const int32_t stop = require_token(base, tokens, "."),
                newline = require_token(base, tokens, "<0x0A>");
  const int32_t unk = int32_t(base.get_uint_or("tokenizer.ggml.unknown_token_id", 0));
  RowPlan p;
  p.stop = stop;
  if (std::find(spec.tokens.begin(), spec.tokens.end(), eot) == spec.tokens.end())
    p.base_eot = require_token(base, tokens, eot);
  for (std::string_view t : spec.tokens) {
    const bool is_eot = t == eot;
    p.embed_src.push_back(is_eot ? stop : newline);
    p.output_src.push_back(is_eot ? stop : unk);
    p.output_scale.push_back(is_eot ? 1.25f : 1.0f);
  }
  return p;
}

std::span<const float> f32_data(const io::GgufTensor& t, const io::GgufFile& base) {
  if (t.type != simd::WeightType::kF32)
    base.fail("tensor '" + t.name + "' is " + simd::weight_type_name(t.type) +
              "; the chat model is made from an all-F32 model");
  return {reinterpret_cast<const float*>(t.data), size_t(t.n_elements)};
}

// [d_model][n_vocab] matrix with one row per new token appended.
std::vector<float> extend_rows(std::span<const float> m, int64_t d, const std::vector<int32_t>& src,
                               const std::vector<float>& scale) {
  std::vector<float> out(m.begin(), m.end());
  for (size_t i = 0; i < src.size(); ++i)
    for (int64_t j = 0; j < d; ++j) out.push_back(scale[i] * m[size_t(src[i] * d + j)]);
  return out;
}

// The output matrix's rows for the new tokens, and the base end-of-turn token's row made the
// full stop's scaled as a new end-of-turn token's would be.
std::vector<float> output_rows(std::span<const float> m, int64_t d, const RowPlan& rows) {
  std::vector<float> out = extend_rows(m, d, rows.output_src, rows.output_scale);
  if (rows.base_eot >= 0)
    for (int64_t j = 0; j < d; ++j)
      out[size_t(rows.base_eot * d + j)] = 1.25f * m[size_t(rows.stop * d + j)];
  return out;
}

void add_metadata(io::GgufWriter& w, const io::GgufFile& base, const ChatSpec& spec,
                  int64_t n_vocab) {
  static const std::string_view kReplaced[] = {"tokenizer.ggml.tokens",
                                               "tokenizer.ggml.scores",
                                               "tokenizer.ggml.token_type",
                                               "tokenizer.chat_template",
                                               "llama.vocab_size",
                                               "general.alignment",
                                               "general.name"};
  for (const auto& [key, value] : base.metadata())
    if (std::find(std::begin(kReplaced), std::end(kReplaced), key) == std::end(kReplaced))
      w.add_value(key, value);
  if (const io::GgufValue* a = base.find("general.alignment")) w.set_alignment(uint32_t(a->u));
  if (base.find("llama.vocab_size")) w.add_u32("llama.vocab_size", uint32_t(n_vocab));
  w.add_string("general.name", std::string(base.get_string_or("general.name", "model")) + "-chat-" +
                                   std::string(spec.format));
  w.add_string("tokenizer.chat_template", spec.jinja);
}

void add_vocabulary(io::GgufWriter& w, const io::GgufFile& base, const ChatSpec& spec) {
  std::vector<std::string> tokens;
  for (std::string_view t : base.get_string_array("tokenizer.ggml.tokens")) tokens.emplace_back(t);
  std::vector<float> scores = base.get_float_array("tokenizer.ggml.scores");
  std::vector<int32_t> types = base.get_int_array("tokenizer.ggml.token_type");
  for (std::string_view t : spec.tokens) {
    tokens.emplace_back(t);
    scores.push_back(0.0f);
    types.push_back(kTypeControl);
  }
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  w.add_f32_array("tokenizer.ggml.scores", scores);
  w.add_i32_array("tokenizer.ggml.token_type", types);
}

}  // namespace

std::vector<std::string_view> chat_model_formats() {
  std::vector<std::string_view> out;
  for (const ChatSpec& s : kSpecs) out.push_back(s.format);
  return out;
}

void write_chat_model(const ChatModelConfig& config, const std::string& out_path) {
  const ChatSpec& spec = spec_of(config.format);
  const io::GgufFile base(config.base_path);
  const std::vector<std::string_view> tokens = base.get_string_array("tokenizer.ggml.tokens");
  for (std::string_view t : spec.tokens)
    for (std::string_view have : tokens)
      if (have == t) base.fail("the vocabulary already has the token '" + std::string(t) + "'");
  const RowPlan rows = plan_rows(base, tokens, spec);
  const bool tied = base.find_tensor("output.weight") == nullptr;
  const int64_t n_vocab = int64_t(tokens.size() + spec.tokens.size());
  io::GgufWriter w;
  add_metadata(w, base, spec, n_vocab);
  add_vocabulary(w, base, spec);
  for (const io::GgufTensor& t : base.tensors()) {
    const std::span<const float> data = f32_data(t, base);
    const bool embed = t.name == "token_embd.weight", output = t.name == "output.weight";
    if (!embed && !output) {
      w.add_tensor(t.name, t.dims, simd::WeightType::kF32, data);
      continue;
    }
    const int64_t d = t.dims[0];
    const bool is_output = output || tied;  // a tied embedding is the output matrix too
    const std::vector<float> m =
        is_output
            ? output_rows(data, d, rows)
            : extend_rows(data, d, rows.embed_src, std::vector<float>(rows.embed_src.size(), 1.0f));
    w.add_tensor(t.name, {d, n_vocab}, simd::WeightType::kF32, m);
  }
  w.write(out_path);
}

}  // namespace kvrt::synth
