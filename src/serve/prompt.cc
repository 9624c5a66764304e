#include "serve/prompt.h"

#include "model/conversation.h"
#include "serve/api_error.h"

namespace kvrt::serve {
namespace {

[[noreturn]] void too_long(const std::string& what, const PromptLimits& limits) {
  throw ApiError(400,
                 "the prompt has " + what + ", more than the " +
                     std::to_string(limits.max_prompt_tokens) +
                     " tokens a request may use (the context is " + std::to_string(limits.n_ctx) +
                     " positions)",
                 "", "context_length_exceeded");
}

// Refused before tokenizing: a text far too long would take seconds per MiB to tokenize.
void check_bytes(const model::Tokenizer& tok, size_t n_bytes, const PromptLimits& limits) {
  if (n_bytes > tok.max_text_bytes(size_t(limits.max_prompt_tokens)))
    too_long(std::to_string(n_bytes) + " bytes", limits);
}

}  // namespace

JobInput job_input(const GenerationRequest& r, const model::Model& model,
                   const model::ChatTemplate* chat, const PromptLimits& limits) {
  const model::Tokenizer& tok = model.tokenizer();
  JobInput in;
  if (r.endpoint == Endpoint::kChat) {
    if (!chat)
      throw ApiError(400,
                     "the model has no chat format: use /v1/completions, or start kvrt serve with "
                     "--chat-format",
                     "messages");
    const model::ChatText text = chat->render(r.messages, true);
    check_bytes(tok, text.text.size(), limits);
    in.prompt = model::chat_tokens(tok, text, true);
    in.strip_leading_space = tok.adds_space_prefix();  // as kvrt chat's reply starts
  } else {
    check_bytes(tok, r.prompt.size(), limits);
    in.prompt = tok.encode(r.prompt, true);
    // kvrt run drops the space before the first word when nothing of the prompt is printed.
    in.strip_leading_space = tok.adds_space_prefix() && tok.decode(in.prompt).empty();
  }
  if (int(in.prompt.size()) > limits.max_prompt_tokens)
    too_long(std::to_string(in.prompt.size()) + " tokens", limits);
  in.sampling = r.sampling;
  in.max_tokens = r.max_tokens.value_or(limits.max_tokens);
  in.stop = r.stop;
  in.ignore_eos = r.ignore_eos;
  return in;
}

}  // namespace kvrt::serve
