// Makes a chat model for tests and demos from a small trained F32 llama (stories260K): the chat
// format's control tokens are added to the vocabulary and its Jinja template is written to
// tokenizer.chat_template. The new tokens' embedding rows are copies of existing ones; the
// end-of-turn token's output row (a new token's, or the base's </s> for Mistral) is the full
// stop's, scaled by 1.25, so that greedy decoding ends a reply where the base model would end a
// sentence, and the other new tokens' output rows are the unknown token's (never predicted).
// Replies stay the base model's stories, but every part of the chat mechanics is real: template,
// special tokens, end-of-turn stop, KV cache across turns.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kvrt::synth {

struct ChatModelConfig {
  std::string base_path;          // F32 llama GGUF with a SentencePiece vocabulary
  std::string format = "chatml";  // one of chat_model_formats()
};

// Formats a chat model can be made for: chatml, llama3, gemma, phi3, qwen3, smollm3, granite,
// mistral-v7-tekken, phi4-mini.
std::vector<std::string_view> chat_model_formats();

// Writes the chat model to `out_path`. Throws kvrt::Error for an unknown format, a base model
// that is not F32 or lacks the tokens it needs, or an I/O failure.
void write_chat_model(const ChatModelConfig& config, const std::string& out_path);

}  // namespace kvrt::synth
