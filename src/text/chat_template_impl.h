// Internal to the chat templates: the table of formats (chat_template_formats.cc, with the
// formats that render reasoning in chat_template_reasoning.cc and Gemma 4 in
// chat_template_gemma4.cc), read by chat_template.cc for lookup, detection and rendering.
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

// A system message the template writes when the conversation starts without one. Only fixed
// texts: kvrt renders no default that holds today's date (Granite 3.3's, Mistral Small 3.2's), so
// that a conversation renders the same on every day.
struct DefaultSystem {
  std::string_view text;
  bool replaces_empty = false;  // an empty system message gets the default too (Granite 4.0)
};

struct ChatFormat {
  std::string_view name;
  void (*render)(const ChatFormat& f, const Messages& messages, const ChatOptions& options,
                 bool add_assistant, ChatText& out);
  std::string_view end_of_turn;  // closes an assistant message
  Tagged tagged = {};            // render_tagged's markup; empty for the other formats
  std::string_view history_note =
      {};  // why earlier messages may render differently later; "" if never
  DefaultSystem default_system = {};
};

std::span<const ChatFormat> chat_formats();
const ChatFormat* find_chat_format(std::string_view name);

// Appends a message's content (plain text, recorded in out.contents).
inline void add_content(ChatText& out, std::string_view content) {
  if (!content.empty()) out.contents.push_back({out.text.size(), content.size()});
  out.text += content;
}

// Without whitespace at either end as Python's str.strip() (Jinja's |trim) sees it: ASCII
// whitespace, U+001C..U+001F and the Unicode spaces (U+00A0, U+3000, ...). Text that is not
// UTF-8 at an end stays as it is there.
std::string_view trim(std::string_view s);
// Without that whitespace at the end (Python's str.rstrip()).
std::string_view rstrip_space(std::string_view s);
// Without the characters of `chars` at the start, at the end (Python's lstrip, rstrip).
std::string_view lstrip(std::string_view s, std::string_view chars);
std::string_view rstrip(std::string_view s, std::string_view chars);

// Whether the conversation needs the format's default system message in front.
bool needs_default_system(const ChatFormat& f, const Messages& messages);

// Formats with thinking (chat_template_reasoning.cc).
void render_qwen3(const ChatFormat& f, const Messages& messages, const ChatOptions& options,
                  bool add_assistant, ChatText& out);
void render_qwen35(const ChatFormat& f, const Messages& messages, const ChatOptions& options,
                   bool add_assistant, ChatText& out);
void render_smollm3(const ChatFormat& f, const Messages& messages, const ChatOptions& options,
                    bool add_assistant, ChatText& out);
void render_lfm2(const ChatFormat& f, const Messages& messages, const ChatOptions& options,
                 bool add_assistant, ChatText& out);
// Gemma 4 (chat_template_gemma4.cc).
void render_gemma4(const ChatFormat& f, const Messages& messages, const ChatOptions& options,
                   bool add_assistant, ChatText& out);

}  // namespace kvrt::model::detail
