// kvrt validate: replay the acceptance set against the FP32 cache, decide PASS / FAIL /
// INCONCLUSIVE per setting on bootstrap intervals, write the record `kvrt run` checks.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "acceptance_options.h"
#include "command_line.h"
#include "commands.h"
#include "common/error.h"
#include "flag_numbers.h"
#include "kv_options.h"
#include "model_options.h"
#include "validate/noise_warning.h"
#include "validate/output_file.h"
#include "validate/recommend.h"
#include "validate/record.h"
#include "validate/report.h"
#include "validate/settings.h"
#include "validate/signing_key.h"
#include "validate/validation.h"

namespace kvrt::cli {
namespace {

struct ValidateOptions {
  ModelOptions model;
  KvOptions kv;
  AcceptanceOptions set;
  std::string settings_file, json, html;
  std::string sign;            // secret key file: sign the record (docs/signed-records.md)
  float negative_control = 0;  // relative noise on stored scales; 0 = no negative control
  std::string prefer = "memory";
};

std::string duration(double seconds) {
  char buf[32];
  const long s = std::lround(seconds);
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, s / 60 % 60);
  else std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  return buf;
}

// Progress on stderr, with the time so far and the estimate of what is left: a redrawn bar on a
// terminal; otherwise (a log file) a plain line at each quarter of the cases and at least every
// 30 s, so that a long run at a deployment context shows it is alive.
void progress(const validate::Progress& p) {
  static const bool tty = isatty(2);
  static double last_line = 0;
  const int done = p.done, total = std::max(p.total, 1);
  const int width = 30, filled = width * done / total;
  const std::string times = duration(p.seconds) + " elapsed, ETA " + duration(p.eta_seconds) +
                            ", " + std::to_string(p.n_running) + " settings running";
  if (tty) {
    std::fprintf(stderr, "\rvalidating [%s%s] %d/%d cases, %s  ",
                 std::string(size_t(filled), '#').c_str(),
                 std::string(size_t(width - filled), '.').c_str(), done, p.total, times.c_str());
    if (done == p.total || p.n_running == 0) std::fputc('\n', stderr);
  } else if (done == p.total || p.n_running == 0 ||
             (done * 4 / total) != ((done - 1) * 4 / total) || p.seconds - last_line >= 30) {
    std::fprintf(stderr, "validating: %d/%d cases, %s\n", done, p.total, times.c_str());
    last_line = p.seconds;
  }
}

// The setting the KV and --matmul flags give, if any; none = the settings file's.
std::vector<validate::Setting> requested_settings(const ValidateOptions& o) {
  std::vector<validate::Setting> s;
  if (o.kv.given()) {
    const kv::KvConfig kv = o.kv.config();
    const ops::MatmulPrecision matmul = o.kv.matmul_precision();
    s.push_back({validate::setting_label(kv, matmul), kv, matmul});
  }
  return s;
}

}  // namespace

int cmd_validate(int argc, char** argv) {
  ValidateOptions o;
  CommandLine cl(
      "kvrt validate [-m MODEL] [options]",
      "Replays the acceptance set (validation/) on the FP32 baseline and on each candidate "
      "setting\n"
      "(KV cache format and matmul precision),\n"
      "decides PASS / FAIL / INCONCLUSIVE on bootstrap intervals, and writes the record that\n"
      "`kvrt run` requires before it enables a compressed setting at a context up to the one\n"
      "validated (-c). Exit 0: all settings passed;\n"
      "1: at least one refused; 2: usage or input error.");
  o.model.add_to(cl, false);
  o.kv.add_to(cl);
  cl.add("--settings", "FILE",
         "candidate settings (default validation/settings.toml in kvrt's data dir; KV or --matmul "
         "flags validate one)",
         &o.settings_file);
  o.set.add_to(cl);
  cl.add("-c,--max-len,--ctx", "N",
         "context to validate at: case lengths follow it and the record binds it (default: the "
         "model's, at most "
         "[context] max of the thresholds file and what memory holds)",
         &o.set.max_len, 16, 1 << 20);
  cl.add("--budget", "MINUTES",
         "run what fits in this many minutes; settings it could not decide are INCONCLUSIVE "
         "(default: no limit)",
         &o.set.budget_minutes, 0.001f, 1e6f);
  cl.add("--prefer", "memory|speed",
         "the recommendation among the PASSing settings: the least KV memory at full context "
         "(default) or the "
         "fastest decode at the validated context",
         &o.prefer);
  cl.add("--seed", "S", "bootstrap seed (default: the thresholds file's)", &o.set.seed);
  cl.add("--json", "FILE", "write the full results as JSON", &o.json);
  cl.add("--html", "FILE", "write a self-contained HTML report with plots", &o.html);
  cl.add("--record", "PATH",
         "validation record to write (default: in $KVRT_STATE_DIR or ~/.local/state/kvrt)",
         &o.set.record);
  cl.add("--sign", "KEYFILE",
         "sign the record with this secret key (made by kvrt keygen), for kvrt run --trust on "
         "other machines",
         &o.sign);
  // Tests only: adds q4/q4 with its stored scales perturbed by this relative amount; it must FAIL.
  cl.add_hidden("--debug-negative-control", [&o](std::string_view v) {
    o.negative_control = parse_flag_float("--debug-negative-control", v, 1e-6f, 1e6f);
  });
  if (!cl.parse(argc, argv)) return kExitOk;
  const std::optional<validate::Prefer> prefer = validate::parse_prefer(o.prefer);
  if (!prefer)
    throw Error("--prefer takes memory or speed, not '" + o.prefer + "'", ErrorKind::kUsage);

  // Inputs and outputs are checked first, so a bad path fails now rather than after the run.
  std::optional<validate::SecretKey> key;
  if (!o.sign.empty()) key.emplace(validate::read_secret_key(o.sign));
  if (!o.json.empty()) validate::check_output_path(o.json, "JSON report");
  if (!o.html.empty()) validate::check_output_path(o.html, "HTML report");
  validate::ValidationRequest req;
  req.settings = requested_settings(o);
  req.settings_file = o.settings_file;
  o.set.apply(o.model, req);
  req.prefer = *prefer;
  req.progress = progress;
  const std::unique_ptr<model::Model> model = o.model.load();
  validate::Validation v;
  validate::load_inputs(*model, req, v);
  if (o.negative_control > 0) v.settings.push_back(validate::negative_control(o.negative_control));
  const std::string record_path = validate::prepare_record(v, o.set.record);
  validate::run(*model, req, v);

  std::fputs(validate::report_text(v.report).c_str(), stdout);
  for (const std::string& w : validate::noise_floor_warnings(v.report))
    std::fprintf(stderr, "kvrt validate: warning: %s\n", w.c_str());
  for (const std::string& note : v.report.notes)
    std::fprintf(stderr, "kvrt validate: note: %s\n", note.c_str());
  if (!o.json.empty())
    validate::write_file_atomic(o.json, validate::report_json(v.report), "JSON report");
  if (!o.html.empty())
    validate::write_file_atomic(o.html, validate::report_html(v.report), "HTML report");

  for (const std::string& note :
       validate::save_record(record_path, v.record, key ? &*key : nullptr))
    std::fprintf(stderr, "kvrt validate: note: %s\n", note.c_str());
  if (key)
    std::printf("record: %s (signed by key %s)\n", record_path.c_str(),
                key->public_key().id().c_str());
  else std::printf("record: %s\n", record_path.c_str());
  return v.all_pass() ? kExitOk : kExitRefused;
}

}  // namespace kvrt::cli
