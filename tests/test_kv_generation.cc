// The quantized cache inside the real model (stories260K): greedy text with q8 against FP32,
// the KL divergence of each format against FP32 over the reference text, and protections (sinks,
// per-layer formats) that must give the logits of the uniform setting they store.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "common/error.h"
#include "model/sampler.h"
#include "model/session.h"
#include "test_util.h"

using namespace kvrt;

namespace {

const model::Model& stories() {
  static model::Model m(test::stories_path());
  return m;
}

model::Session make_session(const kv::KvConfig& kv, int n_ctx) {
  model::SessionOptions o;
  o.n_ctx = n_ctx;
  o.n_threads = 1;
  o.kv = kv;
  return model::Session(stories(), o);
}

// KL(p || q) in nats of the softmax distributions of two logit rows.
double kl_divergence(const float* p_logits, const float* q_logits, int n) {
  auto log_softmax = [n](const float* x, std::vector<double>& out) {
    double mx = x[0], sum = 0;
    for (int i = 0; i < n; ++i) mx = std::max(mx, double(x[i]));
    for (int i = 0; i < n; ++i) sum += std::exp(double(x[i]) - mx);
    out.resize(size_t(n));
    for (int i = 0; i < n; ++i) out[size_t(i)] = double(x[i]) - mx - std::log(sum);
  };
  std::vector<double> lp, lq;
  log_softmax(p_logits, lp);
  log_softmax(q_logits, lq);
  double kl = 0;
  for (int i = 0; i < n; ++i) kl += std::exp(lp[size_t(i)]) * (lp[size_t(i)] - lq[size_t(i)]);
  return kl;
}

kv::KvConfig setting(kv::Format k, kv::Format v) {
  kv::KvConfig c;
  c.k_format = k;
  c.v_format = v;
  return c;
}

}  // namespace

TEST_CASE(
    "greedy generation with a q8 cache follows FP32 for 100 tokens, or diverges at a near-tie") {
  const int n_vocab = stories().config().n_vocab;
  auto ref = make_session({}, 128);
  auto q8 = make_session(setting(kv::Format::kQ8, kv::Format::kQ8), 128);
  int32_t tok_ref = stories().tokenizer().bos_id(), tok_q8 = tok_ref;
  for (int step = 0; step < 100; ++step) {
    ref.eval(&tok_ref, 1);
    q8.eval(&tok_q8, 1);
    tok_ref = model::argmax(ref.last_logits(), n_vocab);
    tok_q8 = model::argmax(q8.last_logits(), n_vocab);
    if (tok_ref != tok_q8) {
      const double kl = kl_divergence(ref.last_logits(), q8.last_logits(), n_vocab);
      MESSAGE("q8 greedy diverges from FP32 at generated token " << step << ", KL there " << kl);
      // A divergence is only acceptable where FP32 itself was nearly undecided.
      CHECK(kl < 0.01);
      return;
    }
  }
  MESSAGE("q8 greedy equals FP32 for all 100 tokens");
}

TEST_CASE("KL divergence against FP32 over the reference text, per format") {
  const auto& m = stories();
  const int n_vocab = m.config().n_vocab, n = 512;
  std::vector<int32_t> tokens =
      m.tokenizer().encode(test::read_file(test::text_dir() + "/tinystories_sample.txt"), true);
  REQUIRE(int(tokens.size()) >= n);
  tokens.resize(size_t(n));
  std::vector<float> ref_logits(size_t(n) * n_vocab), logits(ref_logits.size());  // [n][n_vocab]
  make_session({}, n).eval(tokens.data(), n, ref_logits.data());
  auto mean_kl = [&](const kv::KvConfig& kv) {
    auto s = make_session(kv, n);
    // Token by token, so every step reads the quantized cache through the decode kernels.
    for (int t = 0; t < n; ++t) {
      s.eval(&tokens[size_t(t)], 1);
      std::copy(s.last_logits(), s.last_logits() + n_vocab, &logits[size_t(t) * n_vocab]);
    }
    double sum = 0;
    for (int t = 0; t < n; ++t)
      sum += kl_divergence(&ref_logits[size_t(t) * n_vocab], &logits[size_t(t) * n_vocab], n_vocab);
    return sum / n;
  };
  const double kl_q8 = mean_kl(setting(kv::Format::kQ8, kv::Format::kQ8));
  const double kl_q4 = mean_kl(setting(kv::Format::kQ4, kv::Format::kQ4));
  const double kl_k8v4 = mean_kl(setting(kv::Format::kQ8, kv::Format::kQ4));
  MESSAGE("mean KL vs FP32 over 512 tokens: q8/q8 " << kl_q8 << ", q8/q4 " << kl_k8v4 << ", q4/q4 "
                                                    << kl_q4);
  // q8 is close to lossless here; q4 keys lose more than q4 values (keys are more sensitive).
  CHECK(kl_q8 < 0.01);
  CHECK(kl_q8 < kl_k8v4);
  CHECK(kl_k8v4 < kl_q4);
}

namespace {

// Logits of every position of the reference text's first n tokens: a prefill of the first half,
// then one token at a time (both attention paths).
std::vector<float> text_logits(const kv::KvConfig& kv, int n) {
  const auto& m = stories();
  const int n_vocab = m.config().n_vocab, n_prefill = n / 2;
  std::vector<int32_t> tokens =
      m.tokenizer().encode(test::read_file(test::text_dir() + "/tinystories_sample.txt"), true);
  REQUIRE(int(tokens.size()) >= n);
  std::vector<float> logits(size_t(n) * n_vocab);  // [n][n_vocab]
  auto s = make_session(kv, n);
  s.eval(tokens.data(), n_prefill, logits.data());
  for (int t = n_prefill; t < n; ++t) {
    s.eval(&tokens[size_t(t)], 1);
    std::copy(s.last_logits(), s.last_logits() + n_vocab, &logits[size_t(t) * n_vocab]);
  }
  return logits;
}

}  // namespace

TEST_CASE("protections that store the same numbers give the same logits, bit for bit") {
  const int n = 100;  // stories260K has 5 layers
  const std::pair<const char*, const char*> same[] = {
      {"q8", "q4,layers[0,1,2,3,4]=q8"},     // every layer overridden: the uniform setting
      {"q8", "q2,layers[0,1,-3,-2,-1]=q8"},  // the same, counted from the last layer
      {"k=q8,v=q4", "q4,k[0,1,2,3,4]=q8"},   // keys alone
      {"q4", "q4,sinks=0"},                  // no sinks
      {"f32", "q4,rot=0,sinks=100"},         // sinks over the whole context: FP32 keys and values
      {"f32", "q2,axis=channel,r=32,rot=0,sinks=100,layers[1]=q8"},
      {"f32,rot=1", "q4,sinks=100"},  // the same rows stored rotated
  };
  for (const auto& [a, b] : same) {
    CAPTURE(a);
    CAPTURE(b);
    CHECK(text_logits(kv::parse_setting(a), n) == text_logits(kv::parse_setting(b), n));
  }
  // And a protection that changes the numbers does change the logits.
  CHECK(text_logits(kv::parse_setting("q4"), n) != text_logits(kv::parse_setting("q4,sinks=4"), n));
  CHECK(text_logits(kv::parse_setting("q4"), n) !=
        text_logits(kv::parse_setting("q4,layers[-1]=q8"), n));
}

TEST_CASE("a session names its setting with layer indices counted from the first layer") {
  const auto s = make_session(kv::parse_setting("q4,sinks=4,layers[0,-1]=q8,v[-2]=f32"), 64);
  CHECK(s.kv_cache().config().name() ==
        "k=q4,v=q4,g=8,axis=token,r=0,rot=1,sinks=4,v[3]=f32,layers[0,4]=q8");
  CHECK_THROWS_AS(make_session(kv::parse_setting("q4,layers[5]=q8"), 64), Error);
}
