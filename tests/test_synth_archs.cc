// Every architecture on quantized weights (issue 12: "every KV setting and every weight type"):
// synth_model writes a small llama, qwen2, phi3 and gemma2 in each weight type (and the 2026
// families in F16, Q8_0, Q4_0 and Q4_K_M), and the same
// model with every matrix decoded to F32 (--decoded). Both compute the same function; they differ
// only where the packed decode products quantize the activations to int8 blocks (Q8_0, Q8_1 or
// Q8_K), so the logits must agree within the error that quantization can cause (activation_bound),
// and one prefill on both (FP32 products on the same weight values) to float rounding
// (rounding_bound). Greedy decoding on f32, q8 and q4 caches picks, at every step, a token the
// decoded model ranks within that error of its best.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kv/cache_layout.h"
#include "kv/kv_config.h"
#include "model/model.h"
#include "model/session.h"
#include "simd/weights/types.h"
#include "test_util.h"
#include "tools/synth_model/recipe.h"
#include "tools/synth_model/synth.h"
#include "validate/runner.h"

using namespace kvrt;
using test::TempDir;

namespace {

struct ArchShape {
  const char* arch;
  int n_heads, n_kv_heads, head_dim;
  bool tied;
  const char*
      types[4];  // weight types it runs in: each activation format (Q8_0, Q8_1, Q8_K) on each
};

// d_model and d_ff 256, whole blocks of every type. qwen2: GQA 4:1, tied output; phi3:
// head_dim 96 (8 heads: whole blocks), fused QKV and gate/up, every layer windowed; gemma2:
// head_dim 128 != 256 / 4, soft-caps, post-norms, even layers windowed. Windows of 24 positions:
// the positions below go past them. Between them they run every weight type and both mixes kvrt
// writes (the test runs under qemu and ASan too: 16 pairs of models, not 52).
constexpr ArchShape kShapes[] = {
    {"llama", 4, 2, 64, false, {"q8_0", "q4_1", "q2_k", "q5_k"}},
    {"qwen2", 4, 1, 64, true, {"q4_0", "q5_1", "q3_k", "q4_k_m"}},
    {"phi3", 8, 2, 96, false, {"iq4_nl", "q4_1", "q6_k", "q3_k_m"}},
    {"gemma2", 4, 2, 128, true, {"q5_0", "q5_1", "q4_k", "q4_k_m"}},
};
// The 2026 families in the types their users' files use most: their graphs differ from the four
// above (Q/K norms, no pre-norms, scales, YaRN, partial rotary), their kernels do not.
constexpr ArchShape kShapes2026[] = {
    {"qwen3", 4, 2, 128, true, {"f16", "q8_0", "q4_0", "q4_k_m"}},
    {"gemma3", 2, 1, 128, true, {"f16", "q8_0", "q4_0", "q4_k_m"}},
    {"smollm3", 4, 1, 64, true, {"f16", "q8_0", "q4_0", "q4_k_m"}},
    {"granite", 4, 1, 64, false, {"f16", "q8_0", "q4_0", "q4_k_m"}},
    {"olmo2", 4, 4, 64, false, {"f16", "q8_0", "q4_0", "q4_k_m"}},
    {"phi4mini", 4, 2, 64, true, {"f16", "q8_0", "q4_0", "q4_k_m"}},
    {"mistral3", 4, 1, 64, false, {"f16", "q8_0", "q4_0", "q4_k_m"}},
};
constexpr int kDModel = 256, kDff = 256, kLayers = 2, kWindow = 24, kPositions = 40;

synth::SynthConfig config(const ArchShape& a, const char* type, bool decoded) {
  synth::SynthConfig c;
  c.arch = a.arch;
  c.d_model = kDModel;
  c.n_layers = kLayers;
  c.n_heads = a.n_heads;
  c.n_kv_heads = a.n_kv_heads;
  c.head_dim = a.head_dim;
  c.d_ff = kDff;
  c.n_ctx = 256;
  c.sliding_window = kWindow;
  c.tied = a.tied;
  const synth::WeightChoice w = synth::parse_weight_choice(type);
  c.type = w.type;
  c.mix = w.mix;
  c.decoded = decoded;
  c.vocab_path = test::stories_path();  // 512 tokens
  c.seed = 3;
  return c;
}

// Quantized matrix products in sequence from the embedding to the logits: per layer Q/K/V, the
// attention output, gate/up and down; then the output matrix.
constexpr int kProductsOnPath = 4 * kLayers + 1;

// The relative RMS error of the logits the activation quantization of the decode products can
// cause. An int8 block of B values has step max|x_b| / 127 (Q8_K: the same, its scale in float);
// rounding errs uniformly within half a step, RMS step / sqrt(12); and max|x_b| <= sqrt(B) rms(x_b)
// for any block. So a product's output errs by at most sqrt(B) / (127 sqrt(12)) of its RMS
// (weights of any scale: the error is sum_i w_i r_i with independent r_i). Pre-norm blocks add
// their outputs to the residual stream and normalize what they read, so the errors of the
// products on the path add in quadrature: sqrt(kProductsOnPath) times that.
double activation_bound(simd::WeightType act) {
  const double block = double(simd::weight_type_traits(act).block);
  return std::sqrt(double(kProductsOnPath)) * std::sqrt(block) / (127.0 * std::sqrt(12.0));
}

// The same products in FP32 on equal values differ by float rounding only: a sum of n terms errs by
// at most n u (u = 2^-24) of the sum of their magnitudes, and the products on the path add.
double rounding_bound(const ArchShape& a) {
  const int longest = std::max({kDModel, kDff, a.n_heads * a.head_dim});  // the longest W row
  return kProductsOnPath * longest * std::ldexp(1.0, -24);
}

// The activation format of the type with the largest blocks among a mix's matrices: its bound is
// the loosest.
simd::WeightType activation_of(const synth::SynthConfig& c) {
  simd::WeightType act = simd::weight_type_traits(c.type).act;
  for (const char* role : {"output", "attn_v", "ffn_down", "attn_qkv"}) {
    const simd::WeightType t =
        simd::weight_type_traits(synth::matrix_type({c.type, c.mix}, role, 0, c.n_layers)).act;
    if (simd::weight_type_traits(t).block > simd::weight_type_traits(act).block) act = t;
  }
  return act;
}

std::vector<int32_t> prompt_tokens(int n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) t[size_t(i)] = int32_t(3 + (i * 197 + 11) % 509);  // ids 3..511
  return t;
}

model::SessionOptions options(const char* kv) {
  model::SessionOptions o;
  o.n_ctx = 128;
  o.n_threads = 1;
  o.kv = kv::parse_setting(kv);
  return o;
}

// Logits of every position: a token at a time (the packed decode products), or one prefill.
std::vector<float> logits(const model::Model& m, const std::vector<int32_t>& tokens,
                          bool one_by_one) {
  model::Session s(m, options("f32"));
  const size_t n_vocab = size_t(m.config().n_vocab);
  std::vector<float> out(tokens.size() * n_vocab);
  if (!one_by_one) {
    s.eval(tokens.data(), int(tokens.size()), out.data());
    return out;
  }
  for (size_t i = 0; i < tokens.size(); ++i) s.eval(&tokens[i], 1, &out[i * n_vocab]);
  return out;
}

// The largest relative RMS difference of one position's logits, ||a - b|| / ||b||.
double max_relative_rms(const std::vector<float>& a, const std::vector<float>& b, size_t n_vocab) {
  double worst = 0;
  for (size_t p = 0; p < a.size() / n_vocab; ++p) {
    double d2 = 0, b2 = 0;
    for (size_t j = p * n_vocab; j < (p + 1) * n_vocab; ++j) {
      d2 += (double(a[j]) - b[j]) * (double(a[j]) - b[j]);
      b2 += double(b[j]) * b[j];
    }
    worst = std::max(worst, std::sqrt(d2 / b2));
  }
  return worst;
}

double norm(const float* x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += double(x[i]) * x[i];
  return std::sqrt(s);
}

// Greedy decoding of the quantized model on the cache `kv`, the decoded model following the same
// tokens: each token the quantized model picks is, in the decoded model's logits, within twice
// the bound's absolute error (bound * ||logits||, which bounds any one logit's error) of the best.
void check_greedy(const model::Model& q, const model::Model& ref, const char* kv, double bound) {
  model::Session sq(q, options(kv)), sr(ref, options(kv));
  const std::vector<int32_t> prompt = prompt_tokens(8);
  sq.eval(prompt.data(), int(prompt.size()));
  sr.eval(prompt.data(), int(prompt.size()));
  const size_t n_vocab = size_t(q.config().n_vocab);
  for (int step = 0; step < kWindow + 8; ++step) {  // past the window
    const float* lq = sq.last_logits();
    const float* lr = sr.last_logits();
    const int32_t pick = int32_t(std::max_element(lq, lq + n_vocab) - lq);
    const double best = *std::max_element(lr, lr + n_vocab);
    CAPTURE(step);
    CHECK(lr[pick] >= best - 2 * bound * norm(lr, n_vocab));
    sq.eval(&pick, 1);
    sr.eval(&pick, 1);
  }
}

// The quantized model's logits against its decoded F32 twin's: a token at a time within the
// activation quantization's bound, one prefill within float rounding.
void check_twin(const ArchShape& a, const char* type, const TempDir& dir) {
  CAPTURE(std::string(a.arch));
  CAPTURE(std::string(type));
  const std::vector<int32_t> tokens = prompt_tokens(kPositions);
  const synth::SynthConfig qc = config(a, type, false), rc = config(a, type, true);
  synth::write_synth_model(qc, dir / "q.gguf");
  synth::write_synth_model(rc, dir / "ref.gguf");
  const model::Model q(dir / "q.gguf"), ref(dir / "ref.gguf");
  REQUIRE(q.config().arch == (a.arch == std::string("phi4mini") ? "phi3" : a.arch));
  const size_t n_vocab = size_t(q.config().n_vocab);
  const double bound = activation_bound(activation_of(qc));
  const std::vector<float> ref_decode = logits(ref, tokens, true);
  const double decode_err = max_relative_rms(logits(q, tokens, true), ref_decode, n_vocab);
  CHECK(decode_err <= bound);
  // One prefill: FP32 products on the same values on both (W widened from its blocks).
  const double prefill_err =
      max_relative_rms(logits(q, tokens, false), logits(ref, tokens, false), n_vocab);
  CHECK(prefill_err <= rounding_bound(a));
  MESSAGE(std::string(a.arch) << " " << std::string(type) << ": decode " << decode_err << " (bound "
                              << bound << "), prefill " << prefill_err);
}

// Greedy decoding on the f32, q8 and q4 caches with the architecture's last type.
void check_greedy_caches(const ArchShape& a, const TempDir& dir) {
  const char* type = a.types[3];  // a K type or mix
  CAPTURE(std::string(a.arch));
  CAPTURE(std::string(type));
  const synth::SynthConfig qc = config(a, type, false);
  synth::write_synth_model(qc, dir / "q.gguf");
  synth::write_synth_model(config(a, type, true), dir / "ref.gguf");
  const model::Model q(dir / "q.gguf"), ref(dir / "ref.gguf");
  for (const char* kv : {"f32", "q8", "q4"}) {
    CAPTURE(std::string(kv));
    check_greedy(q, ref, kv, activation_bound(activation_of(qc)));
  }
}

}  // namespace

TEST_CASE("every architecture on quantized weights computes the logits of its decoded F32 twin") {
  TempDir dir;
  for (const ArchShape& a : kShapes)
    for (const char* type : a.types) check_twin(a, type, dir);
}

TEST_CASE("greedy decoding on quantized weights of every architecture, on f32, q8 and q4 caches") {
  TempDir dir;
  for (const ArchShape& a : kShapes) check_greedy_caches(a, dir);
}

TEST_CASE(
    "the 2026 architectures on F16, Q8_0, Q4_0 and Q4_K_M compute their decoded twins' logits") {
  TempDir dir;
  for (const ArchShape& a : kShapes2026) {
    for (const char* type : a.types) check_twin(a, type, dir);
    check_greedy_caches(a, dir);
  }
}

// Phi-3 windows every layer: its cache is a ring on every layer (kv/cache_layout.h). Against a
// session whose cache keeps every position (a chunk as long as the context leaves no ring; the
// window is then only attention's mask), the logits are the same bits, many windows on, and the
// ring's memory stops at the positions it keeps while the full cache's grows.
TEST_CASE(
    "phi3's sliding window on every layer: the ring computes the full cache's logits, and stops "
    "growing") {
  TempDir dir;
  const synth::SynthConfig c = config(kShapes[2], "q8_0", false);
  REQUIRE(std::string(c.arch) == "phi3");
  synth::write_synth_model(c, dir / "phi3.gguf");
  const model::Model m(dir / "phi3.gguf");
  REQUIRE(m.config().window_of(0) == kWindow);
  REQUIRE(m.config().window_of(kLayers - 1) == kWindow);
  constexpr int kChunk = 8, kCtx = 256,
                kFed = 208;  // kFed: 8 windows, past the ring of 128 positions
  const std::vector<int32_t> tokens = prompt_tokens(kFed);
  const size_t n_vocab = size_t(m.config().n_vocab);
  for (const char* kv : {"f32", "q8", "q4"}) {
    CAPTURE(std::string(kv));
    model::SessionOptions ring_o = options(kv), full_o = options(kv);
    ring_o.n_ctx = full_o.n_ctx = kCtx;
    ring_o.n_batch = kChunk;
    full_o.n_batch = kCtx;
    model::Session ring(m, ring_o), full(m, full_o);
    const kv::CacheLayout& rl = ring.kv_cache().layout();
    const kv::CacheLayout& fl = full.kv_cache().layout();
    for (int layer = 0; layer < kLayers; ++layer) {
      CHECK(rl.layers[size_t(layer)].k.kept > 0);  // a ring on every layer
      CHECK(rl.layers[size_t(layer)].k.kept < kFed);
      CHECK(fl.layers[size_t(layer)].k.kept == 0);  // every position kept
    }
    std::vector<float> a(kChunk * n_vocab), b(kChunk * n_vocab);
    for (int pos = 0; pos < kFed; pos += kChunk) {
      const int n = pos < kFed / 2 ? kChunk : 1;  // chunks, then a token at a time
      for (int i = 0; i < kChunk; i += n) {
        ring.eval(&tokens[size_t(pos + i)], n, a.data());
        full.eval(&tokens[size_t(pos + i)], n, b.data());
        CAPTURE(pos + i);
        CHECK(std::equal(a.begin(), a.begin() + long(n * n_vocab), b.begin()));
      }
    }
    const int kept = rl.layers[0].k.kept;
    CHECK(rl.bytes_in_use(kFed) == rl.bytes_in_use(kept));  // stopped at the ring
    CHECK(fl.bytes_in_use(kFed) > fl.bytes_in_use(kept));   // still growing
    CHECK(ring.kv_cache().bytes_allocated() < full.kv_cache().bytes_allocated());
  }
}

// validate's memory accounting (validate/runner.h kv_bytes): what is resident with the cache filled
// to the validated context, per layer kind; a sliding-window layer counts its ring only, so the
// windowed model's total is below bytes/token x context, by exactly what the rings do not hold.
TEST_CASE(
    "validate counts a sliding-window model's KV memory as resident at the validated context, per "
    "layer kind") {
  TempDir dir;
  for (const ArchShape& a :
       {kShapes[2], kShapes[3]}) {  // phi3: every layer windowed; gemma2: even layers
    CAPTURE(std::string(a.arch));
    synth::write_synth_model(config(a, "q8_0", false), dir / "m.gguf");
    const model::Model m(dir / "m.gguf");
    for (const char* kv : {"f32", "q8"}) {
      CAPTURE(std::string(kv));
      model::SessionOptions o = options(kv);
      o.n_ctx = 256;
      o.n_batch = 8;
      const model::Session s(m, o);
      constexpr int kValidated = 200;
      const validate::KvBytes b = validate::kv_bytes(s, kValidated);
      const kv::CacheLayout& layout = s.kv_cache().layout();
      CHECK(b.bytes_per_token == layout.bytes_per_token());
      REQUIRE(b.kinds.size() == (a.arch == std::string("phi3") ? 1u : 2u));
      double sum = 0, all_positions = 0;
      for (const validate::KvKindBytes& k : b.kinds) {
        CAPTURE(k.sliding_window);
        const int held = k.sliding_window > 0 ? std::min(k.kept, kValidated) : kValidated;
        if (k.sliding_window > 0)
          CHECK(k.kept < kValidated);  // the ring is what the window makes it hold
        CHECK(k.bytes ==
              doctest::Approx(k.bytes_per_token * held).epsilon(1e-9));  // no sinks, no FP32 window
        sum += k.bytes;
        all_positions += k.bytes_per_token * kValidated;
      }
      CHECK(b.at_context == doctest::Approx(sum).epsilon(1e-9));
      CHECK(b.at_context < all_positions);  // what bytes/token x context would have claimed
      CHECK(all_positions == doctest::Approx(b.bytes_per_token * kValidated));
      // At the full context (256 here) the rings hold what they hold at 200; the full layers grow.
      CHECK(b.at_full_context == double(layout.bytes_in_use(m.config().n_ctx_train)));
    }
  }
}
