// The C API's sessions that outlive the process (include/kvrt/kvrt.h, docs/sessions.md): state
// files and their in-memory bytes, through the same gate as kvrt_session_create_named, and
// prefix reuse.
#include <string>
#include <string_view>

#include "api/handles.h"
#include "common/regular_file.h"
#include "common/sha256.h"
#include "kv/cache_layout.h"
#include "model/prefix_reuse.h"
#include "model/state_file.h"
#include "validate/output_file.h"

using kvrt::api::fail;
using kvrt::api::guard;

namespace {

// What the handle knows besides the session: whether a held token made text (the SentencePiece
// dummy-space rule) and whether the last logits belong to the last position.
void refresh_flags(kvrt_session& s, bool has_logits) {
  const kvrt::model::Session& session = *s.session;
  const kvrt::model::Tokenizer& tok = session.model().tokenizer();
  s.has_text = false;
  for (int i = 0; i < session.n_past() && !s.has_text; ++i)
    s.has_text = !tok.token_to_piece(session.tokens()[i]).empty();
  s.has_logits = has_logits && session.n_past() > 0;
}

const std::string& model_sha256(const kvrt_model& m) {
  std::call_once(m.sha256_once, [&] { m.sha256 = kvrt::sha256_file(m.path); });
  return m.sha256;
}

// Opens the session the state bytes describe: binding, gate, memory cap, then the positions.
kvrt_status restore(const kvrt_model& model, std::string_view bytes, const std::string& what,
                    const char* record_path, const kvrt_session_options& options,
                    kvrt_session** out_session) {
  const kvrt::model::StateHeader h = kvrt::model::read_state_header(bytes, what);
  kvrt::model::check_state_binding(h, what, model_sha256(model), "", h.matmul);
  kvrt::model::SessionOptions so =
      kvrt::api::to_options(options);  // range checks of the caller's values
  const int n_batch = options.n_batch > 0 ? so.n_batch : h.n_batch;
  so = kvrt::model::state_session_options(h, options.n_ctx, options.n_threads);
  so.n_batch = n_batch;
  kvrt::ops::require_matmul_precision(so.matmul);
  kvrt_session* s = nullptr;
  if (const kvrt_status st = kvrt::api::create_session(
          model, kvrt::api::session_request(model, so, record_path), options.max_memory_bytes, &s);
      st != KVRT_OK)
    return st;
  std::unique_ptr<kvrt_session> owned(s);
  kvrt::model::load_state_session(*owned->session, bytes, h, what);
  refresh_flags(*owned, true);
  owned->sampler_rng = h.extras.sampler_rng;
  *out_session = owned.release();
  return KVRT_OK;
}

kvrt::model::StateExtras extras_of(const kvrt_session& s) {
  return {.sampler_rng = s.sampler_rng, .app = {}};
}

std::string state_of(const kvrt_session& s) {
  return kvrt::model::state_bytes(*s.session, model_sha256(*s.owner), extras_of(s));
}

}  // namespace

extern "C" {

kvrt_status kvrt_session_save(const kvrt_session* session, const char* path) {
  return guard([&] {
    KVRT_REQUIRE(session);
    KVRT_REQUIRE(path);
    kvrt::validate::check_output_path(path, "state file");
    kvrt::validate::write_file_atomic(path, state_of(*session), "state file");
    return KVRT_OK;
  });
}

kvrt_status kvrt_session_load(const kvrt_model* model, const char* path, const char* record_path,
                              const kvrt_session_options* options, kvrt_session** out_session) {
  return guard([&] {
    KVRT_REQUIRE(out_session);
    *out_session = nullptr;
    KVRT_REQUIRE(model);
    KVRT_REQUIRE(path);
    KVRT_REQUIRE(options);
    const std::string bytes =
        kvrt::read_regular_file(path, "state file", kvrt::model::kMaxStateFileBytes);
    return restore(*model, bytes, "state file '" + std::string(path) + "'", record_path, *options,
                   out_session);
  });
}

kvrt_status kvrt_session_state_size(const kvrt_session* session, size_t* out_size) {
  return guard([&] {
    KVRT_REQUIRE(session);
    KVRT_REQUIRE(out_size);
    *out_size = kvrt::model::state_size(*session->session, model_sha256(*session->owner),
                                        extras_of(*session));
    return KVRT_OK;
  });
}

kvrt_status kvrt_session_state_write(const kvrt_session* session, void* buffer, size_t capacity,
                                     size_t* out_size) {
  return guard([&] {
    KVRT_REQUIRE(session);
    KVRT_REQUIRE(out_size);
    const std::string& sha = model_sha256(*session->owner);
    *out_size = kvrt::model::state_size(*session->session, sha, extras_of(*session));
    if (*out_size > capacity)
      return fail(KVRT_ERR_BUFFER_TOO_SMALL,
                  "the session state needs " + std::to_string(*out_size) +
                      " bytes, the buffer holds " + std::to_string(capacity));
    KVRT_REQUIRE(buffer);
    kvrt::model::write_state(buffer, *out_size, *session->session, sha, extras_of(*session));
    return KVRT_OK;
  });
}

kvrt_status kvrt_session_state_read(const kvrt_model* model, const void* data, size_t size,
                                    const char* record_path, const kvrt_session_options* options,
                                    kvrt_session** out_session) {
  return guard([&] {
    KVRT_REQUIRE(out_session);
    *out_session = nullptr;
    KVRT_REQUIRE(model);
    KVRT_REQUIRE(options);
    if (size > 0) KVRT_REQUIRE(data);
    const std::string_view bytes(static_cast<const char*>(data), size);
    return restore(*model, bytes, "the session state", record_path, *options, out_session);
  });
}

kvrt_status kvrt_session_keep_sampler(kvrt_session* session, const kvrt_sampler* sampler) {
  return guard([&] {
    KVRT_REQUIRE(session);
    KVRT_REQUIRE(sampler);
    KVRT_CLAIM(session);
    KVRT_CLAIM(sampler);
    session->sampler_rng = sampler->sampler->rng_state();
    return KVRT_OK;
  });
}

kvrt_status kvrt_session_restore_sampler(const kvrt_session* session, kvrt_sampler* sampler,
                                         int* out_restored) {
  return guard([&] {
    KVRT_REQUIRE(session);
    KVRT_REQUIRE(sampler);
    KVRT_CLAIM(session);
    KVRT_CLAIM(sampler);
    if (session->sampler_rng) sampler->sampler->set_rng_state(*session->sampler_rng);
    if (out_restored) *out_restored = session->sampler_rng.has_value();
    return KVRT_OK;
  });
}

kvrt_status kvrt_session_tokens(const kvrt_session* session, const int32_t** out_tokens,
                                size_t* out_n_tokens) {
  return guard([&] {
    KVRT_REQUIRE(session);
    KVRT_REQUIRE(out_tokens);
    KVRT_REQUIRE(out_n_tokens);
    *out_tokens = session->session->tokens();
    *out_n_tokens = size_t(session->session->n_past());
    return KVRT_OK;
  });
}

kvrt_status kvrt_session_truncate(kvrt_session* session, int32_t n_keep, int32_t* out_n_kept) {
  return guard([&] {
    KVRT_REQUIRE(session);
    if (n_keep < 0) return fail(KVRT_ERR_INVALID_ARGUMENT, "n_keep must not be negative");
    const bool same = n_keep >= session->session->n_past();
    const int kept = session->session->truncate(n_keep);
    refresh_flags(*session, same && session->has_logits);
    if (out_n_kept) *out_n_kept = kept;
    return KVRT_OK;
  });
}

kvrt_status kvrt_session_eval_reusing(kvrt_session* session, const int32_t* tokens, size_t n_tokens,
                                      size_t* out_n_reused) {
  return guard([&] {
    KVRT_REQUIRE(session);
    KVRT_REQUIRE(tokens);
    if (out_n_reused) *out_n_reused = 0;
    if (n_tokens == 0)
      return fail(KVRT_ERR_INVALID_ARGUMENT, "nothing to evaluate: the token list is empty");
    kvrt::model::Session& s = *session->session;
    if (n_tokens > size_t(s.n_ctx()))
      return fail(KVRT_ERR_CONTEXT_FULL, std::to_string(n_tokens) +
                                             " tokens do not fit in the context of " +
                                             std::to_string(s.n_ctx()) + " positions");
    const int kept = kvrt::model::reuse_prefix(s, tokens, int(n_tokens));
    refresh_flags(*session, kept == int(n_tokens) && session->has_logits);
    if (out_n_reused) *out_n_reused = size_t(kept);
    if (size_t(kept) == n_tokens) return KVRT_OK;
    return kvrt::api::eval_tokens(*session, tokens + kept, n_tokens - size_t(kept));
  });
}

}  // extern "C"
