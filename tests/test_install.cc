// An installed kvrt stands alone: `meson install --destdir` into a temporary directory, then the
// installed binary, started in another directory with no variable naming the source tree, finds
// its default model and validation data under <prefix>/share/kvrt and validates a setting; and no
// installed file contains the path of the source or build tree.
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "test_util.h"

namespace fs = std::filesystem;

namespace {

// One install for the whole program.
struct Install {
  kvrt::test::TempDir tmp;
  std::string root = tmp / "root";
  std::string kvrt;      // the installed binary
  std::string data_dir;  // <destdir><prefix>/share/kvrt

  Install() {
    const char* build = std::getenv("KVRT_BUILD_DIR");
    REQUIRE(build != nullptr);
    REQUIRE(kvrt::test::shell("meson install -C '" + std::string(build) +
                              "' --no-rebuild --quiet --destdir '" + root + "' >'" +
                              tmp / "install.log" + "' 2>&1") == 0);
    REQUIRE(kvrt::test::shell("find '" + root + "' -path '*/bin/kvrt' -type f", &kvrt) == 0);
    while (!kvrt.empty() && kvrt.back() == '\n') kvrt.pop_back();
    REQUIRE_MESSAGE(!kvrt.empty(), "bin/kvrt was not installed");
    data_dir = fs::canonical(fs::path(kvrt).parent_path() / ".." / "share" / "kvrt").string();
  }

  // The installed kvrt, run in an empty directory with no variable that names kvrt's data except
  // those in `env` ("NAME='value' ...").
  kvrt::test::CommandResult run(const std::string& args, const std::string& env = "") const {
    const std::string work = tmp / "work", home = tmp / "home";
    fs::create_directories(work);
    const char* wrapper = std::getenv("KVRT_EXE_WRAPPER");  // cross builds: the emulator
    kvrt::test::CommandResult r;
    r.exit_code = kvrt::test::shell(
        "cd '" + work +
            "' && env -u KVRT_DATA_DIR -u KVRT_VALIDATION_DIR -u KVRT_MODEL -u KVRT_EXE "
            "-u KVRT_STATE_DIR HOME='" +
            home + "' XDG_STATE_HOME='" + home + "/state' " + env + " " +
            (wrapper ? std::string(wrapper) + " " : "") + "'" + kvrt + "' " + args + " 2>'" +
            tmp / "stderr" + "'",
        &r.out);
    r.err = kvrt::test::read_file(tmp / "stderr");
    return r;
  }
};

const Install& installed() {
  static const Install install;
  return install;
}

}  // namespace

TEST_CASE(
    "the installed tree holds the data: validation set, thresholds, default model and its "
    "licence") {
  const Install& in = installed();
  for (const char* f :
       {"validation/thresholds.toml", "validation/settings.toml", "validation/cases/manifest.toml",
        "models/stories260K.gguf", "models/LICENSE-stories260K", "models/catalogue.toml"}) {
    CAPTURE(f);
    CHECK(fs::is_regular_file(in.data_dir + "/" + f));
  }
}

TEST_CASE("the installed kvrt finds its default model and data under share/kvrt") {
  const Install& in = installed();
  const auto r = in.run("info");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(kvrt::test::field(r.out, "data dir") == in.data_dir);
  CHECK(kvrt::test::field(r.out, "file").rfind(in.data_dir + "/models/stories260K.gguf (", 0) == 0);
}

TEST_CASE("the installed kvrt validates with the bundled acceptance set and thresholds") {
  const Install& in = installed();
  const auto r = in.run("validate --kv q8 --max-len 64 -t 1 --record r.toml");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("thresholds " + in.data_dir + "/validation/thresholds.toml") !=
        std::string::npos);
  CHECK(r.out.find("PASS") != std::string::npos);
  CHECK(fs::is_regular_file(in.tmp / "work/r.toml"));
}

TEST_CASE("the installed kvrt refuses a KVRT_DATA_DIR that is not a directory, naming it") {
  const Install& in = installed();
  const std::string missing = in.tmp / "nowhere";
  const auto r = in.run("info", "KVRT_DATA_DIR='" + missing + "'");
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("KVRT_DATA_DIR names '" + missing + "', which is not a directory") !=
        std::string::npos);
}

// The bytes of an installed file as a program would see them: object files (ELF, ar archives)
// without their debug information, whose compilation directories name the build tree in debug
// builds ($KVRT_STRIP --strip-debug on a copy).
std::string loaded_bytes(const fs::path& file, const kvrt::test::TempDir& tmp) {
  const std::string bytes = kvrt::test::read_file(file.string());
  if (bytes.rfind("\x7f"
                  "ELF",
                  0) != 0 &&
      bytes.rfind("!<arch>\n", 0) != 0)
    return bytes;
  const char* strip = std::getenv("KVRT_STRIP");
  REQUIRE_MESSAGE(strip != nullptr, "tests/meson.build sets KVRT_STRIP");
  const std::string copy = tmp / "stripped";
  fs::copy_file(file, copy, fs::copy_options::overwrite_existing);
  REQUIRE(kvrt::test::shell("'" + std::string(strip) + "' --strip-debug '" + copy + "'") == 0);
  return kvrt::test::read_file(copy);
}

TEST_CASE("no installed file contains the path of the source or build tree") {
  const Install& in = installed();
  const std::string source = fs::canonical(kvrt::test::source_dir()).string();
  const std::string build = fs::canonical(std::getenv("KVRT_BUILD_DIR")).string();
  kvrt::test::TempDir scratch;
  int n_files = 0;
  for (const auto& e : fs::recursive_directory_iterator(in.root)) {
    if (!e.is_regular_file() || e.is_symlink()) continue;
    ++n_files;
    const std::string bytes = loaded_bytes(e.path(), scratch);
    CAPTURE(e.path().string());
    CHECK(bytes.find(source) == std::string::npos);
    CHECK(bytes.find(build) == std::string::npos);
  }
  CHECK(n_files >= 10);  // binary, libraries, header, .pc, validation data, model
}
