// The recommendation of a validation run: one of the settings that passed, chosen for memory or
// for speed (`kvrt validate --prefer`).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "validate/runner.h"
#include "validate/verdict.h"

namespace kvrt::validate {

enum class Prefer : uint8_t {
  kMemory,  // the smallest KV memory at the model's full context
  kSpeed,   // the fastest decode at the validated context
};
const char* prefer_name(Prefer p);  // "memory", "speed"
std::optional<Prefer> parse_prefer(std::string_view name);

// Among the settings whose verdict is PASS, the one `prefer` asks for: the least memory (ties:
// the earlier setting), or the fastest decode (ties: the least memory, then the earlier). -1 when
// none passed.
int recommend(const std::vector<SettingResult>& results, const std::vector<SettingVerdict>& verdicts, Prefer prefer);

}  // namespace kvrt::validate
