// Architecture descriptions: the rows the loader and forward pass consult, the one error for an
// architecture kvrt does not run, and RoPE in both pairings against a direct formula.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "io/gguf_writer.h"
#include "model/architecture.h"
#include "model/model.h"
#include "ops/transformer_ops.h"
#include "test_util.h"

using namespace kvrt;

namespace {

// x [n_heads][head_dim] rotated for position pos by the definition of RoPE, in double: pair p
// (dims (2p, 2p+1) interleaved, (p, p + rope_dim/2) NEOX) is the complex number x_a + i x_b,
// multiplied by exp(i pos base^(-2p / rope_dim) / factors[p]) (factors null: 1); dims from
// rope_dim on are not rotated.
std::vector<double> rope_reference(const std::vector<float>& x, int n_heads, int head_dim,
                                   int rope_dim, double base, int pos, bool neox,
                                   const float* factors = nullptr) {
  std::vector<double> y(x.begin(), x.end());
  for (int h = 0; h < n_heads; ++h) {
    for (int p = 0; p < rope_dim / 2; ++p) {
      const int a = h * head_dim + (neox ? p : 2 * p),
                b = h * head_dim + (neox ? p + rope_dim / 2 : 2 * p + 1);
      const std::complex<double> z =
          std::complex<double>(x[size_t(a)], x[size_t(b)]) *
          std::polar(1.0, pos * std::pow(base, -2.0 * p / rope_dim) / (factors ? factors[p] : 1.0));
      y[size_t(a)] = z.real();
      y[size_t(b)] = z.imag();
    }
  }
  return y;
}

std::vector<float> rope_op(std::vector<float> x, int n_heads, int head_dim, int rope_dim,
                           float base, int pos, bool neox, const float* factors = nullptr) {
  ops::RopeParams params;
  params.base = base;
  const ops::RopeTable table(pos + 1, rope_dim, params, factors);
  ThreadPool one(1);
  ops::rope(table, {x.data(), 1, n_heads, head_dim, pos, neox}, one);
  return x;
}

std::vector<float> randn(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = nd(rng);
  return x;
}

double dot(const std::vector<float>& a, const std::vector<float>& b, int off, int n) {
  double s = 0;
  for (int i = off; i < off + n; ++i) s += double(a[size_t(i)]) * b[size_t(i)];
  return s;
}

}  // namespace

TEST_CASE("RoPE: NEOX and interleaved pairings equal the direct formula, partial rotation too") {
  const int n_heads = 3, head_dim = 16;
  for (bool neox : {false, true}) {
    for (int rope_dim : {16, 8}) {
      for (int pos : {0, 1, 7, 1000}) {
        const std::vector<float> x = randn(size_t(n_heads) * head_dim, unsigned(pos + rope_dim));
        const std::vector<float> y = rope_op(x, n_heads, head_dim, rope_dim, 10000.0f, pos, neox);
        const std::vector<double> ref =
            rope_reference(x, n_heads, head_dim, rope_dim, 10000.0, pos, neox);
        INFO((neox ? "neox" : "interleaved") << " rope_dim " << rope_dim << " pos " << pos);
        // The table holds float cos/sin of float angles (llama.cpp's recurrence): an angle is off
        // by up to ~rope_dim float ulps of pos, which moves a value by that times its pair's size.
        for (size_t i = 0; i < y.size(); ++i)
          CHECK(std::abs(y[i] - ref[i]) <= 4e-6 * (std::abs(ref[i]) + 1.0) + pos * rope_dim * 2e-7);
      }
    }
  }
}

TEST_CASE("RoPE: Llama 3 frequency factors divide each pair's angle") {
  const int head_dim = 16;
  const std::vector<float> factors = {1, 1, 1,  2.5f,
                                      4, 8, 32, 32};  // [head_dim / 2], as rope_freqs.weight
  for (bool neox : {false, true}) {
    for (int pos : {1, 7, 300}) {
      const std::vector<float> x = randn(head_dim, unsigned(pos));
      const std::vector<float> y =
          rope_op(x, 1, head_dim, head_dim, 500000.0f, pos, neox, factors.data());
      const std::vector<double> ref =
          rope_reference(x, 1, head_dim, head_dim, 500000.0, pos, neox, factors.data());
      INFO((neox ? "neox" : "interleaved") << " pos " << pos);
      for (size_t i = 0; i < y.size(); ++i)
        CHECK(std::abs(y[i] - ref[i]) <= 4e-6 * (std::abs(ref[i]) + 1.0) + pos * head_dim * 2e-7);
      // Without the factors pair 3 turns 2.5 times as far: the op does not ignore them.
      if (pos == 300)
        CHECK(std::abs(rope_op(x, 1, head_dim, head_dim, 500000.0f, pos, neox)[neox ? 3 : 6] -
                       y[neox ? 3 : 6]) > 0.1);
    }
  }
}

TEST_CASE("RoPE: both pairings keep norms and make q·k depend on the distance only") {
  const int head_dim = 32;
  const std::vector<float> q = randn(head_dim, 1), k = randn(head_dim, 2);
  for (bool neox : {false, true}) {
    INFO((neox ? "neox" : "interleaved"));
    const double s_near = dot(rope_op(q, 1, head_dim, head_dim, 10000.0f, 10, neox),
                              rope_op(k, 1, head_dim, head_dim, 10000.0f, 3, neox), 0, head_dim);
    const double s_far = dot(rope_op(q, 1, head_dim, head_dim, 10000.0f, 507, neox),
                             rope_op(k, 1, head_dim, head_dim, 10000.0f, 500, neox), 0, head_dim);
    CHECK(std::abs(s_near - s_far) <= 1e-4 * (std::abs(s_near) + 1.0));
    const std::vector<float> r = rope_op(q, 1, head_dim, head_dim, 10000.0f, 123, neox);
    CHECK(std::abs(dot(r, r, 0, head_dim) - dot(q, q, 0, head_dim)) <=
          1e-4 * dot(q, q, 0, head_dim));
  }
  // The pairings differ: the same input and position give different rotations.
  CHECK(rope_op(q, 1, head_dim, head_dim, 10000.0f, 5, true) !=
        rope_op(q, 1, head_dim, head_dim, 10000.0f, 5, false));
}

TEST_CASE("architectures: every row names its tensors once") {
  for (const model::Architecture& a : model::architectures()) {
    INFO(a.name);
    std::vector<std::string> names;
    for (const auto& tensors : {a.model_tensors, a.layer_tensors}) {
      for (const model::TensorDesc& t : tensors) {
        CHECK(std::find(names.begin(), names.end(), t.name) == names.end());
        names.push_back(t.name);
      }
    }
    CHECK(&model::find_architecture(a.name) == &a);
  }
  CHECK(model::architecture_names() ==
        "llama, qwen2, phi3, gemma2, qwen3, gemma3, smollm3, granite, olmo2, mistral3");
  CHECK(model::find_architecture("qwen2").rope_pairing == model::RopePairing::kNeox);
  CHECK(model::find_architecture("gemma2").window_layers == model::WindowLayers::kPattern);
  CHECK(model::find_architecture("gemma2").window_period == 2);
}

TEST_CASE("an architecture kvrt does not know is one error that lists the ones it runs") {
  test::TempDir tmp;
  io::GgufFile src(test::stories_path());
  io::GgufWriter w;
  w.add_string("general.architecture", "mamba");
  for (const auto& [key, value] : src.metadata())
    if (key != "general.architecture" && key != "general.alignment") w.add_value(key, value);
  w.add_tensor("token_embd.weight", {4, 4}, simd::WeightType::kF32, std::vector<float>(16));
  w.write(tmp / "mamba.gguf");
  CHECK_THROWS_WITH_AS(
      model::Model(tmp / "mamba.gguf"),
      doctest::Contains("mamba.gguf': architecture 'mamba' is not supported: Mamba is a recurrent "
                        "state-space model (kvrt runs: llama, qwen2, phi3, gemma2, qwen3, gemma3, "
                        "smollm3, granite, olmo2, mistral3)"),
      Error);
}

TEST_CASE("recurrent, hybrid and mixture-of-experts files are refused with what they need") {
  test::TempDir tmp;
  io::GgufFile src(test::stories_path());
  const auto write = [&](const std::string& arch, bool experts) {
    io::GgufWriter w;
    w.add_string("general.architecture", arch);
    for (const auto& [key, value] : src.metadata())
      if (key.starts_with("tokenizer.")) w.add_value(key, value);
    if (experts) w.add_u32(arch + ".expert_count", 8);
    w.add_tensor("token_embd.weight", {4, 4}, simd::WeightType::kF32, std::vector<float>(16));
    const std::string path = tmp / (arch + (experts ? "-moe" : "") + ".gguf");
    w.write(path);
    return path;
  };
  CHECK_THROWS_WITH_AS(model::Model(write("qwen35", false)),
                       doctest::Contains("architecture 'qwen35' is not supported: Qwen3.5's gated "
                                         "delta-net layers are recurrent (kvrt runs: llama,"),
                       Error);
  CHECK_THROWS_WITH_AS(model::Model(write("lfm2", false)),
                       doctest::Contains("'lfm2' is not supported: LFM2's short-convolution"),
                       Error);
  CHECK_THROWS_WITH_AS(model::Model(write("qwen3moe", false)),
                       doctest::Contains("mixture of experts, which needs expert routing"), Error);
  CHECK_THROWS_WITH_AS(model::Model(write("llama", true)),
                       doctest::Contains("this llama model is a mixture of 8 experts "
                                         "(llama.expert_count), which needs expert routing"),
                       Error);
}
