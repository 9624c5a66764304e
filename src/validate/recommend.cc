#include "validate/recommend.h"

namespace kvrt::validate {

const char* prefer_name(Prefer p) { return p == Prefer::kSpeed ? "speed" : "memory"; }

std::optional<Prefer> parse_prefer(std::string_view name) {
  if (name == "memory") return Prefer::kMemory;
  if (name == "speed") return Prefer::kSpeed;
  return std::nullopt;
}

bool clearly_slower(const Speed& a, const Speed& b) {
  return a.decode_reliable() && b.decode_reliable() &&
         a.decode_tok_s * (1 + a.decode_spread + b.decode_spread) < b.decode_tok_s;
}

int recommend(const std::vector<SettingResult>& results,
              const std::vector<SettingVerdict>& verdicts, Prefer prefer) {
  const auto passed = [&](size_t i) { return verdicts[i].verdict == Verdict::kPass; };
  // The fastest by its rate alone, which then sets the bar the others must clearly miss.
  int fastest = -1;
  for (size_t i = 0; i < results.size(); ++i)
    if (passed(i) && (fastest < 0 ||
                      results[i].speed.decode_tok_s > results[size_t(fastest)].speed.decode_tok_s))
      fastest = int(i);
  // Memory ties keep the earlier setting (settings files list the more precise formats first),
  // not the one a noisy clock favours.
  int best = -1;
  for (size_t i = 0; i < results.size(); ++i) {
    if (!passed(i)) continue;
    if (prefer == Prefer::kSpeed &&
        clearly_slower(results[i].speed, results[size_t(fastest)].speed))
      continue;
    if (best < 0 || results[i].kv.at_context < results[size_t(best)].kv.at_context) best = int(i);
  }
  return best;
}

}  // namespace kvrt::validate
