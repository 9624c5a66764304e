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

TEST_CASE("kvrt info prints gemma2's features and the KV bytes/token of each layer kind") {
  test::TempDir tmp;
  const auto r = test::run_kvrt("info -m '" + test::fixtures_dir() + "/arch/gemma2-hd128.gguf'", tmp);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("features:       GeGLU (tanh GELU), embeddings x 8, attention soft-cap 10, final soft-cap 8, "
                   "post-attention and post-FFN norms, sliding window 64 on even layers") != std::string::npos);
  // f32: 2 sides x 1 kv head x 128 dims x 4 bytes per layer; the even layers stop at 384
  // positions with run's chunk of 256 (64 + 255 and the run of 64 the first one falls in).
  CHECK(r.out.find("KV cache (f32): 13 full layers 13312.0 bytes/token; 13 sliding-window layers (window 64) "
                   "13312.0 bytes/token, up to 384 positions (4.9 MiB)") != std::string::npos);
  const auto llama = test::run_kvrt("info -m '" + test::fixtures_dir() + "/arch/llama-hd48.gguf'", tmp);
  CHECK(llama.out.find("KV cache (f32): 2 full layers") != std::string::npos);
}
