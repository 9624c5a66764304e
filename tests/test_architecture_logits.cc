// The forward pass of every architecture against llama.cpp (../shared/fixtures/arch, see its
// README): the logits of 200 positions within the tolerance of llama.cpp's f32-KV logits, the
// 32-token greedy continuation exact, and every KV setting running on every architecture (q8 close
// to f32). Run on this process's ISA, then again in a child process per other ISA (KVRT_ISA).
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "kv/cache_layout.h"
#include "kv/kv_config.h"
#include "model/sampler.h"
#include "model/session.h"
#include "simd/dispatch.h"
#include "test_util.h"

using namespace kvrt;

namespace {

struct Fixture {
  const char* name;
  float tolerance;  // max abs from llama.cpp's f32-KV logits (the bound)
};

// gemma2, gemma3: llama.cpp's GELU is an f16 lookup table; exact tanh-GELU lands ~0.019 from it.
constexpr Fixture kFixtures[] = {
    {"llama-hd48", 2.5e-4f},    {"llama-hd128", 2.5e-4f}, {"llama3-hd64", 2.5e-4f},
    {"qwen2-hd64", 2.5e-4f},    {"phi3-hd96", 2.5e-4f},   {"gemma2-hd128", 0.02f},
    {"qwen3-hd128", 2.5e-4f},   {"gemma3-hd128", 0.02f},  {"smollm3-hd32", 2.5e-4f},
    {"granite-hd64", 2.5e-4f},  {"olmo2-hd64", 2.5e-4f},  {"phi4mini-hd64", 2.5e-4f},
    {"mistral3-hd64", 2.5e-4f},
};
constexpr int kPositions = 200, kPrompt = 16, kGreedy = 32;

std::string path_of(const Fixture& fx, const std::string& suffix) {
  return test::fixtures_dir() + "/arch/" + fx.name + suffix;
}

std::vector<int32_t> read_ids(const std::string& path) {
  std::ifstream in(path);
  std::vector<int32_t> ids;
  for (int32_t id; in >> id;) ids.push_back(id);
  return ids;
}

std::vector<float> read_floats(const std::string& path) {
  const std::string bytes = test::read_file(path);
  std::vector<float> x(bytes.size() / sizeof(float));  // [n_positions][n_vocab]
  std::memcpy(x.data(), bytes.data(), x.size() * sizeof(float));
  return x;
}

model::Session make_session(const model::Model& m, const std::string& kv) {
  model::SessionOptions o;
  o.n_ctx = 256;
  o.n_threads = 2;
  o.kv = kv::parse_setting(kv);
  return model::Session(m, o);
}

// Logits of every position of tokens [n][n_vocab], in one eval call.
std::vector<float> logits_of(const model::Model& m, const std::string& kv,
                             const std::vector<int32_t>& tokens) {
  model::Session s = make_session(m, kv);
  std::vector<float> logits(tokens.size() * size_t(m.config().n_vocab));
  s.eval(tokens.data(), int(tokens.size()), logits.data());
  return logits;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  float d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

// Greedy ids after the prompt, one token per eval call.
std::vector<int32_t> greedy(const model::Model& m, const std::vector<int32_t>& prompt, int n) {
  model::Session s = make_session(m, "f32");
  s.eval(prompt.data(), int(prompt.size()));
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(model::argmax(s.last_logits(), m.config().n_vocab));
    s.eval(&out.back(), 1);
  }
  return out;
}

}  // namespace

TEST_CASE("every architecture fixture matches llama.cpp's logits and greedy ids on this ISA") {
  for (const Fixture& fx : kFixtures) {
    const std::string what = std::string(fx.name) + " on " + simd::isa_name();
    INFO(what);
    const model::Model m(path_of(fx, ".gguf"));
    const std::vector<int32_t> tokens = read_ids(path_of(fx, ".tokens.txt"));
    REQUIRE(tokens.size() == size_t(kPositions));
    const std::vector<float> ref = read_floats(path_of(fx, ".logits.kvf32.f32"));
    const float diff = max_abs_diff(logits_of(m, "f32", tokens), ref);
    std::printf("%-13s %-11s f32 KV: max abs logit diff from llama.cpp %.3g (bound %.3g)\n",
                fx.name, simd::isa_name(), diff, fx.tolerance);
    CHECK(diff <= fx.tolerance);
    const std::vector<int32_t> expected = read_ids(path_of(fx, ".greedy.txt"));
    REQUIRE(expected.size() == size_t(kGreedy));
    CHECK(greedy(m, {tokens.begin(), tokens.begin() + kPrompt}, kGreedy) == expected);
  }
}

namespace {

// Softmax statistics of a quantized-KV run against the f32-KV run: mean KL (nats) and the
// fraction of positions whose argmax agrees.
struct Agreement {
  double mean_kl = 0, argmax = 0;
};

Agreement agreement(const std::vector<float>& test, const std::vector<float>& ref, int n_vocab) {
  Agreement a;
  const size_t n_pos = ref.size() / size_t(n_vocab);
  for (size_t t = 0; t < n_pos; ++t) {
    const float* p = &ref[t * n_vocab];
    const float* q = &test[t * n_vocab];
    const double mp = *std::max_element(p, p + n_vocab), mq = *std::max_element(q, q + n_vocab);
    double zp = 0, zq = 0;
    for (int i = 0; i < n_vocab; ++i) zp += std::exp(p[i] - mp), zq += std::exp(q[i] - mq);
    double kl = 0;
    for (int i = 0; i < n_vocab; ++i) {
      const double lp = p[i] - mp - std::log(zp), lq = q[i] - mq - std::log(zq);
      kl += std::exp(lp) * (lp - lq);
    }
    a.mean_kl += kl / double(n_pos);
    a.argmax += double(model::argmax(p, n_vocab) == model::argmax(q, n_vocab)) / double(n_pos);
  }
  return a;
}

}  // namespace

TEST_CASE("every KV setting runs on every architecture fixture, q8 close to f32") {
  // The settings of validation/settings.toml: both axes, rotation (the default of a quantized
  // setting; block-diagonal where head_dim is not a power of two: phi3's 96, llama's 48) and
  // none, residual window; sinks with a layer of its own format.
  const char* settings[] = {"q8",
                            "k=q8,v=q4",
                            "q4",
                            "q4,axis=channel,r=32",
                            "q4,rot=0",
                            "q8,r=16",
                            "q4s,sinks=4,layers[0]=q8"};
  for (const Fixture& fx : kFixtures) {
    const model::Model m(path_of(fx, ".gguf"));
    const int n_vocab = m.config().n_vocab;
    const std::vector<int32_t> tokens = read_ids(path_of(fx, ".tokens.txt"));
    const std::vector<float> f32 = logits_of(m, "f32", tokens);
    for (const char* kv : settings) {
      const std::string what = std::string(fx.name) + " --kv " + kv + " on " + simd::isa_name();
      INFO(what);
      const std::vector<float> q = logits_of(m, kv, tokens);
      CHECK(std::all_of(q.begin(), q.end(), [](float x) { return std::isfinite(x); }));
      const Agreement a = agreement(q, f32, n_vocab);
      std::printf("%-13s %-11s --kv %-20s vs f32 KV: mean KL %.2g, argmax agreement %.3f\n",
                  fx.name, simd::isa_name(), kv, a.mean_kl, a.argmax);
      // q8 keys and values: llama.cpp's own q8_0 K cache costs up to 0.008 mean KL on these
      // fixtures.
      if (std::string(kv) == "q8") {
        CHECK(a.mean_kl <= 0.01);
        CHECK(a.argmax >= 0.9);
      }
    }
  }
}

TEST_CASE(
    "gemma2 a token at a time: its sliding-window layers keep a ring, match llama.cpp, save and "
    "restore exactly") {
  const Fixture& fx = kFixtures[5];
  REQUIRE(std::string(fx.name) == "gemma2-hd128");
  const model::Model m(path_of(fx, ".gguf"));
  const std::vector<int32_t> tokens = read_ids(path_of(fx, ".tokens.txt"));
  model::SessionOptions o;
  o.n_ctx = 256;
  o.n_threads = 2;
  o.n_batch =
      1;  // the even layers keep the 64 positions a query sees and the run before, a ring of 128
  {
    model::Session s(m, o);
    const std::vector<kv::LayerKind> kinds = s.kv_cache().layout().layer_kinds();
    REQUIRE(kinds.size() == 2);
    CHECK(kinds[1].sliding_window == 64);
    CHECK(kinds[1].n_layers == 13);
    CHECK(kinds[1].kept == 128);  // 200 positions: the ring turns
    std::vector<float> logits(tokens.size() * size_t(m.config().n_vocab));
    s.eval(tokens.data(), int(tokens.size()), logits.data());
    const float diff = max_abs_diff(logits, read_floats(path_of(fx, ".logits.kvf32.f32")));
    std::printf(
        "%-13s %-11s f32 KV a token at a time, rings of %d positions on %d layers: max abs logit "
        "diff from llama.cpp %.3g (bound %.3g)\n",
        fx.name, simd::isa_name(), kinds[1].kept, kinds[1].n_layers, diff, fx.tolerance);
    CHECK(diff <= fx.tolerance);
  }
  // The memory a session plans is what it holds; the windowed layers' share does not grow with the
  // context.
  size_t windowed_bytes = 0;
  for (int n_ctx : {256, 1024}) {
    for (const char* kv : {"f32", "q8", "q4,axis=channel,r=32,sinks=4"}) {
      CAPTURE(kv);
      o.n_ctx = n_ctx;
      o.kv = kv::parse_setting(kv);
      const model::Session s(m, o);
      CHECK(model::Session::planned_bytes(m, o) == s.bytes_allocated());
      if (std::string(kv) == "f32" && n_ctx == 256)
        windowed_bytes = s.kv_cache().layout().layer_kinds()[1].packed_bytes;
      if (std::string(kv) == "f32")
        CHECK(s.kv_cache().layout().layer_kinds()[1].packed_bytes == windowed_bytes);
    }
  }
  // A state saved after the ring has turned brings back the same logits.
  o.n_ctx = 256;
  o.kv = kv::parse_setting("q8,sinks=4");
  model::Session s(m, o);
  s.eval(tokens.data(), 150);
  model::SessionState saved(s);
  s.save(saved);
  const int n_vocab = m.config().n_vocab;
  std::vector<float> first(50 * size_t(n_vocab)), again(first.size());
  s.eval(tokens.data() + 150, 50, first.data());
  s.restore(saved);
  s.eval(tokens.data() + 150, 50, again.data());
  CHECK(first == again);
}

namespace {
// The slots of a rung's table but those of the bf16 prefill products (their operands' rounding
// and their tiles), by name.
std::map<std::string, const void*> f32_slots(simd::Isa isa) {
  const std::set<std::string> bf16 = {"prefill.gemm_bf16", "prefill.bf16_pairs",
                                      "weight.BF16.from_float", "weight.F16.to_bf16"};
  std::map<std::string, const void*> m;
  simd::for_each_slot(simd::kernels_for(isa), [&](const char* name, auto fn) {
    if (!bf16.count(name)) m[name] = reinterpret_cast<const void*>(fn);
  });
  return m;
}
}  // namespace

TEST_CASE(
    "the fixtures match llama.cpp on every other ISA this CPU runs (one child process each)") {
  if (std::getenv("KVRT_ARCH_LOGITS_CHILD")) return;  // a child runs the cases above only
  const char* wrapper = std::getenv("KVRT_EXE_WRAPPER");
  char self[4096] = {};
  REQUIRE(readlink("/proc/self/exe", self, sizeof self - 1) > 0);
  // Under emulation (qemu runs these 10-70x slower) and under the sanitizers the other ISAs check
  // the logits and greedy ids only; the KV settings and gemma2's ring run on the process's ISA, and
  // their kernels are checked against the scalar twin on every ISA by checkasm and test_attention.
  // Emulation also leaves out the scalar rung: it is the same C++ on every host, and the native
  // suite runs it. A rung whose table differs from one already run only in the bf16 prefill slots
  // (avx512-bf16 over avx512-vnni, avx512-amx over avx512-bf16) computes the same here: the
  // fixtures run at matmul precision f32.
  const bool emulated = wrapper && *wrapper;
  const bool slow_runner = emulated || test::kSanitizedBuild;
  const std::string cases = slow_runner ? "--test-case='*llama.cpp*logits and greedy*'"
                                        : "--test-case-exclude='*other ISA*'";
  std::vector<std::map<std::string, const void*>> run = {f32_slots(simd::process_isa())};
  for (simd::Isa isa : simd::runnable_isas()) {
    if (std::find(run.begin(), run.end(), f32_slots(isa)) != run.end() ||
        (emulated && isa == simd::Isa::kScalar))
      continue;
    run.push_back(f32_slots(isa));
    INFO(simd::isa_to_string(isa));
    const std::string cmd = std::string("KVRT_ARCH_LOGITS_CHILD=1 KVRT_ISA=") +
                            simd::isa_to_string(isa) + " " + (wrapper ? wrapper : "") + " '" +
                            self + "' " + cases;
    const int status = std::system(cmd.c_str());
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  }
}
