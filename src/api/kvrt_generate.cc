// The C API's sampler, decode step and streaming generation (include/kvrt/kvrt.h).
#include "api/handles.h"

namespace kvrt::api {
namespace {

// Samples from the session's last logits and evaluates the token. Nothing here allocates
// memory that outlives the call (the sampler and session buffers were sized at creation).
kvrt_status decode_step(kvrt_session& s, kvrt_sampler& sampler, int32_t* out_token) {
  model::Session& session = *s.session;
  if (!s.has_logits) return fail(KVRT_ERR_INVALID_ARGUMENT, "nothing to continue: evaluate a prompt first");
  if (session.n_past() >= session.n_ctx())
    return fail(KVRT_ERR_CONTEXT_FULL, "context full: all " + std::to_string(session.n_ctx()) +
                                           " positions are used (reset the session or create one with a larger n_ctx)");
  const int32_t token = sampler.sampler->sample(session.last_logits());
  *out_token = token;
  return eval_tokens(s, &token, 1);
}

}  // namespace
}  // namespace kvrt::api

using kvrt::api::fail;
using kvrt::api::guard;

extern "C" {

void kvrt_sampler_options_default(kvrt_sampler_options* out) {
  if (out) *out = kvrt_sampler_options{0.0f, 0, 1.0f, 0};
}

kvrt_status kvrt_sampler_create(const kvrt_model* model, const kvrt_sampler_options* options,
                                kvrt_sampler** out_sampler) {
  return guard([&] {
    KVRT_REQUIRE(out_sampler);
    *out_sampler = nullptr;
    KVRT_REQUIRE(model);
    KVRT_REQUIRE(options);
    kvrt::model::SamplerOptions so;
    so.temperature = options->temperature;
    so.top_k = options->top_k;
    so.top_p = options->top_p;
    so.seed = options->seed;
    auto s = std::make_unique<kvrt_sampler>();
    s->sampler = std::make_unique<kvrt::model::Sampler>(so, model->model->config().n_vocab);
    *out_sampler = s.release();
    return KVRT_OK;
  });
}

void kvrt_sampler_free(kvrt_sampler* sampler) { delete sampler; }

kvrt_status kvrt_sampler_sample(kvrt_sampler* sampler, const float* logits, int32_t* out_token) {
  return guard([&] {
    KVRT_REQUIRE(sampler);
    KVRT_REQUIRE(logits);
    KVRT_REQUIRE(out_token);
    *out_token = sampler->sampler->sample(logits);
    return KVRT_OK;
  });
}

kvrt_status kvrt_session_decode(kvrt_session* session, kvrt_sampler* sampler, int32_t* out_token) {
  return guard([&] {
    KVRT_REQUIRE(session);
    KVRT_REQUIRE(sampler);
    KVRT_REQUIRE(out_token);
    return kvrt::api::decode_step(*session, *sampler, out_token);
  });
}

kvrt_status kvrt_generate(kvrt_session* session, kvrt_sampler* sampler, int32_t max_tokens,
                          kvrt_piece_callback callback, void* user_data, int32_t* out_n_generated) {
  int32_t n_generated = 0;
  const kvrt_status status = guard([&] {
    KVRT_REQUIRE(session);
    KVRT_REQUIRE(sampler);
    if (max_tokens < 0) return fail(KVRT_ERR_INVALID_ARGUMENT, "max_tokens must not be negative");
    const kvrt::model::Tokenizer& tok = session->session->model().tokenizer();
    std::string piece;
    while (n_generated < max_tokens) {
      const bool at_start = !session->has_text;
      int32_t token = 0;
      const kvrt_status st = kvrt::api::decode_step(*session, *sampler, &token);
      if (st != KVRT_OK) return st;
      if (token == tok.eos_id()) break;
      ++n_generated;
      piece = tok.token_to_piece(token);
      if (at_start && tok.adds_space_prefix() && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
      if (callback && callback(piece.data(), piece.size(), token, user_data) != 0)
        return fail(KVRT_ERR_STOPPED, "generation stopped by the callback");
    }
    return KVRT_OK;
  });
  if (out_n_generated) *out_n_generated = n_generated;
  return status;
}

}  // extern "C"
