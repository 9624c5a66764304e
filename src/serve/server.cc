#include "serve/server.h"

#include <httplib.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "serve/api_error.h"
#include "serve/deadline_server.h"
#include "serve/prompt.h"
#include "serve/reply.h"
#include "serve/request.h"
#include "serve/responses.h"

namespace kvrt::serve {
namespace {

constexpr const char* kJson = "application/json";
constexpr int kSpareThreads =
    4;  // HTTP workers beyond the slots and the queue: health, metrics, refusals

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status();
  res.set_content(error_body(e), kJson);
}

// The body, up to the size limit. A body that does not arrive within --read-timeout of the
// request's first byte makes the reader fail (DeadlineServer).
std::string read_body(const httplib::Request& req, const httplib::ContentReader& reader,
                      const ServerOptions& opt) {
  const std::string too_big_message = "the request body is longer than " +
                                      std::to_string(opt.max_body_bytes) + " bytes (--max-body)";
  // A declared length past the limit is refused before anything is read (chunked bodies below).
  if (req.get_header_value_count("Content-Length") > 0 &&
      req.get_header_value<uint64_t>("Content-Length") > opt.max_body_bytes)
    throw ApiError(413, too_big_message);
  std::string body;
  bool too_big = false;
  const bool read = reader([&](const char* data, size_t n) {
    too_big = body.size() + n > opt.max_body_bytes;
    if (too_big) return false;
    body.append(data, n);
    return true;
  });
  if (too_big) throw ApiError(413, too_big_message);
  if (!read)
    throw ApiError(408, "the request did not arrive within " + std::to_string(opt.read_timeout_s) +
                            " s (--read-timeout)");
  return body;
}

bool same_key(const std::string& given, const std::string& key) {
  // The time taken does not tell how much of the key was right.
  unsigned char diff = given.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ key[i % key.size()]);
  return diff == 0;
}

const char* status_message(int status) {
  switch (status) {
    case 404: return "no such route (the API is under /v1/: chat/completions, completions, models)";
    case 405: return "this method is not allowed on this route";
    case 408: return "the request did not arrive in time (--read-timeout)";
    case 413: return "the request is too large (--max-body)";
    case 414: return "the request line is too long";
    default: return "the request could not be read";
  }
}

// Metric label of a path: the routes by name, everything else together.
std::string endpoint_label(const std::string& path) {
  for (const char* p :
       {"/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/metrics"})
    if (path == p) return p;
  return "other";
}

}  // namespace

Server::Server(const model::Model& model, std::optional<model::ChatTemplate> chat,
               ServedModel served, const ServerOptions& options, const SchedulerOptions& scheduler)
    : model_(model), chat_(std::move(chat)), served_(std::move(served)), opt_(options) {
  scheduler_ = std::make_unique<Scheduler>(model, scheduler, metrics_);
  served_.n_ctx = scheduler_->n_ctx();
  if (opt_.max_prompt_tokens <= 0 || opt_.max_prompt_tokens > served_.n_ctx - 1)
    opt_.max_prompt_tokens = served_.n_ctx - 1;
  http_ = std::make_unique<DeadlineServer>(std::chrono::seconds(opt_.read_timeout_s));
  // A worker per request that may be running or queued, so that streams never wait for a worker.
  const size_t n_workers = size_t(scheduler.n_slots + scheduler.queue_limit + kSpareThreads);
  http_->new_task_queue = [n_workers] { return new httplib::ThreadPool(n_workers); };
  http_->set_payload_max_length(opt_.max_body_bytes);
  http_->set_read_timeout(opt_.read_timeout_s, 0);
  http_->set_write_timeout(opt_.read_timeout_s, 0);
  add_routes();
}

Server::~Server() { stop(); }

void Server::add_routes() {
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (opt_.api_key.empty() || !req.path.starts_with("/v1/") ||
        same_key(req.get_header_value("Authorization"), "Bearer " + opt_.api_key))
      return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, ApiError(401, "a valid API key is required (Authorization: Bearer KEY)", "",
                             "invalid_api_key"));
    return httplib::Server::HandlerResponse::Handled;
  });
  http_->set_error_handler([](const httplib::Request&, httplib::Response& res) {
    // cpp-httplib answers headers it could not read with 400; here they stopped at the deadline.
    if (res.status == 400 && request_timed_out()) res.status = 408;
    if (res.body.empty())
      res.set_content(error_body(res.status, status_message(res.status)), kJson);
  });
  http_->set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        send_error(res, ApiError(500, "the server failed to answer this request"));
      });
  http_->set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    metrics_.request(endpoint_label(req.path), res.status);
  });
  for (const auto& [path, endpoint] : {std::pair{"/v1/chat/completions", Endpoint::kChat},
                                       std::pair{"/v1/completions", Endpoint::kCompletions}}) {
    http_->Post(path, [this, endpoint = endpoint](const httplib::Request& req,
                                                  httplib::Response& res,
                                                  const httplib::ContentReader& reader) {
      try {
        const GenerationRequest r =
            parse_request(read_body(req, reader, opt_), endpoint, opt_.max_tokens);
        if (!r.model.empty() && r.model != served_.id)
          throw ApiError(404,
                         "the model '" + r.model + "' is not served here; this server serves '" +
                             served_.id + "'",
                         "model", "model_not_found");
        const PromptLimits limits{served_.n_ctx, opt_.max_prompt_tokens, opt_.max_tokens};
        auto job = std::make_shared<Job>(job_input(r, model_, chat_ ? &*chat_ : nullptr, limits));
        if (!scheduler_->submit(job)) {
          res.set_header("Retry-After", "1");
          throw ApiError(503, "every slot is busy and the queue is full; retry later", "",
                         "queue_full");
        }
        send_reply(res, job, make_head(endpoint, served_), r.stream);
      } catch (const ApiError& e) {
        send_error(res, e);
      } catch (const Error& e) {
        send_error(res, ApiError(e.kind() == ErrorKind::kInternal ? 500 : 400, e.what()));
      }
    });
  }
  http_->Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(models_body(served_), kJson);
  });
  http_->Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] != served_.id)
      return send_error(
          res, ApiError(404, "the model '" + std::string(req.matches[1]) + "' is not served here",
                        "model", "model_not_found"));
    const nlohmann::json list = nlohmann::json::parse(models_body(served_));
    res.set_content(list["data"][0].dump(), kJson);
  });
  http_->Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", kJson);
  });
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.render(), "text/plain; version=0.0.4");
  });
}

int Server::bind() {
  const int port = opt_.port == 0 ? http_->bind_to_any_port(opt_.host)
                                  : (http_->bind_to_port(opt_.host, opt_.port) ? opt_.port : -1);
  if (port <= 0)
    throw Error("cannot listen on " + opt_.host + ":" + std::to_string(opt_.port) +
                    " (address in use, not an address of this machine, or a port below 1024 "
                    "without the right)",
                ErrorKind::kUsage);
  return port;
}

void Server::listen() {
  if (!http_->listen_after_bind())
    throw Error("the HTTP server stopped on an error", ErrorKind::kResource);
}

void Server::stop() {
  scheduler_->shutdown();
  http_->stop();
}

}  // namespace kvrt::serve
