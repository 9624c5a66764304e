#include "acceptance_options.h"

#include "common/error.h"

namespace kvrt::cli {

void AcceptanceOptions::add_to(CommandLine& cl) {
  cl.add("--cases", "DIR", "more cases: DIR/manifest.toml in the acceptance-set format",
         &cases_dir);
  cl.add_flag("--only-cases", "use only the --cases directory, not the bundled set", &only_cases);
  cl.add("--thresholds,--config", "FILE",
         "thresholds (default validation/thresholds.toml in kvrt's data dir; a per-category limit "
         "that no case of the set has is left out with a note)",
         &config);
}

void AcceptanceOptions::apply(const ModelOptions& model, validate::ValidationRequest& req) const {
  if (only_cases && cases_dir.empty())
    throw Error("--only-cases needs --cases DIR", ErrorKind::kUsage);
  req.thresholds_file = config;
  req.cases_dir = cases_dir;
  req.only_cases = only_cases;
  req.max_len = max_len;
  req.seed = seed;
  req.n_threads = model.n_threads;
  req.budget_minutes = budget_minutes;
  req.model_path = model.resolved_path();
}

}  // namespace kvrt::cli
