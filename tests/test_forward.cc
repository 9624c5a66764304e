// End-to-end correctness of the forward pass on stories260K: golden greedy outputs through the
// CLI, the reference perplexity, prefill/decode agreement and thread-count determinism.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
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

model::Session make_session(int n_ctx, int n_threads, int n_batch = 256) {
  model::SessionOptions o;
  o.n_ctx = n_ctx;
  o.n_threads = n_threads;
  o.n_batch = n_batch;
  return model::Session(stories(), o);
}

std::vector<int32_t> greedy(int n_threads, int n_new) {
  auto s = make_session(256, n_threads);
  std::vector<int32_t> out{stories().tokenizer().bos_id()};
  s.eval(out.data(), 1);
  for (int i = 0; i < n_new; ++i) {
    out.push_back(model::argmax(s.last_logits(), stories().config().n_vocab));
    s.eval(&out.back(), 1);
  }
  return out;
}

// The mean NLL in models/reference_nll_*.txt ("mean_nll=1.758743"), from two independent
// implementations.
double reference_nll() {
  const std::string ref =
      test::read_file(test::models_dir() + "/reference_nll_cs336_tinystories_sample_512tok.txt");
  const size_t at = ref.find("mean_nll=");
  REQUIRE(at != std::string::npos);
  return std::stod(ref.substr(at + 9));
}

}  // namespace

TEST_CASE("kvrt run greedy from BOS prints the golden 200 tokens") {
  test::TempDir tmp;
  auto r = test::run_kvrt("run -m " + test::stories_path() + " -n 200 -p ''", tmp);
  CHECK(r.exit_code == 0);
  CHECK(r.out == test::read_file(test::models_dir() + "/golden_greedy_n200.txt"));
  CHECK(r.err.find("decode") != std::string::npos);
}

TEST_CASE("kvrt run greedy from 'Once upon a time' fills 64 positions with the golden text") {
  test::TempDir tmp;
  auto r = test::run_kvrt("run -m " + test::stories_path() + " -c 64 -n 1000 -p 'Once upon a time'",
                          tmp);
  CHECK(r.exit_code == 0);
  CHECK(r.out == test::read_file(test::models_dir() + "/golden_greedy_prompt_once_n64.txt"));
  CHECK(r.err.find("context full (64 positions)") != std::string::npos);
}

TEST_CASE("teacher-forced mean NLL over the reference text matches models/reference_nll_*.txt") {
  const auto& m = stories();
  std::vector<int32_t> tokens =
      m.tokenizer().encode(test::read_file(test::text_dir() + "/tinystories_sample.txt"), true);
  REQUIRE(tokens.size() >= 512);
  tokens.resize(512);
  auto s = make_session(512, 2);
  const int n_vocab = m.config().n_vocab;
  std::vector<float> logits(size_t(512) * n_vocab);  // [512][n_vocab]
  s.eval(tokens.data(), 512, logits.data());
  double nll = 0;
  for (int t = 0; t + 1 < 512; ++t) {
    const float* row = &logits[size_t(t) * n_vocab];
    double mx = row[0], sum = 0;
    for (int i = 0; i < n_vocab; ++i) mx = std::max(mx, double(row[i]));
    for (int i = 0; i < n_vocab; ++i) sum += std::exp(double(row[i]) - mx);
    nll -= double(row[tokens[size_t(t) + 1]]) - mx - std::log(sum);
  }
  nll /= 511;
  const double want = reference_nll();
  MESSAGE("mean NLL = " << nll << ", reference " << want);
  CHECK(std::fabs(nll - want) <= 1e-4);
}

TEST_CASE("prefill then decode gives the logits of feeding tokens one by one") {
  const auto& m = stories();
  std::vector<int32_t> tokens =
      m.tokenizer().encode("Once upon a time there was a cat who liked fish.", true);
  const int n = int(tokens.size()), n_vocab = m.config().n_vocab;
  std::vector<float> batch(size_t(n) * n_vocab);
  auto prefill = make_session(128, 2, 7);  // chunks of 7 exercise partial batches
  prefill.eval(tokens.data(), n, batch.data());
  auto step = make_session(128, 2);
  for (int t = 0; t < n; ++t) {
    step.eval(&tokens[size_t(t)], 1);
    double max_abs = 0, max_err = 0;
    for (int i = 0; i < n_vocab; ++i) {
      max_abs = std::max(max_abs, std::fabs(double(step.last_logits()[i])));
      max_err = std::max(max_err,
                         std::fabs(double(step.last_logits()[i]) - batch[size_t(t) * n_vocab + i]));
    }
    INFO("token " << t);
    CHECK(max_err <= 1e-5 * max_abs);
  }
}

TEST_CASE("one and two threads give the same greedy tokens") {
  CHECK(greedy(1, 120) == greedy(2, 120));
}

TEST_CASE("a prompt that does not fit the context is an error, not a crash") {
  auto s = make_session(8, 1);
  std::vector<int32_t> tokens(9, 1);
  CHECK_THROWS_AS(s.eval(tokens.data(), 9), kvrt::Error);
  CHECK(s.n_past() == 0);
  std::vector<int32_t> bad{1, 100000};
  CHECK_THROWS_AS(s.eval(bad.data(), 2), kvrt::Error);
}
