#include "gate_options.h"

#include <cstdio>

#include "kvrt_config.h"
#include "simd/kernels.h"
#include "validate/gate.h"

namespace kvrt::cli {

void GateOptions::add_to(CommandLine& cl) {
  cl.add_flag("--allow-unvalidated", "use a compressed KV setting without a PASS record (prints a warning)",
              &allow_unvalidated);
  cl.add("--record", "PATH", "validation record to check (default: the one kvrt validate writes for this model)",
         &record);
}

void GateOptions::check(const std::string& model_path, const kv::KvConfig& kv, int n_ctx) const {
  if (kv.is_f32()) return;
  if (allow_unvalidated) {
    std::fprintf(stderr, "kvrt: warning: KV setting %s is not checked against a validation record "
                 "(--allow-unvalidated); its output may differ from the FP32 cache by an unmeasured amount\n",
                 kv.name().c_str());
    return;
  }
  const validate::GateQuery q{model_path, kv.name(), record, simd::isa_name(), KVRT_VERSION, n_ctx};
  const std::string path = validate::require_pass_record(q);
  std::fprintf(stderr, "kvrt: KV setting %s validated for %d positions (record %s)\n", kv.name().c_str(), n_ctx,
               path.c_str());
}

}  // namespace kvrt::cli
