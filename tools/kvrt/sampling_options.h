// Sampling flags shared by run and chat: --temp, --top-k, --top-p, --seed.
#pragma once

#include "command_line.h"
#include "model/sampler.h"

namespace kvrt::cli {

struct SamplingOptions {
  model::SamplerOptions sampler;  // greedy by default

  void add_to(CommandLine& cl);
};

}  // namespace kvrt::cli
