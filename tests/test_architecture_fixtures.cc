// The architecture descriptions against llama.cpp's fixture files (../shared/fixtures/arch): every
// row binds each tensor of its fixtures with the shape llama.cpp loaded (nothing missing, nothing
// left over), and reads the features its metadata keys name.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "model/model.h"
#include "model/tensors.h"
#include "test_util.h"

using namespace kvrt;

namespace {

struct Fixture {
  const char* file;
  const char* arch;
};

constexpr Fixture kFixtures[] = {
    {"llama-hd48", "llama"}, {"llama-hd128", "llama"}, {"llama3-hd64", "llama"},
    {"qwen2-hd64", "qwen2"}, {"phi3-hd96", "phi3"},    {"gemma2-hd128", "gemma2"},
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
    CHECK_NOTHROW(model::Model(dir + fx.file + ".gguf"));
  }
  // Gemma 2's soft-caps and window, read where its row names the keys, and its scales.
  const model::ModelConfig g = model::ModelConfig::from_gguf(io::GgufFile(dir + "gemma2-hd128.gguf"));
  CHECK(g.attn_softcap == 10.0f);
  CHECK(g.final_softcap == 8.0f);
  CHECK(g.sliding_window == 64);
  CHECK((g.window_of(0) == 64 && g.window_of(1) == 0 && g.window_of(24) == 64));
  CHECK(g.head_dim == 128);
  CHECK(g.embedding_scale == 8.0f);
  CHECK(g.query_scale == doctest::Approx(1.0 / std::sqrt(128.0)));  // 1/sqrt(head_dim), not 1/sqrt(d_model / n_heads)
  // Phi-3's window applies to every layer.
  const model::ModelConfig p = model::ModelConfig::from_gguf(io::GgufFile(dir + "phi3-hd96.gguf"));
  CHECK((p.window_of(0) == 2047 && p.window_of(1) == 2047));
}
