// -m/--model, -c/--ctx and -t/--threads, shared by the subcommands that load a model.
#pragma once

#include <memory>
#include <string>

#include "command_line.h"
#include "model/model.h"

namespace kvrt::cli {

struct ModelOptions {
  std::string path;   // empty = the default model
  int n_ctx = 0;      // 0 = min(model context length, kDefaultCtx)
  int n_threads = 0;  // 0 = all cores

  static constexpr int kDefaultCtx = 4096;

  void add_to(CommandLine& cl, bool with_ctx = true);
  std::string resolved_path() const;
  std::unique_ptr<model::Model> load() const;
  int ctx_for(const model::Model& m) const;
};

}  // namespace kvrt::cli
