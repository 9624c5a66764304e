// Gemma 4's format, written from its Jinja template for conversations of text messages (no tools):
// turns <|turn>ROLE ... <turn|> with the assistant as "model"; a system turn first when the
// conversation has a system (or developer) message or thinks, holding <|think|> when it thinks;
// the thinking of every reply (its <|channel>thought ... <channel|> parts) dropped from the
// history; a reply that does not think opens with an empty thought channel.
#include "text/chat_template_impl.h"

namespace kvrt::model::detail {
namespace {

constexpr std::string_view kChannelOpen = "<|channel>", kChannelClose = "<channel|>";

// A reply without its thought channels, as the template's strip_thinking: of each piece between
// <channel|> markers, the text before its <|channel> (all of it when it has none); trimmed.
std::string strip_thinking(std::string_view reply) {
  std::string kept;
  for (size_t start = 0;;) {
    const size_t close = reply.find(kChannelClose, start);
    const std::string_view part =
        reply.substr(start, close == reply.npos ? reply.npos : close - start);
    kept += part.substr(0, part.find(kChannelOpen));
    if (close == reply.npos) break;
    start = close + kChannelClose.size();
  }
  return std::string(trim(kept));
}

bool is_system(const ChatMessage& m) { return m.role == "system" || m.role == "developer"; }

}  // namespace

void render_gemma4(const ChatFormat&, const Messages& messages, const ChatOptions& options,
                   bool add_assistant, ChatText& out) {
  const bool think = options.enable_thinking.value_or(false);
  const bool has_system = !messages.empty() && is_system(messages[0]);
  if (think || has_system) {
    out.text += "<|turn>system\n";
    if (think) out.text += "<|think|>\n";
    if (has_system) add_content(out, trim(messages[0].content));
    out.text += "<turn|>\n";
  }
  // Tool results are written by the reply that called the tool; kvrt's messages have no tool
  // calls, so a tool message renders nothing, as in the template.
  std::string_view previous_role;  // of the last message that is not a tool result
  for (size_t i = has_system ? 1 : 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "tool") continue;
    const bool model = m.role == "assistant";
    // Two replies in a row are one model turn: the second gets no header.
    if (!(model && previous_role == "assistant"))
      out.text.append("<|turn>").append(model ? "model" : m.role).append("\n");
    add_content(out, model ? strip_thinking(m.content) : trim(m.content));
    out.text += "<turn|>\n";
    previous_role = m.role;
  }
  if (add_assistant) {
    out.text += "<|turn>model\n";
    if (!think) out.text += "<|channel>thought\n<channel|>";
  }
}

}  // namespace kvrt::model::detail
