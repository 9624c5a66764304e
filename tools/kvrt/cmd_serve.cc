// kvrt serve: a local OpenAI-compatible HTTP server (src/serve/) that serves one model at one KV
// setting, and only a setting the gate lets through: --kv takes what run takes and is refused at
// start-up without a PASS record at -c. SIGINT or SIGTERM stop it.
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <thread>

#include "command_line.h"
#include "commands.h"
#include "common/error.h"
#include "flag_numbers.h"
#include "gate_options.h"
#include "kv_options.h"
#include "text/chat_template.h"
#include "model_options.h"
#include "ops/matmul.h"
#include "serve/server.h"
#include "simd/kernels.h"
#include "validate/open_session.h"

namespace kvrt::cli {
namespace {

struct ServeOptions {
  ModelOptions model;
  KvOptions kv;
  GateOptions gate;
  std::string chat_format;
  serve::ServerOptions server;
  serve::SchedulerOptions scheduler;
  int max_body_kib = 1024;
};

void add_options(CommandLine& cl, ServeOptions& o) {
  o.model.add_to(cl);
  o.kv.add_to(cl);
  o.gate.add_to(cl);
  cl.add("--chat-format", "NAME",
         "chat format of /v1/chat/completions instead of the model's tokenizer.chat_template",
         &o.chat_format);
  cl.add("--host", "ADDR", "address to listen on (default 127.0.0.1: this machine only)",
         &o.server.host);
  cl.add("--port", "N", "port to listen on (default 8080; 0 = any free port, printed at start-up)",
         &o.server.port, 0, 65535);
  cl.add("--api-key", "KEY",
         "require \"Authorization: Bearer KEY\" on /v1/ (default: $KVRT_API_KEY, else none)",
         &o.server.api_key);
  cl.add("--parallel", "N",
         "slots: requests generated at once, each with its own KV cache (default 1)",
         &o.scheduler.n_slots, 1, 64);
  cl.add("--queue", "N", "requests waiting for a slot; more get 503 with Retry-After (default 16)",
         &o.scheduler.queue_limit, 0, 4096);
  cl.add("--prefill-chunk", "N", "prompt tokens evaluated between two decode steps (default 256)",
         &o.scheduler.prefill_chunk, 1, 1 << 16);
  cl.add("--max-tokens", "N",
         "the most tokens a request may generate, and its default (default 4096)",
         &o.server.max_tokens, 1, 1 << 24);
  cl.add("--max-prompt-tokens", "N",
         "the most prompt tokens a request may have (default: the context minus one)",
         &o.server.max_prompt_tokens, 1, 1 << 24);
  cl.add("--max-body", "KIB", "the largest request body in KiB; more gets 413 (default 1024)",
         &o.max_body_kib, 1, 1 << 20);
  cl.add("--read-timeout", "S", "seconds a request may take to arrive; more gets 408 (default 10)",
         &o.server.read_timeout_s, 1, 3600);
  // Tests only: slows every scheduler step by MS milliseconds, so that a slot stays busy long
  // enough to fill the queue or to lose its client mid-reply.
  cl.add_hidden("--debug-step-delay", [&o](std::string_view v) {
    o.scheduler.debug_step_delay =
        std::chrono::milliseconds(parse_flag_int("--debug-step-delay", v, 0, 10000));
  });
}

// A signal set of SIGINT and SIGTERM, blocked in this thread and every thread it starts after,
// so that one thread receives them with sigwait.
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

serve::ServedModel served_model(const std::string& path, const validate::Admission& admitted) {
  using Kind = validate::Admission::Kind;
  serve::ServedModel m;
  m.id = std::filesystem::path(path).stem().string();
  m.kv_setting = admitted.session.kv.name();
  m.matmul = ops::matmul_precision_name(admitted.session.matmul);
  m.n_ctx = admitted.session.n_ctx;
  m.gate = admitted.kind == Kind::kRecord     ? "record"
           : admitted.kind == Kind::kBaseline ? "baseline"
                                              : "unvalidated";
  m.record = admitted.pass.record_path;
  return m;
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  ServeOptions o;
  CommandLine cl(
      "kvrt serve [-m MODEL] [--kv SETTING] [-c N] [--parallel N] [--port N] [options]",
      "Serves the model over an OpenAI-compatible HTTP API (docs/serve.md): /v1/chat/completions, "
      "/v1/completions, /v1/models, /health, /metrics. A compressed KV setting needs a PASS record "
      "at -c.");
  add_options(cl, o);
  if (!cl.parse(argc, argv)) return kExitOk;
  if (o.server.api_key.empty())
    if (const char* key = std::getenv("KVRT_API_KEY")) o.server.api_key = key;
  o.server.max_body_bytes = size_t(o.max_body_kib) * 1024;

  validate::SessionRequest request = o.gate.request(o.kv, o.model.resolved_path());
  auto model = o.model.load();
  std::optional<model::ChatTemplate> chat = o.chat_format.empty()
                                                ? model::ChatTemplate::of_model(model->file())
                                                : model::ChatTemplate::from_name(o.chat_format);
  request.session.n_ctx = o.model.ctx_for(*model);
  request.session.n_threads = o.model.n_threads;
  // Gated before any slot is made or the port bound; every slot opens with the admitted options.
  const validate::Admission admitted = validate::admit(*model, request);
  o.gate.report(admitted);
  o.scheduler.admitted = admitted;
  const serve::ServedModel served = served_model(o.model.resolved_path(), admitted);
  // A client that goes away must not end the server: writes to it fail instead.
  std::signal(SIGPIPE, SIG_IGN);
  const sigset_t stop_signals = block_stop_signals();
  serve::Server server(*model, chat, served, o.server, o.scheduler);
  const int port = server.bind();
  std::fprintf(stderr, "kvrt: ISA %s, %d slots of %d positions, KV %s, matmul %s, chat format %s\n",
               simd::isa_name(), o.scheduler.n_slots, served.n_ctx, served.kv_setting.c_str(),
               served.matmul.c_str(),
               chat ? std::string(chat->name()).c_str() : "none (completions only)");
  std::printf("kvrt serve: listening on http://%s:%d (model %s)\n", o.server.host.c_str(), port,
              served.id.c_str());
  std::fflush(stdout);

  std::thread on_signal([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    server.stop();
  });
  std::optional<Error> failed;
  try {
    server.listen();
  } catch (const Error& e) {
    failed = e;
  }
  // Ends the signal thread when listen() ended by itself (the signal is blocked everywhere, so
  // it reaches only sigwait).
  pthread_kill(on_signal.native_handle(), SIGTERM);
  on_signal.join();
  if (failed) throw *failed;
  std::fprintf(stderr, "kvrt: server stopped\n");
  return kExitOk;
}

}  // namespace kvrt::cli
