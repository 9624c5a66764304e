#include "gate_options.h"

#include <cstdio>

#include "common/error.h"
#include "ops/matmul.h"

namespace kvrt::cli {
namespace {

// " with bf16 products", or nothing for f32 products.
std::string products(ops::MatmulPrecision matmul) {
  return matmul == ops::MatmulPrecision::kF32
             ? ""
             : std::string(" with ") + ops::matmul_precision_name(matmul) + " products";
}

}  // namespace

void GateOptions::add_to(CommandLine& cl) {
  cl.add_flag("--allow-unvalidated",
              "use a setting other than the FP32 baseline (a compressed KV setting, bf16 products) "
              "without a PASS record (prints a warning)",
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

validate::SessionRequest GateOptions::request(const KvOptions& kv,
                                              const std::string& model_path) const {
  if (allow_unvalidated && !trust.empty())
    throw Error(
        "--trust accepts only signed records and --allow-unvalidated skips the record: give one of "
        "them",
        ErrorKind::kUsage);
  validate::SessionRequest r;
  r.model_path = model_path;
  r.record_path = record;
  r.trusted_key_path = trust;
  r.allow_unvalidated = allow_unvalidated;
  if (!validate::is_setting_name(kv.setting)) {
    r.session.kv = kv.config();
    r.session.matmul = kv.matmul_precision();
    return r;
  }
  if (!kv.k.empty() || !kv.v.empty() || !kv.axis.empty() || kv.group >= 0 || kv.residual >= 0 ||
      kv.rotate || !kv.matmul.empty())
    throw Error("--kv " + kv.setting +
                    " takes the whole setting from the validation record; give no other KV or "
                    "--matmul flag with it",
                ErrorKind::kUsage);
  r.name = kv.setting;
  r.on_named = [name = kv.setting](const validate::NamedSetting& n) {
    std::fprintf(stderr, "kvrt: KV setting '%s' is %s (record %s)\n", name.c_str(),
                 n.setting.c_str(), n.record_path.c_str());
  };
  return r;
}

void GateOptions::report(const validate::Admission& admitted) const {
  const std::string setting = admitted.session.kv.name() + products(admitted.session.matmul);
  switch (admitted.kind) {
    case validate::Admission::Kind::kBaseline: return;
    case validate::Admission::Kind::kUnvalidated:
      std::fprintf(stderr,
                   "kvrt: warning: KV setting %s is not checked against a validation record "
                   "(--allow-unvalidated); its output may differ from the FP32 baseline by an "
                   "unmeasured amount\n",
                   setting.c_str());
      return;
    case validate::Admission::Kind::kRecord: break;
  }
  const validate::GatePass& pass = admitted.pass;
  const std::string signer = pass.signer_id.empty() ? "" : ", signed by key " + pass.signer_id;
  std::fprintf(stderr, "kvrt: KV setting %s validated for %d positions (record %s%s)\n",
               setting.c_str(), admitted.session.n_ctx, pass.record_path.c_str(), signer.c_str());
  if (!pass.bundled_thresholds)
    std::fprintf(
        stderr,
        "kvrt: note: that record was made with the thresholds of %s, not the bundled ones\n",
        pass.thresholds_path.c_str());
}

}  // namespace kvrt::cli
