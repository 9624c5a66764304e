// Quantizing KV rows and queries: every format's quantize equals the scalar twin bit for bit and
// round trips within the format's bound; quantize_queries equals the scalar twin bit for bit, and
// the twin's codes are within half a step of q with exact group sums.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "checkasm.h"
#include "kv/blocks.h"
#include "simd/kernels_scalar.h"

namespace kvrt::checkasm {
namespace {

// q4n (kv/blocks.h quantize_group_q4n): the stored scale lies within the candidates' range
// [amax / 135, amax / 79] to FP16 precision, every value within kQ4NMaxError amax, and every code
// is the level nearest x / d.
void check_round_trip_q4n(const float* x, const uint8_t* block, int group) {
  float amax = 0;
  for (int i = 0; i < group; ++i) amax = std::max(amax, std::abs(x[i]));
  const float d = kv::load_scale(block);
  REQUIRE(d >= amax / kv::kQ4NLastTry * (1 - 0x1p-11));
  REQUIRE(d <= amax / kv::kQ4NFirstTry * (1 + 0x1p-11));
  std::vector<float> y(group);
  kv::dequantize_group<kv::Q4N>(block, group, y.data());
  for (int i = 0; i < group; ++i) {
    REQUIRE(std::abs(y[i] - x[i]) <= kv::kQ4NMaxError * amax);
    for (int8_t level : kv::kQ4NLevels)  // no other level is nearer (to float rounding)
      REQUIRE(std::abs(y[i] - x[i]) <= std::abs(d * level - x[i]) * (1 + 1e-5) + 1e-6 * amax);
  }
}

// The stored FP16 minimum is the group's to FP16 precision, and the stored scale to FP16
// precision: amax / max code (q8), e / min code for e the value of largest magnitude (q4s,
// negative for a positive e), or (max - m) / max code (asymmetric).
template <class F>
void check_round_trip(const float* x, const uint8_t* block, int group) {
  float mn = x[0], mx = mn, amax = 0;
  for (int i = 0; i < group; ++i) {
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
    amax = std::max(amax, std::abs(x[i]));
  }
  std::vector<float> y(group);
  kv::dequantize_group<F>(block, group, y.data());
  const float d = kv::load_scale(block),
              m = F::kSymmetric ? 0.0f : kv::load_scale(block + sizeof(kv::Scale));
  const double d_exact = F::kAbsScale    ? amax / double(F::kMaxCode)
                         : F::kSymmetric ? (-mn > mx ? mn : mx) / double(F::kMinCode)
                                         : (mx - m) / double(F::kMaxCode);
  if (!F::kSymmetric) REQUIRE(std::abs(m - mn) <= std::abs(mn) * 0x1p-11);
  REQUIRE(std::abs(d - d_exact) <= std::abs(d_exact) * (0x1p-11 + 1e-6));
  // |d|/2 for every value, and below the minimum where the rounded one lies above it;
  // symmetric formats clamp at max code |d| what lies beyond it: up to |d| for q4s's
  // values of the other sign than e (its range is one code short there), a sliver of
  // FP16 rounding for q8; plus float rounding of the code math.
  const double bound = F::kSymmetric
                           ? std::max(std::abs(d) / 2.0, amax - F::kMaxCode * double(std::abs(d)))
                           : d / 2.0 + std::max(0.0f, m - mn);
  for (int i = 0; i < group; ++i) {
    REQUIRE(std::abs(y[i] - x[i]) <= bound * (1 + 1e-5) + 1e-6 * amax);
    // q4s: e lands on the min code, exact but for the FP16 rounding of d
    if (F::kSymmetric && !F::kAbsScale && std::abs(x[i]) == amax)
      REQUIRE(std::abs(y[i] - x[i]) <= amax * 0x1p-11);
  }
}

template <class F>
void check_block(const float* x, const uint8_t* block, int group) {
  if constexpr (F::kCodebook) check_round_trip_q4n(x, block, group);
  else check_round_trip<F>(x, block, group);
}

template <class F>
void check_quantize(const Rung& r) {
  // The rung's bytes of x in groups of `group`, checked equal to the scalar twin's.
  const auto same_bytes = [&](const std::vector<float>& x, int n, int group) {
    std::vector<uint8_t> got(F::block_bytes(group) * (n / group)), want(got.size());
    r.k.format[static_cast<int>(F::kFormat)].quantize(x.data(), n, group, got.data());
    simd::scalar::quantize<F>(x.data(), n, group, want.data());
    CHECK(got == want);
    return got;
  };
  for (int n : {8, 24, 64, 128}) {
    for (int group : {8, 12, 16, 24, 32, 64, 128}) {
      if (n % group || group % F::kRuns) continue;  // q3: runs of group / 8 codes
      std::vector<float> x = randn(n, 11 * n + group, 3.0f);
      if (n > group) std::fill_n(x.begin(), group, 0.0f);  // an all-zero group
      INFO(std::string(F::kName) << " n " << n << " group " << group);
      const std::vector<uint8_t> row = same_bytes(x, n, group);
      for (int g = 0; g < n / group; ++g)
        check_block<F>(&x[g * group], row.data() + g * F::block_bytes(group), group);
      if constexpr (F::kCodebook) {  // values far below FP16's range: the same bytes as the twin
        for (float& v : x) v *= 0x1p-140f;
        same_bytes(x, n, group);
      }
    }
  }
  // A rare disagreement (an ulp of one division, a tie) shows in a thousand groups, not in a few.
  INFO(std::string(F::kName) << " n 32768 group 32");
  same_bytes(randn(32768, 5, 2.0f), 32768, 32);
}

template <class F>
std::vector<BenchCall> bench_quantize(const Rung& r) {
  const int n = 128, group = 32;
  auto x = std::make_shared<std::vector<float>>(randn(n, 1));
  auto row = std::make_shared<std::vector<uint8_t>>(F::block_bytes(group) * (n / group));
  const auto fn = r.k.format[static_cast<int>(F::kFormat)].quantize;
  return {{std::string("quantize.") + F::kName, [=] { fn(x->data(), n, group, row->data()); }}};
}

// Codes of n_q queries of n values (q_stride apart), by one rung's quantize_queries.
struct CodedQueries {
  std::vector<int8_t> c;
  std::vector<float> d, sum;
  std::vector<int32_t> csum;
  CodedQueries(const simd::Kernels& k, const std::vector<float>& q, int n_q, size_t q_stride, int n,
               int group)
      : c(n_q * n), d(n_q * n / group), sum(d.size()), csum(d.size()) {
    k.quantize_queries(q.data(), n_q, q_stride, n, group,
                       {c.data(), d.data(), sum.data(), csum.data()});
  }
};

void check_quantize_queries(const Rung& r) {
  for (int n : {8, 64, 128}) {
    for (int group : {8, 32, 64}) {
      if (n % group) continue;
      const int n_q = 7;
      const size_t q_stride = n + 5;
      std::vector<float> q = randn(n_q * q_stride, n + group, 2.0f);
      std::fill(q.begin(), q.begin() + group, 0.0f);  // an all-zero group
      const CodedQueries got(r.k, q, n_q, q_stride, n, group),
          ref(r.scalar, q, n_q, q_stride, n, group);
      INFO("n " << n << " group " << group);
      CHECK(got.c == ref.c);
      CHECK(got.d == ref.d);
      CHECK(got.sum == ref.sum);
      CHECK(got.csum == ref.csum);
      for (int i = 0; i < n_q; ++i) {
        for (int b = 0; b < n / group; ++b) {
          const float d = ref.d[i * n / group + b];
          double sum = 0;
          int32_t csum = 0;
          for (int j = b * group; j < (b + 1) * group; ++j) {
            const float x = q[i * q_stride + j];
            REQUIRE(std::abs(x - d * ref.c[i * n + j]) <= d / 2 * (1 + 1e-5) + 1e-7);
            sum += x;
            csum += ref.c[i * n + j];
          }
          CHECK(ref.csum[i * n / group + b] == csum);
          CHECK(std::abs(ref.sum[i * n / group + b] - sum) <= 1e-5 * (std::abs(sum) + group));
        }
      }
    }
  }
}

std::vector<BenchCall> bench_quantize_queries(const Rung& r) {
  const int n = 128, group = 32, n_q = 4;
  auto q = std::make_shared<std::vector<float>>(randn(n_q * n, 1));
  auto out = std::make_shared<CodedQueries>(r.scalar, *q, n_q, n, n, group);
  const auto fn = r.k.quantize_queries;
  return {{"attention.quantize_queries", [=] {
             fn(q->data(), n_q, n, n, group,
                {out->c.data(), out->d.data(), out->sum.data(), out->csum.data()});
           }}};
}

const bool kRegistered = add_per_format([](auto format) -> Check {
  using F = decltype(format);
  const std::string name = F::kName;
  return {"quantize " + name, {"quantize." + name}, true, check_quantize<F>, bench_quantize<F>};
});
const bool kRegisteredQueries = add({"quantize_queries",
                                     {"attention.quantize_queries"},
                                     true,
                                     check_quantize_queries,
                                     bench_quantize_queries});

}  // namespace
}  // namespace kvrt::checkasm
