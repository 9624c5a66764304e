// The architecture descriptions against llama.cpp's fixture files (../shared/fixtures/arch): every
// row binds each tensor of its fixtures with the shape llama.cpp loaded (nothing missing, nothing
// left over), and reads the features its metadata keys name.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"
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
    {"llama-hd48", "llama"},       {"llama-hd128", "llama"},   {"llama3-hd64", "llama"},
    {"qwen2-hd64", "qwen2"},       {"phi3-hd96", "phi3"},      {"gemma2-hd128", "gemma2"},
    {"qwen3-hd128", "qwen3"},      {"gemma3-hd128", "gemma3"}, {"smollm3-hd32", "smollm3"},
    {"granite-hd64", "granite"},   {"olmo2-hd64", "olmo2"},    {"phi4mini-hd64", "phi3"},
    {"mistral3-hd64", "mistral3"},
};

std::string arch_path(const std::string& name) {
  return test::fixtures_dir() + "/arch/" + name + ".gguf";
}

// The fixture `name` rewritten to `out`: metadata key `drop` and tensor `drop_tensor` left out,
// keys that `add` writes first.
void rewrite(const std::string& name, const std::string& out, const std::string& drop,
             const std::string& drop_tensor, const std::function<void(io::GgufWriter&)>& add) {
  const io::GgufFile src(arch_path(name));
  io::GgufWriter w;
  if (add) add(w);
  for (const auto& [key, value] : src.metadata())
    if (key != drop && key != "general.alignment") w.add_value(key, value);
  for (const auto& t : src.tensors()) {
    if (t.name == drop_tensor) continue;
    const float* data = reinterpret_cast<const float*>(t.data);
    w.add_tensor(t.name, t.dims, t.type, std::span<const float>(data, size_t(t.n_elements)));
  }
  w.write(out);
}

std::string load_error(const std::string& path) {
  try {
    model::Model m(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("architecture rows bind every tensor of llama.cpp's fixtures with its shape") {
  const std::string dir = test::fixtures_dir() + "/arch/";
  for (const Fixture& fx : kFixtures) {
    INFO(fx.file);
    const io::GgufFile file(dir + fx.file + ".gguf");
    const model::ModelConfig c = model::ModelConfig::from_gguf(file);
    CHECK(c.arch == fx.arch);
    const model::BoundTensors b =
        model::bind_tensors(file, c);  // throws on a missing, misshaped or unused tensor
    size_t n_bound = 0;
    for (const auto* t : b.model) n_bound += t != nullptr;
    for (const model::RoleTensors& layer : b.layers) {
      for (const auto* t : layer) n_bound += t != nullptr;
    }
    CHECK(n_bound == file.tensors().size());
    CHECK_NOTHROW(model::Model(dir + fx.file + ".gguf"));
  }
  // Gemma 2's soft-caps and window, read where its row names the keys, and its scales.
  const model::ModelConfig g =
      model::ModelConfig::from_gguf(io::GgufFile(dir + "gemma2-hd128.gguf"));
  CHECK(g.attn_softcap == 10.0f);
  CHECK(g.final_softcap == 8.0f);
  CHECK(g.sliding_window == 64);
  CHECK((g.window_of(0) == 64 && g.window_of(1) == 0 && g.window_of(24) == 64));
  CHECK(g.head_dim == 128);
  CHECK(g.embedding_scale == 8.0f);
  CHECK(
      g.query_scale ==
      doctest::Approx(1.0 / std::sqrt(128.0)));  // 1/sqrt(head_dim), not 1/sqrt(d_model / n_heads)
  // Phi-3's window applies to every layer.
  const model::ModelConfig p = model::ModelConfig::from_gguf(io::GgufFile(dir + "phi3-hd96.gguf"));
  CHECK((p.window_of(0) == 2047 && p.window_of(1) == 2047));
}

TEST_CASE("kvrt info prints gemma2's features and the KV bytes/token of each layer kind") {
  test::TempDir tmp;
  const auto r =
      test::run_kvrt("info -m '" + test::fixtures_dir() + "/arch/gemma2-hd128.gguf'", tmp);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("features:       GeGLU (tanh GELU), embeddings x 8, attention soft-cap 10, "
                   "final soft-cap 8, "
                   "post-attention and post-FFN norms, sliding window 64 on even layers") !=
        std::string::npos);
  // f32: 2 sides x 1 kv head x 128 dims x 4 bytes per layer; the even layers stop at 384
  // positions with run's chunk of 256 (64 + 255 and the run of 64 the first one falls in).
  CHECK(r.out.find("KV cache (f32): 13 full layers 13312.0 bytes/token; 13 sliding-window layers "
                   "(window 64) "
                   "13312.0 bytes/token, up to 384 positions (4.9 MiB)") != std::string::npos);
  const auto llama =
      test::run_kvrt("info -m '" + test::fixtures_dir() + "/arch/llama-hd48.gguf'", tmp);
  CHECK(llama.out.find("KV cache (f32): 2 full layers") != std::string::npos);
}

TEST_CASE("the 2026 fixtures' features are read from their keys and tensors") {
  const auto config = [](const char* name) {
    return model::ModelConfig::from_gguf(io::GgufFile(arch_path(name)));
  };
  const model::ModelConfig q = config("qwen3-hd128");
  CHECK(q.head_dim == 128);  // key_length, not 96 / 4
  CHECK(q.architecture->qk_norm == model::QkNorm::kPerHead);
  const model::ModelConfig g = config("gemma3-hd128");
  CHECK((g.window_of(0) == 32 && g.window_of(4) == 32 && g.window_of(5) == 0 &&
         g.window_of(6) == 32));
  CHECK(g.rope.base == 1e6f);
  CHECK(g.rope.scaling == ops::RopeScaling::kLinear);
  CHECK(g.rope.factor == 8.0f);
  CHECK((g.uses_window_rope(0) && !g.uses_window_rope(5)));
  CHECK(g.rope_window.base == 10000.0f);
  CHECK(g.rope_window.scaling == ops::RopeScaling::kNone);
  CHECK(g.final_softcap == 0.0f);
  CHECK(g.attn_softcap == 0.0f);
  const model::ModelConfig sm = config("smollm3-hd32");
  CHECK((sm.rope_at(0) && !sm.rope_at(3) && sm.rope_at(4) && !sm.rope_at(7)));
  const model::ModelConfig gr = config("granite-hd64");
  CHECK((gr.embedding_scale == 12.0f && gr.query_scale == 0.015625f && gr.residual_scale == 0.22f &&
         gr.logit_scale == 8.0f));
  const model::Model o(arch_path("olmo2-hd64"));
  CHECK(o.weights().layers[0].attn_norm == nullptr);
  CHECK(o.config().architecture->qk_norm == model::QkNorm::kFullWidth);
  const model::Model p(arch_path("phi4mini-hd64"));
  CHECK((p.config().rope_dim == 48 && p.config().head_dim == 64));
  CHECK(p.config().sliding_window == 0);
  CHECK(p.config().rope.attn_factor == doctest::Approx(1.19024));
  CHECK(p.config().tied_output);
  CHECK(p.weights().rope_factors(4096, p.config().rope.orig_ctx) == p.weights().rope_factors_short);
  CHECK(p.weights().rope_factors(4097, p.config().rope.orig_ctx) == p.weights().rope_factors_long);
  const model::ModelConfig m = config("mistral3-hd64");
  CHECK(m.rope.scaling == ops::RopeScaling::kYarn);
  CHECK((m.rope.factor == 16.0f && m.rope.orig_ctx == 64 && m.rope.yarn_log_multiplier == 1.0f));
  CHECK((m.attn_temp_scale == 0.1f && m.attn_temp_floor == 64));
}

TEST_CASE("a 2026 file with a missing or wrong key or tensor is one error naming it") {
  test::TempDir tmp;
  struct Case {
    const char* fixture;
    const char* drop;         // metadata key left out
    const char* drop_tensor;  // tensor left out
    std::function<void(io::GgufWriter&)> add;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"qwen3-hd128", "qwen3.attention.head_count", "", nullptr, "qwen3.attention.head_count"},
      {"qwen3-hd128", "", "blk.1.attn_k_norm.weight", nullptr,
       "missing tensor 'blk.1.attn_k_norm.weight'"},
      {"gemma3-hd128", "gemma3.attention.sliding_window", "",
       [](io::GgufWriter& w) { w.add_string("gemma3.attention.sliding_window", "32"); },
       "gemma3.attention.sliding_window"},
      {"gemma3-hd128", "", "",
       [](io::GgufWriter& w) { w.add_u32("gemma3.attention.sliding_window_pattern", 0); },
       "gemma3.attention.sliding_window_pattern' = 0 is out of range"},
      {"smollm3-hd32", "smollm3.block_count", "", nullptr, "smollm3.block_count"},
      {"granite-hd64", "granite.logit_scale", "",
       [](io::GgufWriter& w) { w.add_f32("granite.logit_scale", -8.0f); }, "granite.logit_scale"},
      {"granite-hd64", "granite.residual_scale", "",
       [](io::GgufWriter& w) { w.add_string("granite.residual_scale", "0.22"); },
       "granite.residual_scale"},
      {"olmo2-hd64", "", "blk.0.post_ffw_norm.weight", nullptr,
       "missing tensor 'blk.0.post_ffw_norm.weight'"},
      {"olmo2-hd64", "olmo2.attention.layer_norm_rms_epsilon", "", nullptr,
       "olmo2.attention.layer_norm_rms_epsilon"},
      {"phi4mini-hd64", "", "rope_factors_long.weight", nullptr, "rope_factors_long.weight"},
      {"phi4mini-hd64", "phi3.rope.dimension_count", "",
       [](io::GgufWriter& w) { w.add_u32("phi3.rope.dimension_count", 47); },
       "rope.dimension_count 47 must be even"},
      {"mistral3-hd64", "mistral3.rope.scaling.type", "",
       [](io::GgufWriter& w) { w.add_string("mistral3.rope.scaling.type", "longrope"); },
       "rope.scaling.type 'longrope'"},
      {"mistral3-hd64", "mistral3.rope.scaling.factor", "",
       [](io::GgufWriter& w) { w.add_f32("mistral3.rope.scaling.factor", NAN); },
       "mistral3.rope.scaling.factor"},
      {"mistral3-hd64", "mistral3.rope.scaling.original_context_length", "",
       [](io::GgufWriter& w) { w.add_u32("mistral3.rope.scaling.original_context_length", 0); },
       "mistral3.rope.scaling.original_context_length' = 0 is out of range"},
  };
  for (const Case& c : cases) {
    const std::string what = std::string(c.fixture) + " without " + c.drop + c.drop_tensor;
    INFO(what);
    const std::string path = tmp / "bad.gguf";
    rewrite(c.fixture, path, c.drop, c.drop_tensor, c.add);
    const std::string e = load_error(path);
    CHECK(e.find(c.expected) != std::string::npos);
    CHECK(e.find('\n') == std::string::npos);  // one line
    CHECK(e.find("bad.gguf") != std::string::npos);
  }
}
