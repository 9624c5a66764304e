#include "serve/api_error.h"

#include <nlohmann/json.hpp>

namespace kvrt::serve {
namespace {

const char* error_type(int status) {
  if (status == 401) return "authentication_error";
  if (status == 404) return "not_found_error";
  if (status == 503 || status == 429) return "server_overloaded";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

nlohmann::json or_null(const std::string& s) {
  return s.empty() ? nlohmann::json() : nlohmann::json(s);
}

}  // namespace

std::string error_body(int status, const std::string& message, const std::string& param,
                       const std::string& code) {
  const nlohmann::json body = {{"error",
                                {{"message", message},
                                 {"type", error_type(status)},
                                 {"param", or_null(param)},
                                 {"code", or_null(code)}}}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kvrt::serve
