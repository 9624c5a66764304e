#include "validate/record_merge.h"

#include <algorithm>

#include "common/error.h"

namespace kvrt::validate {
namespace {

// "q8/q8 (PASS at 512 positions)".
std::string describe(const RecordSetting& s) {
  std::string d = (s.label.empty() ? s.name : s.label) + " (" + verdict_name(s.verdict) + " at " +
                  std::to_string(s.n_ctx) + " positions";
  if (!s.tune_name.empty()) d += ", named '" + s.tune_name + "'";
  return d + ")";
}

// Why the verdicts of `old` cannot stand beside those of `r`; empty when they can.
std::string binding_change(const Record& old, const Record& r, const PublicKey* signer) {
  if (old.kvrt_version != r.kvrt_version) return "it was made by kvrt " + old.kvrt_version;
  if (old.isa != r.isa) return "it was made with ISA " + old.isa + ", this run uses " + r.isa;
  if (old.thresholds_sha256 != r.thresholds_sha256)
    return "it was made with other thresholds (" + old.thresholds_path + ", sha256 " +
           old.thresholds_sha256.substr(0, 12) + "...)";
  if (old.acceptance_sha256 != r.acceptance_sha256)
    return "it was made with another acceptance set";
  if (signer && old.signer != signer->hex())
    return old.signer.empty() ? "it is not signed, and this run signs what it keeps (--sign)"
                              : "it is signed by another key than this run's (--sign)";
  return "";
}

}  // namespace

std::vector<std::string> merge_earlier(const std::string& path, const Record& old, Record& r,
                                       const PublicKey* signer) {
  if (old.model_sha256 != r.model_sha256)
    throw Error("validation record '" + path + "' holds the verdicts of another model file (" +
                    old.model_path + ", sha256 " + old.model_sha256.substr(0, 12) +
                    "...), which this run would drop; give this "
                    "model's record another path (--record) or move that one away",
                ErrorKind::kUsage);
  std::vector<std::string> notes;
  const auto rerun_of = [&](const RecordSetting& s) {
    return std::find_if(r.settings.begin(), r.settings.end(),
                        [&](const auto& n) { return n.name == s.name && n.matmul == s.matmul; });
  };
  const std::string why = binding_change(old, r, signer);
  if (!why.empty()) {
    std::string dropped;
    for (const RecordSetting& s : old.settings)
      if (rerun_of(s) == r.settings.end()) dropped += (dropped.empty() ? "" : ", ") + describe(s);
    if (!dropped.empty())
      notes.push_back("record '" + path + "': dropping the earlier verdicts of " + dropped + ": " +
                      why);
    return notes;
  }
  // A tune name moves to the setting the new record gives it; a setting re-run keeps its name.
  const auto named_anew = [&](const std::string& n) {
    return std::any_of(r.settings.begin(), r.settings.end(),
                       [&](const auto& x) { return x.tune_name == n; });
  };
  for (RecordSetting s : old.settings) {
    if (!s.tune_name.empty() && named_anew(s.tune_name)) s.tune_name.clear();
    const auto rerun = rerun_of(s);
    if (rerun == r.settings.end()) {
      r.settings.push_back(s);
      continue;
    }
    if (rerun->tune_name.empty()) rerun->tune_name = s.tune_name;
    if (rerun->verdict != s.verdict || rerun->n_ctx != s.n_ctx)
      notes.push_back("record '" + path + "': the earlier verdict " + describe(s) +
                      " is replaced by this run's " + std::string(verdict_name(rerun->verdict)) +
                      " at " + std::to_string(rerun->n_ctx) + " positions");
  }
  return notes;
}

}  // namespace kvrt::validate
