// The C API's sampler, decode step and streaming generation (include/kvrt/kvrt.h).
#include "api/handles.h"

namespace kvrt::api {
namespace {

// Samples from the session's last logits and evaluates the token. Nothing here allocates
// memory that outlives the call (the sampler and session buffers were sized at creation).
kvrt_status decode_step(kvrt_session& s, kvrt_sampler& sampler, int32_t* out_token) {
  model::Session& session = *s.session;
  if (!s.has_logits)
    return fail(KVRT_ERR_INVALID_ARGUMENT, "nothing to continue: evaluate a prompt first");
  if (session.n_past() >= session.n_ctx())
    return fail(KVRT_ERR_CONTEXT_FULL,
                "context full: all " + std::to_string(session.n_ctx()) +
                    " positions are used (reset the session or create one with a larger n_ctx)");
  const int32_t token =
      sampler.sampler->sample(session.last_logits(), session.model().config().n_vocab);
  *out_token = token;
  return eval_tokens(s, &token, 1);
}

bool is_stop(const model::Tokenizer& tok, kvrt_stop stop, int32_t token) {
  return stop == KVRT_STOP_EOS ? token == tok.eos_id() : tok.is_end_of_generation(token);
}

// kvrt_generate and kvrt_generate_until: decodes until max_tokens, the stop token, a full
// context or the callback; `r` counts what was generated.
kvrt_status generate(kvrt_session& session, kvrt_sampler& sampler, const kvrt_generate_options& o,
                     kvrt_generate_result& r) {
  if (o.max_tokens < 0) return fail(KVRT_ERR_INVALID_ARGUMENT, "max_tokens must not be negative");
  const model::Tokenizer& tok = session.session->model().tokenizer();
  std::string piece;
  while (r.n_generated < o.max_tokens) {
    const bool at_start = !session.has_text;
    int32_t token = 0;
    const kvrt_status st = decode_step(session, sampler, &token);
    if (st != KVRT_OK) return st;
    if (is_stop(tok, o.stop, token)) {
      r.stop_token = token;
      break;
    }
    ++r.n_generated;
    piece = tok.token_to_piece(token);
    if (at_start && tok.adds_space_prefix() && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    if (o.callback && o.callback(piece.data(), piece.size(), token, o.user_data) != 0)
      return fail(KVRT_ERR_STOPPED, "generation stopped by the callback");
  }
  return KVRT_OK;
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

kvrt_status kvrt_sampler_sample(kvrt_sampler* sampler, const float* logits, int32_t n_logits,
                                int32_t* out_token) {
  return guard([&] {
    KVRT_REQUIRE(sampler);
    KVRT_CLAIM(sampler);
    KVRT_REQUIRE(logits);
    KVRT_REQUIRE(out_token);
    *out_token = sampler->sampler->sample(logits, n_logits);
    return KVRT_OK;
  });
}

kvrt_status kvrt_session_decode(kvrt_session* session, kvrt_sampler* sampler, int32_t* out_token) {
  return guard([&] {
    KVRT_REQUIRE(session);
    KVRT_REQUIRE(sampler);
    KVRT_CLAIM(session);
    KVRT_CLAIM(sampler);
    KVRT_REQUIRE(out_token);
    return kvrt::api::decode_step(*session, *sampler, out_token);
  });
}

void kvrt_generate_options_default(kvrt_generate_options* out) {
  if (out) *out = kvrt_generate_options{256, KVRT_STOP_END_OF_TURN, nullptr, nullptr};
}

kvrt_status kvrt_generate_until(kvrt_session* session, kvrt_sampler* sampler,
                                const kvrt_generate_options* options,
                                kvrt_generate_result* out_result) {
  kvrt_generate_result result{0, -1};
  const kvrt_status status = guard([&] {
    KVRT_REQUIRE(session);
    KVRT_REQUIRE(sampler);
    KVRT_CLAIM(session);
    KVRT_CLAIM(sampler);
    KVRT_REQUIRE(options);
    const int stop = kvrt::api::raw_enum(options->stop);
    if (stop != KVRT_STOP_EOS && stop != KVRT_STOP_END_OF_TURN)
      return fail(KVRT_ERR_INVALID_ARGUMENT, "unknown stop value " + std::to_string(stop));
    return kvrt::api::generate(*session, *sampler, *options, result);
  });
  if (out_result) *out_result = result;
  return status;
}

kvrt_status kvrt_generate(kvrt_session* session, kvrt_sampler* sampler, int32_t max_tokens,
                          kvrt_piece_callback callback, void* user_data, int32_t* out_n_generated) {
  kvrt_generate_result result{0, -1};
  const kvrt_status status = guard([&] {
    KVRT_REQUIRE(session);
    KVRT_REQUIRE(sampler);
    KVRT_CLAIM(session);
    KVRT_CLAIM(sampler);
    const kvrt_generate_options options{max_tokens, KVRT_STOP_EOS, callback, user_data};
    return kvrt::api::generate(*session, *sampler, options, result);
  });
  if (out_n_generated) *out_n_generated = result.n_generated;
  return status;
}

}  // extern "C"
