// kvrt serve's HTTP server (cpp-httplib): the OpenAI-style routes over one Scheduler.
//   POST /v1/chat/completions, POST /v1/completions  (stream or whole)
//   GET /v1/models, GET /health, GET /metrics        (Prometheus text)
// With an API key every /v1/ route needs "Authorization: Bearer KEY". Request bodies are limited
// in size, and whole requests (line, headers, body) in the time they take to arrive
// (DeadlineServer); a bad request gets an OpenAI-style error object and never stops the server or
// disturbs the other slots.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "text/chat_template.h"
#include "model/model.h"
#include "serve/metrics.h"
#include "serve/scheduler.h"
#include "serve/served_model.h"

namespace httplib {
class Server;
}

namespace kvrt::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                  // 0: any free port (bind() returns it)
  std::string api_key;              // empty: no authentication
  size_t max_body_bytes = 1 << 20;  // a longer body is refused with 413
  int read_timeout_s = 10;          // the most a request may take to arrive, from its first byte
  int max_tokens = 4096;            // the most a request may ask for, and its default
  int max_prompt_tokens = 0;        // 0: the context minus one
};

class Server {
 public:
  // `chat`: the chat format (nullopt: chat requests are refused).
  Server(const model::Model& model, std::optional<model::ChatTemplate> chat, ServedModel served,
         const ServerOptions& options, const SchedulerOptions& scheduler);
  ~Server();

  // Binds the address; returns the port. kvrt::Error(kUsage) when it cannot be bound.
  int bind();
  // Serves until stop(). kvrt::Error(kResource) when the server fails.
  void listen();
  // From any thread: running generations end with an error, then the server stops.
  void stop();

 private:
  void add_routes();
  const model::Model& model_;
  std::optional<model::ChatTemplate> chat_;
  ServedModel served_;
  ServerOptions opt_;
  Metrics metrics_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<httplib::Server> http_;
};

}  // namespace kvrt::serve
