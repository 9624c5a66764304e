// kvrt: a CPU inference runtime with a validated, SIMD-packed KV cache.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "commands.h"
#include "common/error.h"
#include "kvrt_config.h"
#include "std_streams.h"

namespace {

struct Subcommand {
  const char* name;
  int (*run)(int, char**);
  const char* summary;
};

constexpr Subcommand kSubcommands[] = {
    {"run", kvrt::cli::cmd_run, "generate text from a prompt"},
    {"chat", kvrt::cli::cmd_chat, "multi-turn chat with an instruct model (messages from stdin)"},
    {"info", kvrt::cli::cmd_info, "describe a model file and this machine"},
    {"bench", kvrt::cli::cmd_bench, "measure prefill and decode speed per KV setting"},
    {"validate", kvrt::cli::cmd_validate,
     "check KV settings against the FP32 cache; write the record run needs"},
    {"tune", kvrt::cli::cmd_tune,
     "find the smallest per-layer KV setting that passes validation; record it by name"},
    {"keygen", kvrt::cli::cmd_keygen,
     "make an Ed25519 key pair to sign validation records (validate --sign, run --trust)"},
#if KVRT_HAVE_SERVE
    {"serve", kvrt::cli::cmd_serve,
     "serve the model over an OpenAI-compatible HTTP API, only at a validated setting"},
#endif
};

void print_usage(std::FILE* out) {
  std::fprintf(out, "kvrt %s — CPU inference with a validated quantized KV cache\n\n",
               KVRT_VERSION);
  std::fprintf(out,
               "usage: kvrt <command> [options]   (kvrt <command> --help for its options)\n\n");
  for (const auto& s : kSubcommands) std::fprintf(out, "  %-10s %s\n", s.name, s.summary);
}

int exit_code(kvrt::ErrorKind kind) {
  switch (kind) {
    case kvrt::ErrorKind::kRefused: return kvrt::cli::kExitNotValidated;
    case kvrt::ErrorKind::kResource: return kvrt::cli::kExitResource;
    case kvrt::ErrorKind::kInternal: return kvrt::cli::kExitInternal;
    default: return kvrt::cli::kExitUsage;
  }
}

// The subcommand running, for the exit handler below; null once main() returns. (The one mutable
// global of the CLI: an atexit handler has no other way to know whether main() returned.)
const char* g_running = nullptr;

// A library that calls exit() (libgomp when it cannot create a thread: "libgomp: Thread creation
// failed") would end kvrt with its own code, 1, which means "validate refused". Such an exit is a
// library failure: say so and exit with that code.
void on_library_exit() {
  if (g_running == nullptr) return;
  std::fflush(stdout);
  std::fprintf(stderr,
               "kvrt %s: error: a library ended the process (see its message above; for a thread "
               "failure, lower -t)\n",
               g_running);
  std::fflush(stderr);
  ::_exit(kvrt::cli::kExitInternal);
}

int run_subcommand(const Subcommand& s, int argc, char** argv) {
  g_running = s.name;
  try {
    return s.run(argc - 2, argv + 2);
  } catch (const kvrt::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "kvrt %s: error: %s\n", s.name, e.what());
    return exit_code(e.kind());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "kvrt %s: error: out of memory\n", s.name);
    return kvrt::cli::kExitResource;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kvrt %s: internal error: %s\n", s.name, e.what());
    return kvrt::cli::kExitInternal;
  }
}

// Output lost on the way out (a full disk, /dev/full, a closed descriptor) turns a success into
// a failure with one line on stderr; a failure keeps its own code.
int finish(const char* name, int code) {
  const std::string lost = kvrt::cli::close_stdout();
  if (lost.empty()) return code;
  std::fprintf(stderr, "kvrt%s%s: error: %s\n", *name ? " " : "", name, lost.c_str());
  return code == kvrt::cli::kExitOk ? kvrt::cli::kExitResource : code;
}

}  // namespace

int main(int argc, char** argv) {
  kvrt::cli::reserve_standard_fds();
  kvrt::cli::buffer_stdout();
  if (argc < 2) {
    print_usage(stderr);
    return kvrt::cli::kExitUsage;
  }
  const std::string name = argv[1];
  if (name == "-h" || name == "--help" || name == "help") {
    print_usage(stdout);
    return finish("", kvrt::cli::kExitOk);
  }
  if (name == "--version") {
    std::printf("kvrt %s\n", KVRT_VERSION);
    return finish("", kvrt::cli::kExitOk);
  }
  // Over a file-size limit a write fails with EFBIG (and the output's temporary file is dropped)
  // instead of SIGXFSZ ending the process.
  std::signal(SIGXFSZ, SIG_IGN);
  std::atexit(on_library_exit);
  for (const auto& s : kSubcommands) {
    if (name != s.name) continue;
    const int code = run_subcommand(s, argc, argv);
    g_running = nullptr;
    return finish(s.name, code);
  }
  std::fprintf(stderr, "kvrt: unknown command '%s'\n\n", name.c_str());
  print_usage(stderr);
  return kvrt::cli::kExitUsage;
}
