// kvrt chat: a multi-turn conversation with a chat model. User messages are read from stdin one
// line each (a terminal or a script), replies are streamed to stdout; notices and timings go to
// stderr. The KV cache keeps the conversation: each turn evaluates only its own tokens.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <optional>
#include <string>

#include "command_line.h"
#include "commands.h"
#include "common/error.h"
#include "common/regular_file.h"
#include "gate_options.h"
#include "kv_options.h"
#include "kv_report.h"
#include "model/conversation.h"
#include "model/session.h"
#include "model_options.h"
#include "ops/matmul.h"
#include "sampling_options.h"
#include "session_file.h"
#include "simd/kernels.h"
#include "std_streams.h"
#include "validate/open_session.h"

namespace kvrt::cli {
namespace {

struct ChatOptions {
  ModelOptions model;
  KvOptions kv;
  SamplingOptions sampling;
  GateOptions gate;
  std::string system, chat_format, on_full = "stop";
  int n_predict = 256;
  bool verbose = false;
  bool parse_special = false;
  std::string session_file;  // --session: resumed when it exists, saved after every turn
};

void write_out(std::string_view text) { write_stdout(text); }

// The next user message, at most max_bytes long; false at the end of input. On a terminal the
// prompt comes first; from a script the message is echoed after it, so stdout reads as a
// transcript. A longer line (stdin from /dev/zero) or a stdin that cannot be read (a directory)
// is an error, not a message or the end.
bool read_message(bool tty, size_t max_bytes, std::string& line) {
  if (tty) write_out("> ");
  line.clear();
  int c = 0;
  while ((c = std::getc(stdin)) != EOF && c != '\n') {
    if (line.size() == max_bytes)
      throw Error("a message on standard input is longer than " + std::to_string(max_bytes) +
                      " bytes, more than the context can hold (raise -c)",
                  ErrorKind::kResource);
    line += char(c);
  }
  if (c == EOF && std::ferror(stdin))
    throw Error(std::string("cannot read the messages on standard input: ") + std::strerror(errno));
  if (c == EOF && line.empty()) return false;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (!tty) write_out("> " + line + "\n");
  return true;
}

const char* end_reason(const model::TurnResult& r) {
  if (r.stop_token >= 0) return "ended by the model";
  return r.context_full ? "cut: context full" : "cut: -n reached";
}

void report_turn(int turn, const model::TurnResult& r, const model::Session& s) {
  std::fprintf(
      stderr,
      "kvrt: turn %d: %d tokens evaluated for the message%s, %d generated (%s), %d/%d positions\n",
      turn, int(r.prompt_tokens.size()), r.reread ? " (the whole conversation, read again)" : "",
      int(r.reply_tokens.size()), end_reason(r), s.n_past(), s.n_ctx());
}

void report_end(int n_turns, double seconds, const model::Conversation& chat,
                const model::Session& s) {
  std::fprintf(stderr,
               "kvrt: %d turn%s in %.2f s; %d tokens evaluated, %d positions in the cache\n",
               n_turns, n_turns == 1 ? "" : "s", seconds, chat.n_evaluated(), s.n_past());
  std::fprintf(stderr, "kvrt: ISA %s, %d threads, matmul %s; kernels run: %s\n", simd::isa_name(),
               s.n_threads(), ops::matmul_backends().c_str(), s.matmul_implementation());
  report_kv_cache(s);
}

void add_options(CommandLine& cl, ChatOptions& o) {
  o.model.add_to(cl);
  cl.add("--system", "TEXT", "system message at the start of the conversation", &o.system);
  cl.add(
      "--chat-format", "NAME",
      "chat format instead of the model's tokenizer.chat_template "
      "(chatml, qwen3, smollm3, llama3, mistral-v7-tekken, phi3, phi4-mini, gemma, granite, ...)",
      &o.chat_format);
  cl.add_flag("--parse-special",
              "control tokens written in messages (<|im_end|>, <start_of_turn>, "
              "...) become those tokens; by default messages are plain text",
              &o.parse_special);
  cl.add("-n,--n-predict", "N", "most tokens per reply (default 256)", &o.n_predict, 1, 1 << 24);
  cl.add("--on-full", "POLICY",
         "when the context is full: stop (default) or drop-oldest (drop the "
         "oldest turns and read the rest of the conversation again)",
         &o.on_full);
  cl.add_flag("-v,--verbose", "print the tokens evaluated and generated for every turn",
              &o.verbose);
  o.sampling.add_to(cl);
  o.kv.add_to(cl);
  o.gate.add_to(cl);
  cl.add("--session", "FILE",
         "state file of the conversation: resumed when it exists, saved after every turn "
         "(docs/sessions.md)",
         &o.session_file);
}

// Reads messages until the end of input; returns the number of turns. A full context ends the
// chat with Error(kResource) under the stop policy.
int chat_loop(const ChatOptions& o, model::Conversation& chat, model::Sampler& sampler, bool tty,
              const std::function<void()>& after_turn) {
  const model::Session& session = chat.session();
  const bool stop = model::parse_on_context_full(o.on_full) == model::OnContextFull::kStop;
  const std::string advice = stop ? "(raise -c, or use --on-full drop-oldest)" : "(raise -c)";
  int n_turns = 0;
  const size_t max_bytes = std::min(
      kMaxTextFileBytes, session.model().tokenizer().max_text_bytes(size_t(session.n_ctx())));
  for (std::string line; read_message(tty, max_bytes, line);) {
    if (line.empty()) continue;
    model::TurnResult r;
    try {
      r = chat.turn(line, sampler, o.n_predict, write_out);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kResource) throw;
      throw Error(std::string(e.what()) + "; the chat stops here " + advice, ErrorKind::kResource);
    }
    write_out("\n");
    ++n_turns;
    after_turn();
    if (r.n_dropped > 0)
      std::fprintf(stderr,
                   "kvrt: context full: dropped the %d oldest messages and read the remaining "
                   "conversation again (%d tokens; the first %d were still in the cache)\n",
                   r.n_dropped, r.n_reused + int(r.prompt_tokens.size()), r.n_reused);
    if (o.verbose) report_turn(n_turns, r, session);
    if (r.context_full && stop)
      throw Error("context full: the reply used the last of " + std::to_string(session.n_ctx()) +
                      " positions; the chat stops here " + advice,
                  ErrorKind::kResource);
    if (r.context_full)
      std::fprintf(
          stderr,
          "kvrt: context full: the reply was cut; the next message drops the oldest turns\n");
  }
  return n_turns;
}

}  // namespace

int cmd_chat(int argc, char** argv) {
  ChatOptions o;
  CommandLine cl(
      "kvrt chat [-m MODEL] [--system TEXT] [options] < MESSAGES",
      "Chats with an instruct model: each line of stdin is a user message; replies stream to "
      "stdout and end at the model's end-of-turn token. The conversation stays in the KV cache.");
  add_options(cl, o);
  if (!cl.parse(argc, argv)) return kExitOk;

  validate::SessionRequest request = o.gate.request(o.kv, o.model.resolved_path());
  const model::OnContextFull on_full = model::parse_on_context_full(o.on_full);
  std::optional<SessionFile> file;
  if (!o.session_file.empty()) file.emplace(o.session_file, o.model.resolved_path());
  auto model = o.model.load();
  const model::ChatTemplate format = model::ChatTemplate::for_model(model->file(), o.chat_format);
  request.session.n_ctx = o.model.ctx_for(*model);
  request.session.n_threads = o.model.n_threads;
  const validate::OpenedSession opened = validate::open_session(*model, request);
  o.gate.report(opened.admission);
  model::Session& session = *opened.session;
  model::Sampler sampler(o.sampling.sampler, model->config().n_vocab);
  model::Conversation chat(session, format, o.system, on_full, o.parse_special);
  if (file) resume_chat(*file, session, chat, sampler);
  const auto t0 = std::chrono::steady_clock::now();
  const bool tty = isatty(STDIN_FILENO) != 0;
  std::fprintf(stderr, "kvrt: chat format %s, context %d positions%s\n",
               std::string(format.name()).c_str(), session.n_ctx(), tty ? "; end with Ctrl-D" : "");

  const int n_turns = chat_loop(o, chat, sampler, tty, [&] {
    if (file) save_chat(*file, session, chat, sampler);
  });
  report_end(n_turns, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
             chat, session);
  return kExitOk;
}

}  // namespace kvrt::cli
