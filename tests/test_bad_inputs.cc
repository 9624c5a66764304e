// The catalogue of bad inputs to the kvrt CLI. Each case must end with a non-zero exit code, one
// clear line on stderr that names what is wrong, and nothing half-written on stdout or on disk.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/sha256.h"
#include "kvrt_config.h"
#include "simd/kernels.h"
#include "test_util.h"
#include "validate/record.h"

namespace {

using kvrt::test::TempDir;

// The CLI under test: $KVRT_EXE, else the build tree's tools/kvrt/kvrt.
void ensure_kvrt_exe() {
  const char* exe = std::getenv("KVRT_EXE");
  const char* build = std::getenv("KVRT_BUILD_DIR");
  if ((exe == nullptr || *exe == '\0') && build != nullptr)
    setenv("KVRT_EXE", (std::string(build) + "/tools/kvrt/kvrt").c_str(), 1);
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

struct BadCase {
  const char* what;
  std::string args;
  int exit_code;
  std::string says;          // a piece of the error line
  bool usage_follows = false;  // the first line is the error, the command list follows it
};

// Runs one case: the exit code, a single stderr line with the expected words, no stdout.
void check_case(const BadCase& c, const TempDir& tmp) {
  CAPTURE(c.what);
  CAPTURE(c.args);
  const kvrt::test::CommandResult r = kvrt::test::run_kvrt(c.args, tmp);
  CAPTURE(r.err);
  CHECK(r.exit_code == c.exit_code);
  CHECK(r.out.empty());
  const std::string first_line = r.err.substr(0, r.err.find('\n'));
  CHECK(first_line.find(c.says) != std::string::npos);
  if (!c.usage_follows) CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

}  // namespace

TEST_CASE("bad flags and values are usage errors (exit 2)") {
  ensure_kvrt_exe();
  TempDir tmp;
  const std::string m = "-m " + quote(kvrt::test::stories_path()) + " ";
  const std::vector<BadCase> cases = {
      {"unknown subcommand", "frobnicate", 2, "unknown command 'frobnicate'", true},
      {"unknown flag", "run " + m + "--bogus", 2, "--bogus"},
      {"missing value", "run " + m + "-n", 2, "-n"},
      {"not a number", "run " + m + "-n abc", 2, "abc"},
      {"negative count", "run " + m + "-n -5", 2, "-5"},
      {"zero context", "run " + m + "-c 0", 2, "0"},
      {"zero threads", "run " + m + "-t 0", 2, "0"},
      {"temperature out of range", "run " + m + "--temp -1", 2, "-1"},
      {"top-p out of range", "run " + m + "--top-p 2", 2, "2"},
      {"trailing garbage in a number", "run " + m + "-c 12x", 2, "12x"},
      {"unknown KV format", "run " + m + "--kv q3 -p hi", 2, "q3"},
      {"unknown key format", "run " + m + "--kv-k int2 -p hi", 2, "int2"},
      {"unknown key axis", "run " + m + "--kv q8 --k-axis diagonal -p hi", 2, "diagonal"},
      {"prompt and prompt file", "run " + m + "-p hi -f " + quote(tmp / "p.txt"), 2, "either -p or -f"},
      {"info with an unknown flag", "info " + m + "--bogus", 2, "--bogus"},
  };
  write_bytes(tmp / "p.txt", "hello");
  for (const auto& c : cases) check_case(c, tmp);
}

TEST_CASE("missing, unreadable and malformed files name the file (exit 2)") {
  ensure_kvrt_exe();
  TempDir tmp;
  const std::string model = kvrt::test::read_file(kvrt::test::stories_path());
  REQUIRE(model.size() > 100000);
  write_bytes(tmp / "empty.gguf", "");
  write_bytes(tmp / "magic.gguf", "GGML" + model.substr(4));
  write_bytes(tmp / "header.gguf", model.substr(0, 20));
  write_bytes(tmp / "metadata.gguf", model.substr(0, 2000));
  write_bytes(tmp / "tensors.gguf", model.substr(0, model.size() / 2));
  std::string version = model;
  version[4] = 9;  // GGUF version 9
  write_bytes(tmp / "version.gguf", version);
  std::filesystem::create_directory(tmp / "dir.gguf");
  const std::vector<BadCase> cases = {
      {"missing model", "run -m " + quote(tmp / "none.gguf") + " -p hi", 2, "none.gguf"},
      {"directory as model", "run -m " + quote(tmp / "dir.gguf") + " -p hi", 2, "dir.gguf"},
      {"empty model", "run -m " + quote(tmp / "empty.gguf") + " -p hi", 2, "empty.gguf"},
      {"bad magic", "info -m " + quote(tmp / "magic.gguf"), 2, "magic.gguf"},
      {"unsupported version", "info -m " + quote(tmp / "version.gguf"), 2, "version"},
      {"truncated header", "info -m " + quote(tmp / "header.gguf"), 2, "truncated"},
      {"truncated metadata", "run -m " + quote(tmp / "metadata.gguf") + " -p hi", 2, "metadata.gguf"},
      {"tensor data past the end", "run -m " + quote(tmp / "tensors.gguf") + " -p hi", 2, "tensors.gguf"},
      {"missing prompt file", "run -m " + quote(kvrt::test::stories_path()) + " -f " + quote(tmp / "none.txt"), 2,
       "none.txt"},
  };
  for (const auto& c : cases) check_case(c, tmp);
}

TEST_CASE("a prompt longer than the context is a resource error (exit 4)") {
  ensure_kvrt_exe();
  TempDir tmp;
  check_case({"prompt over the context",
              "run -m " + quote(kvrt::test::stories_path()) + " -c 4 -p 'Once upon a time there was a girl'", 4,
              "more than the context of 4"},
             tmp);
}

TEST_CASE("generation past the context stops with a clear message (documented policy)") {
  ensure_kvrt_exe();
  TempDir tmp;
  const kvrt::test::CommandResult r =
      kvrt::test::run_kvrt("run -m " + quote(kvrt::test::stories_path()) + " -c 16 -n 100 -p 'Once upon a time'", tmp);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("context full (16 positions); generation stopped") != std::string::npos);
  CHECK(r.out.rfind("Once upon a time", 0) == 0);
}

TEST_CASE("validate: wrong-typed thresholds and unwritable outputs fail before the run, writing nothing") {
  ensure_kvrt_exe();
  TempDir tmp;
  const std::string m = "-m " + quote(kvrt::test::stories_path()) + " --max-len 160 --kv q8 ";
  const std::string t = tmp / "t.toml";
  write_bytes(tmp / "file", "not a directory");
  const std::string rec = "--record " + quote(tmp / "r.toml") + " ";
  const std::vector<std::pair<std::string, std::string>> thresholds = {
      {"a string for a number", "[metric.kl]\nmax = \"small\"\n"},
      {"a float for an integer", "[bootstrap]\nresamples = 2000.5\n"},
      {"a table for a number", "[metric.kl]\nmax = { value = 1 }\n"},
      {"an array for a number", "[bootstrap]\nconfidence = [0.95]\n"},
      {"a number for a table", "metric = 3\n"},
  };
  for (const auto& [what, text] : thresholds) {
    write_bytes(t, text);
    check_case({what.c_str(), "validate " + m + rec + "--config " + quote(t), 2, t + ":"}, tmp);
  }
  const std::vector<BadCase> outputs = {
      {"JSON report under a file", "validate " + m + rec + "--json " + quote(tmp / "file/r.json"), 2, "not a directory"},
      {"HTML report onto a directory", "validate " + m + rec + "--html " + quote(tmp.path()), 2, "is a directory"},
      {"record under a file", "validate " + m + "--record " + quote(tmp / "file/sub/r.toml"), 2, "not a directory"},
  };
  for (const auto& c : outputs) check_case(c, tmp);
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path())) left.push_back(e.path().filename());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"file", "stderr", "stdout", "t.toml"});
}

TEST_CASE("a validation record made for another model file is refused (exit 3)") {
  ensure_kvrt_exe();
  TempDir tmp;
  const std::string other = std::string(KVRT_SOURCE_DIR) + "/tests/fuzz/corpus/gguf/tiny_llama_f32.gguf";
  kvrt::validate::Record r;
  r.kvrt_version = KVRT_VERSION;
  r.isa = kvrt::simd::isa_name();
  r.model_path = other;
  r.model_sha256 = kvrt::sha256_file(other);
  r.thresholds_path = std::string(KVRT_SOURCE_DIR) + "/validation/thresholds.toml";
  r.thresholds_sha256 = kvrt::sha256_file(r.thresholds_path);
  r.max_len = 160;
  r.settings.push_back({"k=q8,v=q8,g=32,axis=token,r=0,rot=0", "q8/q8", kvrt::validate::Verdict::kPass, 1});
  kvrt::validate::write_record(r, tmp / "other.toml");
  check_case({"record of another model",
              "run -m " + quote(kvrt::test::stories_path()) + " -p hi -n 4 --kv q8 --record " + quote(tmp / "other.toml"),
              3, "made for another model file"},
             tmp);
}
