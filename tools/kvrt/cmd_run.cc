// kvrt run: stream generated text to stdout; timings and KV usage go to stderr.
#include <chrono>
#include <cstdio>
#include <optional>

#include "command_line.h"
#include "commands.h"
#include "common/error.h"
#include "common/regular_file.h"
#include "common/resident_memory.h"
#include "gate_options.h"
#include "kv_options.h"
#include "kv_report.h"
#include "model/sampler.h"
#include "model/session.h"
#include "model_options.h"
#include "ops/matmul.h"
#include "sampling_options.h"
#include "session_file.h"
#include "std_streams.h"
#include "validate/open_session.h"
#include "simd/kernels.h"

namespace kvrt::cli {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct RunOptions {
  ModelOptions model;
  KvOptions kv;
  std::string prompt, prompt_file;
  int n_predict = 128;
  SamplingOptions sampling;
  GateOptions gate;
  std::string prompt_cache;  // state file of the prompt (--prompt-cache)
};

std::string read_prompt(const RunOptions& o) {
  if (o.prompt_file.empty()) return o.prompt;
  if (!o.prompt.empty()) throw Error("give either -p or -f, not both", ErrorKind::kUsage);
  return read_regular_file(o.prompt_file, "prompt file", kMaxTextFileBytes);
}

// n_decoded: single-token forward passes timed in t_decode.
void report(const model::Session& s, int n_prompt, double t_prefill, int n_decoded,
            double t_decode) {
  std::fprintf(stderr,
               "kvrt: ISA %s, %d threads, matmul %s, %s prefill products; kernels run: %s\n",
               simd::isa_name(), s.n_threads(), ops::matmul_backends().c_str(),
               ops::matmul_precision_name(s.matmul_precision()), s.matmul_implementation());
  if (n_prompt > 0)
    std::fprintf(stderr, "kvrt: prefill %d tokens in %.1f ms (%.1f tok/s)\n", n_prompt,
                 t_prefill * 1e3, n_prompt / t_prefill);
  if (n_prompt == 0)
    std::fprintf(stderr,
                 "kvrt: prefill 0 tokens: the prompt cache held the prompt (loaded in %.1f ms)\n",
                 t_prefill * 1e3);
  if (n_decoded > 0)
    std::fprintf(stderr, "kvrt: decode %d tokens in %.1f ms (%.1f tok/s)\n", n_decoded,
                 t_decode * 1e3, n_decoded / t_decode);
  report_kv_cache(s);
  if (const auto rss = resident_bytes())
    std::fprintf(stderr,
                 "kvrt: resident memory %.1f MiB (model file %.1f MiB, session buffers %.1f MiB)\n",
                 double(*rss) / kMiB, double(s.model().file().file_size()) / kMiB,
                 double(s.bytes_allocated()) / kMiB);
}

}  // namespace

int cmd_run(int argc, char** argv) {
  RunOptions o;
  CommandLine cl(
      "kvrt run [-m MODEL] -p PROMPT [-n N] [options]",
      "Generates text from a prompt and streams it to stdout. Greedy unless --temp is set.");
  o.model.add_to(cl);
  cl.add("-p,--prompt", "TEXT", "prompt text (BOS is added; empty = BOS alone)", &o.prompt, true);
  cl.add("-f,--file", "FILE", "read the prompt from a file", &o.prompt_file);
  cl.add("-n,--n-predict", "N", "tokens to generate (default 128)", &o.n_predict, 0, 1 << 24);
  o.sampling.add_to(cl);
  o.kv.add_to(cl);
  o.gate.add_to(cl);
  cl.add("--prompt-cache", "FILE",
         "state file of the prompt: loaded when it exists (only the tokens after the prefix it "
         "holds are evaluated), saved after the prompt (docs/sessions.md)",
         &o.prompt_cache);
  if (!cl.parse(argc, argv)) return kExitOk;

  validate::SessionRequest request = o.gate.request(o.kv, o.model.resolved_path());
  const std::string prompt = read_prompt(o);
  std::optional<SessionFile> cache;
  if (!o.prompt_cache.empty()) cache.emplace(o.prompt_cache, o.model.resolved_path());
  auto model = o.model.load();
  const model::Tokenizer& tok = model->tokenizer();
  model::SessionOptions& so = request.session;
  so.n_ctx = o.model.ctx_for(*model);
  // Refused before tokenizing: a prompt too long for the context would take seconds per MiB.
  if (const size_t most = tok.max_text_bytes(size_t(so.n_ctx - 1)); prompt.size() > most)
    throw Error("the prompt has " + std::to_string(prompt.size()) +
                    " bytes, more than the context of " + std::to_string(so.n_ctx) +
                    " positions can hold (at most " + std::to_string(most) +
                    " bytes with this vocabulary; raise -c)",
                ErrorKind::kResource);
  std::vector<int32_t> tokens = tok.encode(prompt, true);
  so.n_threads = o.model.n_threads;
  if (int(tokens.size()) > so.n_ctx)
    throw Error("the prompt has " + std::to_string(tokens.size()) +
                    " tokens, more than the context of " + std::to_string(so.n_ctx) + " (raise -c)",
                ErrorKind::kResource);
  const validate::OpenedSession opened = validate::open_session(*model, request);
  o.gate.report(opened.admission);
  model::Session& session = *opened.session;
  model::Sampler sampler(o.sampling.sampler, model->config().n_vocab);

  auto t0 = Clock::now();
  const int n_reused = cache ? reuse_prompt_cache(*cache, session, tokens) : 0;
  if (n_reused < int(tokens.size()))
    session.eval(tokens.data() + n_reused, int(tokens.size()) - n_reused);
  const double t_prefill = seconds_since(t0);
  if (cache && n_reused < int(tokens.size()))
    std::fprintf(stderr, "kvrt: prompt cache '%s' saved (%zu bytes)\n", cache->path().c_str(),
                 cache->save(session, {}));
  std::string text = tok.decode(tokens);
  write_stdout(text);
  bool at_start = text.empty();

  int n_gen = 0, n_decoded = 0;
  t0 = Clock::now();
  // Policy at the end of the context: the token predicted by the last position is still
  // printed, then generation stops with a message (no position is left to evaluate it).
  while (n_gen < o.n_predict) {
    const int32_t next = sampler.sample(session.last_logits(), model->config().n_vocab);
    if (tok.is_end_of_generation(next)) break;
    std::string piece = tok.token_to_piece(next);
    if (at_start && tok.adds_space_prefix() && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    at_start = at_start && piece.empty();
    write_stdout(piece);
    if (++n_gen == o.n_predict) break;
    if (session.n_past() >= session.n_ctx()) {
      std::fprintf(stderr, "\nkvrt: context full (%d positions); generation stopped (raise -c)\n",
                   session.n_ctx());
      break;
    }
    session.eval(&next, 1);
    ++n_decoded;
  }
  const double t_decode = seconds_since(t0);
  write_stdout("\n");
  report(session, int(tokens.size()) - n_reused, t_prefill, n_decoded, t_decode);
  return kExitOk;
}

}  // namespace kvrt::cli
