// The architecture descriptions against llama.cpp's fixture files (../shared/fixtures/arch): every
// row binds each tensor of its fixtures with the shape llama.cpp loaded (nothing missing, nothing
// left over), and the forward pass names what it lacks for the architectures it does not run yet.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "io/gguf.h"
#include "model/model.h"
#include "model/tensors.h"
#include "test_util.h"

using namespace kvrt;

namespace {

struct Fixture {
  const char* file;
  const char* arch;
  const char* gap;  // what forward_gaps names; "" when kvrt runs it
};

constexpr Fixture kFixtures[] = {
    {"llama-hd48", "llama", ""},
    {"llama-hd128", "llama", ""},
    {"llama3-hd64", "llama", ""},
    {"qwen2-hd64", "qwen2", ""},
    {"phi3-hd96", "phi3", ""},
    {"gemma2-hd128", "gemma2", "a GeGLU feed-forward"},
};

}  // namespace

TEST_CASE("architecture rows bind every tensor of llama.cpp's fixtures with its shape") {
  const std::string dir = test::fixtures_dir() + "/arch/";
  for (const Fixture& fx : kFixtures) {
    INFO(fx.file);
    const io::GgufFile file(dir + fx.file + ".gguf");
    const model::ModelConfig c = model::ModelConfig::from_gguf(file);
    CHECK(c.arch == fx.arch);
    const model::BoundTensors b = model::bind_tensors(file, c);  // throws on a missing, misshaped or unused tensor
    size_t n_bound = 0;
    for (const auto* t : b.model) n_bound += t != nullptr;
    for (const model::RoleTensors& layer : b.layers) {
      for (const auto* t : layer) n_bound += t != nullptr;
    }
    CHECK(n_bound == file.tensors().size());
    const std::vector<std::string> gaps = model::forward_gaps(*c.architecture, b.present);
    if (*fx.gap == '\0') {
      CHECK(gaps.empty());
      CHECK_NOTHROW(model::Model(dir + fx.file + ".gguf"));
    } else {
      CHECK(std::find(gaps.begin(), gaps.end(), fx.gap) != gaps.end());
      CHECK_THROWS_WITH_AS(model::Model(dir + fx.file + ".gguf"), doctest::Contains("kvrt runs: llama"), Error);
    }
  }
  // Gemma 2's soft-caps and window, read where its row names the keys.
  const model::ModelConfig g = model::ModelConfig::from_gguf(io::GgufFile(dir + "gemma2-hd128.gguf"));
  CHECK(g.attn_softcap == 10.0f);
  CHECK(g.final_softcap == 8.0f);
  CHECK(g.sliding_window == 64);
  CHECK(g.head_dim == 128);
}
