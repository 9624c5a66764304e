// The chat formats kvrt renders, one row each, written as llama.cpp's llm_chat_apply_template
// renders them (llama-chat.cpp) so that prompts agree with llama.cpp token for token.
#include <array>

#include "model/chat_template_impl.h"

namespace kvrt::model::detail {
namespace {

using Messages = std::vector<ChatMessage>;

// Without ASCII whitespace at either end (llama.cpp's trim, Jinja's |trim on ASCII text).
std::string trim(std::string_view s) {
  auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return std::string(s);
}

void render_tagged(const ChatFormat& f, const Messages& messages, bool add_assistant, std::string& out) {
  const Tagged& t = f.tagged;
  for (const ChatMessage& m : messages) {
    out.append(t.header_open).append(m.role).append(t.header_close);
    out.append(t.trim ? trim(m.content) : m.content).append(t.message_close);
  }
  if (add_assistant) out.append(t.assistant_header);
}

// Llama 2: [INST] ... [/INST] around user turns, the system prompt in <<SYS>> inside the first.
struct Llama2Style {
  bool system_block;    // <<SYS>> ... <</SYS>>; otherwise the system text and a newline
  bool bos_in_history;  // later turns open with <s>[INST]
  bool strip;           // contents trimmed
};

void render_llama2(const Messages& messages, Llama2Style style, std::string& out) {
  bool inside_turn = true;  // the first [INST] is written before the loop
  out += "[INST] ";
  for (const ChatMessage& m : messages) {
    const std::string content = style.strip ? trim(m.content) : m.content;
    if (!inside_turn) {
      inside_turn = true;
      out += style.bos_in_history ? "<s>[INST] " : "[INST] ";
    }
    if (m.role == "system") {
      out += style.system_block ? "<<SYS>>\n" + content + "\n<</SYS>>\n\n" : content + "\n";
    } else if (m.role == "user") {
      out += content + " [/INST]";
    } else {
      out += content + "</s>";
      inside_turn = false;
    }
  }
}

template <Llama2Style kStyle>
void render_llama2_variant(const ChatFormat&, const Messages& messages, bool, std::string& out) {
  render_llama2(messages, kStyle, out);
}

// Mistral's v1, v3 and v3-tekken: spacing around [INST] differs.
struct MistralStyle {
  bool leading_space;   // " [INST]" and " [/INST]" (v1)
  bool trailing_space;  // "[INST] " and a space before the assistant's text (not tekken)
  bool trim_assistant;  // v3
};

template <MistralStyle kStyle>
void render_mistral(const ChatFormat&, const Messages& messages, bool, std::string& out) {
  const std::string leading = kStyle.leading_space ? " " : "";
  const std::string trailing = kStyle.trailing_space ? " " : "";
  bool inside_turn = false;
  for (const ChatMessage& m : messages) {
    if (!inside_turn) {
      out += leading + "[INST]" + trailing;
      inside_turn = true;
    }
    if (m.role == "system") {
      out += m.content + "\n\n";
    } else if (m.role == "user") {
      out += m.content + leading + "[/INST]";
    } else {
      out += trailing + (kStyle.trim_assistant ? trim(m.content) : m.content) + "</s>";
      inside_turn = false;
    }
  }
}

// Mistral v7: [SYSTEM_PROMPT] and [INST] blocks; the tekken variant has no space after the tags.
template <bool kSpaced>
void render_mistral_v7(const ChatFormat&, const Messages& messages, bool, std::string& out) {
  const std::string space = kSpaced ? " " : "";
  for (const ChatMessage& m : messages) {
    if (m.role == "system") {
      out += "[SYSTEM_PROMPT]" + space + m.content + "[/SYSTEM_PROMPT]";
    } else if (m.role == "user") {
      out += "[INST]" + space + m.content + "[/INST]";
    } else {
      out += space + m.content + "</s>";
    }
  }
}

// Gemma has no system role: the system text opens the next user turn; the assistant is "model".
void render_gemma(const ChatFormat&, const Messages& messages, bool add_assistant, std::string& out) {
  std::string system;
  for (const ChatMessage& m : messages) {
    if (m.role == "system") {
      system += trim(m.content);
      continue;
    }
    const std::string role = m.role == "assistant" ? "model" : m.role;
    out += "<start_of_turn>" + role + "\n";
    if (!system.empty() && role != "model") {
      out += system + "\n\n";
      system.clear();
    }
    out += trim(m.content) + "<end_of_turn>\n";
  }
  if (add_assistant) out += "<start_of_turn>model\n";
}

void render_deepseek3(const ChatFormat&, const Messages& messages, bool add_assistant, std::string& out) {
  for (const ChatMessage& m : messages) {
    if (m.role == "system") {
      out += m.content + "\n\n";
    } else if (m.role == "user") {
      out += "<｜User｜>" + m.content;
    } else {
      out += "<｜Assistant｜>" + m.content + "<｜end▁of▁sentence｜>";
    }
  }
  if (add_assistant) out += "<｜Assistant｜>";
}

const ChatFormat kFormats[] = {
    {"chatml", render_tagged, "<|im_end|>",
     {"<|im_start|>", "\n", "<|im_end|>\n", "<|im_start|>assistant\n"}},
    {"llama3", render_tagged, "<|eot_id|>",
     {"<|start_header_id|>", "<|end_header_id|>\n\n", "<|eot_id|>",
      "<|start_header_id|>assistant<|end_header_id|>\n\n", true}},
    {"llama2", render_llama2_variant<Llama2Style{false, false, false}>, "</s>", {}},
    {"llama2-sys", render_llama2_variant<Llama2Style{true, false, false}>, "</s>", {}},
    {"llama2-sys-bos", render_llama2_variant<Llama2Style{true, true, false}>, "</s>", {}},
    {"llama2-sys-strip", render_llama2_variant<Llama2Style{true, false, true}>, "</s>", {}},
    {"mistral-v1", render_mistral<MistralStyle{true, true, false}>, "</s>", {}},
    {"mistral-v3", render_mistral<MistralStyle{false, true, true}>, "</s>", {}},
    {"mistral-v3-tekken", render_mistral<MistralStyle{false, false, false}>, "</s>", {}},
    {"mistral-v7", render_mistral_v7<true>, "</s>", {}},
    {"mistral-v7-tekken", render_mistral_v7<false>, "</s>", {}},
    {"phi3", render_tagged, "<|end|>", {"<|", "|>\n", "<|end|>\n", "<|assistant|>\n"}},
    {"phi4", render_tagged, "<|im_end|>",
     {"<|im_start|>", "<|im_sep|>", "<|im_end|>", "<|im_start|>assistant<|im_sep|>"}},
    {"gemma", render_gemma, "<end_of_turn>", {}},
    {"zephyr", render_tagged, "<|endoftext|>",
     {"<|", "|>\n", "<|endoftext|>\n", "<|assistant|>\n"}},
    {"falcon3", render_tagged, "", {"<|", "|>\n", "\n", "<|assistant|>\n"}},
    {"glmedge", render_tagged, "", {"<|", "|>\n", "", "<|assistant|>"}},
    {"deepseek3", render_deepseek3, "<｜end▁of▁sentence｜>", {}},
};

}  // namespace

std::span<const ChatFormat> chat_formats() { return kFormats; }

const ChatFormat* find_chat_format(std::string_view name) {
  for (const ChatFormat& f : kFormats)
    if (f.name == name) return &f;
  return nullptr;
}

}  // namespace kvrt::model::detail
