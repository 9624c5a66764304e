// The JSON bodies of the OpenAI API for one request: a whole completion, the chunks of a stream
// (server-sent events), and the model list. Text that is not valid UTF-8 is sent with U+FFFD in
// place of the bad bytes.
#pragma once

#include <cstdint>
#include <string>

#include "serve/job.h"
#include "serve/request.h"
#include "serve/served_model.h"

namespace kvrt::serve {

struct ResponseHead {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string id;       // chatcmpl-... or cmpl-...
  int64_t created = 0;  // Unix seconds
  const ServedModel* model = nullptr;
};

ResponseHead make_head(Endpoint endpoint, const ServedModel& model);

std::string completion_body(const ResponseHead& head, const std::string& text, FinishReason reason,
                            const Usage& usage);
// One server-sent event with a chunk of text; the first chunk of a chat stream carries the role.
std::string text_event(const ResponseHead& head, const std::string& text, bool first);
// The last chunk: the finish reason and the usage counts, then "data: [DONE]".
std::string final_events(const ResponseHead& head, FinishReason reason, const Usage& usage);
std::string error_event(const std::string& message);
std::string models_body(const ServedModel& model);

}  // namespace kvrt::serve
