#include "validate/validation.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>

#include "common/error.h"
#include "kv/cache_layout.h"
#include "common/regular_file.h"
#include "common/sha256.h"
#include "kvrt_config.h"
#include "model/session.h"
#include "ops/matmul.h"
#include "simd/kernels.h"
#include "validate/output_file.h"
#include "validate/record_merge.h"
#include "validate/settings.h"

namespace kvrt::validate {
namespace {

// Below this many weight bytes a forward step is so short that OpenMP barriers cost more than
// they save (stories260K: 8 s on one thread, over 60 s on two on a busy 2-core machine).
constexpr size_t kSingleThreadModelBytes = size_t(64) << 20;

Record make_record(const Validation& v) {
  const Report& rep = v.report;
  Record record;
  record.kvrt_version = rep.kvrt_version;
  record.isa = rep.isa;
  record.model_path = rep.model_path;
  record.model_sha256 = rep.model_sha256;
  record.thresholds_path = std::filesystem::absolute(v.thresholds.path).lexically_normal().string();
  record.thresholds_sha256 = v.thresholds.sha256;
  record.case_dirs = v.case_set.dirs;
  record.acceptance_sha256 = v.case_set.sha256;
  record.max_len = rep.max_len;
  for (size_t i = 0; i < v.run.settings.size(); ++i) {
    const auto& s = v.run.settings[i];
    record.settings.push_back({s.name, s.setting.label, rep.verdicts[i].verdict,
                               s.kv.bytes_per_token, rep.max_len, s.setting.matmul});
  }
  return record;
}

// FP32 KV bytes per position over all layers: a bound for every lane's cache.
double f32_bytes_per_position(const model::Model& model) {
  const model::ModelConfig& c = model.config();
  return 2.0 * c.n_layers * c.n_kv_heads * c.head_dim * sizeof(float);
}

// Memory the run may take: what the kernel reports available (MemAvailable), else all of it.
double available_memory() {
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    long long kib = -1;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "MemAvailable: %lld kB", &kib) == 1) break;
    std::fclose(f);
    if (kib > 0) return double(kib) * 1024.0;
  }
  return double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
}

// The baseline, noise-floor and candidate lanes each hold a cache of n_ctx positions and a copy of
// it to branch from after a prompt (FP32 bounds the compressed ones). An explicit context that
// cannot fit in this machine's memory is an error before anything is allocated.
void check_memory(const model::Model& model, int n_ctx, size_t n_lanes) {
  const double need = 2.0 * double(n_lanes) * f32_bytes_per_position(model) * n_ctx;
  const double have = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
  if (have > 0 && need > have)
    throw Error("validating at a context of " + std::to_string(n_ctx) +
                    " positions needs at least " + std::to_string(int64_t(need / (1 << 20))) +
                    " MiB for its " + std::to_string(n_lanes) +
                    " KV caches, more than this machine's " +
                    std::to_string(int64_t(have / (1 << 20))) + " MiB of memory (lower -c)",
                ErrorKind::kResource);
}

// The default context: the model's, at most the thresholds file's [context] max and at most what
// half of the available memory holds for every lane's two caches (rounded down to 64 positions).
int default_context(const model::Model& model, int context_max, size_t n_lanes, std::string& why) {
  const int n_model = model.config().n_ctx_train;
  int n = std::min(n_model, context_max);
  why = n < n_model ? "the model's " + std::to_string(n_model) +
                          " capped by [context] max of the thresholds file"
                    : "the model's context";
  const double fit =
      0.5 * available_memory() / (2.0 * double(n_lanes) * f32_bytes_per_position(model));
  if (fit < n) {
    n = std::max(16, int(fit) / 64 * 64);
    why = "the model's " + std::to_string(n_model) + " capped by half of the available memory";
  }
  return n;
}

// Leaves out the settings whose cache cannot be laid out for this model (a group that does not fit
// head_dim, rotation of a head_dim that is not a power of two, ...) or whose matmul precision this
// CPU cannot run, noting why.
void drop_inapplicable(const model::Model& model, int n_ctx, std::vector<Setting>& settings,
                       std::vector<std::string>& skipped) {
  const model::ModelConfig& c = model.config();
  std::vector<Setting> kept;
  for (const Setting& s : settings) {
    try {
      kv::plan_cache(s.kv, {c.n_layers, c.n_kv_heads, c.head_dim, n_ctx});
      ops::require_matmul_precision(s.matmul);
      kept.push_back(s);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kUsage) throw;
      skipped.push_back(s.label + ": " + e.what());
    }
  }
  if (kept.empty() && !settings.empty()) {
    std::string why;
    for (const std::string& s : skipped) why += "; " + s;
    throw Error("no setting to validate applies to this model on this CPU" + why,
                ErrorKind::kUsage);
  }
  settings = std::move(kept);
}

void check_request(const model::Model& model, const ValidationRequest& req) {
  if (req.only_cases && req.cases_dir.empty())
    throw Error("only_cases needs a cases directory", ErrorKind::kUsage);
  if (req.n_threads < 0 || req.n_threads > model::kMaxThreads)
    throw Error("thread count " + std::to_string(req.n_threads) +
                    " is out of range: 0 (all cores) or 1 to " + std::to_string(model::kMaxThreads),
                ErrorKind::kUsage);
  const int n_ctx = model.config().n_ctx_train;
  if (req.max_len < 0 || req.max_len > n_ctx)
    throw Error("validation context of " + std::to_string(req.max_len) +
                    " positions (-c) is beyond the "
                    "model's context of " +
                    std::to_string(n_ctx) + " positions",
                ErrorKind::kUsage);
  if (req.max_len > 0) check_memory(model, req.max_len, 2);
}

// The record at `path`, if there is one (read under its lock by the callers).
std::optional<Record> earlier_record(const std::string& path) {
  if (missing_file(path)) return std::nullopt;
  try {
    return read_record(path);
  } catch (const Error& e) {
    throw Error(std::string("cannot keep the verdicts of the earlier record: ") + e.what() +
                "; it is left as it is (move it away or write another record)");
  }
}

}  // namespace

bool Validation::all_pass() const {
  return std::all_of(report.verdicts.begin(), report.verdicts.end(),
                     [](const SettingVerdict& v) { return v.verdict == Verdict::kPass; });
}

void load_inputs(const model::Model& model, const ValidationRequest& req, Validation& v) {
  check_request(model, req);
  // The bundled data is looked up only when one of its files is used.
  auto bundled = [](const char* name) { return default_validation_dir() + "/" + name; };
  v.thresholds = read_thresholds(req.thresholds_file.empty() ? bundled("thresholds.toml")
                                                             : req.thresholds_file);
  if (req.seed) v.thresholds.bootstrap.seed = *req.seed;
  std::vector<std::string> case_dirs;
  if (!req.only_cases) case_dirs.push_back(bundled("cases"));
  if (!req.cases_dir.empty()) case_dirs.push_back(req.cases_dir);
  v.case_set = load_case_set(case_dirs);
  std::set<std::string> categories;
  for (const CaseDef& c : v.case_set.cases) categories.insert(c.category);
  for (const TemplateDef& t : v.case_set.templates) categories.insert(t.category);
  v.report.notes = fit_categories(v.thresholds, categories);
  v.settings =
      !req.settings.empty()
          ? req.settings
          : read_settings(req.settings_file.empty() ? bundled("settings.toml") : req.settings_file);
  const size_t n_lanes = 2 + v.settings.size();
  if (req.max_len > 0) {
    check_memory(model, req.max_len, n_lanes);
    v.report.max_len = req.max_len;
    v.report.context_source = "-c";
  } else {
    v.report.max_len =
        default_context(model, v.thresholds.context_max, n_lanes, v.report.context_source);
  }
  v.report.model_sha256 = sha256_file(req.model_path);
  v.report.isa = simd::isa_name();
}

int run_threads(const model::Model& model, int requested) {
  return requested == 0 && model.file().file_size() < kSingleThreadModelBytes ? 1 : requested;
}

std::vector<Case> build_model_cases(const model::Model& model, Validation& v) {
  const std::optional<model::ChatTemplate> chat = model::ChatTemplate::of_model(model.file());
  return build_cases(v.case_set, model.tokenizer(), chat ? &*chat : nullptr, v.report.max_len,
                     &v.report.skipped);
}

void run(const model::Model& model, const ValidationRequest& req, Validation& v) {
  Report& rep = v.report;
  v.cases = build_model_cases(model, v);
  if (!req.case_ids.empty())
    v.cases.erase(std::remove_if(v.cases.begin(), v.cases.end(),
                                 [&](const Case& c) {
                                   return std::find(req.case_ids.begin(), req.case_ids.end(),
                                                    c.id) == req.case_ids.end();
                                 }),
                  v.cases.end());
  if (v.cases.empty())
    throw Error("no case fits in the usable context of " + std::to_string(rep.max_len) +
                " positions");
  drop_inapplicable(model, rep.max_len, v.settings, rep.skipped_settings);

  RunOptions ro;
  ro.n_threads = run_threads(model, req.n_threads);
  ro.noise_threads = ro.n_threads;
  ro.max_len = rep.max_len;
  ro.progress = req.progress;
  const Thresholds& t = v.thresholds;
  ro.order = shuffled_order(v.cases.size(), t.bootstrap.seed);
  ro.looks = look_points(int(v.cases.size()), t);
  ro.decided = [&](const SettingResult& s, int) {
    return judge(s, v.cases, t, interim_look(t)).verdict != Verdict::kInconclusive;
  };
  ro.budget_seconds = req.budget_minutes * 60.0;
  v.run = run_validation(model, v.cases, v.settings, ro);

  rep.cases = &v.cases;
  rep.run = &v.run;
  rep.thresholds = &v.thresholds;
  // A setting stopped at an interim look keeps that look's verdict; the rest are judged on what
  // ran.
  const auto verdict_of = [&](const SettingResult& s) {
    return judge(s, v.cases, t,
                 s.look >= 0 ? interim_look(t) : final_look(t, s.n_run < int(v.cases.size())));
  };
  for (const auto& s : v.run.settings) rep.verdicts.push_back(verdict_of(s));
  rep.noise_verdict = verdict_of(v.run.noise_floor);
  rep.prefer = req.prefer;
  rep.recommended = recommend(v.run.settings, rep.verdicts, req.prefer);
  rep.model_path = req.model_path;
  rep.matmul = ops::matmul_backends();
  rep.kvrt_version = KVRT_VERSION;
  rep.acceptance_sha256 = v.case_set.sha256;
  rep.n_ctx_full = model.config().n_ctx_train;
  const model::ModelConfig& c = model.config();
  rep.n_layers = c.n_layers;
  for (int layer = 0; layer < c.n_layers; ++layer) rep.n_windowed_layers += c.window_of(layer) > 0;
  if (rep.n_windowed_layers > 0) rep.sliding_window = c.sliding_window;
  rep.noise_description = "prefill chunks of " + std::to_string(ro.noise_batch) + " instead of " +
                          std::to_string(ro.n_batch) +
                          " tokens (other GEMM shapes and summation order)";
  rep.speed_repeats = ro.speed.repeats;
  rep.n_threads = ro.n_threads > 0 ? ro.n_threads : int(sysconf(_SC_NPROCESSORS_ONLN));
  v.record = make_record(v);
}

std::string prepare_record(const Validation& v, const std::string& record_path) {
  const std::string path =
      record_path.empty() ? default_record_path(v.report.model_sha256, v.report.isa) : record_path;
  check_output_path(path, "validation record");
  // The lock file (a FIFO, directory or device there fails now, not after the run), and the earlier
  // record, read now (it is replaced atomically, so no lock is needed to read it), so that an
  // unreadable one or another model's fails before the run.
  check_lock_path(path, "validation record");
  if (const std::optional<Record> old = earlier_record(path)) {
    Record probe;
    probe.model_sha256 = v.report.model_sha256;
    (void)merge_earlier(path, *old, probe, nullptr);
  }
  return path;
}

std::vector<std::string> save_record(const std::string& path, Record r, const SecretKey* key) {
  const OutputLock lock(path, "validation record");
  std::vector<std::string> notes;
  if (const std::optional<Record> old = earlier_record(path))
    notes = merge_earlier(path, *old, r, key ? &key->public_key() : nullptr);
  write_record(r, path, key);
  return notes;
}

}  // namespace kvrt::validate
