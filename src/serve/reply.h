// Sends a queued job's reply on an HTTP response as the scheduler produces it: server-sent events
// (one chunk per piece of text, the finish reason and usage last, then "data: [DONE]") or one
// JSON body at the end. Both use chunked transfer, so that a client that went away is noticed by
// a failed write: while nothing else is sent, a comment line (stream) or a space before the JSON
// body (which JSON allows) goes out every second. A failed write cancels the job.
#pragma once

#include <memory>

#include "serve/job.h"
#include "serve/responses.h"

namespace httplib {
struct Response;
}

namespace kvrt::serve {

void send_reply(httplib::Response& res, std::shared_ptr<Job> job, const ResponseHead& head,
                bool stream);

}  // namespace kvrt::serve
