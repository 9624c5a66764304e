// Sessions that outlive the process (docs/sessions.md, docs/formats/state-file.md): state files
// restore the logits bit for bit for every KV setting and thread count, also after a sliding
// window's ring has turned; prefix reuse keeps exactly what it can; every kind of bad file is
// refused with one sentence; the gate applies on load; kvrt run --prompt-cache and kvrt chat
// --session resume where they stopped.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/sha256.h"
#include "kvrt/kvrt.h"
#include "model/prefix_reuse.h"
#include "session_check.h"
#include "simd/dispatch.h"
#include "simd/kernels.h"
#include "test_util.h"
#include "tools/synth_model/chat_model.h"
#include "tools/synth_model/synth.h"

using namespace kvrt;

namespace {

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The state format's closing SHA-256 over everything before it, recomputed after a deliberate edit.
void reseal(std::string& bytes) {
  bytes.resize(bytes.size() - 32);
  const std::string hex = sha256_hex(bytes);
  for (size_t i = 0; i < 32; ++i)
    bytes.push_back(char(std::stoi(hex.substr(2 * i, 2), nullptr, 16)));
}

std::string error_of(const model::Model& m, const std::string& bytes) {
  try {
    const model::StateHeader h = model::read_state_header(bytes, "state file 'x'");
    model::check_state_binding(h, "state file 'x'", sha256_file(m.file().path()), "", h.matmul);
    model::Session s(m, model::state_session_options(h, 0, 1));
    model::load_state_session(s, bytes, h, "state file 'x'");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

model::SessionOptions options(const validate::Setting& s, int n_threads) {
  model::SessionOptions o;
  o.n_ctx = 512;
  o.n_threads = n_threads;
  o.kv = s.kv;
  o.matmul = s.matmul;
  return o;
}
model::SessionOptions options(const std::string& kv, int n_threads) {
  return options({kv, kv::parse_setting(kv)}, n_threads);
}

// The state of a one-thread session of m with KV setting `kv` after n tokens of seed `seed`.
std::string saved_state(const model::Model& m, const std::string& kv, int n, int seed) {
  model::Session s(m, options(kv, 1));
  const std::vector<int32_t> p = test::some_tokens(n, m.config().n_vocab, seed);
  s.eval(p.data(), int(p.size()));
  return model::state_bytes(s, sha256_file(m.file().path()), {});
}

// Options of the C API for a session of n_ctx positions on n_threads threads.
kvrt_session_options api_options(int n_ctx, int n_threads) {
  kvrt_session_options o;
  kvrt_session_options_default(&o);
  o.n_ctx = n_ctx;
  o.n_threads = n_threads;
  return o;
}

}  // namespace

// The packed bytes of a cache come from the format's quantize slot and the rotation's hadamard
// slot; a state file binds no ISA because every rung fills them with the scalar twin's bytes.
TEST_CASE(
    "every ISA rung packs the same KV bytes as the scalar twin, so state files bind no rung") {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  const simd::Kernels& ref = simd::kernels_for(simd::Isa::kScalar);
  for (simd::Isa isa : simd::runnable_isas()) {
    const simd::Kernels& k = simd::kernels_for(isa);
    for (int hd : {32, 64, 96, 128}) {
      std::vector<float> x(size_t(hd) * 8);
      for (float& v : x) v = dist(rng);
      x[3] = 0.0f;
      for (int f = 0; f < kv::kNumFormats; ++f) {
        if (k.format[f].quantize == nullptr) continue;
        for (int g : {16, 32}) {
          if (hd % g != 0) continue;
          std::vector<uint8_t> a(size_t(hd) * 8 * 4 + 64), b(a.size());
          for (int row = 0; row < 8; ++row) {
            k.format[f].quantize(&x[size_t(row) * hd], hd, g, a.data());
            ref.format[f].quantize(&x[size_t(row) * hd], hd, g, b.data());
            CAPTURE(simd::isa_to_string(isa));
            CAPTURE(f);
            CHECK(a == b);
          }
        }
      }
      if ((hd & (hd - 1)) == 0) {
        std::vector<float> a(x.begin(), x.begin() + hd), b = a;
        k.hadamard(a.data(), hd);
        ref.hadamard(b.data(), hd);
        CHECK(std::memcmp(a.data(), b.data(), sizeof(float) * size_t(hd)) == 0);
      }
    }
  }
}

TEST_CASE(
    "a restored session continues with the saved one's logits, bit for bit, for every KV setting "
    "and 1 or 2 threads") {
  const model::Model m(test::stories_path());
  const int n_vocab = m.config().n_vocab;
  // 150 positions: past the 128 of the widest residual window, across tiles of 16 and channel
  // tiles.
  const std::vector<int32_t> prompt = test::some_tokens(150, n_vocab, 1),
                             more = test::some_tokens(40, n_vocab, 2);
  for (const validate::Setting& s : test::state_settings(test::source_dir()))
    for (int n_threads : {1, 2}) {
      CAPTURE(s.label);
      CAPTURE(n_threads);
      test::check_round_trip(m, options(s, n_threads), prompt, more);
    }
}

TEST_CASE(
    "truncating to a prefix keeps it exactly, or starts over where the cache cannot drop "
    "positions") {
  const model::Model m(test::stories_path());
  const int n_vocab = m.config().n_vocab;
  const std::vector<int32_t> p = test::some_tokens(100, n_vocab, 3),
                             x = test::some_tokens(50, n_vocab, 4),
                             y = test::some_tokens(20, n_vocab, 5);
  std::vector<int32_t> px = p, py = p;
  px.insert(px.end(), x.begin(), x.end());
  py.insert(py.end(), y.begin(), y.end());
  for (const validate::Setting& s : test::state_settings(test::source_dir())) {
    CAPTURE(s.label);
    model::Session a(m, options(s, 2)), fresh(m, options(s, 2));
    a.eval(px.data(), int(px.size()));
    const int kept = model::reuse_prefix(a, py.data(), int(py.size()));
    // A residual window, or the FP32 positions channel-axis keys gather until a tile of G (8 on
    // stories260K) is complete, no longer holds what 100 positions keep in FP32.
    const bool window = s.kv.residual > 0 || s.kv.k_axis == kv::KeyAxis::kChannel;
    CHECK(kept == (window ? 0 : 100));
    CHECK(a.n_past() == kept);
    std::vector<float> la((py.size() - size_t(kept)) * size_t(n_vocab)),
        lb(py.size() * size_t(n_vocab));
    a.eval(py.data() + kept, int(py.size()) - kept, la.data());
    fresh.eval(py.data(), int(py.size()), lb.data());
    const size_t tail = y.size() * size_t(n_vocab);
    CHECK(std::memcmp(la.data() + la.size() - tail, lb.data() + lb.size() - tail,
                      tail * sizeof(float)) == 0);
  }
}

TEST_CASE(
    "the same tokens again reuse everything and keep the last logits; a shorter prompt "
    "re-evaluates its last token") {
  const model::Model m(test::stories_path());
  const std::vector<int32_t> p = test::some_tokens(30, m.config().n_vocab, 6);
  model::Session s(m, options("q8", 1));
  s.eval(p.data(), int(p.size()));
  const std::vector<float> before(s.last_logits(), s.last_logits() + m.config().n_vocab);
  CHECK(model::reuse_prefix(s, p.data(), int(p.size())) == 30);
  CHECK(std::memcmp(before.data(), s.last_logits(), before.size() * sizeof(float)) == 0);
  CHECK(model::reuse_prefix(s, p.data(), 20) == 19);
  CHECK(s.n_past() == 19);
}

// Phi-3 windows every layer (window 24): with chunks of 8 its ring keeps 128 positions, so 208
// positions have turned it.
TEST_CASE("a sliding-window ring that has turned restores bit for bit; truncating it starts over") {
  test::TempDir dir;
  synth::SynthConfig c;
  c.arch = "phi3";
  c.d_model = 256;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.d_ff = 256;
  c.n_ctx = 512;
  c.sliding_window = 24;
  c.type = simd::WeightType::kQ8_0;
  c.vocab_path = test::stories_path();
  synth::write_synth_model(c, dir / "phi3.gguf");
  const model::Model m(dir / "phi3.gguf");
  const int n_vocab = m.config().n_vocab;
  const std::vector<int32_t> prompt = test::some_tokens(208, n_vocab, 7),
                             more = test::some_tokens(30, n_vocab, 8);
  for (const std::string kv : {"f32", "q8", "q4", "q4,axis=channel,r=32"}) {
    CAPTURE(kv);
    model::SessionOptions o = options(kv, 2);
    o.n_ctx = 256;
    o.n_batch = 8;
    model::Session probe(m, o);
    REQUIRE(probe.kv_cache().layout().layers[0].k.kept > 0);
    REQUIRE(probe.kv_cache().layout().layers[0].k.kept < 208);
    test::check_round_trip(m, o, prompt, more);
    probe.eval(prompt.data(), int(prompt.size()));
    CHECK(probe.truncate(100) == 0);
    // Another chunk size is another ring: refused, naming n_batch.
    probe.eval(prompt.data(), int(prompt.size()));
    const std::string bytes = model::state_bytes(probe, std::string(64, 'a'), {});
    const model::StateHeader h = model::read_state_header(bytes, "state file 'x'");
    model::SessionOptions other = model::state_session_options(h, 0, 1);
    other.n_batch = 64;  // a ring of 128 positions, not 64
    model::Session wrong(m, other);
    CHECK_THROWS_WITH_AS(model::load_state_session(wrong, bytes, h, "state file 'x'"),
                         doctest::Contains("n_batch"), Error);
    CHECK(wrong.n_past() == 0);
  }
}

TEST_CASE(
    "truncated, bit-flipped, foreign, newer and special files are refused with one sentence") {
  test::TempDir dir;
  const model::Model m(test::stories_path());
  const std::string good = saved_state(m, "q8", 40, 9);
  CHECK(error_of(m, good).empty());
  for (size_t n : {size_t(0), size_t(10), size_t(60), good.size() / 2, good.size() - 1}) {
    CAPTURE(n);
    const std::string e = error_of(m, good.substr(0, n));
    CHECK(e.find("state file 'x'") == 0);
    CHECK((e.find("too short") != std::string::npos || e.find("truncated") != std::string::npos));
  }
  for (size_t at :
       {size_t(2), size_t(9), size_t(30), good.size() / 2, good.size() - 40, good.size() - 1}) {
    std::string bad = good;
    bad[at] ^= 4;
    CAPTURE(at);
    const std::string e = error_of(m, bad);
    CHECK(!e.empty());
    CHECK(e.find('\n') == std::string::npos);
  }
  std::string newer = good;
  newer[8] = 2;
  reseal(newer);
  CHECK(error_of(m, newer).find("newer kvrt") != std::string::npos);
  // Another model file of the same shape: stories260K with one weight byte changed.
  std::string other = test::read_file(test::stories_path());
  other[other.size() - 1] ^= 1;
  write_bytes(dir / "other.gguf", other);
  const model::Model m2(dir / "other.gguf");
  CHECK(error_of(m2, good).find("another model file") != std::string::npos);
  // Another KV setting or matmul precision than the one asked for.
  const model::StateHeader h = model::read_state_header(good, "state file 'x'");
  CHECK_THROWS_WITH_AS(
      model::check_state_binding(h, "state file 'x'", h.model_sha256, kv::KvConfig{}.name(),
                                 ops::MatmulPrecision::kF32),
      doctest::Contains("KV setting"), Error);
  CHECK_THROWS_WITH_AS(model::check_state_binding(h, "state file 'x'", h.model_sha256, h.setting,
                                                  ops::MatmulPrecision::kBf16),
                       doctest::Contains("prefill products"), Error);
}

// n tokens decoded by `sampler` after what `s` holds.
std::vector<int32_t> decode_n(kvrt_session* s, kvrt_sampler* sampler, int n) {
  std::vector<int32_t> out(size_t(n), -1);
  for (int32_t& t : out) REQUIRE(kvrt_session_decode(s, sampler, &t) == KVRT_OK);
  return out;
}

TEST_CASE("the C API's state carries the sampler's generator: a seeded generation continues") {
  test::TempDir dir;
  kvrt_model* model = nullptr;
  REQUIRE(kvrt_model_open(test::stories_path().c_str(), &model) == KVRT_OK);
  kvrt_sampler_options so;
  kvrt_sampler_options_default(&so);
  so.temperature = 1.0f;
  so.seed = 42;
  kvrt_sampler *sampler = nullptr, *fresh = nullptr;
  REQUIRE(kvrt_sampler_create(model, &so, &sampler) == KVRT_OK);
  kvrt_session_options o = api_options(256, 1);
  kvrt_session* s = nullptr;
  REQUIRE(kvrt_session_create(model, &o, &s) == KVRT_OK);
  const std::vector<int32_t> p = test::some_tokens(20, 512, 3);
  REQUIRE(kvrt_session_eval(s, p.data(), p.size()) == KVRT_OK);
  decode_n(s, sampler, 8);  // the generator moves on from its seed

  // A session that never kept a generator stores none: restoring leaves the sampler as it is.
  int restored = -1;
  REQUIRE(kvrt_session_restore_sampler(s, sampler, &restored) == KVRT_OK);
  CHECK(restored == 0);
  const std::string path = dir / "s.kvs";
  REQUIRE(kvrt_session_keep_sampler(s, sampler) == KVRT_OK);
  REQUIRE(kvrt_session_save(s, path.c_str()) == KVRT_OK);
  size_t size = 0, written = 0;
  REQUIRE(kvrt_session_state_size(s, &size) == KVRT_OK);
  std::vector<char> buf(size);
  REQUIRE(kvrt_session_state_write(s, buf.data(), buf.size(), &written) == KVRT_OK);
  const std::vector<int32_t> expected = decode_n(s, sampler, 24);

  kvrt_session_options lo = api_options(0, 2);
  for (int from_bytes = 0; from_bytes < 2; ++from_bytes) {
    CAPTURE(from_bytes);
    kvrt_session* r = nullptr;
    if (from_bytes)
      REQUIRE(kvrt_session_state_read(model, buf.data(), buf.size(), nullptr, &lo, &r) == KVRT_OK);
    else REQUIRE(kvrt_session_load(model, path.c_str(), nullptr, &lo, &r) == KVRT_OK);
    REQUIRE(kvrt_sampler_create(model, &so, &fresh) == KVRT_OK);  // at the seed, not the state
    REQUIRE(kvrt_session_restore_sampler(r, fresh, &restored) == KVRT_OK);
    CHECK(restored == 1);
    CHECK(decode_n(r, fresh, 24) == expected);
    kvrt_sampler_free(fresh);
    kvrt_session_free(r);
  }
  // Without the restore, the fresh sampler starts at its seed and the tokens differ.
  kvrt_session* r = nullptr;
  REQUIRE(kvrt_session_load(model, path.c_str(), nullptr, &lo, &r) == KVRT_OK);
  REQUIRE(kvrt_sampler_create(model, &so, &fresh) == KVRT_OK);
  CHECK(decode_n(r, fresh, 24) != expected);
  CHECK(kvrt_session_keep_sampler(r, nullptr) == KVRT_ERR_INVALID_ARGUMENT);
  CHECK(kvrt_session_restore_sampler(nullptr, fresh, nullptr) == KVRT_ERR_INVALID_ARGUMENT);
  kvrt_sampler_free(fresh);
  kvrt_session_free(r);
  kvrt_session_free(s);
  kvrt_sampler_free(sampler);
  kvrt_model_free(model);
}

TEST_CASE(
    "the C API saves, loads and reads state files and bytes, refuses special files and keeps a "
    "good file when a save fails") {
  test::TempDir dir;
  kvrt_model* model = nullptr;
  REQUIRE(kvrt_model_open(test::stories_path().c_str(), &model) == KVRT_OK);
  kvrt_session_options o = api_options(256, 1);
  kvrt_session* s = nullptr;
  REQUIRE(kvrt_session_create(model, &o, &s) == KVRT_OK);
  const std::vector<int32_t> p = test::some_tokens(60, 512, 10),
                             more = test::some_tokens(3, 512, 11);
  REQUIRE(kvrt_session_eval(s, p.data(), p.size()) == KVRT_OK);
  const std::string path = dir / "s.kvs";
  REQUIRE(kvrt_session_save(s, path.c_str()) == KVRT_OK);
  size_t size = 0, written = 0;
  REQUIRE(kvrt_session_state_size(s, &size) == KVRT_OK);
  CHECK(size == std::filesystem::file_size(path));
  std::vector<char> small(10), buf(size);
  CHECK(kvrt_session_state_write(s, small.data(), small.size(), &written) ==
        KVRT_ERR_BUFFER_TOO_SMALL);
  CHECK(written == size);
  REQUIRE(kvrt_session_state_write(s, buf.data(), buf.size(), &written) == KVRT_OK);
  CHECK(std::string(buf.begin(), buf.end()) == test::read_file(path));

  kvrt_session_options lo = api_options(0, 2);  // n_ctx 0: the state's
  kvrt_session *from_file = nullptr, *from_bytes = nullptr;
  REQUIRE(kvrt_session_load(model, path.c_str(), nullptr, &lo, &from_file) == KVRT_OK);
  REQUIRE(kvrt_session_state_read(model, buf.data(), buf.size(), nullptr, &lo, &from_bytes) ==
          KVRT_OK);
  kvrt_session_info info;
  REQUIRE(kvrt_session_get_info(from_file, &info) == KVRT_OK);
  CHECK(info.n_ctx == 256);
  CHECK(info.n_past == 60);
  for (kvrt_session* x : {s, from_file, from_bytes})
    REQUIRE(kvrt_session_eval(x, more.data(), more.size()) == KVRT_OK);
  const float *la, *lb, *lc;
  REQUIRE(kvrt_session_logits(s, &la, nullptr) == KVRT_OK);
  REQUIRE(kvrt_session_logits(from_file, &lb, nullptr) == KVRT_OK);
  REQUIRE(kvrt_session_logits(from_bytes, &lc, nullptr) == KVRT_OK);
  CHECK(std::memcmp(la, lb, 512 * sizeof(float)) == 0);
  CHECK(std::memcmp(la, lc, 512 * sizeof(float)) == 0);

  // Special files: refused at once (a FIFO is not waited on), a directory too.
  REQUIRE(mkfifo((dir / "fifo").c_str(), 0600) == 0);
  kvrt_session* none = nullptr;
  CHECK(kvrt_session_load(model, (dir / "fifo").c_str(), nullptr, &lo, &none) == KVRT_ERR_INPUT);
  CHECK(kvrt_session_load(model, dir.path().c_str(), nullptr, &lo, &none) == KVRT_ERR_INPUT);
  CHECK(kvrt_session_load(model, "/dev/zero", nullptr, &lo, &none) == KVRT_ERR_INPUT);
  CHECK(none == nullptr);
  CHECK(kvrt_session_save(s, (dir / "fifo").c_str()) == KVRT_ERR_INVALID_ARGUMENT);
  CHECK(kvrt_session_save(s, dir.path().c_str()) == KVRT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(kvrt_last_error()).find("directory") != std::string::npos);

  // A save that fails midway (file size limit) leaves the good file as it was.
  const std::string before = test::read_file(path);
  rlimit old_limit{};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit cap = old_limit;
  cap.rlim_cur = 4096;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &cap) == 0);
  const kvrt_status st = kvrt_session_save(s, path.c_str());
  setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  CHECK(st == KVRT_ERR_INPUT);
  CHECK(test::read_file(path) == before);

  // A truncated file through the API: one sentence, no session.
  write_bytes(dir / "cut.kvs", before.substr(0, before.size() / 3));
  CHECK(kvrt_session_load(model, (dir / "cut.kvs").c_str(), nullptr, &lo, &none) == KVRT_ERR_INPUT);
  CHECK(std::string(kvrt_last_error()).find("truncated") != std::string::npos);
  for (kvrt_session* x : {s, from_file, from_bytes}) kvrt_session_free(x);
  kvrt_model_free(model);
}

TEST_CASE(
    "the gate refuses a restored compressed state without a record, as it refuses creating one") {
  test::TempDir dir;
  const model::Model m(test::stories_path());
  const std::string bytes = saved_state(m, "q4", 20, 12);
  kvrt_model* model = nullptr;
  REQUIRE(kvrt_model_open(test::stories_path().c_str(), &model) == KVRT_OK);
  kvrt_session_options o;
  kvrt_session_options_default(&o);
  const std::string record = dir / "no-record.toml";
  kvrt_session* out = nullptr;
  CHECK(kvrt_session_state_read(model, bytes.data(), bytes.size(), record.c_str(), &o, &out) ==
        KVRT_ERR_REFUSED);
  const std::string load_error = kvrt_last_error();
  CHECK(out == nullptr);
  kvrt_kv_config q4;
  REQUIRE(kvrt_kv_config_parse("q4", &q4) == KVRT_OK);
  CHECK(kvrt_validation_check_ctx(model, &q4, 512, record.c_str()) == KVRT_ERR_REFUSED);
  CHECK(load_error == std::string(kvrt_last_error()));
  kvrt_model_free(model);
}

TEST_CASE("kvrt_session_eval_reusing evaluates only the suffix after the shared prefix") {
  kvrt_model* model = nullptr;
  REQUIRE(kvrt_model_open(test::stories_path().c_str(), &model) == KVRT_OK);
  kvrt_session_options o = api_options(256, 1);
  REQUIRE(kvrt_kv_config_parse("f32", &o.kv) == KVRT_OK);
  kvrt_session *a = nullptr, *b = nullptr;
  REQUIRE(kvrt_session_create(model, &o, &a) == KVRT_OK);
  REQUIRE(kvrt_session_create(model, &o, &b) == KVRT_OK);
  std::vector<int32_t> first = test::some_tokens(50, 512, 13), second = first;
  second.resize(40);
  for (int32_t t : test::some_tokens(7, 512, 14)) second.push_back(t);
  size_t reused = 99;
  REQUIRE(kvrt_session_eval_reusing(a, first.data(), first.size(), &reused) == KVRT_OK);
  CHECK(reused == 0);
  REQUIRE(kvrt_session_eval_reusing(a, second.data(), second.size(), &reused) == KVRT_OK);
  CHECK(reused == 40);
  REQUIRE(kvrt_session_eval(b, second.data(), second.size()) == KVRT_OK);
  const float *la, *lb;
  REQUIRE(kvrt_session_logits(a, &la, nullptr) == KVRT_OK);
  REQUIRE(kvrt_session_logits(b, &lb, nullptr) == KVRT_OK);
  CHECK(std::memcmp(la, lb, 512 * sizeof(float)) == 0);
  int32_t kept = -1;
  REQUIRE(kvrt_session_truncate(a, 10, &kept) == KVRT_OK);
  CHECK(kept == 10);
  CHECK(kvrt_session_logits(a, &la, nullptr) ==
        KVRT_ERR_INVALID_ARGUMENT);  // stale until the next eval
  const int32_t* ids = nullptr;
  size_t n = 0;
  REQUIRE(kvrt_session_tokens(a, &ids, &n) == KVRT_OK);
  CHECK(n == 10);
  CHECK(std::memcmp(ids, second.data(), 10 * sizeof(int32_t)) == 0);
  kvrt_session_free(a);
  kvrt_session_free(b);
  kvrt_model_free(model);
}

TEST_CASE(
    "kvrt run --prompt-cache reuses the cached prompt, prints the same text, and refuses a bad "
    "cache untouched") {
  test::TempDir dir;
  const std::string model = test::stories_path(), cache = dir / "p.kvs";
  const std::string common = "run -m " + model + " -n 12 -t 1 --prompt-cache " + cache + " -p ";
  const test::CommandResult cold =
      test::run_kvrt(common + "'Once upon a time, there was a little girl'", dir);
  REQUIRE(cold.exit_code == 0);
  CHECK(cold.err.find("does not exist yet") != std::string::npos);
  const test::CommandResult warm =
      test::run_kvrt(common + "'Once upon a time, there was a little girl'", dir);
  REQUIRE(warm.exit_code == 0);
  CHECK(warm.out == cold.out);
  CHECK(warm.err.find("prefill 0 tokens") != std::string::npos);
  const test::CommandResult longer =
      test::run_kvrt(common + "'Once upon a time, there was a little girl named Lily'", dir);
  const test::CommandResult plain = test::run_kvrt(
      "run -m " + model + " -n 12 -t 1 -p 'Once upon a time, there was a little girl named Lily'",
      dir);
  REQUIRE(longer.exit_code == 0);
  CHECK(longer.out == plain.out);
  CHECK(longer.err.find("reused") != std::string::npos);
  write_bytes(cache, "not a state file at all, just some text that is longer than a state header");
  const test::CommandResult bad = test::run_kvrt(common + "'Once upon a time'", dir);
  CHECK(bad.exit_code != 0);
  CHECK(bad.err.find("is not a kvrt state file") != std::string::npos);
  CHECK(test::read_file(cache) ==
        "not a state file at all, just some text that is longer than a state header");
  const test::CommandResult fifo = test::run_kvrt(
      common.substr(0, common.find("--prompt-cache")) + "--prompt-cache /dev/null -p x", dir);
  CHECK(fifo.exit_code != 0);
  CHECK(fifo.err.find("/dev/null") != std::string::npos);
}

TEST_CASE(
    "kvrt chat --session resumes a conversation: two processes write the transcript one would") {
  test::TempDir dir;
  const std::string model = dir / "chat.gguf";
  synth::write_chat_model({test::stories_path(), "chatml"}, model);
  write_bytes(dir / "both.txt", "Hello there\nTell me a story\n");
  write_bytes(dir / "one.txt", "Hello there\n");
  write_bytes(dir / "two.txt", "Tell me a story\n");
  const std::string common =
      "chat -m " + model + " -n 16 -t 1 --temp 0.8 --seed 5 --system 'You tell stories.' ";
  const test::CommandResult whole = test::run_kvrt(common + "< " + dir / "both.txt", dir);
  REQUIRE(whole.exit_code == 0);
  const std::string file = dir / "chat.kvs";
  const test::CommandResult first =
      test::run_kvrt(common + "--session " + file + " < " + dir / "one.txt", dir);
  REQUIRE(first.exit_code == 0);
  const test::CommandResult second =
      test::run_kvrt(common + "--session " + file + " < " + dir / "two.txt", dir);
  REQUIRE(second.exit_code == 0);
  CHECK(second.err.find("resumed") != std::string::npos);
  CHECK(first.out + second.out == whole.out);
}
