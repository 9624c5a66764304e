#include "model/conversation.h"

#include "common/error.h"
#include "model/prefix_reuse.h"

namespace kvrt::model {

OnContextFull parse_on_context_full(std::string_view name) {
  if (name == "stop") return OnContextFull::kStop;
  if (name == "drop-oldest") return OnContextFull::kDropOldest;
  throw Error("unknown context-full policy '" + std::string(name) + "' (use stop or drop-oldest)",
              ErrorKind::kUsage);
}

Conversation::Conversation(Session& session, const ChatTemplate& format, std::string system,
                           OnContextFull on_full, bool parse_special)
    : session_(session),
      tok_(session.model().tokenizer()),
      format_(format),
      on_full_(on_full),
      parse_special_(parse_special) {
  KVRT_ASSERT(session.n_past() == 0);
  if (!system.empty()) messages_.push_back({"system", std::move(system)});
}

std::vector<int32_t> chat_tokens(const Tokenizer& tok, const ChatText& text, bool at_start,
                                 bool parse_special) {
  const bool bos = at_start && tok.adds_bos();
  return tok.encode_template(text.text, bos,
                             parse_special ? std::span<const TextSpan>() : text.contents);
}

std::vector<int32_t> Conversation::tokens_of(const ChatText& text, bool at_start) const {
  return chat_tokens(tok_, text, at_start, parse_special_);
}

// Tokens for the new message: the end of the last reply and what the message adds, or the whole
// conversation (r.reread) when the format now renders the history differently.
std::vector<int32_t> Conversation::message_tokens(TurnResult& r) const {
  if (std::optional<ChatText> added = format_.render_after(messages_, n_held_, true)) {
    std::vector<int32_t> tokens = pending_;
    const std::vector<int32_t> more = tokens_of(*added, session_.n_past() == 0);
    tokens.insert(tokens.end(), more.begin(), more.end());
    return tokens;
  }
  r.reread = true;
  return tokens_of(format_.render(messages_, true), true);
}

void Conversation::evaluate(const std::vector<int32_t>& tokens) {
  session_.eval(tokens.data(), int(tokens.size()));
  n_evaluated_ += int(tokens.size());
}

// Drops the oldest exchanges (the system message stays) until the conversation and the new
// message take at most half the context, so that the next turns have room; returns its tokens.
std::vector<int32_t> Conversation::drop_oldest() {
  const size_t first = messages_.front().role == "system" ? 1 : 0;
  size_t n_drop = 0;
  std::vector<int32_t> tokens;
  for (;;) {
    std::vector<ChatMessage> kept(messages_.begin(), messages_.begin() + long(first));
    kept.insert(kept.end(), messages_.begin() + long(first + n_drop), messages_.end());
    tokens = tokens_of(format_.render(kept, true), true);
    // Exchanges are (user, assistant) pairs; the new message is the last one.
    if (2 * tokens.size() <= size_t(session_.n_ctx()) || first + n_drop + 1 == messages_.size())
      break;
    n_drop += 2;
  }
  if (tokens.size() + 1 > size_t(session_.n_ctx()))
    throw Error("context full: the message needs " + std::to_string(tokens.size()) +
                    " positions even without earlier turns, the context has " +
                    std::to_string(session_.n_ctx()),
                ErrorKind::kResource);
  messages_.erase(messages_.begin() + long(first), messages_.begin() + long(first + n_drop));
  pending_.clear();
  return tokens;
}

TurnResult Conversation::turn(std::string_view user, Sampler& sampler, int max_tokens,
                              const PieceCallback& on_piece) {
  TurnResult r;
  messages_.push_back({"user", std::string(user)});
  try {
    std::vector<int32_t> tokens = message_tokens(r);
    // One free position more than the message: the reply's first token must be evaluated too.
    const int n_past = r.reread ? 0 : session_.n_past();
    const int n_need = int(tokens.size()) + 1, n_free = session_.n_ctx() - n_past;
    if (n_need > n_free) {
      if (on_full_ == OnContextFull::kStop)
        throw Error("context full: " + std::to_string(session_.n_past()) + " of " +
                        std::to_string(session_.n_ctx()) + " positions hold the conversation and " +
                        "the message needs " + std::to_string(n_need) + " more",
                    ErrorKind::kResource);
      const size_t n_before = messages_.size();
      tokens = drop_oldest();
      r.n_dropped = int(n_before - messages_.size());
      // What the session holds of the kept conversation (the system message at least) stays.
      r.n_reused = reuse_prefix(session_, tokens.data(), int(tokens.size()));
      tokens.erase(tokens.begin(), tokens.begin() + r.n_reused);
    } else if (r.reread) {
      session_.reset();
      pending_.clear();
    }
    evaluate(tokens);
    r.prompt_tokens = std::move(tokens);
  } catch (...) {
    messages_.pop_back();
    throw;
  }
  n_held_ = messages_.size();
  pending_.clear();
  generate(sampler, max_tokens, on_piece, r);
  messages_.push_back({"assistant", r.reply});
  n_held_ = messages_.size();
  return r;
}

// The reply, streamed. Each token is evaluated before the next is sampled; the token that ends
// the reply (the model's end-of-generation token, or the format's end of turn when the reply
// was cut) waits in pending_ for the next message.
void Conversation::generate(Sampler& sampler, int max_tokens, const PieceCallback& on_piece,
                            TurnResult& r) {
  std::string piece;
  while (int(r.reply_tokens.size()) < max_tokens) {
    const int32_t token = sampler.sample(session_.last_logits(), session_.model().config().n_vocab);
    if (tok_.is_end_of_generation(token)) {
      pending_ = {token};
      r.stop_token = token;
      return;
    }
    piece = tok_.token_to_piece(token);
    // SentencePiece writes a space before the first word; the reply starts without it.
    if (r.reply.empty() && tok_.adds_space_prefix() && piece.starts_with(' ')) piece.erase(0, 1);
    r.reply += piece;
    r.reply_tokens.push_back(token);
    if (on_piece) on_piece(piece);
    if (session_.n_past() == session_.n_ctx()) {
      pending_ = {token};
      r.context_full = true;
      break;
    }
    session_.eval(&token, 1);
    ++n_evaluated_;
  }
  const std::vector<int32_t> close = tokens_of({std::string(format_.end_of_turn()), {}}, false);
  pending_.insert(pending_.end(), close.begin(), close.end());
}

}  // namespace kvrt::model
