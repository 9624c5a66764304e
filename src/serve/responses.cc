#include "serve/responses.h"

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>

#include "serve/api_error.h"

namespace kvrt::serve {
namespace {

using nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

const char* reason_name(FinishReason r) { return r == FinishReason::kLength ? "length" : "stop"; }

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.n_prompt},
          {"completion_tokens", u.n_completion},
          {"total_tokens", u.n_prompt + u.n_completion},
          {"prompt_tokens_details", {{"cached_tokens", u.n_cached}}}};
}

json envelope(const ResponseHead& h, const char* object) {
  return {{"id", h.id},
          {"object", object},
          {"created", h.created},
          {"model", h.model->id},
          {"system_fingerprint", h.model->fingerprint()}};
}

bool chat(const ResponseHead& h) { return h.endpoint == Endpoint::kChat; }

std::string event(const json& j) { return "data: " + dump(j) + "\n\n"; }

}  // namespace

ResponseHead make_head(Endpoint endpoint, const ServedModel& model) {
  static std::atomic<uint64_t> counter{0};  // ids unique within this server's life
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  ResponseHead h;
  h.endpoint = endpoint;
  h.created = std::chrono::duration_cast<std::chrono::seconds>(now).count();
  h.id = std::string(endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-") +
         std::to_string(h.created) + "-" + std::to_string(counter.fetch_add(1));
  h.model = &model;
  return h;
}

std::string completion_body(const ResponseHead& h, const std::string& text, FinishReason reason,
                            const Usage& usage) {
  json body = envelope(h, chat(h) ? "chat.completion" : "text_completion");
  json choice = {{"index", 0}, {"finish_reason", reason_name(reason)}, {"logprobs", nullptr}};
  if (chat(h)) choice["message"] = {{"role", "assistant"}, {"content", text}};
  else choice["text"] = text;
  body["choices"] = json::array({choice});
  body["usage"] = usage_json(usage);
  return dump(body);
}

std::string text_event(const ResponseHead& h, const std::string& text, bool first) {
  json chunk = envelope(h, chat(h) ? "chat.completion.chunk" : "text_completion");
  json choice = {{"index", 0}, {"finish_reason", nullptr}, {"logprobs", nullptr}};
  if (chat(h)) {
    choice["delta"] = {{"content", text}};
    if (first) choice["delta"]["role"] = "assistant";
  } else {
    choice["text"] = text;
  }
  chunk["choices"] = json::array({choice});
  return event(chunk);
}

std::string final_events(const ResponseHead& h, FinishReason reason, const Usage& usage) {
  json chunk = envelope(h, chat(h) ? "chat.completion.chunk" : "text_completion");
  json choice = {{"index", 0}, {"finish_reason", reason_name(reason)}, {"logprobs", nullptr}};
  if (chat(h)) choice["delta"] = json::object();
  else choice["text"] = "";
  chunk["choices"] = json::array({choice});
  chunk["usage"] = usage_json(usage);
  return event(chunk) + "data: [DONE]\n\n";
}

std::string error_event(const std::string& message) {
  return "data: " + error_body(500, message) + "\n\ndata: [DONE]\n\n";
}

std::string models_body(const ServedModel& m) {
  json kvrt = {
      {"kv_setting", m.kv_setting}, {"matmul", m.matmul}, {"n_ctx", m.n_ctx}, {"gate", m.gate}};
  if (m.gate == "record") {
    kvrt["validated_ctx"] = m.n_ctx;
    kvrt["record"] = m.record;
  }
  const json entry = {{"id", m.id},
                      {"object", "model"},
                      {"created", 0},
                      {"owned_by", "kvrt"},
                      {"system_fingerprint", m.fingerprint()},
                      {"kvrt", kvrt}};
  return dump({{"object", "list"}, {"data", json::array({entry})}});
}

}  // namespace kvrt::serve
