// The validation gate's flags shared by run, chat and serve: any setting but the FP32 baseline
// (validate/open_session.h) needs a PASS record from `kvrt validate` for this model file, kvrt
// version, ISA and context length; --allow-unvalidated skips the check and says so on every run;
// --record names the record to check; --trust accepts only a record signed by that public key
// (docs/signed-records.md).
#pragma once

#include <string>

#include "command_line.h"
#include "kv_options.h"
#include "validate/open_session.h"

namespace kvrt::cli {

struct GateOptions {
  bool allow_unvalidated = false;
  std::string record;  // empty = the one kvrt validate writes for the model
  std::string trust;  // a public key file: only records signed by its key count; empty = any record

  void add_to(CommandLine& cl);
  // What to open the session with: the setting of the KV and --matmul flags, or for `--kv NAME`
  // the one named NAME in the record (`kvrt tune` writes it; the session's opening says which it
  // is on stderr), gated as any other. The caller sets n_ctx and threads. A name with other KV or
  // --matmul flags, a bad field, or --trust with --allow-unvalidated, is a kvrt::Error(kUsage).
  validate::SessionRequest request(const KvOptions& kv, const std::string& model_path) const;
  // Prints what let the setting through: which record allowed it, who signed it, a note when it
  // was made with other thresholds than the bundled ones, or the warning of --allow-unvalidated.
  void report(const validate::Admission& admitted) const;
};

}  // namespace kvrt::cli
