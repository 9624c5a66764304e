// What a build links is what a user gets: a default x86-64 build has oneDNN for prefill (a build
// that silently fell back to the blocked GEMM fails here), and `kvrt info`, `run`, `bench` and
// `validate` name the matrix-product backends in use. The uninstalled build finds its data in
// the source tree.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "kvrt_config.h"
#include "ops/matmul.h"
#include "test_util.h"

using namespace kvrt;

namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

TEST_CASE("a default x86-64 build uses oneDNN for prefill, and kvrt info says so") {
  const std::string cpu = env_or_empty("KVRT_HOST_CPU"), option = env_or_empty("KVRT_DNNL_OPTION");
  REQUIRE_MESSAGE(!cpu.empty(), "tests/meson.build sets KVRT_HOST_CPU and KVRT_DNNL_OPTION");
  test::TempDir tmp;
  const auto r = test::run_kvrt("info", tmp);  // the default model
  REQUIRE(r.exit_code == 0);
  const std::string matmul = test::field(r.out, "matmul");
  INFO("kvrt info: matmul: " << matmul << " (host " << cpu << ", -Ddnnl=" << option << ")");
  CHECK(matmul == ops::matmul_backends());
  CHECK(matmul.find("kvrt-blocked:") != std::string::npos);
  if (cpu == "x86_64" && option != "disabled") {
    CHECK(KVRT_HAVE_DNNL == 1);
    CHECK(matmul.find("oneDNN ") == 0);
    CHECK(matmul.find("(prefill)") != std::string::npos);
  }
  if (option == "disabled") {
    CHECK(KVRT_HAVE_DNNL == 0);
    CHECK(matmul.find("built without oneDNN") != std::string::npos);
  }
}

TEST_CASE("run, bench and validate name the matmul backends") {
  test::TempDir tmp;
  const std::string backends = ops::matmul_backends();
  const std::string model = "-m '" + test::stories_path() + "' ";
  const auto run = test::run_kvrt("run " + model + "-p 'Once upon a time' -n 4", tmp);
  CHECK(run.exit_code == 0);
  CHECK(run.err.find("matmul " + backends) != std::string::npos);
  const auto bench = test::run_kvrt("bench " + model +
                                        "--ctx 64 --settings f32 --prefill-tokens 32 "
                                        "--decode-tokens 2 -t 1 --json '" +
                                        tmp / "bench.json" + "'",
                                    tmp);
  CHECK(bench.exit_code == 0);
  CHECK(bench.err.find("matmul " + backends) != std::string::npos);
  CHECK(test::read_file(tmp / "bench.json").find("\"matmul\": \"" + backends + "\"") !=
        std::string::npos);
  const auto validate =
      test::run_kvrt("validate " + model + "--kv q8 --max-len 64 -t 1 --record '" + tmp / "r.toml" +
                         "' --json '" + tmp / "v.json" + "'",
                     tmp);
  CHECK(validate.exit_code == 0);
  CHECK(test::field(validate.out, "matmul") == backends);
  CHECK(test::read_file(tmp / "v.json").find("\"matmul\": \"" + backends + "\"") !=
        std::string::npos);
}

TEST_CASE("the uninstalled build finds its data and default model in the source tree") {
  test::TempDir tmp;
  const auto r = test::run_kvrt("info", tmp);
  REQUIRE(r.exit_code == 0);
  namespace fs = std::filesystem;
  CHECK(fs::equivalent(test::field(r.out, "data dir"), test::source_dir()));
  const std::string file = test::field(r.out, "file");
  CHECK(file.rfind(fs::canonical(test::stories_path()).string() + " (", 0) == 0);
}
