// One whole `kvrt validate` run as a library call, shared by the CLI and the C API: read the
// thresholds, the acceptance set and the candidate settings, replay the cases, judge each setting
// and build the record `kvrt run` checks.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/model.h"
#include "validate/case_set.h"
#include "validate/record.h"
#include "validate/report.h"
#include "validate/runner.h"
#include "validate/thresholds.h"

namespace kvrt::validate {

struct ValidationRequest {
  std::string model_path;         // the file `model` was opened from
  std::vector<Setting> settings;  // empty: read settings_file
  std::string settings_file;      // empty: <validation dir>/settings.toml
  std::string thresholds_file;    // empty: <validation dir>/thresholds.toml
  std::string cases_dir;          // more cases beside the bundled set
  bool only_cases = false;        // use only cases_dir
  std::vector<std::string>
      case_ids;     // non-empty: only the cases with these ids (kvrt tune's verdict slice)
  int max_len = 0;  // the context to validate at (-c); 0: the model's, capped by the
                    // thresholds file's [context] max and by available memory
  std::optional<uint64_t> seed;  // bootstrap seed; default the thresholds file's
  int n_threads = 0;             // 0: all cores (one for models under 64 MiB); at most kMaxThreads
  double budget_minutes = 0;     // > 0: run what fits; what it could not decide is INCONCLUSIVE
  Prefer prefer = Prefer::kMemory;  // what the recommendation among the PASSing settings favours
  std::function<void(const Progress&)> progress;
};

// Everything a run produced; `report` points into this object, so it is neither copied nor moved.
struct Validation {
  Thresholds thresholds;
  CaseSet case_set;
  std::vector<Setting> settings;  // the request's, or those of the settings file
  std::vector<Case> cases;
  RunResult run;
  Report report;
  Record record;  // verdicts of this run only (merge_earlier adds older ones)

  Validation() = default;
  Validation(const Validation&) = delete;
  Validation& operator=(const Validation&) = delete;
  bool all_pass() const;
};

// Checks the request against the model (context within the model's, memory for it, thread count),
// reads the request's files (errors name file and line), chooses the context (report.max_len) and
// hashes the model file, all before running anything.
void load_inputs(const model::Model& model, const ValidationRequest& req, Validation& v);

// The thread count a run uses: `requested`, or for 0 all cores (one for models under 64 MiB).
int run_threads(const model::Model& model, int requested);

// The cases of v.case_set for the context v.report.max_len and the model's tokenizer and chat
// format; those too long are named in v.report.skipped.
std::vector<Case> build_model_cases(const model::Model& model, Validation& v);

// Replays v.settings and judges them. Call load_inputs first.
void run(const model::Model& model, const ValidationRequest& req, Validation& v);

// The path the record of this run goes to (`record_path`, or the default for the model file and
// ISA), checked before the run: a path kvrt may write (see validate/output_file.h), its lock file
// "<record>.lock" a regular file kvrt can lock, and an earlier record there readable and of this
// model file, since its verdicts are kept. Call load_inputs first.
std::string prepare_record(const Validation& v, const std::string& record_path);

// Writes `r` to `path` (signed with `key` when given) with the verdicts of the earlier record there
// for settings not re-run, each with the context it was validated at (validate/record_merge.h), all
// under the record's lock, so that validate runs writing one record at once keep every verdict.
// Returns one sentence per earlier verdict dropped or changed, for the user. An earlier record that
// cannot be read, or that belongs to another model file, is an error, and the file is left as it
// is.
std::vector<std::string> save_record(const std::string& path, Record r,
                                     const SecretKey* key = nullptr);

}  // namespace kvrt::validate
