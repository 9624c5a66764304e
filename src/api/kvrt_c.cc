// The C API (include/kvrt/kvrt.h): errors, model, tokens, KV settings and sessions.
// Sampling and generation are in kvrt_generate.cc.
#include <cstring>
#include <string_view>
#include <type_traits>
#include <vector>

#include "api/handles.h"
#include "kv/kv_config.h"
#include "kvrt_config.h"
#include "simd/dispatch.h"

namespace kvrt::api {
namespace {

thread_local std::string t_last_error;

// The C enum's values are the rows of kv/formats.h.
static_assert(KVRT_KV_F32 == int(kv::Format::kF32) && KVRT_KV_Q8 == int(kv::Format::kQ8) &&
              KVRT_KV_Q4 == int(kv::Format::kQ4) && KVRT_KV_Q2 == int(kv::Format::kQ2) &&
              KVRT_KV_Q4S == int(kv::Format::kQ4S) && KVRT_KV_Q4N == int(kv::Format::kQ4N) &&
              KVRT_KV_Q3 == int(kv::Format::kQ3) && kv::kNumFormats == 7);

kv::Format to_format(int f) {
  if (f < 0 || f >= kv::kNumFormats)
    throw Error("unknown KV format value " + std::to_string(f), ErrorKind::kUsage);
  return static_cast<kv::Format>(f);
}

kvrt_kv_format from_format(kv::Format f) { return static_cast<kvrt_kv_format>(f); }

static_assert(KVRT_MAX_THREADS == model::kMaxThreads,
              "kvrt.h documents the session's thread limit");

}  // namespace

model::SessionOptions to_options(const kvrt_session_options& o) {
  if (o.n_ctx < 0 || o.n_threads < 0 || o.n_batch < 0)
    throw Error("n_ctx, n_threads and n_batch must not be negative", ErrorKind::kUsage);
  if (o.n_threads > KVRT_MAX_THREADS)
    throw Error("n_threads " + std::to_string(o.n_threads) + " is above the maximum of " +
                    std::to_string(KVRT_MAX_THREADS),
                ErrorKind::kUsage);
  model::SessionOptions so;
  so.n_ctx = o.n_ctx;
  so.n_threads = o.n_threads;
  so.n_batch = o.n_batch > 0 ? o.n_batch : so.n_batch;
  so.kv = to_kv_config(o.kv);
  so.matmul = to_matmul(o.matmul);
  return so;
}

static_assert(KVRT_MATMUL_F32 == int(ops::MatmulPrecision::kF32) &&
              KVRT_MATMUL_BF16 == int(ops::MatmulPrecision::kBf16));

ops::MatmulPrecision to_matmul(const kvrt_matmul_precision& p) {
  const int v = raw_enum(p);
  if (v != KVRT_MATMUL_F32 && v != KVRT_MATMUL_BF16)
    throw Error("unknown matmul precision value " + std::to_string(v), ErrorKind::kUsage);
  return static_cast<ops::MatmulPrecision>(v);
}

kvrt_matmul_precision to_c_matmul(ops::MatmulPrecision p) {
  return static_cast<kvrt_matmul_precision>(p);
}

kvrt_kv_config to_c_config(const kv::KvConfig& kv) {
  const std::vector<kv::LayerFormat>& layers = kv.layers;
  if (layers.size() > KVRT_KV_MAX_LAYER_FORMATS)
    throw Error("the KV setting has " + std::to_string(layers.size()) +
                    " per-layer formats, more than a kvrt_kv_config holds (" +
                    std::to_string(KVRT_KV_MAX_LAYER_FORMATS) + ")",
                ErrorKind::kUsage);
  kvrt_kv_config c{from_format(kv.k_format),
                   from_format(kv.v_format),
                   kv.group_size,
                   kv.k_axis == kv::KeyAxis::kChannel ? KVRT_KEY_AXIS_CHANNEL : KVRT_KEY_AXIS_TOKEN,
                   kv.residual,
                   kv.rotate ? 1 : 0,
                   kv.sinks,
                   static_cast<int32_t>(layers.size()),
                   {}};
  for (size_t i = 0; i < layers.size(); ++i)
    c.layer_formats[i] = {layers[i].layer,
                          layers[i].side == kv::TileRole::kKey ? KVRT_KV_KEYS : KVRT_KV_VALUES,
                          from_format(layers[i].format)};
  return c;
}

kv::KvConfig to_kv_config(const kvrt_kv_config& c) {
  if (c.group_size < 0 || c.residual < 0 || c.sinks < 0)
    throw Error("KV group size, residual and sinks must not be negative", ErrorKind::kUsage);
  if (c.n_layer_formats < 0 || c.n_layer_formats > KVRT_KV_MAX_LAYER_FORMATS)
    throw Error("n_layer_formats " + std::to_string(c.n_layer_formats) + " is outside 0.." +
                    std::to_string(KVRT_KV_MAX_LAYER_FORMATS),
                ErrorKind::kUsage);
  const int axis = raw_enum(c.k_axis);
  if (axis != KVRT_KEY_AXIS_TOKEN && axis != KVRT_KEY_AXIS_CHANNEL)
    throw Error("unknown key axis value " + std::to_string(axis), ErrorKind::kUsage);
  kv::KvConfig kv;
  kv.k_format = to_format(raw_enum(c.k_format));
  kv.v_format = to_format(raw_enum(c.v_format));
  kv.group_size = c.group_size;
  kv.k_axis = axis == KVRT_KEY_AXIS_CHANNEL ? kv::KeyAxis::kChannel : kv::KeyAxis::kToken;
  kv.residual = c.residual;
  kv.rotate = c.rotate != 0;
  kv.sinks = c.sinks;
  for (int i = 0; i < c.n_layer_formats; ++i) {
    const kvrt_kv_layer_format& l = c.layer_formats[i];
    const int side = raw_enum(l.side);
    if (side != KVRT_KV_KEYS && side != KVRT_KV_VALUES)
      throw Error("unknown side value " + std::to_string(side) + " in layer_formats[" +
                      std::to_string(i) + "]",
                  ErrorKind::kUsage);
    kv.layers.push_back({l.layer, side == KVRT_KV_KEYS ? kv::TileRole::kKey : kv::TileRole::kValue,
                         to_format(raw_enum(l.format))});
  }
  return kv;
}

kvrt_status fail(kvrt_status status, const std::string& message) {
  try {
    t_last_error = message;
  } catch (...) {
    t_last_error.clear();
  }
  return status;
}

void clear_error() { t_last_error.clear(); }

kvrt_status status_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInput: return KVRT_ERR_INPUT;
    case ErrorKind::kUsage: return KVRT_ERR_INVALID_ARGUMENT;
    case ErrorKind::kRefused: return KVRT_ERR_REFUSED;
    case ErrorKind::kResource: return KVRT_ERR_OUT_OF_MEMORY;
    case ErrorKind::kInternal: return KVRT_ERR_INTERNAL;
  }
  return KVRT_ERR_INTERNAL;
}

kvrt_status tokenize(const kvrt_model* model, TextArg text, bool add_bos, bool parse_special,
                     TokenBuffer out, size_t* out_n_tokens) {
  KVRT_REQUIRE(model);
  KVRT_REQUIRE(out_n_tokens);
  *out_n_tokens = 0;
  if (text.data == nullptr && text.size > 0)
    return fail(KVRT_ERR_INVALID_ARGUMENT, "argument 'text' is NULL");
  if (out.tokens == nullptr && out.capacity > 0)
    return fail(KVRT_ERR_INVALID_ARGUMENT, "argument 'tokens' is NULL");
  const std::vector<int32_t> ids = model->model->tokenizer().encode(
      std::string_view(text.data ? text.data : "", text.size), add_bos, parse_special);
  return copy_out(ids.data(), ids.size(), out.tokens, out.capacity, out_n_tokens, "the token list");
}

validate::SessionRequest session_request(const kvrt_model& model, const model::SessionOptions& so,
                                         const char* record_path) {
  validate::SessionRequest r;
  r.model_path = model.path;
  r.session = so;
  r.record_path = record_path ? record_path : "";
  return r;
}

kvrt_status create_session(const kvrt_model& model, const validate::SessionRequest& request,
                           uint64_t max_memory_bytes, kvrt_session** out_session) {
  const validate::Admission admitted = validate::admit(*model.model, request);
  const size_t need = model::Session::planned_bytes(*model.model, admitted.session);
  if (max_memory_bytes > 0 && need > max_memory_bytes)
    return fail(KVRT_ERR_MEMORY_CAP, "the session needs " + std::to_string(need) +
                                         " bytes, more than the cap of " +
                                         std::to_string(max_memory_bytes) +
                                         " (lower n_ctx or choose a smaller KV format)");
  auto s = std::make_unique<kvrt_session>();
  s->owner = &model;
  s->session = validate::open_session(*model.model, admitted);
  s->kv_setting = admitted.session.kv.name();
  *out_session = s.release();
  return KVRT_OK;
}

kvrt_status eval_tokens(kvrt_session& s, const int32_t* tokens, size_t n) {
  model::Session& session = *s.session;
  const size_t room = size_t(session.n_ctx() - session.n_past());
  if (n > room)
    return fail(KVRT_ERR_CONTEXT_FULL, "context full: " + std::to_string(session.n_past()) +
                                           " of " + std::to_string(session.n_ctx()) +
                                           " positions used, " + std::to_string(n) +
                                           " more tokens do not fit");
  session.eval(tokens, int(n));
  s.has_logits = true;
  const model::Tokenizer& tok = session.model().tokenizer();
  for (size_t i = 0; i < n && !s.has_text; ++i) s.has_text = !tok.token_to_piece(tokens[i]).empty();
  return KVRT_OK;
}

}  // namespace kvrt::api

using kvrt::api::fail;
using kvrt::api::guard;

extern "C" {

const char* kvrt_last_error(void) { return kvrt::api::t_last_error.c_str(); }

const char* kvrt_status_name(kvrt_status status) {
  switch (kvrt::api::raw_enum(status)) {
    case KVRT_OK: return "KVRT_OK";
    case KVRT_ERR_INVALID_ARGUMENT: return "KVRT_ERR_INVALID_ARGUMENT";
    case KVRT_ERR_INPUT: return "KVRT_ERR_INPUT";
    case KVRT_ERR_MEMORY_CAP: return "KVRT_ERR_MEMORY_CAP";
    case KVRT_ERR_CONTEXT_FULL: return "KVRT_ERR_CONTEXT_FULL";
    case KVRT_ERR_OUT_OF_MEMORY: return "KVRT_ERR_OUT_OF_MEMORY";
    case KVRT_ERR_BUFFER_TOO_SMALL: return "KVRT_ERR_BUFFER_TOO_SMALL";
    case KVRT_ERR_REFUSED: return "KVRT_ERR_REFUSED";
    case KVRT_ERR_STOPPED: return "KVRT_ERR_STOPPED";
    case KVRT_ERR_INTERNAL: return "KVRT_ERR_INTERNAL";
    case KVRT_ERR_IN_USE: return "KVRT_ERR_IN_USE";
  }
  return "KVRT_ERR_UNKNOWN";
}

const char* kvrt_version(void) { return KVRT_VERSION; }

const char* kvrt_isa_name(void) {
  const char* name = nullptr;
  guard([&] {
    name = kvrt::simd::isa_name();
    return KVRT_OK;
  });
  return name;
}

kvrt_status kvrt_model_open(const char* path, kvrt_model** out_model) {
  return guard([&] {
    KVRT_REQUIRE(out_model);
    *out_model = nullptr;
    KVRT_REQUIRE(path);
    (void)kvrt::simd::isa_name();  // a bad KVRT_ISA fails here, before the first kernel runs
    auto m = std::make_unique<kvrt_model>();
    m->model = std::make_unique<kvrt::model::Model>(path);
    m->path = path;
    const auto& c = m->model->config();
    m->arch = c.arch;
    m->name = c.name;
    m->tokenizer = std::string(m->model->tokenizer().model_name());
    *out_model = m.release();
    return KVRT_OK;
  });
}

void kvrt_model_free(kvrt_model* model) { delete model; }

kvrt_status kvrt_model_get_info(const kvrt_model* model, kvrt_model_info* out) {
  return guard([&] {
    KVRT_REQUIRE(model);
    KVRT_REQUIRE(out);
    const auto& c = model->model->config();
    const auto& tok = model->model->tokenizer();
    *out = kvrt_model_info{model->arch.c_str(), model->name.c_str(), model->tokenizer.c_str(),
                           c.n_layers,          c.d_model,           c.n_heads,
                           c.n_kv_heads,        c.head_dim,          c.d_ff,
                           c.n_vocab,           c.n_ctx_train,       tok.bos_id(),
                           tok.eos_id()};
    return KVRT_OK;
  });
}

kvrt_status kvrt_tokenize(const kvrt_model* model, const char* text, size_t text_len, int add_bos,
                          int32_t* tokens, size_t capacity, size_t* out_n_tokens) {
  return guard([&] {
    return kvrt::api::tokenize(model, {text, text_len}, add_bos != 0, false, {tokens, capacity},
                               out_n_tokens);
  });
}

kvrt_status kvrt_detokenize(const kvrt_model* model, const int32_t* tokens, size_t n_tokens,
                            char* buf, size_t capacity, size_t* out_len) {
  return guard([&] {
    KVRT_REQUIRE(model);
    KVRT_REQUIRE(out_len);
    *out_len = 0;
    if (tokens == nullptr && n_tokens > 0)
      return fail(KVRT_ERR_INVALID_ARGUMENT, "argument 'tokens' is NULL");
    if (buf == nullptr && capacity > 0)
      return fail(KVRT_ERR_INVALID_ARGUMENT, "argument 'buf' is NULL");
    const int32_t n_vocab = model->model->tokenizer().n_vocab();
    for (size_t i = 0; i < n_tokens; ++i)
      if (tokens[i] < 0 || tokens[i] >= n_vocab)
        return fail(KVRT_ERR_INVALID_ARGUMENT, "token id " + std::to_string(tokens[i]) +
                                                   " is outside the vocabulary of " +
                                                   std::to_string(n_vocab));
    const std::string text =
        model->model->tokenizer().decode(std::vector<int32_t>(tokens, tokens + n_tokens));
    const kvrt_status st =
        kvrt::api::copy_out(text.c_str(), text.size() + 1, buf, capacity, out_len, "the text");
    *out_len = text.size();
    return st;
  });
}

void kvrt_kv_config_default(kvrt_kv_config* out) {
  if (out) *out = kvrt_kv_config{};  // f32 / f32 (0), token axis (0), every count 0
}

kvrt_status kvrt_kv_config_parse(const char* text, kvrt_kv_config* out) {
  return guard([&] {
    KVRT_REQUIRE(text);
    KVRT_REQUIRE(out);
    *out = kvrt::api::to_c_config(kvrt::kv::parse_setting(text));
    return KVRT_OK;
  });
}

void kvrt_session_options_default(kvrt_session_options* out) {
  if (!out) return;
  *out = kvrt_session_options{};
  kvrt_kv_config_default(&out->kv);
}

kvrt_status kvrt_session_bytes_required(const kvrt_model* model,
                                        const kvrt_session_options* options, uint64_t* out_bytes) {
  return guard([&] {
    KVRT_REQUIRE(model);
    KVRT_REQUIRE(options);
    KVRT_REQUIRE(out_bytes);
    *out_bytes =
        kvrt::model::Session::planned_bytes(*model->model, kvrt::api::to_options(*options));
    return KVRT_OK;
  });
}

kvrt_status kvrt_session_create(const kvrt_model* model, const kvrt_session_options* options,
                                kvrt_session** out_session) {
  return guard([&] {
    KVRT_REQUIRE(out_session);
    *out_session = nullptr;
    KVRT_REQUIRE(model);
    KVRT_REQUIRE(options);
    // Not gated: the caller checks the setting (kvrt_validation_check_setting), as kvrt.h says.
    kvrt::validate::SessionRequest request =
        kvrt::api::session_request(*model, kvrt::api::to_options(*options), nullptr);
    request.allow_unvalidated = true;
    return kvrt::api::create_session(*model, request, options->max_memory_bytes, out_session);
  });
}

void kvrt_session_free(kvrt_session* session) { delete session; }

kvrt_status kvrt_session_reset(kvrt_session* session) {
  return guard([&] {
    KVRT_REQUIRE(session);
    KVRT_CLAIM(session);
    session->session->reset();
    session->has_text = false;
    session->has_logits = false;
    return KVRT_OK;
  });
}

kvrt_status kvrt_session_get_info(const kvrt_session* session, kvrt_session_info* out) {
  return guard([&] {
    KVRT_REQUIRE(session);
    KVRT_CLAIM(session);
    KVRT_REQUIRE(out);
    const kvrt::model::Session& s = *session->session;
    const auto& kv = s.kv_cache();
    *out = kvrt_session_info{s.n_ctx(),
                             s.n_past(),
                             s.n_threads(),
                             s.bytes_allocated(),
                             kv.bytes_allocated(),
                             kv.bytes_in_use(s.n_past()),
                             kv.bytes_per_token(),
                             session->kv_setting.c_str(),
                             s.matmul_implementation()};
    return KVRT_OK;
  });
}

kvrt_status kvrt_session_eval(kvrt_session* session, const int32_t* tokens, size_t n_tokens) {
  return guard([&] {
    KVRT_REQUIRE(session);
    KVRT_CLAIM(session);
    KVRT_REQUIRE(tokens);
    if (n_tokens == 0) return fail(KVRT_ERR_INVALID_ARGUMENT, "nothing to evaluate: n_tokens is 0");
    return kvrt::api::eval_tokens(*session, tokens, n_tokens);
  });
}

kvrt_status kvrt_session_logits(const kvrt_session* session, const float** out_logits,
                                int32_t* out_n_vocab) {
  return guard([&] {
    KVRT_REQUIRE(session);
    KVRT_CLAIM(session);
    KVRT_REQUIRE(out_logits);
    *out_logits = nullptr;
    if (!session->has_logits)
      return fail(KVRT_ERR_INVALID_ARGUMENT, "no logits yet: evaluate at least one token first");
    *out_logits = session->session->last_logits();
    if (out_n_vocab) *out_n_vocab = session->owner->model->config().n_vocab;
    return KVRT_OK;
  });
}

}  // extern "C"
