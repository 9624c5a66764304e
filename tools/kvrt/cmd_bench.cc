// kvrt bench: end-to-end decode and prefill speed versus context length for each KV setting.
// The cache is filled by real prefill (in chunks of 1024 random tokens), and decode speed is
// measured at each requested context on the way up, so every number comes from the real
// forward pass. Prefill speed is timed over the first --prefill-tokens positions.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>

#include "command_line.h"
#include "commands.h"
#include "common/error.h"
#include "flag_numbers.h"
#include "model/sampler.h"
#include "model/session.h"
#include "model_options.h"
#include "ops/matmul.h"
#include "simd/kernels.h"
#include "validate/open_session.h"
#include "validate/output_file.h"
#include "validate/report.h"

namespace kvrt::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxContext = 1 << 24;  // as run's -c

struct BenchOptions {
  ModelOptions model;
  std::string contexts = "1024,4096,8192,16384";
  std::string settings = "f32;q8;q4;k=q8,v=q4";
  std::string matmul = "f32";
  int decode_tokens = 16;
  int prefill_tokens = 8192;
  int group = 0;
  std::string json;
};

struct Row {
  std::string setting;
  double bytes_per_token = 0;
  double prefill_tok_s = 0;
  int prefill_tokens = 0;
  std::vector<std::pair<int, double>> decode;  // (context, tok/s)
};

// The --ctx list, sorted, each context once; every context from 1 to kMaxContext.
std::vector<int> parse_contexts(const std::string& s) {
  std::vector<int> out = parse_flag_int_list("--ctx", s, 1, kMaxContext);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Positions the session needs: the largest context or the timed prefill, then the decode steps
// timed at each context (counted in 64 bits: the sum is checked before it becomes an int).
int session_context(const BenchOptions& o, const std::vector<int>& contexts) {
  const int64_t n = int64_t(std::max(contexts.back(), o.prefill_tokens)) +
                    int64_t(contexts.size()) * int64_t(o.decode_tokens);
  if (n > kMaxContext)
    throw Error("--ctx " + o.contexts + " with --decode-tokens " + std::to_string(o.decode_tokens) +
                    " needs " + std::to_string(n) + " positions, more than the most of " +
                    std::to_string(kMaxContext),
                ErrorKind::kUsage);
  return int(n);
}

// A row of the table: a KV setting of the --settings list and a precision of the --matmul list.
struct BenchSetting {
  std::string text;  // the KV setting as given, then " mm=bf16" for products other than f32
  kv::KvConfig kv;
  ops::MatmulPrecision matmul;
  validate::Admission admitted;  // the session to time, resolved for the model (admit_all)
};

// The --settings list (kv::parse_setting_list), with --group applied to every setting, each with
// every precision of --matmul; a precision this process cannot run fails before any work.
std::vector<BenchSetting> settings_of(const BenchOptions& o) {
  std::vector<ops::MatmulPrecision> precisions;
  std::stringstream ss(o.matmul);
  for (std::string item; std::getline(ss, item, ',');) {
    precisions.push_back(ops::parse_matmul_precision(item));
    ops::require_matmul_precision(precisions.back());
  }
  if (precisions.empty())
    throw Error("--matmul needs a precision (f32 or bf16)", ErrorKind::kUsage);
  std::vector<BenchSetting> out;
  for (kv::SettingText& s : kv::parse_setting_list(o.settings)) {
    if (o.group > 0) kv::apply_setting_field(s.config, "g", std::to_string(o.group));
    for (ops::MatmulPrecision p : precisions) {
      const std::string suffix = p == ops::MatmulPrecision::kF32
                                     ? ""
                                     : std::string(" mm=") + ops::matmul_precision_name(p);
      out.push_back({s.text + suffix, s.config, p, {}});
    }
  }
  return out;
}

// Resolves every setting for the model before the first is timed, so that one that does not fit
// it (a group, a layer index) fails before minutes of work. Bench times settings without a record:
// it prints speeds of random tokens, never text, and a setting is timed to decide whether to
// validate it.
void admit_all(const model::Model& m, const BenchOptions& o, const std::vector<int>& contexts,
               std::vector<BenchSetting>& settings) {
  for (BenchSetting& setting : settings) {
    validate::SessionRequest r;
    r.model_path = m.file().path();
    r.session.n_ctx = session_context(o, contexts);
    r.session.n_threads = o.model.n_threads;
    r.session.kv = setting.kv;
    r.session.matmul = setting.matmul;
    r.allow_unvalidated = true;
    setting.admitted = validate::admit(m, r);
  }
}

double elapsed(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Advances the session to `target` positions with prefill chunks of random tokens.
void fill_to(model::Session& s, int target, std::mt19937& rng) {
  std::vector<int32_t> chunk;
  std::uniform_int_distribution<int32_t> tok(0, s.model().config().n_vocab - 1);
  while (s.n_past() < target) {
    chunk.resize(size_t(std::min(1024, target - s.n_past())));
    for (auto& t : chunk) t = tok(rng);
    s.eval(chunk.data(), int(chunk.size()));
  }
}

Row bench_setting(const model::Model& m, const BenchOptions& o, const BenchSetting& setting,
                  const std::vector<int>& contexts) {
  const std::unique_ptr<model::Session> session = validate::open_session(m, setting.admitted);
  model::Session& s = *session;
  const std::string& name = setting.text;
  Row row{name, s.kv_cache().bytes_per_token(), 0, 0, {}};
  std::mt19937 rng(42);
  // Stops on the way up: every decode context, and the end of the timed prefill.
  std::vector<int> stops = contexts;
  stops.push_back(o.prefill_tokens);
  std::sort(stops.begin(), stops.end());
  stops.erase(std::unique(stops.begin(), stops.end()), stops.end());
  double prefill_seconds = 0;
  for (int stop : stops) {
    const int from = s.n_past();
    const auto t0 = Clock::now();
    fill_to(s, stop, rng);
    if (stop <= o.prefill_tokens) {
      prefill_seconds += elapsed(t0);
      row.prefill_tokens += s.n_past() - from;
      row.prefill_tok_s = row.prefill_tokens / prefill_seconds;
    }
    if (std::find(contexts.begin(), contexts.end(), stop) == contexts.end()) continue;
    int32_t next = model::argmax(s.last_logits(), m.config().n_vocab);
    const auto t1 = Clock::now();
    for (int i = 0; i < o.decode_tokens; ++i) {
      s.eval(&next, 1);
      next = model::argmax(s.last_logits(), m.config().n_vocab);
    }
    row.decode.emplace_back(stop, o.decode_tokens / elapsed(t1));
    std::fprintf(stderr, "kvrt bench: %-10s ctx %6d: decode %.2f tok/s\n", name.c_str(), stop,
                 row.decode.back().second);
  }
  return row;
}

void print_table(const std::vector<Row>& rows, const std::vector<int>& contexts) {
  int width = 12;
  for (const Row& r : rows) width = std::max(width, int(r.setting.size()));
  std::printf("%-*s %10s %14s", width, "setting", "KV B/tok", "prefill tok/s");
  for (int c : contexts) std::printf("  %16s", ("decode@" + std::to_string(c)).c_str());
  std::printf("\n");
  for (const Row& r : rows) {
    std::printf("%-*s %10.0f %14.1f", width, r.setting.c_str(), r.bytes_per_token, r.prefill_tok_s);
    for (int c : contexts) {
      auto it =
          std::find_if(r.decode.begin(), r.decode.end(), [&](auto& d) { return d.first == c; });
      if (it == r.decode.end()) std::printf("  %16s", "-");
      else
        std::printf("  %8.2f (%4.2fx)", it->second,
                    it->second / rows[0].decode[size_t(it - r.decode.begin())].second);
    }
    std::printf("\n");
  }
}

void write_json(const std::string& path, const std::vector<Row>& rows, const model::Model& m,
                int n_threads) {
  std::ostringstream js;
  js << "{\n  \"model\": " << validate::json_quote(m.file().path())
     << ",\n  \"isa\": " << validate::json_quote(simd::isa_name())
     << ",\n  \"matmul\": " << validate::json_quote(ops::matmul_backends())
     << ",\n  \"threads\": " << n_threads << ",\n  \"results\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    js << "    {\"setting\": " << validate::json_quote(r.setting)
       << ", \"kv_bytes_per_token\": " << r.bytes_per_token
       << ", \"prefill_tokens\": " << r.prefill_tokens << ", \"prefill_tok_s\": " << r.prefill_tok_s
       << ", \"decode\": [";
    for (size_t j = 0; j < r.decode.size(); ++j)
      js << (j ? ", " : "") << "{\"ctx\": " << r.decode[j].first
         << ", \"tok_s\": " << r.decode[j].second << "}";
    js << "]}" << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  js << "  ]\n}\n";
  validate::write_file_atomic(path, js.str(), "JSON results");
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  BenchOptions o;
  CommandLine cl(
      "kvrt bench [-m MODEL] [--ctx LIST] [--settings LIST] [--json FILE]",
      "Measures prefill and decode tokens/s of the real forward pass for each KV setting\n"
      "at each context length. Ratios in the table are against the first setting.");
  o.model.add_to(cl, false);
  cl.add("--ctx", "LIST",
         "context lengths for decode, comma-separated (default 1024,4096,8192,16384)", &o.contexts);
  cl.add("--settings", "LIST",
         "KV settings as --kv takes them, separated by ';' (default f32;q8;q4;k=q8,v=q4; the older "
         "form f32,q8,k=q8:v=q4 is read too)",
         &o.settings);
  cl.add("--matmul", "LIST",
         "precisions of the prefill products, comma-separated: f32 (default), bf16; each KV "
         "setting runs with each",
         &o.matmul);
  cl.add("--decode-tokens", "N", "decode steps timed at each context (default 16)",
         &o.decode_tokens, 1, 4096);
  cl.add("--prefill-tokens", "N", "tokens of the timed prefill (default 8192)", &o.prefill_tokens,
         1, 1 << 20);
  cl.add("--group", "G", "quantization group size for every setting (default: each setting's)",
         &o.group, 0, 128);
  cl.add("--json", "FILE", "also write the results as JSON", &o.json);
  if (!cl.parse(argc, argv)) return kExitOk;
  if (!o.json.empty())
    validate::check_output_path(o.json, "JSON results");  // before minutes of work

  const std::vector<int> contexts = parse_contexts(o.contexts);
  (void)session_context(o, contexts);                   // before the model loads
  std::vector<BenchSetting> settings = settings_of(o);  // bad settings fail before any work
  auto model = o.model.load();
  admit_all(*model, o, contexts, settings);
  const int n_threads = o.model.n_threads > 0 ? o.model.n_threads : omp_get_num_procs();
  std::fprintf(stderr, "kvrt bench: %s, ISA %s, %d threads, matmul %s\n",
               model->file().path().c_str(), simd::isa_name(), n_threads,
               ops::matmul_backends().c_str());
  std::vector<Row> rows;
  for (const BenchSetting& setting : settings)
    rows.push_back(bench_setting(*model, o, setting, contexts));
  print_table(rows, contexts);
  if (!o.json.empty()) write_json(o.json, rows, *model, n_threads);
  return kExitOk;
}

}  // namespace kvrt::cli
