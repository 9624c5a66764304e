// Files kvrt writes: an output is a regular file replaced whole or a new path, written through a
// symlink to its target, never left half-written or as a stray temporary file after a crash
// (SIGKILL) or a file-size limit (SIGXFSZ), and a validation record keeps every verdict when
// several validate runs write it at once. The refusals of special files are in test_bad_inputs.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace {

using kvrt::test::TempDir;

std::string quote(const std::string& s) { return "'" + s + "'"; }

std::string kvrt_exe() {
  const char* exe = std::getenv("KVRT_EXE");
  return exe && *exe ? exe : "kvrt";
}

// `kvrt validate` of one setting on a short usable context (about a second on stories260K).
std::string validate_args(const std::string& kv, const std::string& outputs) {
  return "validate -m " + quote(kvrt::test::stories_path()) + " --kv " + kv + " --max-len 64 " +
         outputs;
}

// Starts `sh -c "<env> kvrt <args> >out 2>err"` in the background.
pid_t start(const std::string& env, const std::string& args, const std::string& out,
            const std::string& err) {
  const std::string cmd =
      env + " " + kvrt_exe() + " " + args + " >" + quote(out) + " 2>" + quote(err);
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  REQUIRE(pid > 0);
  return pid;
}

// The exit code of a started command (128 + signal when a signal ended it).
int finish(pid_t pid) {
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int run(const std::string& env, const std::string& args, const TempDir& tmp) {
  return finish(start(env, args, tmp / "stdout", tmp / "stderr"));
}

bool wait_until(const std::function<bool()>& done, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Names in `dir`, sorted.
std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// Whether validate's progress lines on stderr ("validating: 6/24 cases, ..., 2 settings running")
// reached the last case, or no setting is left running (all decided early).
bool progress_done(const std::string& err) {
  const size_t at = err.rfind("validating: ");
  if (at == std::string::npos) return false;
  int done = 0, total = -1;
  if (std::sscanf(err.c_str() + at, "validating: %d/%d", &done, &total) == 2 && done == total)
    return true;
  return err.find(" 0 settings running", at) != std::string::npos;
}

// The environment that loads tests/test_hooks.c into kvrt, or "" (with a message) where it cannot:
// cross builds run kvrt under an emulator.
std::string hooks_env(const std::string& settings) {
  const char* hooks = std::getenv("KVRT_TEST_HOOKS");
  const char* wrapper = std::getenv("KVRT_EXE_WRAPPER");
  if (hooks == nullptr || *hooks == '\0' || (wrapper && *wrapper)) {
    MESSAGE("skipped: the LD_PRELOAD test hooks need a native build");
    return "";
  }
  // A sanitized kvrt accepts a library loaded before its runtime only when told so.
  return "LD_PRELOAD=" + quote(hooks) +
         " ASAN_OPTIONS=\"${ASAN_OPTIONS}:verify_asan_link_order=0\" " + settings;
}

}  // namespace

TEST_CASE(
    "an output path that is a symlink is written through to its regular-file target; the link "
    "stays") {
  TempDir tmp;
  std::filesystem::create_directory(tmp / "data");
  std::ofstream(tmp / "data/r.json") << "old";
  std::filesystem::create_symlink(tmp / "data/r.json", tmp / "link.json");
  std::filesystem::create_symlink("data/r.toml",
                                  tmp / "link.toml");  // relative, to the record made first
  const int first = run("",
                        validate_args("q8", "--json " + quote(tmp / "link.json") + " --record " +
                                                quote(tmp / "data/r.toml")),
                        tmp);
  INFO(kvrt::test::read_file(tmp / "stderr"));
  REQUIRE((first == 0 || first == 1));
  CHECK(std::filesystem::is_symlink(tmp / "link.json"));
  CHECK(kvrt::test::read_file(tmp / "data/r.json").find("\"verdict\"") != std::string::npos);
  const int second = run("", validate_args("q4", "--record " + quote(tmp / "link.toml")), tmp);
  REQUIRE((second == 0 || second == 1));
  CHECK(std::filesystem::is_symlink(tmp / "link.toml"));
  const std::string record = kvrt::test::read_file(tmp / "data/r.toml");
  CHECK(record.find("\"q8/q8\"") != std::string::npos);
  CHECK(record.find("\"q4/q4\"") != std::string::npos);
}

TEST_CASE(
    "a validate killed before its outputs are in place leaves no temporary file after the next "
    "run") {
  TempDir tmp;
  const std::string env = hooks_env("KVRT_HOOK_KILL_RENAME=r.json");
  if (env.empty()) return;
  std::filesystem::create_directory(tmp / "out");
  const std::string outputs =
      "--json " + quote(tmp / "out/r.json") + " --record " + quote(tmp / "out/r.toml");
  CHECK(run(env, validate_args("q8", outputs), tmp) == 128 + SIGKILL);
  CHECK(!std::filesystem::exists(tmp / "out/r.json"));
  // A temporary file of a live process (this one) is left alone.
  const std::string live = tmp / ("out/.r.json.kvrt-tmp." + std::to_string(getpid()) + ".0");
  std::ofstream(live) << "in flight";
  const int rc = run("", validate_args("q8", outputs), tmp);
  INFO(kvrt::test::read_file(tmp / "stderr"));
  CHECK((rc == 0 || rc == 1));
  CHECK(kvrt::test::read_file(tmp / "out/r.json").find("\"verdict\"") != std::string::npos);
  std::vector<std::string> left = listing(tmp / "out");
  std::erase(left, ".r.json.kvrt-tmp." + std::to_string(getpid()) + ".0");
  std::erase(left, "r.toml.lock");
  CHECK(left == std::vector<std::string>{"r.json", "r.toml"});
}

TEST_CASE("a validate killed while it replaces its record leaves the earlier record whole") {
  TempDir tmp;
  const std::string env = hooks_env("KVRT_HOOK_KILL_RENAME=r.toml");
  if (env.empty()) return;
  const std::string record = "--record " + quote(tmp / "r.toml");
  REQUIRE(run("", validate_args("q8", record), tmp) <= 1);
  const std::string earlier = kvrt::test::read_file(tmp / "r.toml");
  CHECK(run(env, validate_args("q4", record), tmp) == 128 + SIGKILL);
  CHECK(kvrt::test::read_file(tmp / "r.toml") == earlier);
  REQUIRE(run("", validate_args("q4", record), tmp) <= 1);
  for (const std::string& name : listing(tmp.path())) CHECK(name.find("tmp") == std::string::npos);
}

TEST_CASE("a file-size limit (SIGXFSZ) is an error that leaves no partial file") {
  TempDir tmp;
  std::filesystem::create_directory(tmp / "out");
  // 8 KiB: the text report on stdout fits, the JSON report (about 17 KiB) does not.
  const int rc = run("ulimit -f 8;",
                     validate_args("q8", "--json " + quote(tmp / "out/r.json") + " --record " +
                                             quote(tmp / "out/r.toml")),
                     tmp);
  const std::string err = kvrt::test::read_file(tmp / "stderr");
  CAPTURE(err);
  CHECK(rc == 2);
  CHECK(err.find("cannot write JSON report") != std::string::npos);
  CHECK(err.find("File too large") != std::string::npos);
  CHECK(listing(tmp / "out").empty());
}

TEST_CASE("two validate runs writing one record at once both keep their verdicts") {
  TempDir tmp;
  const std::string env =
      hooks_env("KVRT_HOOK_HOLD_RENAME=r.toml KVRT_HOOK_DIR=" + quote(tmp / "hook"));
  if (env.empty()) return;
  std::filesystem::create_directory(tmp / "hook");
  const std::string record = "--record " + quote(tmp / "r.toml");
  // A stops just before it puts its record in place; B runs its whole validation meanwhile.
  const pid_t a = start(env, validate_args("q8", record), tmp / "a.out", tmp / "a.err");
  REQUIRE(wait_until([&] { return std::filesystem::exists(tmp / "hook/held"); }, 300));
  const pid_t b = start("", validate_args("q4", record), tmp / "b.out", tmp / "b.err");
  bool b_exited = false;
  wait_until(
      [&] {
        int status = 0;
        b_exited = b_exited || waitpid(b, &status, WNOHANG) == b;
        return b_exited || progress_done(kvrt::test::read_file(tmp / "b.err"));
      },
      300);
  if (!b_exited)
    std::this_thread::sleep_for(std::chrono::seconds(3));  // B's record write, or its wait for A
  std::ofstream(tmp / "hook/release") << "";
  CHECK(finish(a) <= 1);
  if (!b_exited) CHECK(finish(b) <= 1);
  const std::string text = kvrt::test::read_file(tmp / "r.toml");
  CAPTURE(text);
  CHECK(text.find("\"q8/q8\"") != std::string::npos);
  CHECK(text.find("\"q4/q4\"") != std::string::npos);
}
