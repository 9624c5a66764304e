// The catalogue of bad inputs to the kvrt CLI. Each case must end with a non-zero exit code, one
// clear line on stderr that names what is wrong, and nothing half-written on stdout or on disk.
#include <doctest/doctest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
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

// The CLI under test: $KVRT_EXE, else the build tree's tools/kvrt/kvrt, behind a time limit so
// that a case that blocks (a FIFO opened for reading) fails instead of hanging the suite.
void ensure_kvrt_exe() {
  const char* exe = std::getenv("KVRT_EXE");
  const char* build = std::getenv("KVRT_BUILD_DIR");
  std::string cmd = exe && *exe ? exe : build ? std::string(build) + "/tools/kvrt/kvrt" : "kvrt";
  if (cmd.rfind("timeout ", 0) != 0) cmd = "timeout -k 5 120 " + cmd;
  setenv("KVRT_EXE", cmd.c_str(), 1);
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

struct BadCase {
  const char* what;
  std::string args;
  int exit_code;
  std::string says;            // a piece of the error line
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

// Special files made in the temporary directory: a FIFO, a character device like /dev/zero (made
// with mknod, never /dev/null itself; empty when mknod is not allowed), a socket and a directory.
struct SpecialFiles {
  std::string fifo, chardev, socket, dir;
};

SpecialFiles make_special_files(const TempDir& tmp) {
  SpecialFiles s{tmp / "fifo", tmp / "chardev", tmp / "socket", tmp / "dir"};
  REQUIRE(mkfifo(s.fifo.c_str(), 0666) == 0);
  if (mknod(s.chardev.c_str(), S_IFCHR | 0666, makedev(1, 5)) != 0) {
    MESSAGE("mknod is not allowed here (not root?): the character-device cases are skipped");
    s.chardev.clear();
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  REQUIRE(s.socket.size() < sizeof addr.sun_path);
  std::strcpy(addr.sun_path, s.socket.c_str());
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  close(fd);
  std::filesystem::create_directory(s.dir);
  return s;
}

// The file type of `path` as `stat -c %F` names it ("" when it does not exist).
std::string file_type(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return "";
  if (S_ISREG(st.st_mode)) return "regular file";
  if (S_ISCHR(st.st_mode)) return "character device";
  if (S_ISFIFO(st.st_mode)) return "fifo";
  if (S_ISSOCK(st.st_mode)) return "socket";
  if (S_ISDIR(st.st_mode)) return "directory";
  if (S_ISLNK(st.st_mode)) return "symbolic link";
  return "other";
}

// An empty file of `bytes` bytes that takes no disk space.
void make_sparse(const std::string& path, off_t bytes) {
  write_bytes(path, "");
  REQUIRE(truncate(path.c_str(), bytes) == 0);
}

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
      {"unknown KV format", "run " + m + "--kv q5 -p hi", 2, "q5"},
      {"unknown key format", "run " + m + "--kv-k int2 -p hi", 2, "int2"},
      {"unknown key axis", "run " + m + "--kv q8 --k-axis diagonal -p hi", 2, "diagonal"},
      {"bad layer list", "run " + m + "--kv 'q4,layers[0,x]=q8' -p hi", 2,
       "'x' is not a layer index"},
      {"layer outside the model", "run " + m + "--kv 'q4,layers[-6]=q8' -p hi", 2,
       "outside the model's 5 layers"},
      {"prompt and prompt file", "run " + m + "-p hi -f " + quote(tmp / "p.txt"), 2,
       "either -p or -f"},
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
      {"truncated metadata", "run -m " + quote(tmp / "metadata.gguf") + " -p hi", 2,
       "metadata.gguf"},
      {"tensor data past the end", "run -m " + quote(tmp / "tensors.gguf") + " -p hi", 2,
       "tensors.gguf"},
      {"missing prompt file",
       "run -m " + quote(kvrt::test::stories_path()) + " -f " + quote(tmp / "none.txt"), 2,
       "none.txt"},
  };
  for (const auto& c : cases) check_case(c, tmp);
}

TEST_CASE("a prompt longer than the context is a resource error (exit 4)") {
  ensure_kvrt_exe();
  TempDir tmp;
  check_case({"prompt over the context",
              "run -m " + quote(kvrt::test::stories_path()) +
                  " -c 4 -p 'Once upon a time there was a girl'",
              4, "more than the context of 4"},
             tmp);
}

TEST_CASE("generation past the context stops with a clear message (documented policy)") {
  ensure_kvrt_exe();
  TempDir tmp;
  const kvrt::test::CommandResult r = kvrt::test::run_kvrt(
      "run -m " + quote(kvrt::test::stories_path()) + " -c 16 -n 100 -p 'Once upon a time'", tmp);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("context full (16 positions); generation stopped") != std::string::npos);
  CHECK(r.out.rfind("Once upon a time", 0) == 0);
}

TEST_CASE(
    "validate: wrong-typed thresholds and unwritable outputs fail before the run, writing "
    "nothing") {
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
      {"JSON report under a file", "validate " + m + rec + "--json " + quote(tmp / "file/r.json"),
       2, "not a directory"},
      {"HTML report onto a directory", "validate " + m + rec + "--html " + quote(tmp.path()), 2,
       "is a directory"},
      {"record under a file", "validate " + m + "--record " + quote(tmp / "file/sub/r.toml"), 2,
       "not a directory"},
  };
  for (const auto& c : outputs) check_case(c, tmp);
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path()))
    left.push_back(e.path().filename());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"file", "stderr", "stdout", "t.toml"});
}

TEST_CASE("a validation record made for another model file is refused (exit 3)") {
  ensure_kvrt_exe();
  TempDir tmp;
  const std::string other =
      std::string(KVRT_SOURCE_DIR) + "/tests/fuzz/corpus/gguf/tiny_llama_f32.gguf";
  kvrt::validate::Record r;
  r.kvrt_version = KVRT_VERSION;
  r.isa = kvrt::simd::isa_name();
  r.model_path = other;
  r.model_sha256 = kvrt::sha256_file(other);
  r.thresholds_path = std::string(KVRT_SOURCE_DIR) + "/validation/thresholds.toml";
  r.thresholds_sha256 = kvrt::sha256_file(r.thresholds_path);
  r.max_len = 160;
  r.settings.push_back(
      {"k=q8,v=q8,g=32,axis=token,r=0,rot=1", "q8/q8", kvrt::validate::Verdict::kPass, 1});
  kvrt::validate::write_record(r, tmp / "other.toml");
  check_case({"record of another model",
              "run -m " + quote(kvrt::test::stories_path()) + " -p hi -n 4 --kv q8 --record " +
                  quote(tmp / "other.toml"),
              3, "made for another model file"},
             tmp);
}

TEST_CASE(
    "special files as inputs are refused at once, never waited on or read without end (exit 2)") {
  ensure_kvrt_exe();
  TempDir tmp;
  const SpecialFiles sp = make_special_files(tmp);
  const std::string m = "-m " + quote(kvrt::test::stories_path()) + " ";
  const std::string v =
      "validate " + m + "--kv q8 --max-len 64 --record " + quote(tmp / "r.toml") + " ";
  make_sparse(tmp / "huge.txt", (off_t(64) << 20) + 1);
  make_sparse(tmp / "huge.toml", (off_t(16) << 20) + 1);
  std::filesystem::create_directory(tmp / "cases");
  REQUIRE(mkfifo((tmp / "cases/manifest.toml").c_str(), 0666) == 0);
  std::filesystem::create_directory(tmp / "texts");
  REQUIRE(mkfifo((tmp / "texts/fifo").c_str(), 0666) == 0);
  write_bytes(tmp / "texts/manifest.toml",
              "[[case]]\nid = \"x\"\ncategory = \"prose\"\nmode = \"teacher_forced\"\ntext_file = "
              "\"fifo\"\n");
  std::vector<BadCase> cases = {
      {"FIFO as model (run)", "run -m " + quote(sp.fifo) + " -p hi", 2, "is a FIFO"},
      {"FIFO as model (info)", "info -m " + quote(sp.fifo), 2, "is a FIFO"},
      {"FIFO as model (validate)", "validate -m " + quote(sp.fifo) + " --kv q8 --max-len 64", 2,
       "is a FIFO"},
      {"socket as model", "info -m " + quote(sp.socket), 2, "is a socket"},
      {"FIFO as prompt file", "run " + m + "-f " + quote(sp.fifo), 2, "is a FIFO"},
      {"/dev/zero as prompt file", "run " + m + "-f /dev/zero", 2, "is a character device"},
      {"directory as prompt file", "run " + m + "-f " + quote(sp.dir), 2, "is a directory"},
      {"prompt file over the size limit", "run " + m + "-f " + quote(tmp / "huge.txt"), 2,
       "limit of 64 MiB"},
      {"FIFO as record (run)", "run " + m + "-p hi -n 2 --kv q8 --record " + quote(sp.fifo), 2,
       "is a FIFO"},
      {"/dev/zero as record (run)", "run " + m + "-p hi -n 2 --kv q8 --record /dev/zero", 2,
       "is a character device"},
      {"FIFO as thresholds", v + "--config " + quote(sp.fifo), 2, "is a FIFO"},
      {"/dev/zero as thresholds", v + "--config /dev/zero", 2, "is a character device"},
      {"thresholds over the size limit", v + "--config " + quote(tmp / "huge.toml"), 2,
       "limit of 16 MiB"},
      {"directory as settings file", "validate " + m + "--max-len 64 --settings " + quote(sp.dir),
       2, "is a directory"},
      {"FIFO as case manifest", v + "--cases " + quote(tmp / "cases"), 2, "is a FIFO"},
      {"FIFO as case text", v + "--cases " + quote(tmp / "texts"), 2, "is a FIFO"},
  };
  if (!sp.chardev.empty())
    cases.push_back(
        {"character device as model", "info -m " + quote(sp.chardev), 2, "is a character device"});
  for (const auto& c : cases) check_case(c, tmp);
  CHECK(!std::filesystem::exists(tmp / "r.toml"));
}

TEST_CASE("special files as outputs are refused before the run and left as they were (exit 2)") {
  ensure_kvrt_exe();
  TempDir tmp;
  const SpecialFiles sp = make_special_files(tmp);
  std::filesystem::create_symlink(tmp / "missing.json", tmp / "dangling");
  std::filesystem::create_symlink(sp.fifo, tmp / "to-fifo");
  const std::string v =
      "validate -m " + quote(kvrt::test::stories_path()) + " --kv q8 --max-len 64 ";
  const std::string rec = "--record " + quote(tmp / "r.toml") + " ";
  const std::string b = "bench -m " + quote(kvrt::test::stories_path()) +
                        " --ctx 16 --settings f32 --prefill-tokens 16 --decode-tokens 1 ";
  std::vector<BadCase> cases = {
      {"FIFO as HTML report", v + rec + "--html " + quote(sp.fifo), 2, "is a FIFO"},
      {"socket as JSON report", v + rec + "--json " + quote(sp.socket), 2, "is a socket"},
      {"directory as record", v + "--record " + quote(sp.dir), 2, "is a directory"},
      {"FIFO as record", v + "--record " + quote(sp.fifo), 2, "is a FIFO"},
      {"dangling symlink as JSON report", v + rec + "--json " + quote(tmp / "dangling"), 2,
       "does not exist"},
      {"symlink to a FIFO as JSON report", v + rec + "--json " + quote(tmp / "to-fifo"), 2,
       "is a FIFO"},
      {"FIFO as bench JSON", b + "--json " + quote(sp.fifo), 2, "is a FIFO"},
      {"directory as bench JSON", b + "--json " + quote(sp.dir), 2, "is a directory"},
  };
  if (!sp.chardev.empty()) {
    cases.push_back({"character device as JSON report", v + rec + "--json " + quote(sp.chardev), 2,
                     "is a character device"});
    cases.push_back({"character device as record", v + "--record " + quote(sp.chardev), 2,
                     "is a character device"});
    cases.push_back({"character device as bench JSON", b + "--json " + quote(sp.chardev), 2,
                     "is a character device"});
  }
  for (const auto& c : cases) check_case(c, tmp);
  CHECK(file_type(sp.fifo) == "fifo");
  CHECK(file_type(sp.socket) == "socket");
  CHECK(file_type(sp.dir) == "directory");
  CHECK(file_type(tmp / "dangling") == "symbolic link");
  if (!sp.chardev.empty()) CHECK(file_type(sp.chardev) == "character device");
  CHECK(file_type(tmp / "r.toml").empty());
}

TEST_CASE(
    "thread counts above 256 and validate lengths beyond the model are usage errors (exit 2)") {
  ensure_kvrt_exe();
  TempDir tmp;
  const std::string m = "-m " + quote(kvrt::test::stories_path()) + " ";
  const std::vector<BadCase> cases = {
      {"threads above the maximum", "run " + m + "-p hi -t 257", 2, "between 1 and 256"},
      {"validate beyond the model's context", "validate " + m + "--kv q8 --max-len 4096", 2,
       "context of 2048"},
      {"validate with an absurd length", "validate " + m + "--kv q8 --max-len 1048576", 2,
       "context of 2048"},
  };
  for (const auto& c : cases) check_case(c, tmp);
}

TEST_CASE("empty values, seeds beyond 64 bits and a bad environment are usage errors (exit 2)") {
  ensure_kvrt_exe();
  TempDir tmp;
  const std::string m = "-m " + quote(kvrt::test::stories_path()) + " ";
  const std::vector<BadCase> cases = {
      {"empty KV format", "run " + m + "--kv '' -p hi", 2, "--kv"},
      {"empty key format", "run " + m + "--kv-k '' -p hi", 2, "--kv-k"},
      {"empty bench settings", "bench " + m + "--settings ''", 2, "--settings"},
      {"empty record path", "run " + m + "--kv q8 --record '' -p hi", 2, "--record"},
      {"seed above 2^64 - 1", "run " + m + "-p hi --seed 18446744073709551616", 2,
       "18446744073709551616"},
      {"negative seed", "run " + m + "-p hi --seed -1", 2, "-1"},
  };
  for (const auto& c : cases) check_case(c, tmp);

  setenv("KVRT_ISA", "bogus", 1);
  check_case({"unknown ISA (info prints nothing first)", "info " + m, 2, "bogus"}, tmp);
  check_case({"unknown ISA (validate)", "validate " + m + "--kv q8 --max-len 64", 2, "bogus"}, tmp);
  unsetenv("KVRT_ISA");
  setenv("KVRT_MODEL", std::string(5000, 'a').c_str(), 1);
  check_case({"over-long KVRT_MODEL", "info", 2, "File name too long"}, tmp);
  unsetenv("KVRT_MODEL");
}

TEST_CASE("a seed up to 2^64 - 1 is accepted") {
  ensure_kvrt_exe();
  TempDir tmp;
  const auto r = kvrt::test::run_kvrt("run -m " + quote(kvrt::test::stories_path()) +
                                          " -p Once -n 4 --temp 1 --seed 18446744073709551615",
                                      tmp);
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.rfind("Once", 0) == 0);
}

TEST_CASE("threads that cannot be started are a resource error (exit 4) naming -t, not a crash") {
  ensure_kvrt_exe();
  const char* wrapper = std::getenv("KVRT_EXE_WRAPPER");
  if (wrapper != nullptr && *wrapper != '\0') {
    // qemu-user maps guest thread stacks itself: a 4 TB stack hangs it or ends it with its own
    // code.
    MESSAGE(
        "skipped: a thread-creation failure needs a native run (the emulator does not model it)");
    return;
  }
  if (kvrt::test::kSanitizedBuild) {
    MESSAGE("skipped: AddressSanitizer sizes its own thread stacks from the stack limit");
    return;
  }
  TempDir tmp;
  // glibc gives new threads a stack of RLIMIT_STACK: 4 TB cannot be mapped, so the pool's second
  // thread fails to start.
  const std::string cmd = "ulimit -s 4000000000 && " + std::string(std::getenv("KVRT_EXE")) +
                          " run -m " + quote(kvrt::test::stories_path()) +
                          " -p Once -n 4 -t 2 >/dev/null 2>" + quote(tmp / "err");
  const int status = std::system(cmd.c_str());
  const std::string err = kvrt::test::read_file(tmp / "err");
  CAPTURE(err);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 4);
  CHECK(err.find("kvrt run: error: could not start 2 threads") != std::string::npos);
  CHECK(err.find("(use fewer with -t)") != std::string::npos);
}

TEST_CASE(
    "validate: an unusable state directory and an unreadable earlier record fail before the run") {
  ensure_kvrt_exe();
  TempDir tmp;
  write_bytes(tmp / "file", "not a directory");
  const std::string v =
      "validate -m " + quote(kvrt::test::stories_path()) + " --kv q8 --max-len 64 ";
  setenv("KVRT_STATE_DIR", (tmp / "file/state").c_str(), 1);
  check_case({"state directory under a file", v, 2, "not a directory"}, tmp);
  unsetenv("KVRT_STATE_DIR");
  const std::string garbage = "this is not a validation record\n";
  write_bytes(tmp / "r.toml", garbage);
  check_case({"earlier record without a content hash", v + "--record " + quote(tmp / "r.toml"), 2,
              "r.toml"},
             tmp);
  CHECK(kvrt::test::read_file(tmp / "r.toml") == garbage);
}

TEST_CASE("the gate's refusal names its cause") {
  ensure_kvrt_exe();
  TempDir tmp;
  const std::string model = kvrt::test::stories_path();
  kvrt::validate::Record r;
  r.kvrt_version = KVRT_VERSION;
  r.isa = kvrt::simd::isa_name();
  r.model_path = model;
  r.model_sha256 = kvrt::sha256_file(model);
  r.thresholds_path = tmp / "gone.toml";
  r.thresholds_sha256 = "0";
  r.max_len = 64;
  r.settings.push_back(
      {"k=q8,v=q8,g=8,axis=token,r=0,rot=1", "q8/q8", kvrt::validate::Verdict::kPass, 1});
  kvrt::validate::write_record(r, tmp / "r1.toml");
  const std::string run = "run -m " + quote(model) + " -p hi -n 2 --kv q8 --record ";
  check_case({"thresholds file gone", run + quote(tmp / "r1.toml"), 3, "No such file or directory"},
             tmp);
  r.thresholds_path = std::string(KVRT_SOURCE_DIR) + "/validation/thresholds.toml";
  r.thresholds_sha256 = kvrt::sha256_file(r.thresholds_path);
  std::filesystem::create_directory(tmp / "cases");
  REQUIRE(mkfifo((tmp / "cases/manifest.toml").c_str(), 0666) == 0);
  r.case_dirs = {tmp / "cases"};
  kvrt::validate::write_record(r, tmp / "r2.toml");
  check_case({"acceptance set unreadable", run + quote(tmp / "r2.toml"), 3, "is a FIFO"}, tmp);
}

TEST_CASE("bench --json writes valid JSON for any model path") {
  ensure_kvrt_exe();
  TempDir tmp;
  const std::string model = tmp / "we\"ird\\name.gguf";
  std::filesystem::copy_file(kvrt::test::stories_path(), model);
  const auto r = kvrt::test::run_kvrt(
      "bench -m " + quote(model) +
          " --ctx 16 --settings f32 --prefill-tokens 16 --decode-tokens 1 --json " +
          quote(tmp / "b.json"),
      tmp);
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string json = kvrt::test::read_file(tmp / "b.json");
  CHECK(json.find("we\\\"ird\\\\name.gguf\"") != std::string::npos);
}
