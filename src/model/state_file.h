// State files (docs/formats/state-file.md): a session's positions, token ids, last logits and
// packed KV cache as they are in memory, with the sampler's generator and an application's own
// bytes, bound to the model file, the KV setting and the matmul precision, and closed by a
// SHA-256 of everything before it. Restoring one gives the logits the saving session would have
// given, bit for bit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "model/session.h"
#include "ops/matmul.h"

namespace kvrt::model {

// Largest state file kvrt reads (a session of a long context in a large model stays far below).
constexpr size_t kMaxStateFileBytes = size_t(16) << 30;

// 1: the first format.
constexpr uint32_t kStateFormat = 1;

// What a state file holds besides the session.
struct StateExtras {
  std::optional<uint64_t> sampler_rng;  // Sampler::rng_state() of the generation it belongs to
  std::string app;                      // an application's own bytes (kvrt chat: the conversation)
};

// What a state file says before its positions: enough to open the session it fits.
struct StateHeader {
  uint32_t format = 0;
  std::string model_sha256;                                  // 64 hex digits of the model file
  std::string setting;                                       // canonical kv::KvConfig::name()
  ops::MatmulPrecision matmul = ops::MatmulPrecision::kF32;  // of the prefill products
  int n_ctx = 0, n_batch = 0, n_past = 0;                    // the saving session's
  StateExtras extras;
  size_t session_offset = 0;  // where the session part starts
};

// The whole content of a state file for `session`; model_sha256 is its model file's. state_size
// counts it without copying anything; write_state writes it into a buffer of exactly that size
// (firmware gets the cache into its own memory with no copy in between).
std::string state_bytes(const Session& session, const std::string& model_sha256,
                        const StateExtras& extras);
size_t state_size(const Session& session, const std::string& model_sha256,
                  const StateExtras& extras);
void write_state(void* buffer, size_t size, const Session& session, const std::string& model_sha256,
                 const StateExtras& extras);

// Checks length, magic, format version and checksum, then reads the header; `what` names the
// bytes in errors ("state file 'boot.kvs'"). Each failure is a kvrt::Error(kInput) of one sentence
// naming what is wrong (too short, not a state file, a newer format, truncated, damaged).
StateHeader read_state_header(std::string_view bytes, const std::string& what);

// Refuses (kvrt::Error(kInput), one sentence naming the mismatch) a state file made for another
// model file, or, when `setting` is not empty, with another KV setting or matmul precision.
void check_state_binding(const StateHeader& h, const std::string& what,
                         const std::string& model_sha256, const std::string& setting,
                         ops::MatmulPrecision matmul);

// Options for a session the state fits: its setting, matmul, context and chunk size. n_ctx 0
// takes the saved context; a smaller one than the saved positions is kvrt::Error(kUsage).
SessionOptions state_session_options(const StateHeader& h, int n_ctx, int n_threads);

// Reads the session part into `session` (made with state_session_options); on failure the
// session is left empty.
void load_state_session(Session& session, std::string_view bytes, const StateHeader& h,
                        const std::string& what);

}  // namespace kvrt::model
