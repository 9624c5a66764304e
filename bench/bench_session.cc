// Time to first token for a long system prompt, prefilled cold against restored from a state file
// (docs/sessions.md), and the state file's size per KV setting, on a model given on the command
// line (tools/bench.sh makes the realistic-shape synthetic one). Beside each size, the size of
// llama.cpp's state file for the same positions with its default f16 cache, computed from its
// layout (K and V rows of every layer in f16, the last logits, the token ids). Numbers only.
//   bench_session MODEL [N_PROMPT=2000] [THREADS=2] [SETTINGS="f32;q8;k=q8,v=q4;q4;q4s"] [DIR=.]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/regular_file.h"
#include "common/sha256.h"
#include "kv/kv_config.h"
#include "model/model.h"
#include "model/sampler.h"
#include "model/session.h"
#include "model/state_file.h"
#include "simd/kernels.h"
#include "validate/output_file.h"

namespace {

using namespace kvrt;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<int32_t> prompt_tokens(int n, int n_vocab) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    t[size_t(i)] = int32_t((uint32_t(i) * 2654435761u) % uint32_t(n_vocab - 3) + 3);
  return t;
}

// llama.cpp's state file for n positions with an f16 cache: its header (magic, version, token
// count), the token ids, the logits of the last position, then per layer K and V rows in f16.
double llama_cpp_f16_bytes(const model::ModelConfig& c, int n) {
  return 12.0 + 4.0 * n + 8.0 + 4.0 * c.n_vocab +
         2.0 * c.n_layers * c.n_kv_heads * c.head_dim * 2.0 * n;
}

struct Row {
  std::string setting;
  double cold_s, restore_s, hash_s;
  size_t bytes;
  bool same;
};

Row measure(const model::Model& m, const std::string& setting, const std::vector<int32_t>& prompt,
            int n_threads, const std::string& path) {
  model::SessionOptions o;
  o.n_ctx = int(prompt.size()) + 64;
  o.n_threads = n_threads;
  o.kv = kv::parse_setting(setting);
  Row r{"", 0, 0, 0, 0, false};
  auto t0 = Clock::now();
  model::Session cold(m, o);
  r.setting = cold.kv_cache().config().name();
  cold.eval(prompt.data(), int(prompt.size()));
  const int32_t first = model::argmax(cold.last_logits(), m.config().n_vocab);
  r.cold_s = since(t0);
  const std::string sha = sha256_file(m.file().path());
  const std::string bytes = model::state_bytes(cold, sha, {});
  validate::write_file_atomic(path, bytes, "state file");
  r.bytes = bytes.size();

  t0 = Clock::now();
  const std::string digest = sha256_file(m.file().path());
  r.hash_s = since(t0);
  const std::string read = read_regular_file(path, "state file", model::kMaxStateFileBytes);
  const model::StateHeader h = model::read_state_header(read, path);
  model::check_state_binding(h, path, digest, "", h.matmul);
  model::Session warm(m, model::state_session_options(h, 0, n_threads));
  model::load_state_session(warm, read, h, path);
  const int32_t first_warm = model::argmax(warm.last_logits(), m.config().n_vocab);
  r.restore_s = since(t0);
  r.same = first == first_warm && std::memcmp(cold.last_logits(), warm.last_logits(),
                                              sizeof(float) * size_t(m.config().n_vocab)) == 0;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: bench_session MODEL [N_PROMPT=2000] [THREADS=2] [SETTINGS] [DIR=.]\n");
    return 2;
  }
  try {
    const model::Model m(argv[1]);
    const int n_prompt = argc > 2 ? std::atoi(argv[2]) : 2000,
              n_threads = argc > 3 ? std::atoi(argv[3]) : 2;
    const std::string list = argc > 4 ? argv[4] : "f32;q8;k=q8,v=q4;q4;q4s";
    const std::string dir = argc > 5 ? argv[5] : ".";
    const std::vector<int32_t> prompt = prompt_tokens(n_prompt, m.config().n_vocab);
    const double llama = llama_cpp_f16_bytes(m.config(), n_prompt);
    std::printf("model %s, %d prompt tokens, %d threads, ISA %s\n", argv[1], n_prompt, n_threads,
                simd::isa_name());
    std::printf("%-40s %10s %12s %10s %12s %10s %9s %s\n", "setting", "cold s", "restored s",
                "(hash s)", "state KiB", "llama f16", "speedup", "same logits");
    for (const kv::SettingText& s : kv::parse_setting_list(list)) {
      const Row r = measure(m, s.text, prompt, n_threads, dir + "/bench_session.kvs");
      std::printf("%-40s %10.3f %12.3f %10.3f %12.1f %9.2fx %8.1fx %s\n", r.setting.c_str(),
                  r.cold_s, r.restore_s, r.hash_s, double(r.bytes) / 1024.0,
                  llama / double(r.bytes), r.cold_s / r.restore_s, r.same ? "yes" : "NO");
    }
    std::printf("llama.cpp f16 state for these positions (computed from its layout): %.1f KiB\n",
                llama / 1024.0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_session: %s\n", e.what());
    return 1;
  }
  return 0;
}
