#include "validate/recommend.h"

#include <utility>

namespace kvrt::validate {

const char* prefer_name(Prefer p) { return p == Prefer::kSpeed ? "speed" : "memory"; }

std::optional<Prefer> parse_prefer(std::string_view name) {
  if (name == "memory") return Prefer::kMemory;
  if (name == "speed") return Prefer::kSpeed;
  return std::nullopt;
}

int recommend(const std::vector<SettingResult>& results, const std::vector<SettingVerdict>& verdicts, Prefer prefer) {
  // Lexicographic keys, smaller is better. Memory ties keep the earlier setting (settings files
  // list the more precise formats first), not the one a noisy clock favours.
  auto key = [&](const SettingResult& r) {
    return prefer == Prefer::kSpeed ? std::make_pair(-r.speed.decode_tok_s, r.kv.at_context)
                                    : std::make_pair(r.kv.at_context, 0.0);
  };
  int best = -1;
  for (size_t i = 0; i < results.size(); ++i) {
    if (verdicts[i].verdict != Verdict::kPass) continue;
    if (best < 0 || key(results[i]) < key(results[size_t(best)])) best = int(i);
  }
  return best;
}

}  // namespace kvrt::validate
