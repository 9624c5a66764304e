#include "text/chat_template.h"

#include <algorithm>

#include "common/error.h"
#include "text/chat_template_impl.h"

namespace kvrt::model {
namespace {

constexpr std::string_view kKeyTemplate = "tokenizer.chat_template";

// llama.cpp's llm_chat_detect_template, in its order, for the families kvrt renders, with the
// families whose templates render differently from llama.cpp's built-in format split off by
// their markers (qwen2.5, qwen3, qwen3.5, smollm3, lfm2, granite-4.0, mistral-v7-tekken,
// ministral-3-reasoning, phi4-mini, llama3.1, gemma4). Families llama.cpp recognizes that kvrt
// does not render give "" so that they are not mistaken for a later one.
std::string_view detect_name(std::string_view t) {
  auto has = [t](std::string_view marker) { return t.find(marker) != t.npos; };
  if (has("<|im_start|>")) {
    if (has("<|im_sep|>")) return "phi4";
    if (has("<end_of_utterance>")) return "";  // SmolVLM
    if (has("Reasoning Mode: ")) return "smollm3";
    // Qwen3's history drops earlier thinking with this idiom.
    if (has("reasoning_content.strip('\\n')")) return "qwen3";
    // Qwen3.5 calls tools as <function=NAME> and has Qwen3's thinking switch.
    if (has("<function=") && has("enable_thinking")) return "qwen3.5";
    // LFM2.5 (llama.cpp knows it by its plain tool list).
    if (has("keep_past_thinking") || has("List of tools: [")) return "lfm2";
    // Qwen2.5 writes its own system message when the conversation has none.
    return has("You are Qwen, created by Alibaba Cloud.") ? "qwen2.5" : "chatml";
  }
  if (has("<|start_of_role|>")) return has("g4_default_system_message") ? "granite-4.0" : "granite";
  if (t.starts_with("mistral") || has("[INST]")) {
    // Mistral Small 3.1+ and Ministral 3 write the tags without the space v7 has after them.
    if (has("[SYSTEM_PROMPT]")) {
      if (has("[SYSTEM_PROMPT] ") || has("[INST] ")) return "mistral-v7";
      // Ministral 3 Reasoning's default system message teaches its [THINK] block.
      return has("# HOW YOU SHOULD THINK AND ANSWER") ? "ministral-3-reasoning"
                                                      : "mistral-v7-tekken";
    }
    if (has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]")) {
      if (has(" [INST]")) return "mistral-v1";
      return has("\"[INST]\"") ? "mistral-v3-tekken" : "mistral-v3";
    }
    if (has("content.strip()")) return "llama2-sys-strip";
    if (has("bos_token + '[INST]")) return "llama2-sys-bos";
    return has("<<SYS>>") ? "llama2-sys" : "llama2";
  }
  if (has("<|assistant|>") && has("<|end|>")) {
    // Phi-4-mini writes '<|' + role + '|>' + content with no newline after the role.
    return has("'|>' + message['content']") ? "phi4-mini" : "phi3";
  }
  if (has("[gMASK]<sop>")) return "";  // ChatGLM 4
  if (has("<|assistant|>") && has("<|user|>")) return has("</s>") ? "falcon3" : "glmedge";
  if (has("<|{{ item['role'] }}|>") && has("<|begin_of_image|>")) return "glmedge";
  if (has("<|user|>") && has("<|endoftext|>")) return "zephyr";
  if (has("bos_token + message['role']")) return "";  // Monarch
  if (has("<start_of_turn>")) return "gemma";
  if (has("<|turn>") && has("<turn|>")) return "gemma4";
  if (has("<|start_header_id|>") && has("<|end_header_id|>"))
    return has("Cutting Knowledge Date:") ? "llama3.1" : "llama3";
  if (has("<｜Assistant｜>") && has("<｜User｜>") && has("<｜end▁of▁sentence｜>"))
    return "deepseek3";
  return "";
}

std::string names_list() {
  std::string s;
  for (std::string_view n : ChatTemplate::names()) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

}  // namespace

ChatTemplate ChatTemplate::from_name(std::string_view name) {
  const detail::ChatFormat* f = detail::find_chat_format(name);
  if (!f)
    throw Error("unknown chat format '" + std::string(name) + "' (known: " + names_list() + ")",
                ErrorKind::kUsage);
  return ChatTemplate(*f);
}

std::optional<ChatTemplate> ChatTemplate::detect(std::string_view jinja) {
  const detail::ChatFormat* f = detail::find_chat_format(jinja);
  if (!f) f = detail::find_chat_format(detect_name(jinja));
  if (!f) return std::nullopt;
  return ChatTemplate(*f);
}

std::optional<ChatTemplate> ChatTemplate::of_model(const io::GgufFile& file) {
  if (!file.find(kKeyTemplate)) return std::nullopt;
  return detect(file.get_string(kKeyTemplate));
}

ChatTemplate ChatTemplate::for_model(const io::GgufFile& file, std::string_view name) {
  if (!name.empty()) return from_name(name);
  const std::string advice = "; name a chat format with --chat-format NAME (" + names_list() + ")";
  if (!file.find(kKeyTemplate))
    throw Error("'" + file.path() + "' has no chat template (" + std::string(kKeyTemplate) + ")" +
                advice);
  if (std::optional<ChatTemplate> t = detect(file.get_string(kKeyTemplate))) return *t;
  throw Error("'" + file.path() + "': its chat template (" + std::string(kKeyTemplate) +
              ") is not of a family kvrt recognizes" + advice);
}

std::vector<std::string_view> ChatTemplate::names() {
  std::vector<std::string_view> out;
  for (const detail::ChatFormat& f : detail::chat_formats()) out.push_back(f.name);
  return out;
}

std::string_view ChatTemplate::name() const { return format_->name; }
std::string_view ChatTemplate::end_of_turn() const { return format_->end_of_turn; }

ChatText ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_assistant,
                              const ChatOptions& options) const {
  ChatText out;
  format_->render(*format_, messages, options, add_assistant, out);
  return out;
}

std::optional<ChatText> ChatTemplate::render_after(const std::vector<ChatMessage>& messages,
                                                   size_t n_previous, bool add_assistant,
                                                   const ChatOptions& options) const {
  KVRT_ASSERT(n_previous <= messages.size());
  ChatText all = render(messages, add_assistant, options);
  if (n_previous == 0) return all;
  const std::vector<ChatMessage> previous(messages.begin(), messages.begin() + long(n_previous));
  std::string held = render(previous, false, options).text;
  const std::string_view eot = end_of_turn();
  if (previous.back().role == "assistant") {
    // The model wrote the reply after the prompt that ends with the assistant's header; a
    // history that renders the reply without that header is not what the model holds.
    const std::vector<ChatMessage> asked(previous.begin(), previous.end() - 1);
    const std::string prompt = render(asked, true, options).text;
    if (!held.starts_with(prompt)) return std::nullopt;
    const size_t at = eot.empty() ? held.npos : held.rfind(eot);
    if (at != held.npos)
      held.resize(at + eot.size());  // the model stopped at its end-of-turn token
    // Formats that rewrite replies in the history (their thinking) must render the last one as
    // the model wrote it (Gemma 4 drops the thinking of every reply, the last one too).
    if (!format_->history_note.empty() &&
        held != prompt + previous.back().content + std::string(eot))
      return std::nullopt;
  }
  if (!all.text.starts_with(held)) return std::nullopt;
  ChatText added{all.text.substr(held.size()), {}};
  for (const TextSpan& c : all.contents) {
    const size_t end = c.offset + c.length;
    if (end <= held.size()) continue;
    const size_t begin = std::max(c.offset, held.size());
    added.contents.push_back({begin - held.size(), end - begin});
  }
  return added;
}

std::string ChatTemplate::apply_continuing(const std::vector<ChatMessage>& messages,
                                           size_t n_previous, bool add_assistant,
                                           const ChatOptions& options) const {
  if (std::optional<ChatText> t = render_after(messages, n_previous, add_assistant, options))
    return std::move(t->text);
  const ChatText all = render(messages, add_assistant, options);
  const size_t n_added = messages.size() - n_previous;
  const std::string_view eot = end_of_turn();
  KVRT_ASSERT(all.contents.size() >= n_added && !eot.empty());
  const size_t first =
      all.contents[all.contents.size() - n_added].offset;  // the first added message
  const size_t at = all.text.rfind(eot, first);
  KVRT_ASSERT(at != std::string::npos);
  return all.text.substr(at + eot.size());
}

std::string ChatTemplate::apply_after(const std::vector<ChatMessage>& messages, size_t n_previous,
                                      bool add_assistant, const ChatOptions& options) const {
  if (std::optional<ChatText> t = render_after(messages, n_previous, add_assistant, options))
    return std::move(t->text);
  throw Error(
      "chat format " + std::string(name()) + " renders the first " + std::to_string(n_previous) +
          " messages differently once more are added (" + std::string(format_->history_note) +
          "): render the whole conversation (n_previous = 0) and evaluate it on an empty session",
      ErrorKind::kUsage);
}

}  // namespace kvrt::model
