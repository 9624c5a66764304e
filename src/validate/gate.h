// The gate `kvrt run` goes through before it enables a compressed KV setting or bf16 products: a
// PASS record of that setting and matmul precision for this model file, this kvrt version and ISA,
// unchanged thresholds and acceptance set, and a validated context at least as long as the one
// asked for.
#pragma once

#include <string>

#include "ops/matmul.h"

namespace kvrt::validate {

struct GateQuery {
  std::string model_path;
  std::string setting;        // canonical KvConfig::name() as resolved by the cache
  ops::MatmulPrecision matmul = ops::MatmulPrecision::kF32;
  std::string record_path;    // empty = default_record_path() for the model and ISA
  std::string isa;            // the ISA this process runs
  std::string kvrt_version;
  int n_ctx = 0;              // positions the session holds; the record's must be at least this
  int model_context = 0;      // the model's trained context, the longest validate checks (0: unknown)
};

// Returns the record path that allowed the setting. Throws kvrt::Error(kRefused) with one
// sentence that says why and names `kvrt validate` when there is no matching PASS record.
std::string require_pass_record(const GateQuery& q);

}  // namespace kvrt::validate
