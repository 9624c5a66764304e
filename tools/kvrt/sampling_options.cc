#include "sampling_options.h"

namespace kvrt::cli {

void SamplingOptions::add_to(CommandLine& cl) {
  cl.add("--temp", "T", "sampling temperature; 0 = greedy (default)", &sampler.temperature, 0.0f,
         100.0f);
  cl.add("--top-k", "K", "sample from the K most likely tokens (0 = all)", &sampler.top_k, 0,
         1 << 24);
  cl.add("--top-p", "P", "nucleus sampling mass (default 1 = off)", &sampler.top_p, 1e-6f, 1.0f);
  cl.add("--seed", "S", "random seed for sampling (default 0)", &sampler.seed);
}

}  // namespace kvrt::cli
