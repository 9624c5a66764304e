// Helpers shared by the tests: where the shared data is, temporary files, running the CLI.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kvrt::test {

// ../shared beside the checkout (the test harness sets KVRT_SHARED_DIR).
inline std::string shared_dir() {
  const char* env = std::getenv("KVRT_SHARED_DIR");
  return env && *env ? env : "../shared";
}

inline std::string stories_path() { return shared_dir() + "/models/stories260K.gguf"; }

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
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

}  // namespace kvrt::test
