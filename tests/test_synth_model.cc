// The synthetic llama builder (tools/synth_model): metadata and tensors like llama.cpp's
// converter, loadable by ModelConfig, deterministic per seed, sensibly scaled weights.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "io/gguf.h"
#include "model/config.h"
#include "model/model.h"
#include "tools/synth_model/synth.h"

#include "test_util.h"

namespace fs = std::filesystem;
using kvrt::io::GgufFile;
using kvrt::simd::WeightType;
using kvrt::synth::SynthConfig;
using kvrt::test::TempDir;

namespace {

// A small model over the 512-token vocabulary of stories260K.
SynthConfig tiny_config(WeightType type) {
  SynthConfig c;
  c.d_model = 64;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.d_ff = 96;
  c.n_ctx = 256;
  c.type = type;
  c.vocab_path = kvrt::test::stories_path();
  c.seed = 7;
  return c;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<float> tensor_values(const kvrt::io::GgufTensor& t) {
  REQUIRE(t.type == WeightType::kF32);
  std::vector<float> v(size_t(t.n_elements));
  std::memcpy(v.data(), t.data, t.n_bytes);
  return v;
}

void check_mean_std(const std::vector<float>& v, double mean, double stddev) {
  double sum = 0, sum2 = 0;
  for (float x : v) sum += x;
  const double m = sum / double(v.size());
  for (float x : v) sum2 += (x - m) * (x - m);
  const double s = std::sqrt(sum2 / double(v.size()));
  CHECK(std::fabs(m - mean) < 5 * stddev / std::sqrt(double(v.size())));  // 5 standard errors
  CHECK(s == doctest::Approx(stddev).epsilon(0.05));
}

}  // namespace

TEST_CASE("synth model has llama metadata, tokenizer and tensor shapes; ModelConfig reads it") {
  TempDir dir;
  for (WeightType type :
       {WeightType::kF32, WeightType::kF16, WeightType::kBF16, WeightType::kQ8_0}) {
    INFO("type " << kvrt::simd::weight_type_name(type));
    const SynthConfig c = tiny_config(type);
    const std::string path = (dir / "tiny.gguf");
    const kvrt::synth::SynthSummary s = kvrt::synth::write_synth_model(c, path);
    CHECK(s.n_vocab == 512);
    CHECK(s.n_bytes == fs::file_size(path));
    const GgufFile f(path);
    CHECK(f.get_string("general.architecture") == "llama");
    CHECK(f.get_uint("llama.context_length") == 256);
    CHECK(f.get_uint("llama.embedding_length") == 64);
    CHECK(f.get_uint("llama.block_count") == 2);
    CHECK(f.get_uint("llama.feed_forward_length") == 96);
    CHECK(f.get_uint("llama.attention.head_count") == 4);
    CHECK(f.get_uint("llama.attention.head_count_kv") == 2);
    CHECK(f.get_uint("llama.rope.dimension_count") == 16);
    CHECK(f.get_float("llama.rope.freq_base") == 10000.0);
    CHECK(f.get_float("llama.attention.layer_norm_rms_epsilon") == double(1e-5f));
    CHECK(f.find("llama.attention.key_length") == nullptr);  // head_dim == d_model / n_heads
    const GgufFile vocab(c.vocab_path);
    CHECK(f.get_string_array("tokenizer.ggml.tokens") ==
          vocab.get_string_array("tokenizer.ggml.tokens"));
    CHECK(f.get_float_array("tokenizer.ggml.scores") ==
          vocab.get_float_array("tokenizer.ggml.scores"));
    CHECK(f.get_uint("tokenizer.ggml.bos_token_id") == 1);

    REQUIRE(f.tensors().size() == 3 + 9 * 2);
    int64_t n_params = 0;
    for (const auto& t : f.tensors()) {
      n_params += t.n_elements;
      CHECK(t.type == (t.dims.size() == 1 ? WeightType::kF32 : type));
    }
    CHECK(n_params == s.n_params);
    CHECK(f.find_tensor("token_embd.weight")->dims == std::vector<int64_t>{64, 512});
    CHECK(f.find_tensor("output.weight")->dims == std::vector<int64_t>{64, 512});
    CHECK(f.find_tensor("blk.1.attn_q.weight")->dims == std::vector<int64_t>{64, 64});
    CHECK(f.find_tensor("blk.1.attn_k.weight")->dims == std::vector<int64_t>{64, 32});
    CHECK(f.find_tensor("blk.1.attn_output.weight")->dims == std::vector<int64_t>{64, 64});
    CHECK(f.find_tensor("blk.0.ffn_gate.weight")->dims == std::vector<int64_t>{64, 96});
    CHECK(f.find_tensor("blk.0.ffn_down.weight")->dims == std::vector<int64_t>{96, 64});
    CHECK(f.find_tensor("blk.0.ffn_norm.weight")->dims == std::vector<int64_t>{64});

    const auto mc = kvrt::model::ModelConfig::from_gguf(f);
    CHECK(mc.n_vocab == 512);
    CHECK(mc.head_dim == 16);
    CHECK(mc.n_kv_heads == 2);
    CHECK_FALSE(mc.tied_output);
  }
}

TEST_CASE("synth weights are deterministic per seed and scaled 1/sqrt(n_in)") {
  TempDir dir;
  SynthConfig c = tiny_config(WeightType::kF32);
  c.d_ff = 1024;  // enough samples for the statistics below
  kvrt::synth::write_synth_model(c, (dir / "a.gguf"));
  kvrt::synth::write_synth_model(c, (dir / "b.gguf"));
  CHECK(read_bytes((dir / "a.gguf")) == read_bytes((dir / "b.gguf")));
  c.seed = 8;
  kvrt::synth::write_synth_model(c, (dir / "c.gguf"));
  const GgufFile a((dir / "a.gguf")), other((dir / "c.gguf"));
  CHECK(tensor_values(*a.find_tensor("blk.0.attn_q.weight")) !=
        tensor_values(*other.find_tensor("blk.0.attn_q.weight")));

  check_mean_std(tensor_values(*a.find_tensor("blk.0.ffn_up.weight")), 0.0, 1.0 / 8.0);  // n_in 64
  check_mean_std(tensor_values(*a.find_tensor("blk.1.ffn_down.weight")), 0.0,
                 1.0 / 32.0);  // n_in 1024
  for (float w : tensor_values(*a.find_tensor("blk.0.attn_norm.weight")))
    CHECK(std::fabs(w - 1.0f) < 0.15f);
  // Different tensors get independent streams, not copies of one another.
  CHECK(tensor_values(*a.find_tensor("blk.0.ffn_gate.weight")) !=
        tensor_values(*a.find_tensor("blk.0.ffn_up.weight")));
}

TEST_CASE("synth --tied omits output.weight and odd head sizes write key/value lengths") {
  TempDir dir;
  SynthConfig c = tiny_config(WeightType::kF16);
  c.tied = true;
  c.head_dim = 32;  // != d_model / n_heads = 16
  kvrt::synth::write_synth_model(c, (dir / "t.gguf"));
  const GgufFile f((dir / "t.gguf"));
  CHECK(f.find_tensor("output.weight") == nullptr);
  CHECK(f.get_uint("llama.attention.key_length") == 32);
  CHECK(f.get_uint("llama.attention.value_length") == 32);
  CHECK(f.find_tensor("blk.0.attn_q.weight")->dims == std::vector<int64_t>{64, 128});
  CHECK(f.find_tensor("blk.0.attn_output.weight")->dims == std::vector<int64_t>{128, 64});
  const auto mc = kvrt::model::ModelConfig::from_gguf(f);
  CHECK(mc.head_dim == 32);
  CHECK(mc.tied_output);
}

TEST_CASE("synth writes to a device: it reports the bytes written, as many as the file holds") {
  TempDir dir;
  const SynthConfig c = tiny_config(WeightType::kQ8_0);
  const kvrt::synth::SynthSummary to_file = kvrt::synth::write_synth_model(c, (dir / "m.gguf"));
  CHECK(to_file.n_bytes == std::filesystem::file_size(dir / "m.gguf"));
  // /dev/null has no size to ask afterwards (file_size threw an uncaught filesystem_error).
  const kvrt::synth::SynthSummary to_null = kvrt::synth::write_synth_model(c, "/dev/null");
  CHECK(to_null.n_bytes == to_file.n_bytes);
}

TEST_CASE("synth default vocabulary is the 32000-token llama SPM one") {
  TempDir dir;
  SynthConfig c = tiny_config(WeightType::kBF16);
  c.vocab_path.clear();
  c.d_model = 32;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.n_layers = 1;
  const kvrt::synth::SynthSummary s = kvrt::synth::write_synth_model(c, (dir / "v.gguf"));
  CHECK(s.n_vocab == 32000);
  const GgufFile f((dir / "v.gguf"));
  CHECK(f.get_string("tokenizer.ggml.model") == "llama");
  CHECK(f.get_uint("llama.vocab_size") == 32000);
  CHECK(f.find_tensor("token_embd.weight")->dims == std::vector<int64_t>{32, 32000});
}

TEST_CASE("synth refuses inconsistent shapes and a missing vocabulary") {
  TempDir dir;
  SynthConfig c = tiny_config(WeightType::kQ8_0);
  c.d_ff = 100;
  CHECK_THROWS_AS(kvrt::synth::write_synth_model(c, (dir / "x.gguf")), kvrt::Error);
  c = tiny_config(WeightType::kF16);
  c.n_kv_heads = 3;
  CHECK_THROWS_AS(kvrt::synth::write_synth_model(c, (dir / "x.gguf")), kvrt::Error);
  c = tiny_config(WeightType::kF16);
  c.vocab_path = (dir / "missing.gguf");
  try {
    kvrt::synth::write_synth_model(c, (dir / "x.gguf"));
    FAIL("a missing vocabulary file was accepted");
  } catch (const kvrt::Error& e) {
    CHECK(std::string(e.what()).find(c.vocab_path) != std::string::npos);
  }
  CHECK_FALSE(fs::exists(dir / "x.gguf"));
  CHECK_THROWS_AS(kvrt::synth::parse_weight_choice("q4_2"), kvrt::Error);
  CHECK(kvrt::synth::parse_weight_choice("bf16").type == WeightType::kBF16);
  CHECK(kvrt::synth::parse_weight_choice("q4_k_m").mix == kvrt::synth::WeightMix::kM);
}

TEST_CASE("synth --weights-from writes the tensors of raw f32 files; bad files are refused") {
  TempDir dir;
  SynthConfig c = tiny_config(WeightType::kF32);
  kvrt::synth::write_synth_model(c, (dir / "random.gguf"));
  const GgufFile random((dir / "random.gguf"));
  const fs::path raw = dir / "raw";
  fs::create_directory(raw);
  for (const auto& t : random.tensors()) {  // the export format: raw f32 in GGUF order
    std::ofstream out(raw / (t.name + ".f32"), std::ios::binary);
    out.write(reinterpret_cast<const char*>(t.data), std::streamsize(t.n_bytes));
  }
  c.weights_dir = raw.string();
  c.name = "trained";
  c.seed = 99;  // unused: weights come from the files
  kvrt::synth::write_synth_model(c, (dir / "copy.gguf"));
  const GgufFile copy((dir / "copy.gguf"));
  CHECK(copy.get_string("general.name") == "trained");
  REQUIRE(copy.tensors().size() == random.tensors().size());
  for (const auto& t : random.tensors()) {
    INFO("tensor " << t.name);
    CHECK(tensor_values(*copy.find_tensor(t.name)) == tensor_values(t));
  }

  fs::resize_file(raw / "blk.1.ffn_up.weight.f32", 100);
  try {
    kvrt::synth::write_synth_model(c, (dir / "bad.gguf"));
    FAIL("a weights file of the wrong size was accepted");
  } catch (const kvrt::Error& e) {
    CHECK(std::string(e.what()).find("blk.1.ffn_up.weight.f32") != std::string::npos);
  }
  fs::remove(raw / "blk.1.ffn_up.weight.f32");
  CHECK_THROWS_AS(kvrt::synth::write_synth_model(c, (dir / "bad.gguf")), kvrt::Error);
  CHECK_FALSE(fs::exists(dir / "bad.gguf"));
}

TEST_CASE(
    "synth writes qwen2, phi3 and gemma2 with their tensors and keys; --decoded holds what a type "
    "decodes to") {
  TempDir dir;
  SynthConfig c = tiny_config(WeightType::kQ4_0);
  c.arch = "qwen2";
  c.tied = true;
  kvrt::synth::write_synth_model(c, dir / "qwen2.gguf");
  const GgufFile qwen2(dir / "qwen2.gguf");
  CHECK(qwen2.get_string("general.architecture") == "qwen2");
  CHECK(qwen2.get_uint("qwen2.attention.head_count_kv") == 2);
  CHECK(qwen2.find_tensor("blk.1.attn_k.bias")->dims == std::vector<int64_t>{32});
  CHECK(qwen2.find_tensor("blk.1.attn_k.bias")->type == WeightType::kF32);
  CHECK(qwen2.find_tensor("output.weight") == nullptr);
  CHECK(kvrt::model::ModelConfig::from_gguf(qwen2).tied_output);

  c.arch = "phi3";
  c.tied = false;
  c.sliding_window = 40;
  kvrt::synth::write_synth_model(c, dir / "phi3.gguf");
  const GgufFile phi3(dir / "phi3.gguf");
  CHECK(phi3.get_uint("phi3.attention.sliding_window") == 40);
  CHECK(phi3.find_tensor("blk.0.attn_qkv.weight")->dims == std::vector<int64_t>{64, 64 + 2 * 32});
  CHECK(phi3.find_tensor("blk.0.ffn_up.weight")->dims == std::vector<int64_t>{64, 2 * 96});
  CHECK(phi3.find_tensor("blk.0.ffn_gate.weight") == nullptr);
  CHECK(kvrt::model::ModelConfig::from_gguf(phi3).window_of(1) == 40);
  c.arch = "olmo2";
  c.tied = true;  // olmo2 has a separate output matrix
  CHECK_THROWS_WITH_AS(kvrt::synth::write_synth_model(c, dir / "x.gguf"),
                       doctest::Contains("separate output"), kvrt::Error);
  c.tied = false;

  c.arch = "gemma2";
  c.head_dim = 32;  // != d_model / n_heads
  kvrt::synth::write_synth_model(c, dir / "gemma2.gguf");
  const GgufFile gemma2(dir / "gemma2.gguf");
  const auto g = kvrt::model::ModelConfig::from_gguf(gemma2);
  CHECK(g.head_dim == 32);
  CHECK(g.attn_softcap == 50.0f);
  CHECK(g.final_softcap == 30.0f);
  CHECK(g.window_of(0) == 40);
  CHECK(g.window_of(1) == 0);
  CHECK(gemma2.find_tensor("blk.1.post_ffw_norm.weight") != nullptr);
  CHECK(gemma2.find_tensor("blk.1.post_attention_norm.weight") != nullptr);

  c.arch = "mamba";
  CHECK_THROWS_WITH_AS(kvrt::synth::write_synth_model(c, dir / "x.gguf"),
                       doctest::Contains("llama, qwen2, phi3, gemma2"), kvrt::Error);

  // --decoded: every matrix F32, equal to the quantized file's blocks decoded; vectors unchanged.
  for (const char* type : {"q4_0", "q5_1", "iq4_nl", "q4_k_m"}) {
    CAPTURE(std::string(type));
    SynthConfig q = tiny_config(WeightType::kF32);
    q.arch = "phi3";
    q.d_model = 256;
    q.d_ff = 256;
    q.head_dim = 64;  // q_dim 256: whole K blocks
    const kvrt::synth::WeightChoice w = kvrt::synth::parse_weight_choice(type);
    q.type = w.type;
    q.mix = w.mix;
    kvrt::synth::write_synth_model(q, dir / "q.gguf");
    q.decoded = true;
    kvrt::synth::write_synth_model(q, dir / "d.gguf");
    const GgufFile fq(dir / "q.gguf"), fd(dir / "d.gguf");
    CHECK(fd.get_uint("general.file_type") == 0);
    REQUIRE(fq.tensors().size() == fd.tensors().size());
    for (const auto& t : fq.tensors()) {
      CAPTURE(t.name);
      const auto& traits = kvrt::simd::weight_type_traits(t.type);
      std::vector<float> decoded(size_t(t.n_elements));
      traits.to_float_ref(static_cast<const uint8_t*>(t.data), t.n_elements, decoded.data());
      CHECK(tensor_values(*fd.find_tensor(t.name)) == decoded);
    }
    if (w.mix == kvrt::synth::WeightMix::kM)  // llama-quantize's Q4_K_M: Q5_K for a fused QKV
      CHECK(fq.find_tensor("blk.0.attn_qkv.weight")->type == WeightType::kQ5_K);
  }
}

TEST_CASE("synth_model writes every 2026 family with its own keys, and the real shapes") {
  kvrt::test::TempDir dir;
  const auto load = [&](const SynthConfig& c) {
    const std::string path = dir / (c.arch + ".gguf");
    kvrt::synth::write_synth_model(c, path);
    return kvrt::model::Model(path);
  };
  SynthConfig c = tiny_config(WeightType::kF32);
  c.n_layers = 8;
  c.sliding_window = 24;
  c.arch = "gemma3";
  c.tied = true;
  {
    const kvrt::model::Model m = load(c);
    CHECK(m.config().window_of(4) == 24);
    CHECK(m.config().window_of(5) == 0);  // five local layers in six
    CHECK(m.config().uses_window_rope(0));
    CHECK(m.config().rope_window.base == 10000.0f);
    CHECK(m.config().rope.base == 1e6f);
    CHECK(m.weights().layers[0].q_norm != nullptr);
  }
  c.arch = "granite";
  c.tied = false;
  {
    const kvrt::model::Model m = load(c);
    CHECK(m.config().embedding_scale == 12.0f);
    CHECK(m.config().query_scale == 0.015625f);
    CHECK(m.config().residual_scale == 0.22f);
    CHECK(m.config().logit_scale == 8.0f);
  }
  c.arch = "mistral3";
  {
    const kvrt::model::Model m = load(c);
    CHECK(m.config().rope.scaling == kvrt::ops::RopeScaling::kYarn);
    CHECK(m.config().rope.factor == 16.0f);
    CHECK(m.config().attn_temp_scale == 0.1f);
    CHECK(m.config().attn_temp_floor == 16384);
  }
  c.arch = "phi4mini";
  c.tied = true;
  {
    const kvrt::model::Model m = load(c);
    CHECK(m.config().arch == "phi3");
    CHECK(m.config().rope_dim == 12);  // 3/4 of 16
    CHECK(m.config().sliding_window == 0);
    CHECK(m.config().rope.attn_factor == 1.19024f);
    CHECK(m.weights().rope_factors(256, 256) == m.weights().rope_factors_short);
    CHECK(m.weights().rope_factors(257, 256) == m.weights().rope_factors_long);
  }
  c.arch = "olmo2";
  c.tied = false;
  {
    const kvrt::model::Model m = load(c);
    CHECK(m.weights().layers[1].attn_norm == nullptr);
    CHECK(m.weights().layers[1].ffn_norm == nullptr);
    CHECK(m.config().architecture->qk_norm == kvrt::model::QkNorm::kFullWidth);
  }
  c.arch = "smollm3";
  {
    const kvrt::model::Model m = load(c);
    CHECK(m.config().rope_at(2));
    CHECK_FALSE(m.config().rope_at(3));
    CHECK_FALSE(m.config().rope_at(7));
  }
  c.arch = "qwen3";
  c.head_dim = 32;  // 4 x 32 != 64
  CHECK(load(c).config().head_dim == 32);

  SynthConfig g;
  kvrt::synth::apply_shape(g, "gemma3-1b");
  CHECK(g.arch == "gemma3");
  CHECK(g.head_dim == 256);
  CHECK(g.n_kv_heads == 1);
  kvrt::synth::apply_shape(g, "qwen3-0.6b");
  CHECK(g.n_layers == 28);
  CHECK(g.n_kv_heads == 8);
  CHECK_THROWS_WITH_AS(kvrt::synth::apply_shape(g, "gemma3-27b"),
                       doctest::Contains("gemma3-1b, qwen3-0.6b"), kvrt::Error);
}
