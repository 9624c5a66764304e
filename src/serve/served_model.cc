#include "serve/served_model.h"

#include "kvrt_config.h"

namespace kvrt::serve {

std::string ServedModel::fingerprint() const {
  const std::string base =
      std::string("kvrt-") + KVRT_VERSION + " | kv " + kv_setting + " | matmul " + matmul;
  if (gate == "record") return base + " | validated ctx " + std::to_string(n_ctx);
  return base + " | ctx " + std::to_string(n_ctx) + ", " +
         (gate == "baseline" ? "FP32 baseline" : "UNVALIDATED");
}

}  // namespace kvrt::serve
