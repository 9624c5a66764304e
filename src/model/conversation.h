// A multi-turn chat over one Session. Each user message is rendered with the model's chat format
// and only the text it adds is evaluated: the KV cache keeps the history, which is evaluated
// again only when the format renders it differently once a message is added (Qwen3 drops the
// thinking of earlier replies). When the context is full the policy decides: stop (an error; the
// conversation is unchanged), or drop the oldest exchanges and evaluate what is kept again.
// Messages are plain text: control tokens written in them stay text unless `parse_special`.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "text/chat_template.h"
#include "model/sampler.h"
#include "model/session.h"

namespace kvrt::model {

enum class OnContextFull { kStop, kDropOldest };

// "stop" or "drop-oldest"; Error(kUsage) otherwise.
OnContextFull parse_on_context_full(std::string_view name);

struct TurnResult {
  std::string reply;
  // Tokens evaluated for the message: the end of the previous reply, then the message and the
  // assistant's header (after dropping turns: the kept conversation after its first n_reused
  // tokens, which the session still held).
  std::vector<int32_t> prompt_tokens;
  std::vector<int32_t> reply_tokens;  // generated and evaluated; the stop token is not among them
  int32_t stop_token = -1;            // the end-of-generation token that ended the reply, -1 if cut
  int n_dropped = 0;                  // messages dropped to make room (drop-oldest)
  bool reread =
      false;         // the format rendered the history differently: all of it was evaluated again
  int n_reused = 0;  // tokens of the kept conversation not evaluated again
  bool context_full = false;  // the reply was cut because every position is used
};

// The tokens of a rendered chat: the format's markup with its control tokens, the messages'
// contents as plain text (unless parse_special); BOS first when `at_start` and the model wants one.
// kvrt chat (Conversation) and kvrt serve tokenize a rendering this one way.
std::vector<int32_t> chat_tokens(const Tokenizer& tok, const ChatText& text, bool at_start,
                                 bool parse_special = false);

// Receives each piece of the reply as it is generated.
using PieceCallback = std::function<void(std::string_view piece)>;

class Conversation {
 public:
  // `session` must be empty and outlive the conversation. `system` may be empty (no system
  // message). With `parse_special`, control tokens written in the messages become those tokens.
  Conversation(Session& session, const ChatTemplate& format, std::string system,
               OnContextFull on_full, bool parse_special = false);

  // One exchange: evaluates the message, then generates the reply until an end-of-generation
  // token, `max_tokens` tokens or a full context. Throws Error(kResource), leaving the
  // conversation as it was, when the message does not fit (policy stop, or too long even alone).
  TurnResult turn(std::string_view user, Sampler& sampler, int max_tokens,
                  const PieceCallback& on_piece);

  // The conversation as bytes, for a state file's application data (model/state_file.h), and
  // back: resume() takes what save() wrote for the session as it is now (kvrt chat --session);
  // bytes that do not describe it are kvrt::Error(kInput) and leave the conversation as it was.
  std::string save() const;
  void resume(std::string_view bytes, const std::string& what);

  const std::vector<ChatMessage>& messages() const { return messages_; }
  const Session& session() const { return session_; }
  int n_evaluated() const { return n_evaluated_; }  // tokens evaluated so far, re-reads included

 private:
  std::vector<int32_t> tokens_of(const ChatText& text, bool at_start) const;
  std::vector<int32_t> message_tokens(TurnResult& r) const;
  std::vector<int32_t> drop_oldest();
  void generate(Sampler& sampler, int max_tokens, const PieceCallback& on_piece, TurnResult& r);
  void evaluate(const std::vector<int32_t>& tokens);

  Session& session_;
  const Tokenizer& tok_;
  ChatTemplate format_;
  OnContextFull on_full_;
  bool parse_special_;
  std::vector<ChatMessage> messages_;  // the system message first when there is one
  size_t n_held_ = 0;                  // messages the session holds (up to `pending_`)
  std::vector<int32_t> pending_;       // the end of the last reply, evaluated with the next message
  int n_evaluated_ = 0;
};

}  // namespace kvrt::model
