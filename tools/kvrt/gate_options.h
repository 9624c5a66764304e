// The validation gate's flags shared by run and chat: a compressed KV setting or bf16 products need
// a PASS record from `kvrt validate` for this model file, kvrt version, ISA and context length;
// --allow-unvalidated skips the check and says so on every run; --record names the record to check;
// --trust accepts only a record signed by that public key (docs/signed-records.md).
#pragma once

#include <string>

#include "command_line.h"
#include "kv/kv_config.h"
#include "kv_options.h"
#include "ops/matmul.h"

namespace kvrt::cli {

struct ChosenSetting {
  kv::KvConfig kv;
  ops::MatmulPrecision matmul = ops::MatmulPrecision::kF32;
};

// What let a setting through check(): the FP32 baseline needs no record; --allow-unvalidated
// skipped it; or a PASS record (its path).
struct GateResult {
  enum class Kind { kBaseline, kUnvalidated, kRecord } kind = Kind::kBaseline;
  std::string record_path;
};

struct GateOptions {
  bool allow_unvalidated = false;
  std::string record;  // empty = the one kvrt validate writes for the model
  std::string trust;  // a public key file: only records signed by its key count; empty = any record

  void add_to(CommandLine& cl);
  // Returns when `kv` with products at `matmul` may be used with the model at `model_path` for a
  // context of n_ctx positions (printing which record allowed it, who signed it, a note when it was
  // made with other thresholds than the bundled ones, or a warning); throws kvrt::Error(kRefused)
  // otherwise. model_context: the model's trained context, the longest a record can extend to.
  GateResult check(const std::string& model_path, const kv::KvConfig& kv,
                   ops::MatmulPrecision matmul, int n_ctx, int model_context) const;
  // The setting of the KV and --matmul flags, or for `--kv NAME` the one named NAME in the record
  // (--record, or the model's default; `kvrt tune` writes it), which check() then gates as any
  // other. A name with other KV or --matmul flags is a kvrt::Error(kUsage); a record without it,
  // kvrt::Error(kRefused).
  ChosenSetting setting(const KvOptions& kv, const std::string& model_path) const;
};

}  // namespace kvrt::cli
