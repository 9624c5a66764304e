#include "validate/task_check.h"

#include "common/error.h"
#include "validate/json_parse.h"

namespace kvrt::validate {

const char* check_name(CheckKind k) {
  switch (k) {
    case CheckKind::kExact: return "exact";
    case CheckKind::kRegex: return "regex";
    case CheckKind::kJsonValid: return "json_valid";
    case CheckKind::kConstraint: return "constraint";
  }
  return "?";
}

std::optional<CheckKind> parse_check(std::string_view name) {
  for (CheckKind k : kAllCheckKinds)
    if (name == check_name(k)) return k;
  return std::nullopt;
}

void compile_pattern(TaskCheck& check) {
  if (check.pattern.empty()) throw Error("the regular expression is empty");
  try {
    check.re = std::make_shared<const std::regex>(check.pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw Error("bad regular expression '" + check.pattern + "': " + e.what());
  }
}

bool task_passes(const TaskCheck& check, std::string_view continuation) {
  switch (check.kind) {
    case CheckKind::kExact:
      return continuation.substr(0, check.expect.size()) == check.expect;
    case CheckKind::kRegex:
    case CheckKind::kConstraint: {
      KVRT_ASSERT(check.re);
      const bool found = std::regex_search(continuation.begin(), continuation.end(), *check.re);
      return check.kind == CheckKind::kConstraint && check.forbid ? !found : found;
    }
    case CheckKind::kJsonValid: {
      // An object or array: a bare number or word would let any continuation starting "5 ..." pass.
      const std::string text = check.json_prefix + std::string(continuation);
      const size_t first = text.find_first_not_of(" \t\r\n");
      return first != std::string::npos && (text[first] == '{' || text[first] == '[') && json_value_end(text);
    }
  }
  return false;
}

}  // namespace kvrt::validate
