#include "model_options.h"

#include <algorithm>

#include "model/session.h"
#include "simd/kernels.h"

namespace kvrt::cli {

void ModelOptions::add_to(CommandLine& cl, bool with_ctx) {
  cl.add("-m,--model", "FILE",
         "GGUF model (default: $KVRT_MODEL, else models/stories260K.gguf in kvrt's data dir; see "
         "kvrt info)",
         &path);
  if (with_ctx)
    cl.add("-c,--ctx", "N", "context length in positions (default: the model's, at most 4096)",
           &n_ctx, 1, 1 << 24);
  cl.add("-t,--threads", "N", "threads (default: all cores, at most 256)", &n_threads, 1,
         model::kMaxThreads);
}

std::string ModelOptions::resolved_path() const {
  return path.empty() ? model::find_default_model() : path;
}

std::unique_ptr<model::Model> ModelOptions::load() const {
  (void)simd::isa_name();  // a bad KVRT_ISA fails before any file is read or anything is printed
  return std::make_unique<model::Model>(resolved_path());
}

int ModelOptions::ctx_for(const model::Model& m) const {
  return n_ctx > 0 ? n_ctx : std::min(m.config().n_ctx_train, kDefaultCtx);
}

}  // namespace kvrt::cli
