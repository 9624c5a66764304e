// Errors that cross a boundary (file, CLI, TOML, oneDNN) carry one clear sentence.
// They are thrown as kvrt::Error and turned into a message and exit code by the frontends
// (tools/kvrt) or into an error code by the C API; library code never calls exit().
#pragma once

#include <stdexcept>
#include <string>

namespace kvrt {

// What kind of failure: the CLI maps these to exit codes, the C API to error codes.
enum class ErrorKind {
  kInput,     // bad file, malformed data, unsupported content
  kUsage,     // bad flag or argument value
  kRefused,   // a setting was refused by the validation gate
  kResource,  // memory cap exceeded, context full
  kInternal,  // a third-party library failed (e.g. oneDNN)
};

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message, ErrorKind kind = ErrorKind::kInput)
      : std::runtime_error(std::move(message)), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// Always-on invariant check for internal logic (not for user input).
[[noreturn]] void assert_fail(const char* expr, const char* file, int line);

}  // namespace kvrt

// The file's name without its directory: no build or source path ends up in the library.
#define KVRT_ASSERT(cond) ((cond) ? (void)0 : ::kvrt::assert_fail(#cond, __FILE_NAME__, __LINE__))
