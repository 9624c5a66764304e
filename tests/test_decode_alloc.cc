// Nothing is allocated inside a decode step: malloc (and so operator new) is counted around
// Session::eval of one token, for the f32 cache and every KV setting of validation/settings.toml,
// plus a residual window on token tiles and settings with sinks and per-layer formats, on
// stories260K; on the gemma2 fixture, whose sliding-window layers keep a ring; and on quantized
// weights (the packed products and their activation blocks), on synthetic models of every
// activation format.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "model/model.h"
#include "model/sampler.h"
#include "model/session.h"
#include "test_util.h"
#include "tools/synth_model/recipe.h"
#include "tools/synth_model/synth.h"
#include "validate/settings.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KVRT_COUNT_MALLOC 0  // the sanitizers own malloc
#else
#define KVRT_COUNT_MALLOC 1

// glibc's allocator under its internal names; the definitions below take the public ones for the
// whole process (the library and the C++ runtime included) and count calls while counting is on.
extern "C" void* __libc_malloc(size_t n);
extern "C" void* __libc_calloc(size_t n, size_t size);
extern "C" void* __libc_realloc(void* p, size_t n);
extern "C" void* __libc_memalign(size_t align, size_t n);

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
void count() {
  if (g_counting.load(std::memory_order_relaxed))
    g_allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

extern "C" void* malloc(size_t n) {
  count();
  return __libc_malloc(n);
}
extern "C" void* calloc(size_t n, size_t size) {
  count();
  return __libc_calloc(n, size);
}
extern "C" void* realloc(void* p, size_t n) {
  count();
  return __libc_realloc(p, n);
}
extern "C" void* aligned_alloc(size_t align, size_t n) {
  count();
  return __libc_memalign(align, n);
}
extern "C" int posix_memalign(void** out, size_t align, size_t n) {
  count();
  *out = __libc_memalign(align, n);
  return *out ? 0 : 12;  // ENOMEM
}
#endif

namespace {

using namespace kvrt;

#if KVRT_COUNT_MALLOC
// Allocations per decode step over `steps` greedy steps after a prompt and a warm-up; `kernels`
// gets the matrix-product kernels the steps ran.
double mallocs_per_step(const model::Model& m, const kv::KvConfig& kv, int steps,
                        std::string* kernels = nullptr, int n_batch = 256) {
  model::SessionOptions so;
  so.n_ctx = 512;
  so.n_batch = n_batch;
  so.n_threads = 2;
  so.kv = kv;
  model::Session s(m, so);
  std::vector<int32_t> prompt(100);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t(1 + (i * 37) % 500);
  s.eval(prompt.data(), int(prompt.size()));
  int32_t next = model::argmax(s.last_logits(), m.config().n_vocab);
  for (int i = 0; i < 8; ++i) {  // warm-up: the thread pool and every lazily made thing
    s.eval(&next, 1);
    next = model::argmax(s.last_logits(), m.config().n_vocab);
  }
  g_allocations = 0;
  g_counting = true;
  for (int i = 0; i < steps; ++i) {
    s.eval(&next, 1);
    next = model::argmax(s.last_logits(), m.config().n_vocab);
  }
  g_counting = false;
  if (kernels) *kernels = s.matmul_implementation();
  return double(g_allocations.load()) / steps;
}
#endif

}  // namespace

TEST_CASE("a decode step allocates nothing, for every KV setting of validation/settings.toml") {
#if !KVRT_COUNT_MALLOC
  MESSAGE("skipped under a sanitizer, which owns malloc");
  return;
#else
  g_allocations = 0;  // the counter sees the C++ runtime's allocations too
  g_counting = true;
  std::vector<int>* volatile probe = new std::vector<int>(1000);
  delete probe;
  g_counting = false;
  REQUIRE(g_allocations.load() >= 2);
  const model::Model m(test::stories_path());
  std::vector<validate::Setting> settings =
      validate::read_settings(test::source_dir() + "/validation/settings.toml");
  settings.insert(settings.begin(), {"f32", kv::KvConfig{}});
  settings.push_back({"q8 r16", kv::parse_setting("q8,r=16")});
  settings.push_back({"q4 sinks4 ends q8", kv::parse_setting("q4,sinks=4,layers[0,-1]=q8")});
  settings.push_back({"q2 ch r32 sinks5 mixed",
                      kv::parse_setting("q2,axis=channel,r=32,sinks=5,k[1]=q8,v[2]=f32")});
  // 72 steps cross at least one packed tile of 16 positions, two channel tiles of G = 8 and a
  // kAccChunk boundary.
  for (const auto& s : settings) {
    const double per_step = mallocs_per_step(m, s.kv, 72);
    MESSAGE(s.label << " (" << s.kv.name() << "): " << per_step << " mallocs per decode step");
    CHECK(per_step == 0.0);
  }
#endif
}

TEST_CASE(
    "a decode step of a sliding-window model allocates nothing, its ring turning (gemma2 "
    "fixture)") {
#if !KVRT_COUNT_MALLOC
  MESSAGE("skipped under a sanitizer, which owns malloc");
  return;
#else
  const std::string path = test::fixtures_path() + "/arch/gemma2-hd128.gguf";
  if (!std::filesystem::is_regular_file(path)) {
    MESSAGE("skipped: the large test fixtures are absent (" << path << ")");
    return;
  }
  const model::Model m(path);
  // Chunks of 16: the even layers keep 192 positions, and the 228 positions of the prompt, the
  // warm-up and the counted steps pass them.
  for (const char* setting : {"f32", "q8", "q4,axis=channel,r=32,sinks=4"}) {
    const double per_step = mallocs_per_step(m, kv::parse_setting(setting), 120, nullptr, 16);
    MESSAGE(setting << ": " << per_step << " mallocs per decode step");
    CHECK(per_step == 0.0);
  }
#endif
}

TEST_CASE("a decode step on quantized weights allocates nothing") {
#if !KVRT_COUNT_MALLOC
  MESSAGE("skipped under a sanitizer, which owns malloc");
  return;
#else
  test::TempDir tmp;
  // q8_0 and q4_0: Q8_0 activations, laid out by the kernel where it has a layout (x86, NEON);
  // q4_1: Q8_1; q4_k_m: Q8_K (Q4_K and Q6_K)
  for (const char* type : {"q8_0", "q4_0", "q4_1", "q4_k_m"}) {
    synth::SynthConfig c;
    c.d_model = 256;
    c.n_layers = 2;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.head_dim = 64;
    c.d_ff = 512;
    c.n_ctx = 512;
    const synth::WeightChoice w = synth::parse_weight_choice(type);
    c.type = w.type;
    c.mix = w.mix;
    c.vocab_path = test::stories_path();
    const std::string path = tmp / (std::string(type) + ".gguf");
    synth::write_synth_model(c, path);
    const model::Model m(path);
    std::string kernels;
    const double per_step = mallocs_per_step(m, kv::KvConfig{}, 16, &kernels);
    MESSAGE(std::string(type) << ": " << per_step << " mallocs per decode step (" << kernels
                              << ")");
    CHECK(kernels.find("gemv kvrt-packed:") != std::string::npos);
    CHECK(per_step == 0.0);
  }
#endif
}
