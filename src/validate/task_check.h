// Task checks: pass/fail tests of a case's greedy continuation, run on the baseline's and on every
// setting's own continuation, so that a setting's cost reads as points of pass rate on a suite.
//   exact       the continuation begins with `expect`, byte for byte (spaces included)
//   regex       `pattern` (ECMAScript, no back-references) matches somewhere in the continuation
//   json_valid  `json_prefix` followed by the continuation begins with one complete JSON object or
//               array (strict RFC 8259, validate/json_parse.h); what follows it is not read
//   constraint  an instruction at the start of a long prompt, checked at the end: `pattern` must
//               match in the continuation, or with `forbid` must not
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>

namespace kvrt::validate {

enum class CheckKind : uint8_t { kExact, kRegex, kJsonValid, kConstraint };

constexpr CheckKind kAllCheckKinds[] = {CheckKind::kExact, CheckKind::kRegex, CheckKind::kJsonValid,
                                        CheckKind::kConstraint};

const char* check_name(CheckKind k);  // TOML and report key, e.g. "json_valid"
std::optional<CheckKind> parse_check(std::string_view name);

struct TaskCheck {
  CheckKind kind = CheckKind::kExact;
  std::string expect;       // exact
  std::string pattern;      // regex, constraint: as written
  bool forbid = false;      // constraint: the pattern must not match
  std::string json_prefix;  // json_valid: the part of the value the prompt already wrote
  std::shared_ptr<const std::regex>
      re;  // compiled `pattern`; shared by the cases built from one definition
};

// The longest pattern, counted with its repetitions written out ("(ab){3}" is 12 long). Matching
// takes time linear in the continuation and stack in proportion to this length, never to the
// continuation's (4096 generated tokens are tens of KiB).
constexpr size_t kMaxPatternLength = 256;

// Compiles `pattern` into check.re; throws kvrt::Error "bad regular expression '...': reason" or
// "... is too long" beyond kMaxPatternLength.
void compile_pattern(TaskCheck& check);

// Whether `continuation` (the text the greedy tokens add after the prompt) passes the check.
bool task_passes(const TaskCheck& check, std::string_view continuation);

}  // namespace kvrt::validate
