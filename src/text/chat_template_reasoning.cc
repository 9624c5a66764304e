// Formats whose models think before they answer, in ChatML: Qwen3 and Qwen3.5 (the thinking of
// earlier replies is dropped from the history, as their templates do), SmolLM3 (a system header
// that names the reasoning mode, /think or /no_think) and LFM2.5 (earlier replies lose their
// thinking too). Written from the models' Jinja templates for conversations of text messages (no
// tools).
#include "text/chat_template_impl.h"

namespace kvrt::model::detail {
namespace {

constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>";

// A Qwen3 reply split as its template splits message.content: the thinking between <think> and
// </think>, and the answer after the last </think> (without its leading newlines); a reply
// without </think> is all answer.
struct Reply {
  std::string_view reasoning, answer;
};

Reply split_reply(std::string_view content) {
  const size_t close = content.find(kThinkClose);
  if (close == content.npos) return {{}, content};
  std::string_view before = rstrip(content.substr(0, close), "\n");
  const size_t open = before.rfind(kThinkOpen);
  if (open != before.npos) before.remove_prefix(open + kThinkOpen.size());
  const std::string_view answer = content.substr(content.rfind(kThinkClose) + kThinkClose.size());
  return {lstrip(before, "\n"), lstrip(answer, "\n")};
}

// Qwen3's tool results come as user messages wrapped in <tool_response>; they are not queries.
bool is_query(std::string_view role, std::string_view content) {
  return role == "user" &&
         !(content.starts_with("<tool_response>") && content.ends_with("</tool_response>"));
}

void add_chatml_turn(ChatText& out, std::string_view role, std::string_view content) {
  out.text.append("<|im_start|>").append(role).append("\n");
  add_content(out, content);
  out.text += "<|im_end|>\n";
}

// SmolLM3's default instructions in reasoning mode (/think), from its template.
constexpr std::string_view kSmolThinkInstructions =
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face. Your role as an "
    "assistant involves thoroughly exploring questions through a systematic thinking process "
    "before providing the final precise and accurate solutions. This requires engaging in a "
    "comprehensive cycle of analysis, summarizing, exploration, reassessment, reflection, "
    "backtracking, and iteration to develop well-considered thinking process. Please "
    "structure your response into two main sections: Thought and Solution using the specified "
    "format: <think> Thought section </think> Solution section. In the Thought section, "
    "detail your reasoning process in steps. Each step should include detailed considerations "
    "such as analysing questions, summarizing relevant findings, brainstorming new ideas, "
    "verifying the accuracy of the current steps, refining any errors, and revisiting "
    "previous steps. In the Solution section, based on various attempts, explorations, and "
    "reflections from the Thought section, systematically present the final solution that you "
    "deem correct. The Solution section should be logical, accurate, and concise and detail "
    "necessary steps needed to reach the conclusion.";

// The last user message that is not a tool result; the last message when there is none (Qwen3's
// template starts there; Qwen3.5's refuses such a conversation).
size_t last_query_index(const Messages& messages, bool trimmed) {
  for (size_t i = messages.size(); i-- > 0;) {
    const ChatMessage& m = messages[i];
    if (is_query(m.role, trimmed ? trim(m.content) : std::string_view(m.content))) return i;
  }
  return messages.empty() ? 0 : messages.size() - 1;
}

// The generation prompt of Qwen3 and Qwen3.5 with enable_thinking = false: an empty thinking block.
constexpr std::string_view kNoThinking = "<think>\n\n</think>\n\n";

}  // namespace

void render_qwen3(const ChatFormat&, const Messages& messages, const ChatOptions& options,
                  bool add_assistant, ChatText& out) {
  // Replies after the last query keep their thinking; the template starts from the last message.
  const size_t last_query = last_query_index(messages, false);
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role != "assistant") {
      add_chatml_turn(out, m.role, m.content);
      continue;
    }
    const Reply r = split_reply(m.content);
    out.text += "<|im_start|>assistant\n";
    if (i > last_query && (i + 1 == messages.size() || !r.reasoning.empty())) {
      out.text += "<think>\n";
      add_content(out, rstrip(lstrip(r.reasoning, "\n"), "\n"));
      out.text += "\n</think>\n\n";
      add_content(out, lstrip(r.answer, "\n"));
    } else {
      add_content(out, r.answer);
    }
    out.text += "<|im_end|>\n";
  }
  if (add_assistant) {
    out.text += "<|im_start|>assistant\n";
    if (options.enable_thinking == false) out.text += kNoThinking;
  }
}

// Qwen3.5: every content is trimmed; replies after the last query all get a thinking block (empty
// when they have none), earlier ones lose theirs; the prompt opens the reply's thinking, or closes
// an empty one when enable_thinking is false. A system message is only allowed first (kvrt writes
// a later one as a system turn where the template refuses the conversation).
void render_qwen35(const ChatFormat&, const Messages& messages, const ChatOptions& options,
                   bool add_assistant, ChatText& out) {
  const size_t last_query = last_query_index(messages, true);
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const std::string_view content = trim(m.content);
    if (m.role != "assistant") {
      add_chatml_turn(out, m.role, content);
      continue;
    }
    const Reply r = split_reply(content);
    out.text += "<|im_start|>assistant\n";
    if (i > last_query) {
      out.text += "<think>\n";
      add_content(out, trim(r.reasoning));
      out.text += "\n</think>\n\n";
    }
    add_content(out, r.answer);
    out.text += "<|im_end|>\n";
  }
  if (add_assistant)
    out.text.append("<|im_start|>assistant\n")
        .append(options.enable_thinking == false ? kNoThinking : "<think>\n");
}

void render_smollm3(const ChatFormat&, const Messages& messages, const ChatOptions& options,
                    bool add_assistant, ChatText& out) {
  const bool has_system = !messages.empty() && messages[0].role == "system";
  std::string instructions;  // the system message without its /think or /no_think flag
  bool think = options.enable_thinking.value_or(true);  // a flag in the system message overrides
  if (has_system) {
    const std::string& s = messages[0].content;
    if (s.find("/no_think") != s.npos) {
      think = false;
    } else if (s.find("/think") != s.npos) {
      think = true;
    }
    instructions = s;
    for (std::string_view flag : {"/no_think", "/think"})
      for (size_t at; (at = instructions.find(flag)) != instructions.npos;)
        instructions.erase(at, flag.size());
    instructions = std::string(rstrip_space(instructions));
  }
  out.text +=
      "<|im_start|>system\n## Metadata\n\nKnowledge Cutoff Date: June 2025\nReasoning Mode: ";
  out.text += think ? "/think" : "/no_think";
  out.text += "\n\n## Custom Instructions\n\n";
  if (!instructions.empty()) {
    add_content(out, instructions);
  } else {
    out.text += think ? kSmolThinkInstructions
                      : "You are a helpful AI assistant named SmolLM, trained by Hugging Face.";
  }
  out.text += "\n\n<|im_end|>\n";
  const std::string_view empty_thinking = think ? "" : "<think>\n\n</think>\n";
  for (const ChatMessage& m : messages) {
    if (m.role == "user") {
      add_chatml_turn(out, m.role, m.content);
    } else if (m.role == "assistant") {
      out.text.append("<|im_start|>assistant\n").append(empty_thinking);
      add_content(out, lstrip(m.content, "\n"));
      out.text += "<|im_end|>\n";
    }
  }
  if (add_assistant) out.text.append("<|im_start|>assistant\n").append(empty_thinking);
}

// LFM2.5: ChatML; a system message only when it has text; replies before the last reply lose the
// thinking before their last </think> (and are trimmed then). keep_past_thinking, which keeps it,
// is not offered.
void render_lfm2(const ChatFormat&, const Messages& messages, const ChatOptions&,
                 bool add_assistant, ChatText& out) {
  size_t first = 0;
  if (!messages.empty() && messages[0].role == "system") {
    if (!messages[0].content.empty()) add_chatml_turn(out, "system", messages[0].content);
    first = 1;
  }
  size_t last_reply = messages.size();
  for (size_t i = first; i < messages.size(); ++i)
    if (messages[i].role == "assistant") last_reply = i;
  for (size_t i = first; i < messages.size(); ++i) {
    std::string_view content = messages[i].content;
    const size_t close = content.rfind(kThinkClose);
    if (messages[i].role == "assistant" && i != last_reply && close != content.npos)
      content = trim(content.substr(close + kThinkClose.size()));
    add_chatml_turn(out, messages[i].role, content);
  }
  if (add_assistant) out.text += "<|im_start|>assistant\n";
}

}  // namespace kvrt::model::detail
