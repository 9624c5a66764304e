// State files on the architecture fixtures (../shared/fixtures/arch; the program exits 77 when
// they are absent): every architecture's session, for every KV setting, restores bit for bit;
// gemma2, gemma3 and phi3 window some layers, whose rings are restored as they are.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "model/architecture.h"
#include "session_check.h"
#include "test_util.h"

using namespace kvrt;

namespace {

// Whether kvrt runs the fixture's architecture. A fixture of one it does not run yet is named in
// the output and left out: test_architecture_fixtures owns the list of what must run.
bool runs_architecture(const std::string& path) {
  const io::GgufFile f(path);
  const std::string_view arch = f.get_string("general.architecture");
  const auto all = model::architectures();
  return std::any_of(all.begin(), all.end(),
                     [&](const model::Architecture& a) { return arch == a.name; });
}

}  // namespace

TEST_CASE("every architecture fixture restores bit for bit, for every KV setting") {
  const std::string dir = test::fixtures_dir() + "/arch";
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".gguf") {
      if (runs_architecture(e.path().string())) paths.push_back(e.path().string());
      else
        std::fprintf(stderr, "left out (an architecture kvrt does not run): %s\n",
                     e.path().string().c_str());
    }
  std::sort(paths.begin(), paths.end());
  REQUIRE(!paths.empty());
  const std::vector<validate::Setting> settings = test::state_settings(test::source_dir());
  for (const std::string& path : paths) {
    const model::Model m(path);
    const int n_vocab = m.config().n_vocab;
    // 150 positions past the widest residual window; chunks of 32 make the windowed layers' rings
    // shorter than that where the window is short.
    const std::vector<int32_t> prompt = test::some_tokens(150, n_vocab, 1),
                               more = test::some_tokens(24, n_vocab, 2);
    const int hd = m.config().head_dim;
    for (const validate::Setting& s : settings) {
      if (s.kv.rotate && (hd & (hd - 1)) != 0) continue;  // rotation needs a power-of-two head_dim
      CAPTURE(path);
      CAPTURE(s.label);
      model::SessionOptions o;
      o.n_ctx = 256;
      o.n_threads = 2;
      o.n_batch = 32;
      o.kv = s.kv;
      o.matmul = s.matmul;
      test::check_round_trip(m, o, prompt, more);
    }
  }
}
