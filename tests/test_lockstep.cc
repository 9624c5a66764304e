// model::Lockstep steps several sessions one token each with one weight product per matrix for
// all of them. It must compute what each session's own eval of that token computes, bit for bit:
// validation compares settings through it, and `kvrt run` decodes one session alone. Checked on
// each architecture (biases, fused projections, sliding windows, soft-caps, post-norms) in F32,
// F16 and quantized weights (every activation format), with sessions on different KV settings
// at different positions, past the sliding window, on one and two threads.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "kv/kv_config.h"
#include "model/lockstep.h"
#include "model/model.h"
#include "model/session.h"
#include "ops/matmul.h"
#include "simd/dispatch.h"
#include "test_util.h"
#include "tools/synth_model/synth.h"

using namespace kvrt;
using test::TempDir;

namespace {

struct Shape {
  const char* arch;
  int n_heads, n_kv_heads, head_dim;
  const char* type;
};

// Between them: F32, F16, Q8_0 (Q8_0 activations), Q4_0 (its own kernel), Q4_1 (Q8_1) and a
// K-quant mix (Q8_K).
constexpr Shape kShapes[] = {
    {"llama", 4, 2, 64, "f16"}, {"llama", 4, 1, 64, "q4_0"},    {"qwen2", 4, 1, 64, "q8_0"},
    {"phi3", 8, 2, 32, "q4_1"}, {"gemma2", 4, 2, 64, "q4_k_m"}, {"qwen2", 4, 2, 64, "f32"},
};
constexpr int kWindow = 24, kSteps = 20;

std::string make_model(const Shape& s, const TempDir& dir) {
  synth::SynthConfig c;
  c.arch = s.arch;
  c.d_model = 256;
  c.n_layers = 2;
  c.n_heads = s.n_heads;
  c.n_kv_heads = s.n_kv_heads;
  c.head_dim = s.head_dim;
  c.d_ff = 256;
  c.n_ctx = 128;
  c.sliding_window = kWindow;
  const synth::WeightChoice w = synth::parse_weight_choice(s.type);
  c.type = w.type;
  c.mix = w.mix;
  c.vocab_path = test::stories_path();  // 512 tokens
  c.seed = 5;
  const std::string path = dir / (std::string(s.arch) + "-" + s.type + ".gguf");
  synth::write_synth_model(c, path);
  return path;
}

// Sessions on different KV settings (and bf16 prefill products where this CPU runs them).
std::vector<model::SessionOptions> session_options(int n_threads) {
  std::vector<model::SessionOptions> out;
  for (const char* kv : {"f32", "q8", "q4,sinks=2", "k=q8,v=q4,r=4", "q2,axis=channel"}) {
    model::SessionOptions o;
    o.n_ctx = 128;
    o.n_threads = n_threads;
    o.n_batch = 16;
    o.kv = kv::parse_setting(kv);
    out.push_back(o);
  }
  if (ops::bf16_unavailable(simd::runnable_isas(), simd::process_isa()).empty()) {
    out.push_back(out[1]);
    out.back().matmul = ops::MatmulPrecision::kBf16;
  }
  return out;
}

int32_t token_at(int i, int k) { return int32_t(3 + (i * 131 + k * 197 + 7) % 509); }  // ids 3..511

bool same_logits(const model::Session& a, const model::Session& b) {
  const size_t n = size_t(a.model().config().n_vocab);
  return std::memcmp(a.last_logits(), b.last_logits(), n * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("a lockstep step computes each session's own one-token eval, bit for bit") {
  TempDir dir;
  for (const Shape& shape : kShapes) {
    const model::Model m(make_model(shape, dir));
    for (int n_threads : {1, 2}) {
      CAPTURE(shape.arch);
      CAPTURE(shape.type);
      CAPTURE(n_threads);
      const std::vector<model::SessionOptions> opts = session_options(n_threads);
      std::vector<std::unique_ptr<model::Session>> stepped, alone;
      std::vector<model::Session*> group;
      for (size_t i = 0; i < opts.size(); ++i) {
        stepped.push_back(std::make_unique<model::Session>(m, opts[i]));
        alone.push_back(std::make_unique<model::Session>(m, opts[i]));
        std::vector<int32_t> prompt;  // 5 to 33 tokens: every session at its own position
        for (size_t k = 0; k < 5 + 7 * i; ++k) prompt.push_back(token_at(int(i), int(k)));
        stepped.back()->eval(prompt.data(), int(prompt.size()));
        alone.back()->eval(prompt.data(), int(prompt.size()));
        group.push_back(stepped.back().get());
      }
      model::Lockstep lockstep(m, int(group.size()), n_threads);
      for (int step = 0; step < kSteps;
           ++step) {  // the longest prompt plus kSteps is past the window
        std::vector<int32_t> tokens;
        for (size_t i = 0; i < group.size(); ++i) tokens.push_back(token_at(int(i), 100 + step));
        lockstep.step(group.data(), tokens.data(), int(group.size()));
        for (size_t i = 0; i < group.size(); ++i) {
          alone[i]->eval(&tokens[i], 1);
          CAPTURE(i);
          CAPTURE(step);
          REQUIRE(stepped[i]->n_past() == alone[i]->n_past());
          REQUIRE(same_logits(*stepped[i], *alone[i]));
        }
      }
      // A subset, in another order, continues to match.
      std::vector<model::Session*> some{group[3], group[0]};
      const int32_t tokens[2] = {17, 42};
      lockstep.step(some.data(), tokens, 2);
      alone[3]->eval(&tokens[0], 1);
      alone[0]->eval(&tokens[1], 1);
      CHECK(same_logits(*group[3], *alone[3]));
      CHECK(same_logits(*group[0], *alone[0]));
    }
  }
}

TEST_CASE("a lockstep step refuses bad input before any session changes") {
  TempDir dir;
  const model::Model m(make_model(kShapes[0], dir));
  model::SessionOptions o;
  o.n_ctx = 8;
  o.n_threads = 1;
  model::Session a(m, o), b(m, o);
  const int32_t prompt[7] = {5, 6, 7, 8, 9, 10, 11};
  b.eval(prompt, 7);
  model::Lockstep lockstep(m, 2, 1);
  model::Session* both[2] = {&a, &b};
  const int32_t ok[2] = {3, 4}, bad[2] = {3, 512};
  CHECK_THROWS_WITH_AS(lockstep.step(both, bad, 2), doctest::Contains("outside the vocabulary"),
                       Error);
  CHECK(a.n_past() == 0);
  lockstep.step(both, ok, 2);  // b fills its context of 8
  CHECK(a.n_past() == 1);
  CHECK(b.n_past() == 8);
  const std::vector<float> before(a.last_logits(), a.last_logits() + m.config().n_vocab);
  CHECK_THROWS_WITH_AS(lockstep.step(both, ok, 2), doctest::Contains("context full"), Error);
  CHECK(a.n_past() == 1);
  CHECK(std::memcmp(before.data(), a.last_logits(), before.size() * sizeof(float)) == 0);
  model::Session* three[3] = {&a, &b, &a};
  const int32_t t3[3] = {3, 4, 5};
  CHECK_THROWS_WITH_AS(lockstep.step(three, t3, 3), doctest::Contains("1 to 2 sessions"), Error);
  CHECK_THROWS_WITH_AS(lockstep.step(both, ok, 0), doctest::Contains("1 to 2 sessions"), Error);
}
