// Helpers shared by the tests: where the test data is, temporary files, running the CLI.
#pragma once

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "common/error.h"

// tests/meson.build passes the source tree to the test programs only; the library never knows it.
#ifndef KVRT_SOURCE_DIR
#error "KVRT_SOURCE_DIR must name the source tree (tests/meson.build defines it)"
#endif

namespace kvrt::test {

inline std::string source_dir() { return KVRT_SOURCE_DIR; }

// Vendored data (each folder has its licence beside the files): the default model and its oracles
// in models/, the tokenizer vectors in tests/data/vocab/, the reference text in tests/data/text/.
inline std::string models_dir() { return source_dir() + "/models"; }
inline std::string stories_path() { return models_dir() + "/stories260K.gguf"; }
inline std::string vocab_dir() { return source_dir() + "/tests/data/vocab"; }
inline std::string text_dir() { return source_dir() + "/tests/data/text"; }

// A build under AddressSanitizer (tools/test_sanitize.sh), which runs some 10x slower: tests
// that repeat whole forward passes on every ISA cut the repeats there, as they do under qemu.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif

// Where the large fixtures are looked for: ../shared/fixtures beside the checkout, or
// $KVRT_FIXTURES_DIR (a test program of other cases checks that it is a directory to use one).
inline std::string fixtures_path() {
  const char* env = std::getenv("KVRT_FIXTURES_DIR");
  return (env && *env ? std::filesystem::path(env)
                      : std::filesystem::path(source_dir()) / ".." / "shared" / "fixtures")
      .lexically_normal()
      .string();
}

// The large fixtures. When they are absent the whole test program exits with meson's skip code
// 77, so fixture tests live in test programs of their own.
inline std::string fixtures_dir() {
  const std::string dir = fixtures_path();
  if (std::filesystem::is_directory(dir)) return dir;
  std::fprintf(stderr,
               "SKIP: the large test fixtures are not at %s; put ../shared/fixtures beside the "
               "checkout or set KVRT_FIXTURES_DIR (see docs/building-and-testing.md)\n",
               dir.c_str());
  std::exit(77);
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The message of the kvrt::Error that f throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A fresh directory under the system temp dir, removed when the object goes away.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kvrt-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data()) ? tmpl : throw std::runtime_error("mkdtemp failed");
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs the kvrt binary (path from $KVRT_EXE) with a shell-quoted argument string.
inline CommandResult run_kvrt(const std::string& args, const TempDir& tmp) {
  const char* exe = std::getenv("KVRT_EXE");
  const std::string out = tmp / "stdout", err = tmp / "stderr";
  const std::string cmd = std::string(exe ? exe : "kvrt") + " " + args + " >" + out + " 2>" + err;
  int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

// Runs a shell command; returns its exit status (128 + the signal that ended it, -1 when it could
// not start) and appends its stdout to *out.
inline int shell(const std::string& cmd, std::string* out = nullptr) {
  std::FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0)
    if (out) out->append(buf.data(), n);
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The value after "key:" on the line of `text` that starts with it ("" when absent): a field of
// kvrt info's output.
inline std::string field(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + ":", 0) == 0) {
      const size_t begin = line.find_first_not_of(' ', key.size() + 1);
      return begin == std::string::npos ? "" : line.substr(begin);
    }
  return "";
}

}  // namespace kvrt::test
