#include "validate/task_check.h"

#include <algorithm>
#include <cstdint>
#include <vector>

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

namespace {

constexpr size_t kOver = kMaxPatternLength + 1;  // every length below stops here: no overflow

// The count of a counted repetition "{m}", "{m,}" or "{m,n}" at pattern[i] (its largest, m + 1
// for "{m,}") and its length in the pattern; nullopt where the brace is a literal.
std::optional<std::pair<size_t, size_t>> counted_repetition(std::string_view pattern, size_t i) {
  size_t j = i + 1;
  auto number = [&]() -> std::optional<size_t> {
    size_t value = 0, start = j;
    for (; j < pattern.size() && pattern[j] >= '0' && pattern[j] <= '9'; ++j)
      value = std::min(value * 10 + size_t(pattern[j] - '0'), kOver);
    return j > start ? std::optional(value) : std::nullopt;
  };
  const auto m = number();
  if (!m) return std::nullopt;
  size_t count = *m;
  if (j < pattern.size() && pattern[j] == ',') {
    ++j;
    const auto n = number();
    count = n ? std::max(*m, *n) : std::min(*m + 1, kOver);
  }
  if (j >= pattern.size() || pattern[j] != '}') return std::nullopt;
  return std::make_pair(count, j + 1 - i);
}

// The length of `pattern` with every counted repetition written out ("(ab){3}" counts 12), up to
// kOver: a bound on the states std::regex builds for it, and so on how deep its matcher recurses.
size_t expanded_length(std::string_view pattern) {
  std::vector<size_t> open{0};  // [nesting depth] length so far of each open group
  size_t last = 0;              // length of the item a quantifier would repeat
  for (size_t i = 0; i < pattern.size();) {
    size_t item = 1, step = 1;
    if (pattern[i] == '\\') {
      item = step = std::min<size_t>(2, pattern.size() - i);
    } else if (pattern[i] == '[') {
      size_t j = i + 1;
      while (j < pattern.size() && pattern[j] != ']') j += pattern[j] == '\\' ? 2 : 1;
      item = step = std::min(j + 1, pattern.size()) - i;
    } else if (pattern[i] == '(') {
      open.push_back(0);
    } else if (pattern[i] == ')' && open.size() > 1) {
      item = std::min(open.back() + 2, kOver);
      open.pop_back();
    } else if (const auto rep = pattern[i] == '{' ? counted_repetition(pattern, i) : std::nullopt) {
      step = rep->second;
      item = std::min(last * std::max<size_t>(rep->first, 1), kOver);  // replaces `last`
      open.back() -= std::min(open.back(), last);
    }
    if (pattern[i] != '(') open.back() = std::min(open.back() + item, kOver);
    last = item;
    i += step;
  }
  size_t total = 0;
  for (size_t n : open) total = std::min(total + n, kOver);
  return total;
}

}  // namespace

void compile_pattern(TaskCheck& check) {
  if (check.pattern.empty()) throw Error("the regular expression is empty");
  const std::string quoted = "regular expression '" + check.pattern + "'";
  if (expanded_length(check.pattern) > kMaxPatternLength)
    throw Error("the " + quoted + " is too long: more than " + std::to_string(kMaxPatternLength) +
                " characters with its counted repetitions written out");
  // libstdc++'s polynomial mode matches breadth-first, one set of states per character: its default
  // backtracks, recursing once per character matched, and a long continuation overflowed the stack
  // (and "( [a-z]+)+[.,]" took seconds on a few KiB without the period).
  const auto flags =
      std::regex::ECMAScript | std::regex::nosubs | std::regex_constants::__polynomial;
  try {
    std::regex{check.pattern, flags};  // the pattern alone, so that "a)(b" is an error
    // [\s\S]* lets a match start anywhere within one pass, where regex_search restarts per
    // position.
    check.re = std::make_shared<const std::regex>("[\\s\\S]*(?:" + check.pattern + ")", flags);
  } catch (const std::regex_error& e) {
    if (e.code() == std::regex_constants::error_complexity)
      throw Error("bad " + quoted +
                  ": back-references are not supported (a task check matches in one pass)");
    throw Error("bad " + quoted + ": " + e.what());
  }
}

bool task_passes(const TaskCheck& check, std::string_view continuation) {
  switch (check.kind) {
    case CheckKind::kExact: return continuation.substr(0, check.expect.size()) == check.expect;
    case CheckKind::kRegex:
    case CheckKind::kConstraint: {
      KVRT_ASSERT(check.re);
      const bool found = std::regex_search(continuation.begin(), continuation.end(), *check.re,
                                           std::regex_constants::match_continuous);
      return check.kind == CheckKind::kConstraint && check.forbid ? !found : found;
    }
    case CheckKind::kJsonValid: {
      // An object or array: a bare number or word would let any continuation starting "5 ..." pass.
      const std::string text = check.json_prefix + std::string(continuation);
      const size_t first = text.find_first_not_of(" \t\r\n");
      return first != std::string::npos && (text[first] == '{' || text[first] == '[') &&
             json_value_end(text);
    }
  }
  return false;
}

}  // namespace kvrt::validate
