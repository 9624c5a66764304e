// Shared by the state-file tests (test_session_file.cc, test_session_file_archs.cc): a session
// saved to a state file's bytes and restored into a new one continues with the same logits, bit
// for bit, as the session that saved it.
#pragma once

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "kv/kv_config.h"
#include "model/model.h"
#include "model/session.h"
#include "model/state_file.h"
#include "ops/matmul.h"
#include "validate/runner.h"
#include "validate/settings.h"

namespace kvrt::test {

// validation/settings.toml's settings, the FP32 cache first, and the extras the cache supports
// (sinks, per-layer formats, a residual window on token tiles); bf16 ones only where the CPU runs
// them.
inline std::vector<validate::Setting> state_settings(const std::string& source_dir) {
  std::vector<validate::Setting> all =
      validate::read_settings(source_dir + "/validation/settings.toml");
  all.insert(all.begin(), {"f32", kv::KvConfig{}});
  all.push_back({"q8 r16", kv::parse_setting("q8,r=16")});
  all.push_back({"q4 sinks4 ends q8", kv::parse_setting("q4,sinks=4,layers[0,-1]=q8")});
  std::vector<validate::Setting> runnable;
  for (const validate::Setting& s : all) {
    try {
      ops::require_matmul_precision(s.matmul);
      runnable.push_back(s);
    } catch (const Error&) {
      MESSAGE("skipped " << s.label << ": this CPU has no bf16 products");
    }
  }
  return runnable;
}

// Deterministic token ids inside the vocabulary.
inline std::vector<int32_t> some_tokens(int n, int n_vocab, int seed) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    t[size_t(i)] =
        int32_t((uint32_t(i) * 2654435761u + uint32_t(seed) * 97u) % uint32_t(n_vocab - 3) + 3);
  return t;
}

// Evaluates `more` a token at a time, then the rest as one chunk; returns every logit.
inline std::vector<float> continue_with(model::Session& s, const std::vector<int32_t>& more,
                                        int n_single) {
  const size_t n_vocab = size_t(s.model().config().n_vocab);
  std::vector<float> logits(more.size() * n_vocab);
  for (int i = 0; i < n_single; ++i) s.eval(&more[size_t(i)], 1, &logits[size_t(i) * n_vocab]);
  s.eval(&more[size_t(n_single)], int(more.size()) - n_single, &logits[size_t(n_single) * n_vocab]);
  return logits;
}

// Prefills `prompt`, saves, restores into a session opened from the file's header, and checks
// that both hold the same and continue with `more` to the same logits, bit for bit; also that
// the restored session saves the same bytes. `o` is the saving session's options.
inline void check_round_trip(const model::Model& m, const model::SessionOptions& o,
                             const std::vector<int32_t>& prompt, const std::vector<int32_t>& more) {
  const size_t n_vocab = size_t(m.config().n_vocab);
  model::Session a(m, o);
  a.eval(prompt.data(), int(prompt.size()));
  const std::string sha(64, 'a');
  const std::string bytes = model::state_bytes(a, sha, {});
  const model::StateHeader h = model::read_state_header(bytes, "test state");
  CHECK(h.setting == a.kv_cache().config().name());
  model::Session b(m, model::state_session_options(h, 0, o.n_threads));
  model::load_state_session(b, bytes, h, "test state");
  REQUIRE(b.n_past() == a.n_past());
  CHECK(std::memcmp(b.tokens(), a.tokens(), prompt.size() * sizeof(int32_t)) == 0);
  CHECK(std::memcmp(b.last_logits(), a.last_logits(), n_vocab * sizeof(float)) == 0);
  CHECK(model::state_bytes(b, sha, {}) == bytes);
  const std::vector<float> la = continue_with(a, more, 5), lb = continue_with(b, more, 5);
  REQUIRE(la.size() == lb.size());
  CHECK(std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)) == 0);
}

}  // namespace kvrt::test
