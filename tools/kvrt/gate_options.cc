#include "gate_options.h"

#include <cstdio>
#include <optional>

#include "kvrt_config.h"
#include "common/error.h"
#include "simd/kernels.h"
#include "validate/gate.h"
#include "validate/named_setting.h"
#include "validate/signing_key.h"

namespace kvrt::cli {

void GateOptions::add_to(CommandLine& cl) {
  cl.add_flag(
      "--allow-unvalidated",
      "use a compressed KV setting or bf16 products without a PASS record (prints a warning)",
      &allow_unvalidated);
  cl.add("--record", "PATH",
         "validation record to check (default: the one kvrt validate writes for this model)",
         &record);
  cl.add(
      "--trust", "PUBKEY",
      "accept only a validation record signed by this public key (a .pub file of kvrt keygen; see "
      "kvrt validate --sign)",
      &trust);
}

GateResult GateOptions::check(const std::string& model_path, const kv::KvConfig& kv,
                              ops::MatmulPrecision matmul, int n_ctx, int model_context) const {
  if (allow_unvalidated && !trust.empty())
    throw Error(
        "--trust accepts only signed records and --allow-unvalidated skips the record: give one of "
        "them",
        ErrorKind::kUsage);
  std::optional<validate::PublicKey> trusted;
  if (!trust.empty()) trusted = validate::read_public_key(trust);
  if (kv.is_f32() && matmul == ops::MatmulPrecision::kF32) return {GateResult::Kind::kBaseline, ""};
  const std::string products =
      matmul == ops::MatmulPrecision::kF32
          ? ""
          : std::string(" with ") + ops::matmul_precision_name(matmul) + " products";
  if (allow_unvalidated) {
    std::fprintf(stderr,
                 "kvrt: warning: KV setting %s%s is not checked against a validation record "
                 "(--allow-unvalidated); its output may differ from the FP32 baseline by an "
                 "unmeasured amount\n",
                 kv.name().c_str(), products.c_str());
    return {GateResult::Kind::kUnvalidated, ""};
  }
  const validate::GateQuery q{model_path,   kv.name(), matmul,        record, simd::isa_name(),
                              KVRT_VERSION, n_ctx,     model_context, trusted};
  const validate::GatePass pass = validate::require_pass_record(q);
  const std::string signer = pass.signer_id.empty() ? "" : ", signed by key " + pass.signer_id;
  std::fprintf(stderr, "kvrt: KV setting %s%s validated for %d positions (record %s%s)\n",
               kv.name().c_str(), products.c_str(), n_ctx, pass.record_path.c_str(),
               signer.c_str());
  if (!pass.bundled_thresholds)
    std::fprintf(
        stderr,
        "kvrt: note: that record was made with the thresholds of %s, not the bundled ones\n",
        pass.thresholds_path.c_str());
  return {GateResult::Kind::kRecord, pass.record_path};
}

ChosenSetting GateOptions::setting(const KvOptions& kv, const std::string& model_path) const {
  if (!validate::is_setting_name(kv.setting)) return {kv.config(), kv.matmul_precision()};
  if (!kv.k.empty() || !kv.v.empty() || !kv.axis.empty() || kv.group >= 0 || kv.residual >= 0 ||
      kv.rotate || !kv.matmul.empty())
    throw Error("--kv " + kv.setting +
                    " takes the whole setting from the validation record; give no other KV or "
                    "--matmul flag with it",
                ErrorKind::kUsage);
  const validate::NamedSetting n =
      validate::find_named_setting(model_path, record, simd::isa_name(), kv.setting);
  std::fprintf(stderr, "kvrt: KV setting '%s' is %s (record %s)\n", kv.setting.c_str(),
               n.setting.c_str(), n.record_path.c_str());
  ops::require_matmul_precision(n.matmul);
  return {kv::parse_setting(n.setting), n.matmul};
}

}  // namespace kvrt::cli
