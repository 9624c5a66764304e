// kvrt validate: replay the acceptance set against the FP32 cache, decide PASS / FAIL /
// INCONCLUSIVE per setting on bootstrap intervals, write the record `kvrt run` checks.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "command_line.h"
#include "commands.h"
#include "common/error.h"
#include "common/sha256.h"
#include "kv_options.h"
#include "kvrt_config.h"
#include "model_options.h"
#include "simd/kernels.h"
#include "validate/record.h"
#include "validate/report.h"
#include "validate/settings.h"

namespace kvrt::cli {
namespace {

constexpr int kDefaultMaxLen = 512;
constexpr uint64_t kSeedFromThresholds = ~uint64_t(0);
// Below this many weight bytes a forward step is so short that OpenMP barriers cost more than
// they save (stories260K: 8 s on one thread, over 60 s on two on a busy 2-core machine).
constexpr size_t kSingleThreadModelBytes = size_t(64) << 20;

struct ValidateOptions {
  ModelOptions model;
  KvOptions kv;
  std::string settings_file, cases_dir, config, json, html, record;
  bool only_cases = false;
  float negative_control = 0;  // relative noise on stored scales; 0 = no negative control
  int max_len = 0;
  uint64_t seed = kSeedFromThresholds;
};

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw Error("cannot write '" + path + "'");
}

// Progress on stderr: a redrawn bar on a terminal, a few plain lines otherwise.
void progress(int done, int total) {
  static const bool tty = isatty(2);
  const int width = 30, filled = width * done / std::max(total, 1);
  if (tty) {
    std::fprintf(stderr, "\rvalidating [%s%s] %d/%d cases", std::string(size_t(filled), '#').c_str(),
                 std::string(size_t(width - filled), '.').c_str(), done, total);
    if (done == total) std::fputc('\n', stderr);
  } else if (done == total || (done * 4 / total) != ((done - 1) * 4 / total)) {
    std::fprintf(stderr, "validating: %d/%d cases\n", done, total);
  }
}

std::vector<validate::Setting> requested_settings(const ValidateOptions& o, const std::string& dir) {
  std::vector<validate::Setting> s;
  if (!o.kv.both.empty() || !o.kv.k.empty() || !o.kv.v.empty()) {
    validate::Setting one{"", o.kv.config()};
    one.label = std::string(kv::format_name(one.kv.k_format)) + "/" + kv::format_name(one.kv.v_format);
    if (one.kv.k_axis == kv::KeyAxis::kChannel) one.label += " ch";
    if (one.kv.residual > 0) one.label += " r" + std::to_string(one.kv.residual);
    if (one.kv.rotate) one.label += " rot";
    s.push_back(one);
  } else {
    s = validate::read_settings(o.settings_file.empty() ? dir + "/settings.toml" : o.settings_file);
  }
  if (o.negative_control > 0) s.push_back(validate::negative_control(o.negative_control));
  return s;
}

// Keeps the verdicts of an earlier run with the same bindings for settings not re-run now.
void merge_earlier(const std::string& path, validate::Record& r) {
  validate::Record old;
  try {
    old = validate::read_record(path);
  } catch (const Error&) {
    return;
  }
  if (old.model_sha256 != r.model_sha256 || old.kvrt_version != r.kvrt_version || old.isa != r.isa ||
      old.thresholds_sha256 != r.thresholds_sha256 || old.acceptance_sha256 != r.acceptance_sha256 ||
      old.max_len != r.max_len)
    return;
  for (const auto& s : old.settings) {
    const bool rerun = std::any_of(r.settings.begin(), r.settings.end(), [&](const auto& n) { return n.name == s.name; });
    if (!rerun) r.settings.push_back(s);
  }
}

validate::Record make_record(const validate::Report& rep, const validate::Thresholds& thresholds,
                             const validate::CaseSet& set) {
  validate::Record record;
  record.kvrt_version = rep.kvrt_version;
  record.isa = rep.isa;
  record.model_path = rep.model_path;
  record.model_sha256 = rep.model_sha256;
  record.thresholds_path = std::filesystem::absolute(thresholds.path).lexically_normal().string();
  record.thresholds_sha256 = thresholds.sha256;
  record.case_dirs = set.dirs;
  record.acceptance_sha256 = set.sha256;
  record.max_len = rep.max_len;
  for (size_t i = 0; i < rep.run->settings.size(); ++i) {
    const auto& s = rep.run->settings[i];
    record.settings.push_back({s.name, s.setting.label, rep.verdicts[i].verdict, s.bytes_per_token});
  }
  return record;
}

}  // namespace

int cmd_validate(int argc, char** argv) {
  ValidateOptions o;
  CommandLine cl("kvrt validate [-m MODEL] [options]",
                 "Replays the acceptance set (validation/) on the FP32 KV cache and on each candidate setting,\n"
                 "decides PASS / FAIL / INCONCLUSIVE on bootstrap intervals, and writes the record that\n"
                 "`kvrt run` requires before it enables a compressed setting. Exit 0: all settings passed;\n"
                 "1: at least one refused; 2: usage or input error.");
  o.model.add_to(cl, false);
  o.kv.add_to(cl);
  cl.add("--settings", "FILE", "candidate settings (default validation/settings.toml; KV flags validate one)",
         &o.settings_file);
  cl.add("--cases", "DIR", "more cases: DIR/manifest.toml in the acceptance-set format", &o.cases_dir);
  cl.add_flag("--only-cases", "use only the --cases directory, not the bundled set", &o.only_cases);
  cl.add("--config", "FILE", "thresholds (default validation/thresholds.toml)", &o.config);
  cl.add("--max-len", "N", "usable context the case lengths follow (default min(model context, 512))",
         &o.max_len, 16, 1 << 20);
  cl.add("--seed", "S", "bootstrap seed (default: the thresholds file's)", &o.seed);
  cl.add("--json", "FILE", "write the full results as JSON", &o.json);
  cl.add("--html", "FILE", "write a self-contained HTML report with plots", &o.html);
  cl.add("--record", "PATH", "validation record to write (default: in $KVRT_STATE_DIR or ~/.local/state/kvrt)",
         &o.record);
  // Tests only: adds q4/q4 with its stored scales perturbed by this relative amount; it must FAIL.
  cl.add_hidden("--debug-negative-control", [&o](std::string_view v) {
    o.negative_control = std::strtof(std::string(v).c_str(), nullptr);
    if (!(o.negative_control > 0)) throw Error("--debug-negative-control needs a positive scale", ErrorKind::kUsage);
  });
  if (!cl.parse(argc, argv)) return kExitOk;
  if (o.only_cases && o.cases_dir.empty()) throw Error("--only-cases needs --cases DIR", ErrorKind::kUsage);

  const std::string dir = validate::default_validation_dir();
  validate::Thresholds thresholds = validate::read_thresholds(o.config.empty() ? dir + "/thresholds.toml" : o.config);
  if (o.seed != kSeedFromThresholds) thresholds.bootstrap.seed = o.seed;
  std::vector<std::string> case_dirs;
  if (!o.only_cases) case_dirs.push_back(dir + "/cases");
  if (!o.cases_dir.empty()) case_dirs.push_back(o.cases_dir);
  const validate::CaseSet set = validate::load_case_set(case_dirs);
  const std::vector<validate::Setting> settings = requested_settings(o, dir);

  const std::string model_path = o.model.resolved_path();
  const model::Model model(model_path);
  validate::Report rep;
  rep.max_len = o.max_len > 0 ? o.max_len : std::min(model.config().n_ctx_train, kDefaultMaxLen);
  const std::vector<validate::Case> cases = validate::build_cases(set, model.tokenizer(), rep.max_len, &rep.skipped);
  if (cases.empty()) throw Error("no case fits in the usable context of " + std::to_string(rep.max_len) + " positions");

  validate::RunOptions ro;
  ro.n_threads = o.model.n_threads;
  if (ro.n_threads == 0 && model.file().file_size() < kSingleThreadModelBytes) ro.n_threads = 1;
  ro.noise_threads = ro.n_threads;
  ro.max_len = rep.max_len;
  ro.progress = progress;
  const validate::RunResult run = validate::run_validation(model, cases, settings, ro);

  rep.cases = &cases;
  rep.run = &run;
  rep.thresholds = &thresholds;
  for (const auto& s : run.settings) rep.verdicts.push_back(validate::judge(s, cases, thresholds));
  rep.noise_verdict = validate::judge(run.noise_floor, cases, thresholds);
  rep.recommended = validate::recommend(run.settings, rep.verdicts);
  rep.model_path = model_path;
  rep.model_sha256 = sha256_file(model_path);
  rep.isa = simd::isa_name();
  rep.kvrt_version = KVRT_VERSION;
  rep.acceptance_sha256 = set.sha256;
  rep.n_ctx_full = model.config().n_ctx_train;
  rep.noise_description = "prefill chunks of " + std::to_string(ro.noise_batch) + " instead of " +
                          std::to_string(ro.n_batch) + " tokens (other GEMM shapes and summation order)";
  rep.n_threads = ro.n_threads > 0 ? ro.n_threads : int(sysconf(_SC_NPROCESSORS_ONLN));

  std::fputs(validate::report_text(rep).c_str(), stdout);
  if (rep.noise_verdict.verdict != validate::Verdict::kPass)
    std::fprintf(stderr, "kvrt validate: warning: the noise floor did not PASS; the thresholds are below what "
                         "FP32 itself reproduces\n");
  if (!o.json.empty()) write_file(o.json, validate::report_json(rep));
  if (!o.html.empty()) write_file(o.html, validate::report_html(rep));

  validate::Record record = make_record(rep, thresholds, set);
  const bool all_pass = std::all_of(rep.verdicts.begin(), rep.verdicts.end(),
                                    [](const auto& v) { return v.verdict == validate::Verdict::kPass; });
  const std::string record_path = o.record.empty() ? validate::default_record_path(rep.model_sha256, rep.isa) : o.record;
  merge_earlier(record_path, record);
  validate::write_record(record, record_path);
  std::printf("record: %s\n", record_path.c_str());
  return all_pass ? kExitOk : kExitRefused;
}

}  // namespace kvrt::cli
