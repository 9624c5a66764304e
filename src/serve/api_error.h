// Errors a client gets back as OpenAI-style error objects:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "...", "code": "..."}}
// with the HTTP status that goes with them (400 bad request, 401 bad key, 404 unknown model or
// route, 408 a request read too slowly, 413 a body past the limit, 503 a full queue, 500 a
// failure).
#pragma once

#include <stdexcept>
#include <string>

namespace kvrt::serve {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, const std::string& message, std::string param = "", std::string code = "")
      : std::runtime_error(message),
        status_(status),
        param_(std::move(param)),
        code_(std::move(code)) {}
  int status() const { return status_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }

 private:
  int status_;
  std::string param_, code_;  // empty: null in the object
};

// The error object's JSON text; type follows the status as OpenAI's API names it.
std::string error_body(int status, const std::string& message, const std::string& param = "",
                       const std::string& code = "");
inline std::string error_body(const ApiError& e) {
  return error_body(e.status(), e.what(), e.param(), e.code());
}

}  // namespace kvrt::serve
