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
// the earlier setting), or the fastest decode. For speed, a setting counts as fast as the fastest
// unless its decode is slower by more than both spreads together with both rates reliable
// (validate/speed.h): among those the least memory wins (then the earlier), so a difference the
// machine's load could have made never decides. -1 when none passed.
int recommend(const std::vector<SettingResult>& results,
              const std::vector<SettingVerdict>& verdicts, Prefer prefer);

// Whether decode at `a` is reliably slower than at `b`: both rates reliable and a's slower by more
// than their spreads together.
bool clearly_slower(const Speed& a, const Speed& b);

}  // namespace kvrt::validate
