// A request's prompt as tokens, made the way kvrt run (a completion's prompt: BOS and the text)
// and kvrt chat (messages rendered with the chat format, its markers the only control tokens,
// the contents plain text) make theirs, so that a greedy reply equals theirs; and the job's
// other inputs. A prompt that leaves no room to generate is an ApiError(400).
#pragma once

#include "text/chat_template.h"
#include "model/model.h"
#include "serve/job.h"
#include "serve/request.h"

namespace kvrt::serve {

struct PromptLimits {
  int n_ctx = 0;              // positions of a slot
  int max_prompt_tokens = 0;  // at most n_ctx - 1
  int max_tokens = 0;         // a request's max_tokens when it gives none
};

// `chat` null: the model has no chat format, and chat requests are refused.
JobInput job_input(const GenerationRequest& r, const model::Model& model,
                   const model::ChatTemplate* chat, const PromptLimits& limits);

}  // namespace kvrt::serve
