// A request body of /v1/chat/completions or /v1/completions, read into a typed request. Every
// field is checked here: a malformed body, a wrong type, an unknown role, an empty message list or
// a max_tokens out of range is an ApiError(400) naming the field, before any work is queued.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/chat_template.h"
#include "model/sampler.h"

namespace kvrt::serve {

enum class Endpoint { kChat, kCompletions };

struct GenerationRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;                         // empty: not given
  std::vector<model::ChatMessage> messages;  // kChat: at least one
  std::string prompt;                        // kCompletions
  std::optional<int> max_tokens;             // 1..the server's limit; nullopt: up to the context
  model::SamplerOptions sampling;            // greedy unless temperature > 0
  std::vector<std::string> stop;             // at most 4, none empty
  bool stream = false;
  bool ignore_eos = false;  // llama.cpp's extension: end-of-generation tokens are never sampled
};

// Throws ApiError(400) for a body that is not a request of this endpoint; max_tokens above
// max_tokens_limit is one too.
GenerationRequest parse_request(std::string_view body, Endpoint endpoint, int max_tokens_limit);

}  // namespace kvrt::serve
