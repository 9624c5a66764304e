// The C API's validation calls (include/kvrt/kvrt.h): check a record the way `kvrt run` does,
// and run `kvrt validate` as a library call.
#include <algorithm>
#include <string>

#include "api/handles.h"
#include "validate/output_file.h"
#include "validate/record.h"
#include "validate/report.h"
#include "validate/settings.h"
#include "validate/validation.h"

struct kvrt_validation {
  std::unique_ptr<kvrt::validate::Validation> result;
  std::string record_path, report_text;
};

namespace kvrt::api {
namespace {

std::string or_empty(const char* s) { return s ? s : ""; }

validate::ValidationRequest to_request(const kvrt_model& m, const kvrt_validate_options& o) {
  if (o.n_settings > 0 && o.settings == nullptr)
    throw Error("n_settings is " + std::to_string(o.n_settings) + " but settings is NULL",
                ErrorKind::kUsage);
  if (o.max_len < 0 || o.n_threads < 0)
    throw Error("max_len and n_threads must not be negative", ErrorKind::kUsage);
  validate::ValidationRequest req;
  req.model_path = m.path;
  const ops::MatmulPrecision matmul = to_matmul(o.matmul);
  ops::require_matmul_precision(matmul);
  for (size_t i = 0; i < o.n_settings; ++i) {
    const kv::KvConfig kv = to_kv_config(o.settings[i]);
    req.settings.push_back({validate::setting_label(kv, matmul), kv, matmul});
  }
  req.settings_file = or_empty(o.settings_file);
  req.thresholds_file = or_empty(o.thresholds_file);
  req.cases_dir = or_empty(o.cases_dir);
  req.only_cases = o.only_cases != 0;
  req.max_len = o.max_len;
  if (o.use_seed) req.seed = o.seed;
  req.n_threads = o.n_threads;
  return req;
}

// The gate of the kvrt_validation_check calls: the admission a session with these options would
// get (validate/open_session.h), without the session. n_ctx 0: the model's declared context.
void check_setting(const kvrt_model& model, const kvrt_kv_config& kv, kvrt_matmul_precision matmul,
                   int32_t n_ctx, const char* record_path, const char* trusted_key_path) {
  model::SessionOptions so;
  so.n_ctx = n_ctx;
  so.kv = to_kv_config(kv);
  so.matmul = to_matmul(matmul);
  validate::SessionRequest request = session_request(model, so, record_path);
  request.trusted_key_path = trusted_key_path ? trusted_key_path : "";
  (void)validate::admit(*model.model, request);
}

}  // namespace

kvrt_verdict to_c_verdict(validate::Verdict v) {
  switch (v) {
    case validate::Verdict::kPass: return KVRT_VERDICT_PASS;
    case validate::Verdict::kFail: return KVRT_VERDICT_FAIL;
    case validate::Verdict::kInconclusive: return KVRT_VERDICT_INCONCLUSIVE;
  }
  return KVRT_VERDICT_INCONCLUSIVE;
}

}  // namespace kvrt::api

using kvrt::api::fail;
using kvrt::api::guard;

kvrt_status kvrt_validation_check(const kvrt_model* model, const kvrt_kv_config* kv,
                                  const char* record_path) {
  return kvrt_validation_check_ctx(model, kv, 0, record_path);
}

kvrt_status kvrt_validation_check_ctx(const kvrt_model* model, const kvrt_kv_config* kv,
                                      int32_t n_ctx, const char* record_path) {
  return kvrt_validation_check_setting(model, kv, KVRT_MATMUL_F32, n_ctx, record_path);
}

kvrt_status kvrt_validation_check_setting(const kvrt_model* model, const kvrt_kv_config* kv,
                                          kvrt_matmul_precision matmul, int32_t n_ctx,
                                          const char* record_path) {
  return guard([&] {
    KVRT_REQUIRE(model);
    KVRT_REQUIRE(kv);
    if (n_ctx < 0)
      return fail(KVRT_ERR_INVALID_ARGUMENT,
                  "context length " + std::to_string(n_ctx) + " is negative");
    kvrt::api::check_setting(*model, *kv, matmul, n_ctx, record_path, nullptr);
    return KVRT_OK;
  });
}

kvrt_status kvrt_validation_check_trusted(const kvrt_model* model, const kvrt_kv_config* kv,
                                          kvrt_matmul_precision matmul, int32_t n_ctx,
                                          const char* record_path, const char* trusted_key_path) {
  return guard([&] {
    KVRT_REQUIRE(model);
    KVRT_REQUIRE(kv);
    KVRT_REQUIRE(trusted_key_path);
    if (n_ctx < 0)
      return fail(KVRT_ERR_INVALID_ARGUMENT,
                  "context length " + std::to_string(n_ctx) + " is negative");
    if (!*trusted_key_path) return fail(KVRT_ERR_INVALID_ARGUMENT, "the trusted key path is empty");
    kvrt::api::check_setting(*model, *kv, matmul, n_ctx, record_path, trusted_key_path);
    return KVRT_OK;
  });
}

void kvrt_validate_options_default(kvrt_validate_options* out) {
  if (out) *out = kvrt_validate_options{};
}

kvrt_status kvrt_validate(const kvrt_model* model, const kvrt_validate_options* options,
                          kvrt_validation** out) {
  return guard([&] {
    KVRT_REQUIRE(out);
    *out = nullptr;
    KVRT_REQUIRE(model);
    KVRT_REQUIRE(options);
    namespace validate = kvrt::validate;
    const validate::ValidationRequest req = kvrt::api::to_request(*model, *options);
    const std::string json = kvrt::api::or_empty(options->json_path),
                      html = kvrt::api::or_empty(options->html_path);
    const bool write_record = options->record_path == nullptr || *options->record_path != '\0';
    if (!json.empty()) validate::check_output_path(json, "JSON report");
    if (!html.empty()) validate::check_output_path(html, "HTML report");

    auto v = std::make_unique<kvrt_validation>();
    v->result = std::make_unique<validate::Validation>();
    validate::Validation& r = *v->result;
    validate::load_inputs(*model->model, req, r);
    if (write_record)
      v->record_path = validate::prepare_record(r, kvrt::api::or_empty(options->record_path));
    validate::run(*model->model, req, r);
    v->report_text = validate::report_text(r.report);
    if (!json.empty())
      validate::write_file_atomic(json, validate::report_json(r.report), "JSON report");
    if (!html.empty())
      validate::write_file_atomic(html, validate::report_html(r.report), "HTML report");
    if (write_record)
      for (const std::string& note : validate::save_record(v->record_path, r.record))
        v->report_text += "note: " + note + "\n";
    *out = v.release();
    return KVRT_OK;
  });
}

void kvrt_validation_free(kvrt_validation* validation) { delete validation; }

size_t kvrt_validation_count(const kvrt_validation* validation) {
  return validation ? validation->result->record.settings.size() : 0;
}

kvrt_status kvrt_validation_get(const kvrt_validation* validation, size_t index,
                                kvrt_validation_entry* out) {
  return guard([&] {
    KVRT_REQUIRE(validation);
    KVRT_REQUIRE(out);
    const auto& settings = validation->result->record.settings;
    if (index >= settings.size())
      return fail(KVRT_ERR_INVALID_ARGUMENT, "validation entry " + std::to_string(index) +
                                                 " out of range (" +
                                                 std::to_string(settings.size()) + " settings)");
    const kvrt::validate::RecordSetting& s = settings[index];
    out->setting = s.name.c_str();
    out->label = s.label.c_str();
    out->verdict = kvrt::api::to_c_verdict(s.verdict);
    out->kv_bytes_per_token = s.bytes_per_token;
    out->matmul = kvrt::api::to_c_matmul(s.matmul);
    return KVRT_OK;
  });
}

const char* kvrt_validation_record_path(const kvrt_validation* validation) {
  return validation ? validation->record_path.c_str() : "";
}

int32_t kvrt_validation_context(const kvrt_validation* validation) {
  return validation ? validation->result->report.max_len : 0;
}

const char* kvrt_validation_report(const kvrt_validation* validation) {
  return validation ? validation->report_text.c_str() : "";
}
