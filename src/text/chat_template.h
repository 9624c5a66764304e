// Chat formats: how a conversation becomes the text an instruct model was trained on. A model
// names its format in tokenizer.chat_template, a Jinja template; kvrt has no Jinja engine and,
// like llama.cpp (llm_chat_detect_template), recognizes the common families by their markers and
// renders them with built-in code: ChatML, Qwen2.5, Qwen3, Qwen3.5, SmolLM3, LFM2.5, Llama 3,
// Llama 2, Mistral, Phi-3, Phi-4-mini, Gemma, Gemma 4, Granite and a few more
// (chat_template_formats.cc has the table). tools/render_template.py renders the real templates
// with Jinja2; tests/test_chat_oracle.cc compares the two byte for byte. The text
// holds the format's control tokens (<|im_start|>, ...) and the messages' contents, which are
// plain text: tokenize a ChatText with Tokenizer::encode_template so that a message cannot write
// control tokens.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/gguf.h"
#include "text/tokenizer.h"

namespace kvrt::model {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

// Arguments a template takes besides the messages (chat_template_kwargs in the OpenAI-style
// servers).
struct ChatOptions {
  // The template's thinking switch, enable_thinking; unset: the template's default (Qwen3, Qwen3.5
  // and SmolLM3 think, Gemma 4 does not). Formats without the switch ignore it.
  std::optional<bool> enable_thinking;
};

// A rendered conversation: the text, and where the messages' contents lie in it (sorted, not
// overlapping; the rest is the format's markup).
struct ChatText {
  std::string text;
  std::vector<TextSpan> contents;
};

namespace detail {
struct ChatFormat;
}

class ChatTemplate {
 public:
  // The format called `name` (chatml, llama3, ...); Error(kUsage) listing the names otherwise.
  static ChatTemplate from_name(std::string_view name);
  // The format of a Jinja chat template (or of a format name); nullopt when no family matches.
  static std::optional<ChatTemplate> detect(std::string_view jinja);
  // The format of the model's tokenizer.chat_template; nullopt when it has none or an
  // unrecognized one.
  static std::optional<ChatTemplate> of_model(const io::GgufFile& file);
  // `name` when not empty (--chat-format), else the model's format. Error naming the file and
  // suggesting a format name when the model has no template or an unrecognized one.
  static ChatTemplate for_model(const io::GgufFile& file, std::string_view name);
  // Every format name, in the table's order.
  static std::vector<std::string_view> names();

  std::string_view name() const;
  // Text that closes an assistant message, as the model emits it at the end of its turn
  // ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "</s>", ...); "" when the format has none.
  std::string_view end_of_turn() const;

  // The whole conversation; with `add_assistant`, followed by the header of the assistant's reply
  // (which holds the template's opening of the reply: Qwen3.5's <think>, Gemma 4's empty thought
  // channel when it does not think, ...).
  ChatText render(const std::vector<ChatMessage>& messages, bool add_assistant,
                  const ChatOptions& options = {}) const;
  std::string apply(const std::vector<ChatMessage>& messages, bool add_assistant,
                    const ChatOptions& options = {}) const {
    return render(messages, add_assistant, options).text;
  }

  // The text that messages[n_previous..] add to a model that already holds the first n_previous
  // messages as they were generated: up to the end-of-turn token of the last assistant message
  // (what follows that token, such as ChatML's newline, is part of the added text), else the
  // whole rendering of those messages. n_previous = 0 gives render(). nullopt when the format
  // renders the earlier messages differently once more are added (Qwen3 drops the thinking of
  // earlier replies), renders a reply without the header the model was prompted with (Gemma 4
  // drops the empty thought channel), or, for the formats that rewrite replies in the history,
  // renders the last reply other than as the model wrote it (Gemma 4 drops its thinking): the
  // whole conversation must then be evaluated again.
  std::optional<ChatText> render_after(const std::vector<ChatMessage>& messages, size_t n_previous,
                                       bool add_assistant, const ChatOptions& options = {}) const;
  // The text messages[n_previous..] add to a model that keeps the earlier messages as they were
  // generated, even where the format would render them differently (Qwen3's earlier thinking):
  // render_after's text, else what follows the end of turn before the first added message in
  // the whole rendering. For evaluations that stand the model's own replies in for the history
  // (validation's multi-turn cases); the added messages must not be empty.
  std::string apply_continuing(const std::vector<ChatMessage>& messages, size_t n_previous,
                               bool add_assistant, const ChatOptions& options = {}) const;
  // render_after's text; Error(kUsage) instead of nullopt, telling to render from the start.
  std::string apply_after(const std::vector<ChatMessage>& messages, size_t n_previous,
                          bool add_assistant, const ChatOptions& options = {}) const;

 private:
  explicit ChatTemplate(const detail::ChatFormat& format) : format_(&format) {}
  const detail::ChatFormat* format_;
};

}  // namespace kvrt::model
