#include "serve/request.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "serve/api_error.h"

namespace kvrt::serve {
namespace {

using nlohmann::json;

constexpr size_t kMaxStops = 4;  // as OpenAI's API allows

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw ApiError(400, message, param);
}

const json* field(const json& body, const char* name) {
  const auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

std::string text_content(const json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) bad(param, "'" + param + "' must be a string or an array of text parts");
  // The array form: [{"type": "text", "text": "..."}, ...]; only text parts exist for this model.
  std::string text;
  for (const json& part : content) {
    const json* type = part.is_object() ? field(part, "type") : nullptr;
    const json* value = part.is_object() ? field(part, "text") : nullptr;
    if (!type || *type != "text" || !value || !value->is_string())
      bad(param, "each part of '" + param + "' must be {\"type\": \"text\", \"text\": STRING}");
    text += value->get<std::string>();
  }
  return text;
}

std::vector<model::ChatMessage> read_messages(const json& body) {
  const json* list = field(body, "messages");
  if (!list) bad("messages", "'messages' is required");
  if (!list->is_array()) bad("messages", "'messages' must be an array");
  if (list->empty()) bad("messages", "'messages' must not be empty");
  std::vector<model::ChatMessage> out;
  for (size_t i = 0; i < list->size(); ++i) {
    const json& m = (*list)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) bad(where, "'" + where + "' must be an object");
    const json* role = field(m, "role");
    if (!role || !role->is_string()) bad(where + ".role", "'" + where + ".role' must be a string");
    std::string r = role->get<std::string>();
    if (r == "developer") r = "system";  // OpenAI's newer name for the system message
    if (r != "system" && r != "user" && r != "assistant")
      bad(where + ".role", "unknown role '" + role->get<std::string>() +
                               "' (use system, developer, user or assistant)");
    const json* content = field(m, "content");
    if (!content && r != "assistant")
      bad(where + ".content", "'" + where + ".content' is required");
    out.push_back({r, content ? text_content(*content, where + ".content") : ""});
  }
  return out;
}

std::string read_prompt(const json& body) {
  const json* p = field(body, "prompt");
  if (!p) bad("prompt", "'prompt' is required");
  if (p->is_string()) return p->get<std::string>();
  if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) return (*p)[0].get<std::string>();
  bad("prompt", "'prompt' must be a string (or an array of one string)");
}

double number(const json& body, const char* name, double lo, double hi, double fallback) {
  const json* v = field(body, name);
  if (!v) return fallback;
  if (!v->is_number()) bad(name, std::string("'") + name + "' must be a number");
  const double x = v->get<double>();
  if (!(x >= lo && x <= hi))
    bad(name, std::string("'") + name + "' must be between " + json(lo).dump() + " and " +
                  json(hi).dump());
  return x;
}

std::optional<int64_t> integer(const json& body, const char* name, int64_t lo, int64_t hi) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) bad(name, std::string("'") + name + "' must be an integer");
  // nlohmann keeps non-negative integers unsigned and negative ones signed.
  const bool out = v->is_number_unsigned()
                       ? v->get<uint64_t>() > uint64_t(hi) ||
                             v->get<uint64_t>() < uint64_t(std::max<int64_t>(lo, 0))
                       : v->get<int64_t>() < lo || v->get<int64_t>() > hi;
  if (out)
    bad(name, std::string("'") + name + "' must be from " + std::to_string(lo) + " to " +
                  std::to_string(hi));
  return v->get<int64_t>();
}

std::vector<std::string> read_stop(const json& body) {
  const json* s = field(body, "stop");
  if (!s) return {};
  std::vector<std::string> out;
  if (s->is_string()) out.push_back(s->get<std::string>());
  else if (s->is_array() && s->size() <= kMaxStops) {
    for (const json& x : *s) {
      if (!x.is_string()) bad("stop", "'stop' must be a string or an array of strings");
      out.push_back(x.get<std::string>());
    }
  } else {
    bad("stop", "'stop' must be a string or an array of at most 4 strings");
  }
  for (const std::string& x : out)
    if (x.empty()) bad("stop", "a 'stop' string must not be empty");
  return out;
}

bool flag(const json& body, const char* name) {
  const json* v = field(body, name);
  if (!v) return false;
  if (!v->is_boolean()) bad(name, std::string("'") + name + "' must be true or false");
  return v->get<bool>();
}

void read_sampling(const json& body, GenerationRequest& r) {
  r.sampling.temperature = float(number(body, "temperature", 0.0, 2.0, 0.0));
  r.sampling.top_p = float(number(body, "top_p", 0.0, 1.0, 1.0));
  if (r.sampling.top_p == 0.0f) bad("top_p", "'top_p' must be above 0");
  r.sampling.top_k = int(integer(body, "top_k", 0, std::numeric_limits<int>::max()).value_or(0));
  r.sampling.seed =
      uint64_t(integer(body, "seed", 0, std::numeric_limits<int64_t>::max()).value_or(0));
}

}  // namespace

GenerationRequest parse_request(std::string_view text, Endpoint endpoint, int max_tokens_limit) {
  json body;
  try {
    body = json::parse(text);
  } catch (const json::parse_error& e) {
    throw ApiError(400, std::string("the body is not valid JSON: ") + e.what());
  }
  if (!body.is_object()) bad("", "the body must be a JSON object");
  GenerationRequest r;
  r.endpoint = endpoint;
  if (const json* m = field(body, "model")) {
    if (!m->is_string()) bad("model", "'model' must be a string");
    r.model = m->get<std::string>();
  }
  if (endpoint == Endpoint::kChat) r.messages = read_messages(body);
  else r.prompt = read_prompt(body);
  // max_completion_tokens is the chat API's newer name for max_tokens.
  const char* max_name =
      field(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  if (const auto n = integer(body, max_name, 1, max_tokens_limit)) r.max_tokens = int(*n);
  (void)integer(body, "n", 1, 1);  // one choice per request
  read_sampling(body, r);
  r.stop = read_stop(body);
  r.stream = flag(body, "stream");
  r.ignore_eos = flag(body, "ignore_eos");
  return r;
}

}  // namespace kvrt::serve
