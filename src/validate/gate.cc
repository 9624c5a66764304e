#include "validate/gate.h"

#include <filesystem>

#include "common/error.h"
#include "common/sha256.h"
#include "validate/case_set.h"
#include "validate/record.h"
#include "validate/settings.h"

namespace kvrt::validate {
namespace {

// "KV setting k=q8,..." or "KV setting k=f32,... with bf16 products".
std::string setting_text(const GateQuery& q) {
  std::string s = "KV setting " + q.setting;
  if (q.matmul != ops::MatmulPrecision::kF32)
    s += std::string(" with ") + ops::matmul_precision_name(q.matmul) + " products";
  return s;
}

[[noreturn]] void refuse(const GateQuery& q, const std::string& why) {
  throw Error(setting_text(q) + " is not validated: " + why + ". Run `kvrt validate -m " +
                  q.model_path +
                  "` (add the same KV and --matmul flags to validate just this setting), or pass " +
                  "--allow-unvalidated to use it anyway",
              ErrorKind::kRefused);
}

// The validate command that extends record `r` to q.n_ctx positions on the same inputs: its record
// file, thresholds and acceptance set (the bundled cases, --cases, --only-cases), so that the new
// verdicts land where the gate reads them.
std::string extend_command(const GateQuery& q, const Record& r) {
  // The bundled files' paths as a record holds them (absolute, normalised); empty without a data
  // directory, and then every file of the record is named explicitly below.
  std::string thresholds, cases;
  try {
    const std::string dir = default_validation_dir();
    thresholds = std::filesystem::absolute(dir + "/thresholds.toml").lexically_normal().string();
    cases = std::filesystem::absolute(dir + "/cases").lexically_normal().string();
  } catch (const Error&) {
  }
  std::string cmd = "kvrt validate -m " + q.model_path + " -c " + std::to_string(q.n_ctx);
  if (!q.record_path.empty()) cmd += " --record " + q.record_path;
  if (r.thresholds_path != thresholds) cmd += " --config " + r.thresholds_path;
  const bool has_bundled = !r.case_dirs.empty() && !cases.empty() && r.case_dirs.front() == cases;
  for (size_t i = has_bundled ? 1 : 0; i < r.case_dirs.size(); ++i)
    cmd += " --cases " + r.case_dirs[i];
  if (!has_bundled) cmd += " --only-cases";
  return cmd;
}

// A PASS at a shorter context says nothing about the positions beyond it, where facts early in a
// long prompt get lost: that is refused with the command that extends the validation, or, past
// the model's own context (which validate does not go beyond), with what is left.
[[noreturn]] void refuse_context(const GateQuery& q, const std::string& path, const Record& r,
                                 int validated) {
  const std::string head = setting_text(q) + " is validated up to a context of " +
                           std::to_string(validated) + " positions (record '" + path +
                           "'), not the " + std::to_string(q.n_ctx) + " asked for";
  const std::string rest = "use a context of at most " + std::to_string(validated) +
                           " positions (-c), or pass --allow-unvalidated to use it anyway";
  if (q.model_context > 0 && q.n_ctx > q.model_context)
    throw Error(head + ", which is beyond the model's context of " +
                    std::to_string(q.model_context) +
                    " positions, the longest kvrt validate checks: " + rest,
                ErrorKind::kRefused);
  throw Error(
      head + ". Run `" + extend_command(q, r) +
          "` (add the same KV and --matmul flags to validate just this setting) to extend it, " +
          rest,
      ErrorKind::kRefused);
}

// A trusted key accepts only a record whose signature by that key verified (read_record checked
// it).
void check_signer(const GateQuery& q, const std::string& path, const Record& r) {
  if (!q.trusted) return;
  const std::string trusted = "the trusted key " + q.trusted->id() + " (--trust)";
  if (r.signer.empty())
    throw Error(setting_text(q) + " is not validated: record '" + path +
                    "' is not signed, and only records signed by " + trusted +
                    " are accepted. Sign it with `kvrt validate --sign KEYFILE`",
                ErrorKind::kRefused);
  if (r.signer != q.trusted->hex()) {
    PublicKey other;
    from_hex(r.signer, other.bytes.data(), other.bytes.size());
    throw Error(setting_text(q) + " is not validated: record '" + path + "' is signed by key " +
                    other.id() + ", not by " + trusted,
                ErrorKind::kRefused);
  }
}

// Whether `sha256` is that of the bundled thresholds.toml (false without a data directory).
bool is_bundled_thresholds(const std::string& sha256) {
  try {
    return sha256_file(default_validation_dir() + "/thresholds.toml") == sha256;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

GatePass require_pass_record(const GateQuery& q) {
  const std::string model_sha = sha256_file(q.model_path);
  const std::string path =
      q.record_path.empty() ? default_record_path(model_sha, q.isa) : q.record_path;
  Record r;
  try {
    r = read_record(path);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kRefused)
      throw;  // not a record at all (a FIFO, a directory...): bad input
    refuse(q, e.what());
  }
  check_signer(q, path, r);
  if (r.model_sha256 != model_sha)
    refuse(q, "record '" + path + "' was made for another model file (sha256 " +
                  r.model_sha256.substr(0, 12) + "...)");
  if (r.kvrt_version != q.kvrt_version)
    refuse(q, "record '" + path + "' was made by kvrt " + r.kvrt_version);
  if (r.isa != q.isa)
    refuse(q, "record '" + path + "' was made with ISA " + r.isa + ", this process runs " + q.isa);
  std::string thresholds_sha;
  try {
    thresholds_sha = sha256_file(r.thresholds_path);
  } catch (const Error& e) {
    refuse(q,
           "the thresholds file of record '" + path + "' can no longer be read (" + e.what() + ")");
  }
  if (thresholds_sha != r.thresholds_sha256)
    refuse(q, "the thresholds file " + r.thresholds_path + " changed since validation");
  std::string acceptance_sha;
  try {
    acceptance_sha = load_case_set(r.case_dirs).sha256;
  } catch (const Error& e) {
    refuse(q,
           "the acceptance set of record '" + path + "' can no longer be read (" + e.what() + ")");
  }
  if (acceptance_sha != r.acceptance_sha256)
    refuse(q, "the acceptance set changed since validation");
  for (const RecordSetting& s : r.settings) {
    if (s.name != q.setting || s.matmul != q.matmul) continue;
    if (s.verdict != Verdict::kPass)
      refuse(q, "record '" + path + "' says " + verdict_name(s.verdict));
    if (s.n_ctx < q.n_ctx) refuse_context(q, path, r, s.n_ctx);
    PublicKey signer;
    const bool is_signed = from_hex(r.signer, signer.bytes.data(), signer.bytes.size());
    return {path, is_signed ? signer.id() : "", r.thresholds_path,
            is_bundled_thresholds(r.thresholds_sha256)};
  }
  refuse(q, "record '" + path + "' does not cover it");
}

}  // namespace kvrt::validate
