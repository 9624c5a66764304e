// The gate `kvrt run` goes through before it enables a compressed KV setting or bf16 products: a
// PASS record of that setting and matmul precision for this model file, this kvrt version and ISA,
// unchanged thresholds and acceptance set, and a validated context at least as long as the one
// asked for; with a trusted key, a record signed by that key (validate/signing_key.h).
#pragma once

#include <optional>
#include <string>

#include "ops/matmul.h"
#include "validate/signing_key.h"

namespace kvrt::validate {

struct GateQuery {
  std::string model_path;
  std::string setting;  // canonical KvConfig::name() as resolved by the cache
  ops::MatmulPrecision matmul = ops::MatmulPrecision::kF32;
  std::string record_path;  // empty = default_record_path() for the model and ISA
  std::string isa;          // the ISA this process runs
  std::string kvrt_version;
  int n_ctx = 0;          // positions the session holds; the record's must be at least this
  int model_context = 0;  // the model's trained context, the longest validate checks (0: unknown)
  std::optional<PublicKey> trusted{};  // set: only a record signed by this key counts (--trust)
};

// What allowed the setting.
struct GatePass {
  std::string record_path;
  std::string signer_id;            // the key id of the record's signature; empty when unsigned
  std::string thresholds_path;      // the record's thresholds file
  bool bundled_thresholds = false;  // whether it has the bundled thresholds.toml's content
};

// Throws kvrt::Error(kRefused) with one sentence that says why and names `kvrt validate` when
// there is no matching PASS record, or, with q.trusted, when the record is unsigned or signed by
// another key.
GatePass require_pass_record(const GateQuery& q);

}  // namespace kvrt::validate
