// model::Sampler: greedy is the argmax; temperature sampling draws from softmax(logits / T),
// restricted by top-k and top-p; the same seed gives the same tokens.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "common/error.h"
#include "model/sampler.h"

using namespace kvrt;

namespace {

const std::vector<float> kLogits = {1.0f, 2.5f, -0.5f,
                                    2.0f, 0.0f, 1.5f};  // ids by logit: 1 3 5 0 4 2
constexpr int kDraws = 60000;

std::vector<int> counts(model::SamplerOptions o) {
  model::Sampler s(o, int(kLogits.size()));
  std::vector<int> c(kLogits.size());
  for (int i = 0; i < kDraws; ++i) ++c[size_t(s.sample(kLogits.data(), int(kLogits.size())))];
  return c;
}

// softmax(logits / T) over the ids in `kept` (the others 0).
std::vector<double> expected(float t, const std::vector<int>& kept) {
  std::vector<double> p(kLogits.size(), 0.0);
  double sum = 0;
  for (int i : kept) sum += p[size_t(i)] = std::exp(kLogits[size_t(i)] / t);
  for (double& x : p) x /= sum;
  return p;
}

// Every frequency within 5 standard deviations of its probability (and never a kept-out id).
void check_frequencies(const std::vector<int>& c, const std::vector<double>& p) {
  for (size_t i = 0; i < c.size(); ++i) {
    CAPTURE(i);
    if (p[i] == 0.0) {
      CHECK(c[i] == 0);
      continue;
    }
    const double sd = std::sqrt(kDraws * p[i] * (1 - p[i]));
    CHECK(std::abs(c[i] - kDraws * p[i]) < 5 * sd);
  }
}

}  // namespace

TEST_CASE("greedy sampling is the argmax") {
  model::Sampler s({}, int(kLogits.size()));
  CHECK(s.sample(kLogits.data(), int(kLogits.size())) == 1);
}

TEST_CASE("temperature sampling draws from the softmax of the whole vocabulary") {
  check_frequencies(counts({0.8f, 0, 1.0f, 7}), expected(0.8f, {0, 1, 2, 3, 4, 5}));
  check_frequencies(counts({2.0f, 0, 1.0f, 8}), expected(2.0f, {0, 1, 2, 3, 4, 5}));
}

TEST_CASE("top-k and top-p keep the most likely ids") {
  check_frequencies(counts({1.0f, 3, 1.0f, 9}), expected(1.0f, {1, 3, 5}));
  // At T = 1 the shares of ids 1, 3, 5, 0 are 0.43, 0.26, 0.16, 0.10: top-p 0.7 keeps three.
  check_frequencies(counts({1.0f, 0, 0.7f, 10}), expected(1.0f, {1, 3, 5}));
  CHECK(counts({1.0f, 1, 1.0f, 11})[1] == kDraws);
}

TEST_CASE("the same seed gives the same tokens, another seed others") {
  const auto draw = [](uint64_t seed) {
    model::Sampler s({1.0f, 0, 1.0f, seed}, int(kLogits.size()));
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) out.push_back(s.sample(kLogits.data(), int(kLogits.size())));
    return out;
  };
  CHECK(draw(42) == draw(42));
  CHECK(draw(42) != draw(43));
}

TEST_CASE("a sampler refuses bad options and logits of another vocabulary") {
  CHECK_THROWS_AS(model::Sampler({-1.0f, 0, 1.0f, 0}, 6), Error);
  CHECK_THROWS_AS(model::Sampler({1.0f, -1, 1.0f, 0}, 6), Error);
  CHECK_THROWS_AS(model::Sampler({1.0f, 0, 0.0f, 0}, 6), Error);
  model::Sampler s({1.0f, 0, 1.0f, 0}, 6);
  CHECK_THROWS_AS(s.sample(kLogits.data(), 5), Error);
}
