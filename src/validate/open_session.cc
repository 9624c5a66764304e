#include "validate/open_session.h"

#include <optional>
#include <utility>

#include "kv/cache_layout.h"
#include "kvrt_config.h"
#include "simd/kernels.h"
#include "validate/signing_key.h"

namespace kvrt::validate {
namespace {

// The request's setting and precision, or those of the setting it names in the record.
void choose_setting(const SessionRequest& r, model::SessionOptions& so) {
  if (r.name.empty()) return;
  check_setting_name(r.name);
  const NamedSetting n = find_named_setting(r.model_path, r.record_path, simd::isa_name(), r.name);
  if (r.on_named) r.on_named(n);
  ops::require_matmul_precision(n.matmul);
  so.kv = kv::parse_setting(n.setting);
  so.matmul = n.matmul;
}

// The default f32 cache as this shape resolves it, with f32 products: the setting validate
// compares every other one with (its lane 0), and so the only one no record has to vouch for.
bool is_baseline(const kv::KvConfig& resolved, ops::MatmulPrecision matmul,
                 const kv::CacheShape& shape) {
  return matmul == ops::MatmulPrecision::kF32 &&
         resolved.name() == kv::resolve_setting(kv::KvConfig{}, shape).name();
}

}  // namespace

Admission admit(const model::Model& model, const SessionRequest& request) {
  std::optional<PublicKey> trusted;
  if (!request.trusted_key_path.empty()) trusted = read_public_key(request.trusted_key_path);
  Admission a;
  a.session = request.session;
  choose_setting(request, a.session);
  // The cache's own plan: every check a cache of these options would make (group, layer indices,
  // rotation, sliding windows), computed without allocating it.
  const kv::CacheShape shape = model::Session::cache_shape(model, a.session);
  a.session.kv = kv::plan_cache(a.session.kv, shape).setting;
  a.session.n_ctx = shape.n_ctx;
  if (is_baseline(a.session.kv, a.session.matmul, shape)) return a;
  if (request.allow_unvalidated) {
    a.kind = Admission::Kind::kUnvalidated;
    return a;
  }
  const GateQuery q{request.model_path,  a.session.kv.name(),        a.session.matmul,
                    request.record_path, simd::isa_name(),           KVRT_VERSION,
                    shape.n_ctx,         model.config().n_ctx_train, std::move(trusted)};
  a.pass = require_pass_record(q);
  a.kind = Admission::Kind::kRecord;
  return a;
}

std::unique_ptr<model::Session> open_session(const model::Model& model, const Admission& admitted) {
  return std::make_unique<model::Session>(model, admitted.session);
}

OpenedSession open_session(const model::Model& model, const SessionRequest& request) {
  OpenedSession opened;
  opened.admission = admit(model, request);
  opened.session = open_session(model, opened.admission);
  return opened;
}

}  // namespace kvrt::validate
