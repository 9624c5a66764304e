// The acceptance-set options kvrt validate and kvrt tune share, and what they put into a
// validate::ValidationRequest. -c, --budget, --seed and --record are added by each command, whose
// help says what they mean there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "command_line.h"
#include "model_options.h"
#include "validate/validation.h"

namespace kvrt::cli {

struct AcceptanceOptions {
  std::string cases_dir, config, record;
  bool only_cases = false;
  int max_len = 0;               // 0: validate's default context
  float budget_minutes = 0;      // 0: no budget
  std::optional<uint64_t> seed;  // none: the thresholds file's

  void add_to(CommandLine& cl);  // --cases, --only-cases, --thresholds (alias --config)
  // Checks the combination (after parsing) and fills the request's acceptance-set fields.
  void apply(const ModelOptions& model, validate::ValidationRequest& req) const;
};

}  // namespace kvrt::cli
