// Internal to the chat templates: the table of formats (chat_template_formats.cc), read by
// chat_template.cc for lookup, detection and rendering.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/chat_template.h"

namespace kvrt::model::detail {

// Markup of the formats that wrap every message the same way: header_open + role + header_close,
// the content (trimmed or not), message_close; the assistant's header ends the prompt.
struct Tagged {
  std::string_view header_open, header_close, message_close, assistant_header;
  bool trim = false;
};

struct ChatFormat {
  std::string_view name;
  void (*render)(const ChatFormat& f, const std::vector<ChatMessage>& messages, bool add_assistant,
                 std::string& out);
  std::string_view end_of_turn;  // closes an assistant message
  Tagged tagged;                 // render_tagged's markup; empty for the other formats
};

std::span<const ChatFormat> chat_formats();
const ChatFormat* find_chat_format(std::string_view name);

}  // namespace kvrt::model::detail
