// Any head_dim (issue 9 defect 7), end to end on small synthetic llamas with stories260K's
// tokenizer: the f32 cache runs head_dim 12 and 20, q8 and q4 default to a group that fits
// head_dim 48, and kvrt validate skips a setting that cannot apply (rotation of head_dim 48),
// saying why, instead of aborting.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "test_util.h"
#include "tools/synth_model/synth.h"

using kvrt::test::run_kvrt;
using kvrt::test::TempDir;

namespace {

std::string synth_model(const TempDir& dir, int head_dim) {
  kvrt::synth::SynthConfig c;
  c.n_layers = 1;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = head_dim;
  c.d_model = 2 * head_dim;
  c.d_ff = 64;
  c.n_ctx = 512;
  c.type = kvrt::simd::WeightType::kF32;
  c.vocab_path = kvrt::test::stories_path();  // 512 tokens: validate runs in seconds
  const std::string path = dir / ("hd" + std::to_string(head_dim) + ".gguf");
  kvrt::synth::write_synth_model(c, path);
  return path;
}

}  // namespace

TEST_CASE("the f32 cache runs any head_dim, and q8 and q4 pick a group that divides it") {
  TempDir dir;
  for (int hd : {12, 20}) {
    const auto r = run_kvrt("run -m " + synth_model(dir, hd) + " -p Once -n 4 -t 1", dir);
    INFO("head_dim " << hd << ": " << r.err);
    CHECK(r.exit_code == 0);
  }
  const std::string m48 = synth_model(dir, 48);
  for (const char* kv : {"q8", "q4"}) {
    const auto r =
        run_kvrt("run -m " + m48 + " -p Once -n 4 -t 1 --allow-unvalidated --kv " + kv, dir);
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.err.find(std::string("k=") + kv + ",v=" + kv + ",g=24,") != std::string::npos);
  }
}

TEST_CASE("kvrt validate skips a setting that cannot apply to the model and says why") {
  TempDir dir;
  const std::string m48 = synth_model(dir, 48);
  std::ofstream(dir / "settings.toml") << "[[setting]]\nlabel = \"q8/q8\"\nkv = \"q8\"\n\n"
                                          "[[setting]]\nlabel = \"q4/q4 g32\"\nkv = \"q4,g=32\"\n";
  const std::string common =
      "validate -m " + m48 + " --max-len 160 -t 1 --record " + dir / "r.toml";
  const auto r =
      run_kvrt(common + " --settings " + dir / "settings.toml" + " --json " + dir / "r.json", dir);
  INFO(r.err);
  CHECK((r.exit_code == 0 || r.exit_code == 1));  // it ran and judged q8/q8
  CHECK(r.out.find("setting skipped (cannot apply to this model or CPU): q4/q4 g32: q4 keys need a "
                   "group that "
                   "divides head_dim 48") != std::string::npos);
  CHECK(r.out.find("q8/q8  (k=q8,v=q8,g=24,") != std::string::npos);
  CHECK(kvrt::test::read_file(dir / "r.json").find("\"skipped_settings\": [\"q4/q4 g32: ") !=
        std::string::npos);
  // A run where nothing applies is a usage error naming why.
  const auto none = run_kvrt(common + " --kv q4 --group 32", dir);
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("need a group that divides head_dim 48") != std::string::npos);
}
