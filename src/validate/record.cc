#include "validate/record.h"

#include <cstdlib>
#include <sstream>

#include "common/error.h"
#include "common/regular_file.h"
#include "common/sha256.h"
#include "validate/output_file.h"
#include "validate/toml_util.h"

namespace kvrt::validate {
namespace {

constexpr std::string_view kHashKey = "content_sha256 = ";
constexpr std::string_view kSignatureKey = "signature = ";
constexpr std::string_view kSignaturePrefix = "\"ed25519:";

std::string body_text(const Record& r) {
  std::ostringstream o;
  o << "format = " << kRecordFormat << "\n";
  o << "kvrt_version = " << toml_quote(r.kvrt_version) << "\n";
  o << "isa = " << toml_quote(r.isa) << "\n";
  o << "model_path = " << toml_quote(r.model_path) << "\n";
  o << "model_sha256 = " << toml_quote(r.model_sha256) << "\n";
  o << "thresholds_path = " << toml_quote(r.thresholds_path) << "\n";
  o << "thresholds_sha256 = " << toml_quote(r.thresholds_sha256) << "\n";
  o << "case_dirs = [";
  for (size_t i = 0; i < r.case_dirs.size(); ++i)
    o << (i ? ", " : "") << toml_quote(r.case_dirs[i]);
  o << "]\n";
  o << "acceptance_sha256 = " << toml_quote(r.acceptance_sha256) << "\n";
  o << "max_len = " << r.max_len << "\n";
  for (const RecordSetting& s : r.settings) {
    o << "\n[[setting]]\n";
    o << "name = " << toml_quote(s.name) << "\n";
    o << "matmul = " << toml_quote(ops::matmul_precision_name(s.matmul)) << "\n";
    o << "label = " << toml_quote(s.label) << "\n";
    o << "verdict = " << toml_quote(verdict_name(s.verdict)) << "\n";
    char bpt[64];
    std::snprintf(bpt, sizeof bpt, "%.6g", s.bytes_per_token);
    o << "bytes_per_token = " << bpt << "\n";
    o << "n_ctx = " << s.n_ctx << "\n";
    if (!s.tune_name.empty()) o << "tune_name = " << toml_quote(s.tune_name) << "\n";
  }
  return o.str();
}

constexpr const char* kHeader =
    "# kvrt validation record, written by `kvrt validate`. Do not edit: kvrt run refuses a\n"
    "# record whose content hash does not match. Re-run `kvrt validate` instead.\n";

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw Error("validation record '" + path + "' " + why, ErrorKind::kRefused);
}

Verdict parse_verdict(const TomlView& v) {
  const std::string s = v.required_string("verdict");
  for (Verdict x : {Verdict::kPass, Verdict::kFail, Verdict::kInconclusive})
    if (s == verdict_name(x)) return x;
  v.fail_key("verdict", "must be PASS, FAIL or INCONCLUSIVE");
}

ops::MatmulPrecision parse_matmul(const TomlView& v) {
  try {
    return ops::parse_matmul_precision(v.required_string("matmul"));
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kUsage) throw;
    v.fail_key("matmul", e.what());
  }
}

Record parse_record(const std::string& path, const toml::table& doc) {
  const TomlView top(path, doc, "");
  top.allow_only({"format", "kvrt_version", "isa", "model_path", "model_sha256", "thresholds_path",
                  "thresholds_sha256", "case_dirs", "acceptance_sha256", "max_len",
                  "content_sha256", "setting"});
  const int64_t format = top.integer("format").value_or(0);
  if (format != kRecordFormat && format != 3)
    top.fail_key("format", "is not a known record format");
  Record r;
  r.kvrt_version = top.required_string("kvrt_version");
  r.isa = top.required_string("isa");
  r.model_path = top.required_string("model_path");
  r.model_sha256 = top.required_string("model_sha256");
  r.thresholds_path = top.required_string("thresholds_path");
  r.thresholds_sha256 = top.required_string("thresholds_sha256");
  r.case_dirs = top.strings("case_dirs").value_or(std::vector<std::string>{});
  r.acceptance_sha256 = top.required_string("acceptance_sha256");
  r.max_len = top.integer_in("max_len", 0, INT32_MAX).value_or(0);
  if (const toml::array* arr = top.array("setting")) {
    for (const auto& node : *arr) {
      if (!node.is_table()) top.fail(&node, "each [[setting]] must be a table");
      const TomlView v(path, *node.as_table(), "setting");
      v.allow_only({"name", "matmul", "label", "verdict", "bytes_per_token", "n_ctx", "tune_name"});
      RecordSetting s{v.required_string("name"),
                      v.string("label").value_or(""),
                      parse_verdict(v),
                      v.number("bytes_per_token").value_or(0),
                      v.integer_in("n_ctx", 0, INT32_MAX).value_or(0),
                      parse_matmul(v),
                      v.string("tune_name").value_or("")};
      // The gate takes the first entry of a setting: a second one could only shadow or be shadowed.
      for (const RecordSetting& e : r.settings) {
        if (e.name == s.name && e.matmul == s.matmul)
          v.fail_key("name",
                     "'" + s.name + "' with " + ops::matmul_precision_name(s.matmul) +
                         " products is listed twice (a record holds one verdict per setting)");
        if (!s.tune_name.empty() && e.tune_name == s.tune_name)
          v.fail_key("tune_name", "'" + s.tune_name + "' names two settings");
      }
      r.settings.push_back(std::move(s));
    }
  }
  return r;
}

// The signature line's key and signature; throws naming what is wrong.
std::pair<PublicKey, std::array<uint8_t, 64>> parse_signature(const std::string& path,
                                                              std::string_view line) {
  std::string_view v = line.substr(kSignatureKey.size());
  PublicKey key;
  std::array<uint8_t, 64> sig{};
  const size_t n = kSignaturePrefix.size();
  if (v.size() != n + 64 + 1 + 128 + 1 || v.substr(0, n) != kSignaturePrefix || v[n + 64] != ':' ||
      v.back() != '"' || !from_hex(v.substr(n, 64), key.bytes.data(), 32) ||
      !from_hex(v.substr(n + 65, 128), sig.data(), 64))
    refuse(path,
           "has a malformed signature line (expected signature = \"ed25519:<64 hex>:<128 hex>\")");
  return {key, sig};
}

}  // namespace

std::string record_text(const Record& r, const SecretKey* key) {
  const std::string body = body_text(r);
  const std::string hash_line =
      std::string(kHashKey) + toml_quote(sha256_hex(std::string(kHeader) + body)) + "\n";
  if (!key) return std::string(kHeader) + hash_line + body;
  // The signature covers the canonical bytes: the record exactly as it reads without this line.
  const std::array<uint8_t, 64> sig = key->sign(std::string(kHeader) + hash_line + body);
  return std::string(kHeader) + std::string(kSignatureKey) + std::string(kSignaturePrefix) +
         key->public_key().hex() + ":" + to_hex(sig.data(), sig.size()) + "\"\n" + hash_line + body;
}

void write_record(const Record& r, const std::string& path, const SecretKey* key) {
  write_file_atomic(path, record_text(r, key),
                    "validation record");  // run never sees half a record
}

Record read_record(const std::string& path) {
  if (missing_file(path)) refuse(path, "does not exist");
  std::string text = read_regular_file(path, "validation record", kMaxTomlFileBytes);
  size_t at = text.find("\n" + std::string(kHashKey));
  if (at == std::string::npos) refuse(path, "has no content hash");
  // A signature is the line just before the hash, after the header (so never the first line); the
  // canonical bytes are the text without it.
  std::string signer;
  const size_t prev = at > 0 ? text.rfind('\n', at - 1) : std::string::npos;
  const size_t sig_at = prev + 1;
  if (prev != std::string::npos &&
      std::string_view(text).substr(sig_at, at - sig_at).starts_with(kSignatureKey)) {
    const auto [key, sig] =
        parse_signature(path, std::string_view(text).substr(sig_at, at - sig_at));
    text.erase(sig_at, at + 1 - sig_at);
    if (!verify_signature(key, text, sig))
      refuse(path, "does not match its signature by key " + key.id() +
                       " (it was changed after it was signed, or the signature is not for it)");
    signer = key.hex();
    at = sig_at - 1;
  }
  const size_t line_end = text.find('\n', at + 1);
  if (line_end == std::string::npos) refuse(path, "is truncated");
  const std::string line = text.substr(at + 1, line_end - at - 1);
  const std::string claimed = line.substr(kHashKey.size());
  const std::string rest = text.substr(0, at + 1) + text.substr(line_end + 1);
  if (claimed != toml_quote(sha256_hex(rest)))
    refuse(path, "was edited after it was written (content hash mismatch)");
  try {
    check_toml_nesting(text, path, "validation record");
    Record r = parse_record(path, toml::parse(text, path));
    r.signer = signer;
    return r;
  } catch (const toml::parse_error& e) {
    refuse(path, "is not valid TOML (" + std::string(e.description()) + ")");
  } catch (const Error& e) {
    refuse(path, std::string("is malformed: ") + e.what());
  }
}

std::string state_dir() {
  if (const char* d = std::getenv("KVRT_STATE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x == '/')
    return std::string(x) + "/kvrt";
  if (const char* h = std::getenv("HOME"); h && *h == '/')
    return std::string(h) + "/.local/state/kvrt";
  throw Error(
      "no directory for validation records: HOME is unset or not an absolute path; set HOME, "
      "XDG_STATE_HOME or KVRT_STATE_DIR, or give --record PATH",
      ErrorKind::kUsage);
}

std::string default_record_path(const std::string& model_sha256, const std::string& isa) {
  return state_dir() + "/records/" + model_sha256.substr(0, 16) + "-" + isa + ".toml";
}

}  // namespace kvrt::validate
