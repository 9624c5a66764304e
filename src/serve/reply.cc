#include "serve/reply.h"

#include <httplib.h>

#include "serve/api_error.h"

namespace kvrt::serve {
namespace {

constexpr auto kPoll = std::chrono::milliseconds(100);  // the longest a take() waits
constexpr auto kHeartbeat = std::chrono::seconds(1);    // the longest the connection stays silent

struct Reply {
  std::shared_ptr<Job> job;
  ResponseHead head;
  bool stream = false;
  bool first = true;  // no chunk of text sent yet
  std::string text;   // the whole reply, when not streamed
  Clock::time_point last_write = Clock::now();
};

// What to write for the progress `p`; empty: nothing yet.
std::string next_bytes(Reply& r, const JobProgress& p) {
  std::string out;
  if (r.stream) {
    if (!p.text.empty()) out += text_event(r.head, p.text, r.first);
    r.first = r.first && p.text.empty();
    if (p.finished)
      out += p.error.empty() ? final_events(r.head, p.reason, p.usage) : error_event(p.error);
    else if (out.empty() && Clock::now() - r.last_write > kHeartbeat) out = ": generating\n\n";
    return out;
  }
  r.text += p.text;
  if (p.finished)
    return p.error.empty() ? completion_body(r.head, r.text, p.reason, p.usage)
                           : error_body(500, p.error);
  return Clock::now() - r.last_write > kHeartbeat ? " " : "";
}

}  // namespace

void send_reply(httplib::Response& res, std::shared_ptr<Job> job, const ResponseHead& head,
                bool stream) {
  auto reply = std::make_shared<Reply>();
  reply->job = job;
  reply->head = head;
  reply->stream = stream;
  if (stream) res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      stream ? "text/event-stream" : "application/json",
      [reply](size_t, httplib::DataSink& sink) {
        const JobProgress p = reply->job->take(kPoll);
        const std::string out = next_bytes(*reply, p);
        if (!out.empty()) {
          if (!sink.write(out.data(), out.size())) return false;
          reply->last_write = Clock::now();
        }
        if (p.finished) sink.done();
        return true;
      },
      // Called when the response ends, sent or not: a job still running has lost its client.
      [job](bool) { job->cancel(); });
}

}  // namespace kvrt::serve
