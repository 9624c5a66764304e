// Internal to the chat templates: the table of formats (chat_template_formats.cc, with the
// formats that render reasoning in chat_template_reasoning.cc), read by chat_template.cc for
// lookup, detection and rendering.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/chat_template.h"

namespace kvrt::model::detail {

using Messages = std::vector<ChatMessage>;

// Markup of the formats that wrap every message the same way: header_open + role + header_close,
// the content (trimmed or not), message_close; the assistant's header ends the prompt.
struct Tagged {
  std::string_view header_open, header_close, message_close, assistant_header;
  bool trim = false;
};

struct ChatFormat {
  std::string_view name;
  void (*render)(const ChatFormat& f, const Messages& messages, bool add_assistant, ChatText& out);
  std::string_view end_of_turn;  // closes an assistant message
  Tagged tagged = {};            // render_tagged's markup; empty for the other formats
  std::string_view history_note =
      {};  // why earlier messages may render differently later; "" if never
};

std::span<const ChatFormat> chat_formats();
const ChatFormat* find_chat_format(std::string_view name);

// Appends a message's content (plain text, recorded in out.contents).
inline void add_content(ChatText& out, std::string_view content) {
  if (!content.empty()) out.contents.push_back({out.text.size(), content.size()});
  out.text += content;
}

// Without ASCII whitespace at either end (llama.cpp's trim, Jinja's |trim on ASCII text).
std::string_view trim(std::string_view s);
// Without the characters of `chars` at the start, at the end (Python's lstrip, rstrip).
std::string_view lstrip(std::string_view s, std::string_view chars);
std::string_view rstrip(std::string_view s, std::string_view chars);

// Formats with thinking (chat_template_reasoning.cc).
void render_qwen3(const ChatFormat& f, const Messages& messages, bool add_assistant, ChatText& out);
void render_smollm3(const ChatFormat& f, const Messages& messages, bool add_assistant,
                    ChatText& out);

}  // namespace kvrt::model::detail
