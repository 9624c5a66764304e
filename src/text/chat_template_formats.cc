// The chat formats kvrt renders, one row each, written as llama.cpp's llm_chat_apply_template
// renders them (llama-chat.cpp) so that prompts agree with llama.cpp token for token; the formats
// llama.cpp does not render itself (phi4-mini, qwen3, smollm3) as their models'
// Jinja templates render them. Message contents go through add_content, markup straight to
// out.text.
#include <array>

#include "text/chat_template_impl.h"

namespace kvrt::model::detail {

std::string_view trim(std::string_view s) {
  auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

std::string_view lstrip(std::string_view s, std::string_view chars) {
  const size_t i = s.find_first_not_of(chars);
  return i == s.npos ? std::string_view() : s.substr(i);
}

std::string_view rstrip(std::string_view s, std::string_view chars) {
  const size_t i = s.find_last_not_of(chars);
  return i == s.npos ? std::string_view() : s.substr(0, i + 1);
}

namespace {

void render_tagged(const ChatFormat& f, const Messages& messages, bool add_assistant,
                   ChatText& out) {
  const Tagged& t = f.tagged;
  for (const ChatMessage& m : messages) {
    out.text.append(t.header_open).append(m.role).append(t.header_close);
    add_content(out, t.trim ? trim(m.content) : std::string_view(m.content));
    out.text.append(t.message_close);
  }
  if (add_assistant) out.text.append(t.assistant_header);
}

// Llama 2: [INST] ... [/INST] around user turns, the system prompt in <<SYS>> inside the first.
struct Llama2Style {
  bool system_block;    // <<SYS>> ... <</SYS>>; otherwise the system text and a newline
  bool bos_in_history;  // later turns open with <s>[INST]
  bool strip;           // contents trimmed
};

void render_llama2(const Messages& messages, Llama2Style style, ChatText& out) {
  bool inside_turn = true;  // the first [INST] is written before the loop
  out.text += "[INST] ";
  for (const ChatMessage& m : messages) {
    const std::string_view content = style.strip ? trim(m.content) : std::string_view(m.content);
    if (!inside_turn) {
      inside_turn = true;
      out.text += style.bos_in_history ? "<s>[INST] " : "[INST] ";
    }
    if (m.role == "system") {
      if (style.system_block) out.text += "<<SYS>>\n";
      add_content(out, content);
      out.text += style.system_block ? "\n<</SYS>>\n\n" : "\n";
    } else if (m.role == "user") {
      add_content(out, content);
      out.text += " [/INST]";
    } else {
      add_content(out, content);
      out.text += "</s>";
      inside_turn = false;
    }
  }
}

template <Llama2Style kStyle>
void render_llama2_variant(const ChatFormat&, const Messages& messages, bool, ChatText& out) {
  render_llama2(messages, kStyle, out);
}

// Mistral's v1, v3 and v3-tekken: spacing around [INST] differs.
struct MistralStyle {
  bool leading_space;   // " [INST]" and " [/INST]" (v1)
  bool trailing_space;  // "[INST] " and a space before the assistant's text (not tekken)
  bool trim_assistant;  // v3
};

template <MistralStyle kStyle>
void render_mistral(const ChatFormat&, const Messages& messages, bool, ChatText& out) {
  const std::string_view leading = kStyle.leading_space ? " " : "";
  const std::string_view trailing = kStyle.trailing_space ? " " : "";
  bool inside_turn = false;
  for (const ChatMessage& m : messages) {
    if (!inside_turn) {
      out.text.append(leading).append("[INST]").append(trailing);
      inside_turn = true;
    }
    if (m.role == "system") {
      add_content(out, m.content);
      out.text += "\n\n";
    } else if (m.role == "user") {
      add_content(out, m.content);
      out.text.append(leading).append("[/INST]");
    } else {
      out.text += trailing;
      add_content(out, kStyle.trim_assistant ? trim(m.content) : std::string_view(m.content));
      out.text += "</s>";
      inside_turn = false;
    }
  }
}

// Mistral v7: [SYSTEM_PROMPT] and [INST] blocks; the tekken variant (Mistral Small 3.1 and 3.2,
// Ministral 3) has no space after the tags.
template <bool kSpaced>
void render_mistral_v7(const ChatFormat&, const Messages& messages, bool, ChatText& out) {
  const std::string_view space = kSpaced ? " " : "";
  for (const ChatMessage& m : messages) {
    const bool system = m.role == "system", user = m.role == "user";
    if (system) out.text += "[SYSTEM_PROMPT]";
    if (user) out.text += "[INST]";
    out.text += space;
    add_content(out, m.content);
    out.text += system ? "[/SYSTEM_PROMPT]" : user ? "[/INST]" : "</s>";
  }
}

// Gemma has no system role: the system text opens the next user turn; the assistant is "model".
void render_gemma(const ChatFormat&, const Messages& messages, bool add_assistant, ChatText& out) {
  std::vector<std::string_view> system;  // system texts waiting for the next user turn
  for (const ChatMessage& m : messages) {
    if (m.role == "system") {
      system.push_back(trim(m.content));
      continue;
    }
    const bool model = m.role == "assistant";
    out.text.append("<start_of_turn>").append(model ? "model" : m.role).append("\n");
    if (!system.empty() && !model) {
      for (std::string_view s : system) add_content(out, s);
      out.text += "\n\n";
      system.clear();
    }
    add_content(out, trim(m.content));
    out.text += "<end_of_turn>\n";
  }
  if (add_assistant) out.text += "<start_of_turn>model\n";
}

void render_deepseek3(const ChatFormat&, const Messages& messages, bool add_assistant,
                      ChatText& out) {
  for (const ChatMessage& m : messages) {
    if (m.role == "user") out.text += "<｜User｜>";
    if (m.role == "assistant") out.text += "<｜Assistant｜>";
    add_content(out, m.content);
    if (m.role == "system") out.text += "\n\n";
    if (m.role == "assistant") out.text += "<｜end▁of▁sentence｜>";
  }
  if (add_assistant) out.text += "<｜Assistant｜>";
}

const ChatFormat kFormats[] = {
    {"chatml",
     render_tagged,
     "<|im_end|>",
     {"<|im_start|>", "\n", "<|im_end|>\n", "<|im_start|>assistant\n"}},
    {"qwen3", render_qwen3, "<|im_end|>", {}, "it drops the thinking of earlier replies"},
    {"smollm3", render_smollm3, "<|im_end|>"},
    {"llama3",
     render_tagged,
     "<|eot_id|>",
     {"<|start_header_id|>", "<|end_header_id|>\n\n", "<|eot_id|>",
      "<|start_header_id|>assistant<|end_header_id|>\n\n", true}},
    {"llama2", render_llama2_variant<Llama2Style{false, false, false}>, "</s>"},
    {"llama2-sys", render_llama2_variant<Llama2Style{true, false, false}>, "</s>"},
    {"llama2-sys-bos", render_llama2_variant<Llama2Style{true, true, false}>, "</s>"},
    {"llama2-sys-strip", render_llama2_variant<Llama2Style{true, false, true}>, "</s>"},
    {"mistral-v1", render_mistral<MistralStyle{true, true, false}>, "</s>"},
    {"mistral-v3", render_mistral<MistralStyle{false, true, true}>, "</s>"},
    {"mistral-v3-tekken", render_mistral<MistralStyle{false, false, false}>, "</s>"},
    {"mistral-v7", render_mistral_v7<true>, "</s>"},
    {"mistral-v7-tekken", render_mistral_v7<false>, "</s>"},
    {"phi3", render_tagged, "<|end|>", {"<|", "|>\n", "<|end|>\n", "<|assistant|>\n"}},
    {"phi4-mini", render_tagged, "<|end|>", {"<|", "|>", "<|end|>", "<|assistant|>"}},
    {"phi4",
     render_tagged,
     "<|im_end|>",
     {"<|im_start|>", "<|im_sep|>", "<|im_end|>", "<|im_start|>assistant<|im_sep|>"}},
    {"gemma", render_gemma, "<end_of_turn>"},
    {"granite",
     render_tagged,
     "<|end_of_text|>",
     {"<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>\n",
      "<|start_of_role|>assistant<|end_of_role|>"}},
    {"zephyr",
     render_tagged,
     "<|endoftext|>",
     {"<|", "|>\n", "<|endoftext|>\n", "<|assistant|>\n"}},
    {"falcon3", render_tagged, "", {"<|", "|>\n", "\n", "<|assistant|>\n"}},
    {"glmedge", render_tagged, "", {"<|", "|>\n", "", "<|assistant|>"}},
    {"deepseek3", render_deepseek3, "<｜end▁of▁sentence｜>"},
};

}  // namespace

std::span<const ChatFormat> chat_formats() { return kFormats; }

const ChatFormat* find_chat_format(std::string_view name) {
  for (const ChatFormat& f : kFormats)
    if (f.name == name) return &f;
  return nullptr;
}

}  // namespace kvrt::model::detail
