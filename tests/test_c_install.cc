// The installed C library: `meson install` into a temporary DESTDIR, then
// tools/example_c/generate.c compiled with plain `cc` through the installed pkg-config file, linked
// once against the shared and once against the static library, and run on stories260K (golden
// greedy text).
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kvrt_config.h"
#include "test_util.h"

namespace {

#if defined(__SANITIZE_ADDRESS__)
// A sanitized libkvrt needs the sanitizer runtimes in the program that links it.
constexpr const char* kSanitizeFlags = " -fsanitize=address,undefined";
#else
constexpr const char* kSanitizeFlags = "";
#endif

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

TEST_CASE("generate.c builds against the installed library and prints the golden text") {
  const char* build = std::getenv("KVRT_BUILD_DIR");
  REQUIRE(build != nullptr);
  kvrt::test::TempDir tmp;
  const std::string root = tmp / "root";
  REQUIRE(kvrt::test::shell("meson install -C '" + std::string(build) +
                            "' --no-rebuild --quiet --destdir '" + root + "' >'" +
                            tmp / "install.log" + "' 2>&1") == 0);
  std::string pc_file;
  REQUIRE(kvrt::test::shell("find '" + root + "' -name kvrt.pc", &pc_file) == 0);
  pc_file = trim(pc_file);
  REQUIRE_MESSAGE(!pc_file.empty(), "kvrt.pc was not installed");
  CHECK(kvrt::test::shell("find '" + root + "' -path '*/include/kvrt/kvrt.h' | grep -q .") == 0);

  // The .pc file names the install prefix; point it at the DESTDIR copy.
  const std::string pc_dir = pc_file.substr(0, pc_file.rfind('/'));
  std::string prefix;
  REQUIRE(kvrt::test::shell("PKG_CONFIG_PATH='" + pc_dir + "' pkg-config --variable=prefix kvrt",
                            &prefix) == 0);
  const std::string pkg = "PKG_CONFIG_PATH='" + pc_dir + "' pkg-config --define-variable=prefix='" +
                          root + trim(prefix) + "' ";
  std::string libdir;
  REQUIRE(kvrt::test::shell(pkg + "--variable=libdir kvrt", &libdir) == 0);
  libdir = trim(libdir);

  const std::string src = std::string(KVRT_SOURCE_DIR) + "/tools/example_c/generate.c";
  // Cross builds name their C compiler and the emulator that runs its programs (tests/meson.build).
  const char* cc_env = std::getenv("KVRT_CC");
  const char* wrapper_env = std::getenv("KVRT_EXE_WRAPPER");
  const std::string wrapper = wrapper_env ? std::string(wrapper_env) + " " : "";
  const std::string cc = std::string(cc_env ? cc_env : "cc") + " -std=c99 -Wall -Wextra -Werror" +
                         std::string(kSanitizeFlags) + " '" + src + "' ";
  REQUIRE(kvrt::test::shell(cc + "$(" + pkg + "--cflags --libs kvrt) -o '" +
                            tmp / "generate_shared" + "'") == 0);
  REQUIRE(
      kvrt::test::shell(cc + "$(" + pkg +
                        "--static --cflags --libs kvrt | sed 's/-lkvrt\\b/-l:libkvrt.a/') -o '" +
                        tmp / "generate_static" + "'") == 0);
  std::string needed;
  kvrt::test::shell("readelf -d '" + tmp / "generate_static" + "'", &needed);
  CHECK(needed.find("libkvrt.so") == std::string::npos);

  const std::string golden =
      trim(kvrt::test::read_file(kvrt::test::models_dir() + "/golden_greedy_prompt_once_n64.txt"));
  for (const char* exe : {"generate_shared", "generate_static"}) {
    CAPTURE(exe);
    std::string out;
    const int rc = kvrt::test::shell("LD_LIBRARY_PATH='" + libdir + "' " + wrapper + "'" +
                                         tmp / exe + "' '" + kvrt::test::stories_path() +
                                         "' 'Once upon a time' 65 2>'" + tmp / "stderr" + "'",
                                     &out);
    CHECK(rc == 0);
    CHECK(trim(out) == golden);
    CHECK(kvrt::test::read_file(tmp / "stderr").find("context full after 65 positions") !=
          std::string::npos);
  }
}
