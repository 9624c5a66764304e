// The chat formats kvrt renders, one row each, written as llama.cpp's llm_chat_apply_template
// renders them (llama-chat.cpp) so that prompts agree with llama.cpp token for token; the formats
// llama.cpp does not render itself (phi4-mini, qwen2.5, qwen3, qwen3.5, smollm3, lfm2, gemma4,
// granite-4.0, llama3.1, ministral-3-reasoning) as their models' Jinja templates render them.
// Message contents go through add_content, markup straight to out.text.
#include <array>

#include "text/chat_template_impl.h"

namespace kvrt::model::detail {
namespace {

// UTF-8 of the characters Python's str.isspace() accepts above ASCII: U+0085, U+00A0, U+1680,
// U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000. Each starts with a lead byte, so a
// match at either end of UTF-8 text is a whole character.
constexpr std::string_view kWideSpaces[] = {
    "\xC2\x85",     "\xC2\xA0",     "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x81",
    "\xE2\x80\x82", "\xE2\x80\x83", "\xE2\x80\x84", "\xE2\x80\x85", "\xE2\x80\x86",
    "\xE2\x80\x87", "\xE2\x80\x88", "\xE2\x80\x89", "\xE2\x80\x8A", "\xE2\x80\xA8",
    "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80",
};

// ASCII whitespace as Python sees it: \t \n \v \f \r, U+001C..U+001F and the space.
bool ascii_space(char c) { return (c >= '\t' && c <= '\r') || (c >= '\x1C' && c <= ' '); }

size_t space_at_front(std::string_view s) {
  if (s.empty()) return 0;
  if (ascii_space(s.front())) return 1;
  for (std::string_view w : kWideSpaces)
    if (s.starts_with(w)) return w.size();
  return 0;
}

size_t space_at_back(std::string_view s) {
  if (s.empty()) return 0;
  if (ascii_space(s.back())) return 1;
  for (std::string_view w : kWideSpaces)
    if (s.ends_with(w)) return w.size();
  return 0;
}

}  // namespace

std::string_view trim(std::string_view s) {
  while (const size_t n = space_at_front(s)) s.remove_prefix(n);
  return rstrip_space(s);
}

std::string_view rstrip_space(std::string_view s) {
  while (const size_t n = space_at_back(s)) s.remove_suffix(n);
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

bool needs_default_system(const ChatFormat& f, const Messages& messages) {
  if (f.default_system.text.empty()) return false;
  if (messages.empty() || messages[0].role != "system") return true;
  return f.default_system.replaces_empty && messages[0].content.empty();
}

namespace {

void render_tagged(const ChatFormat& f, const Messages& messages, const ChatOptions&,
                   bool add_assistant, ChatText& out) {
  const Tagged& t = f.tagged;
  size_t first = 0;
  if (needs_default_system(f, messages)) {
    out.text.append(t.header_open).append("system").append(t.header_close);
    out.text.append(f.default_system.text).append(t.message_close);
    first = messages.empty() || messages[0].role != "system" ? 0 : 1;  // an empty one is replaced
  }
  for (size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    out.text.append(t.header_open).append(m.role).append(t.header_close);
    add_content(out, t.trim ? trim(m.content) : std::string_view(m.content));
    out.text.append(t.message_close);
  }
  if (add_assistant) out.text.append(t.assistant_header);
}

// Phi-3.5 writes a system message only when it has text.
void render_phi3(const ChatFormat& f, const Messages& messages, const ChatOptions& options,
                 bool add_assistant, ChatText& out) {
  Messages kept;
  for (const ChatMessage& m : messages)
    if (m.role != "system" || !m.content.empty()) kept.push_back(m);
  render_tagged(f, kept, options, add_assistant, out);
}

// Llama 3.1 to 3.3: every conversation opens with a system turn that names the knowledge cutoff
// and the date, then the system message (trimmed). The template prints today's date when the
// engine gives it one (strftime_now) and 26 Jul 2024 otherwise; kvrt always renders the latter,
// so that a conversation renders the same on every day.
void render_llama31(const ChatFormat& f, const Messages& messages, const ChatOptions& options,
                    bool add_assistant, ChatText& out) {
  const bool has_system = !messages.empty() && messages[0].role == "system";
  out.text +=
      "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
      "Today Date: 26 Jul 2024\n\n";
  if (has_system) add_content(out, trim(messages[0].content));
  out.text += "<|eot_id|>";
  render_tagged(f, Messages(messages.begin() + (has_system ? 1 : 0), messages.end()), options,
                add_assistant, out);
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
void render_llama2_variant(const ChatFormat&, const Messages& messages, const ChatOptions&, bool,
                           ChatText& out) {
  render_llama2(messages, kStyle, out);
}

// Mistral's v1, v3 and v3-tekken: spacing around [INST] differs.
struct MistralStyle {
  bool leading_space;   // " [INST]" and " [/INST]" (v1)
  bool trailing_space;  // "[INST] " and a space before the assistant's text (not tekken)
  bool trim_assistant;  // v3
};

template <MistralStyle kStyle>
void render_mistral(const ChatFormat&, const Messages& messages, const ChatOptions&, bool,
                    ChatText& out) {
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
void render_mistral_v7(const ChatFormat& f, const Messages& messages, const ChatOptions&, bool,
                       ChatText& out) {
  const std::string_view space = kSpaced ? " " : "";
  if (needs_default_system(f, messages))
    out.text.append("[SYSTEM_PROMPT]").append(f.default_system.text).append("[/SYSTEM_PROMPT]");
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
void render_gemma(const ChatFormat&, const Messages& messages, const ChatOptions&,
                  bool add_assistant, ChatText& out) {
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

void render_deepseek3(const ChatFormat&, const Messages& messages, const ChatOptions&,
                      bool add_assistant, ChatText& out) {
  for (const ChatMessage& m : messages) {
    if (m.role == "user") out.text += "<｜User｜>";
    if (m.role == "assistant") out.text += "<｜Assistant｜>";
    add_content(out, m.content);
    if (m.role == "system") out.text += "\n\n";
    if (m.role == "assistant") out.text += "<｜end▁of▁sentence｜>";
  }
  if (add_assistant) out.text += "<｜Assistant｜>";
}

constexpr Tagged kChatml = {"<|im_start|>", "\n", "<|im_end|>\n", "<|im_start|>assistant\n"};
constexpr Tagged kLlama3 = {"<|start_header_id|>", "<|end_header_id|>\n\n", "<|eot_id|>",
                            "<|start_header_id|>assistant<|end_header_id|>\n\n", true};
constexpr Tagged kGranite = {"<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>\n",
                             "<|start_of_role|>assistant<|end_of_role|>"};

// Ministral 3 Reasoning's default system message: how it writes its [THINK] block.
constexpr std::string_view kMinistralReasoningSystem =
    "# HOW YOU SHOULD THINK AND ANSWER\n\nFirst draft your thinking process (inner monologue) "
    "until you arrive at a response. Format your response using Markdown, and use LaTeX for any "
    "mathematical equations. Write both your thoughts and the response in the same language as "
    "the input.\n\nYour thinking process must follow the template below:[THINK]Your thoughts "
    "or/and draft, like working through an exercise on scratch paper. Be as casual and as long "
    "as you want until you are confident to generate the response to the user.[/THINK]Here, "
    "provide a self-contained response.";

constexpr std::string_view kThinkingNote = "it drops the thinking of earlier replies";

const ChatFormat kFormats[] = {
    {"chatml", render_tagged, "<|im_end|>", kChatml},
    {"qwen2.5",
     render_tagged,
     "<|im_end|>",
     kChatml,
     {},
     {"You are Qwen, created by Alibaba Cloud. You are a helpful assistant."}},
    {"qwen3", render_qwen3, "<|im_end|>", {}, kThinkingNote},
    {"qwen3.5", render_qwen35, "<|im_end|>", {}, kThinkingNote},
    {"smollm3", render_smollm3, "<|im_end|>"},
    {"lfm2", render_lfm2, "<|im_end|>", {}, kThinkingNote},
    {"llama3", render_tagged, "<|eot_id|>", kLlama3},
    {"llama3.1", render_llama31, "<|eot_id|>", kLlama3},
    {"llama2", render_llama2_variant<Llama2Style{false, false, false}>, "</s>"},
    {"llama2-sys", render_llama2_variant<Llama2Style{true, false, false}>, "</s>"},
    {"llama2-sys-bos", render_llama2_variant<Llama2Style{true, true, false}>, "</s>"},
    {"llama2-sys-strip", render_llama2_variant<Llama2Style{true, false, true}>, "</s>"},
    {"mistral-v1", render_mistral<MistralStyle{true, true, false}>, "</s>"},
    {"mistral-v3", render_mistral<MistralStyle{false, true, true}>, "</s>"},
    {"mistral-v3-tekken", render_mistral<MistralStyle{false, false, false}>, "</s>"},
    {"mistral-v7", render_mistral_v7<true>, "</s>"},
    {"mistral-v7-tekken", render_mistral_v7<false>, "</s>"},
    {"ministral-3-reasoning",
     render_mistral_v7<false>,
     "</s>",
     {},
     {},
     {kMinistralReasoningSystem}},
    {"phi3", render_phi3, "<|end|>", {"<|", "|>\n", "<|end|>\n", "<|assistant|>\n"}},
    {"phi4-mini", render_tagged, "<|end|>", {"<|", "|>", "<|end|>", "<|assistant|>"}},
    {"phi4",
     render_tagged,
     "<|im_end|>",
     {"<|im_start|>", "<|im_sep|>", "<|im_end|>", "<|im_start|>assistant<|im_sep|>"}},
    {"gemma", render_gemma, "<end_of_turn>"},
    {"gemma4", render_gemma4, "<turn|>", {}, "it renders a reply without its thought channel"},
    {"granite", render_tagged, "<|end_of_text|>", kGranite},
    {"granite-4.0",
     render_tagged,
     "<|end_of_text|>",
     kGranite,
     {},
     {"You are a helpful assistant. Please ensure responses are professional, accurate, and safe.",
      true}},
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
