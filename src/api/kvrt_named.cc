// The C API's named settings (include/kvrt/kvrt.h): list the settings `kvrt tune` named in a
// validation record, and open a session with one through the gate, as `kvrt run --kv NAME` does.
#include <string>
#include <vector>

#include "api/handles.h"
#include "simd/kernels.h"
#include "validate/named_setting.h"

struct kvrt_named_settings {
  kvrt::validate::NamedSettings list;
};

using kvrt::api::fail;
using kvrt::api::guard;

kvrt_status kvrt_named_settings_read(const kvrt_model* model, const char* record_path,
                                     kvrt_named_settings** out) {
  return guard([&] {
    KVRT_REQUIRE(out);
    *out = nullptr;
    KVRT_REQUIRE(model);
    auto n = std::make_unique<kvrt_named_settings>();
    n->list = kvrt::validate::list_named_settings(model->path, record_path ? record_path : "",
                                                  kvrt::simd::isa_name());
    *out = n.release();
    return KVRT_OK;
  });
}

void kvrt_named_settings_free(kvrt_named_settings* settings) { delete settings; }

size_t kvrt_named_settings_count(const kvrt_named_settings* settings) {
  return settings ? settings->list.settings.size() : 0;
}

kvrt_status kvrt_named_settings_get(const kvrt_named_settings* settings, size_t index,
                                    kvrt_named_setting* out) {
  return guard([&] {
    KVRT_REQUIRE(settings);
    KVRT_REQUIRE(out);
    const std::vector<kvrt::validate::RecordSetting>& all = settings->list.settings;
    if (index >= all.size())
      return fail(KVRT_ERR_INVALID_ARGUMENT, "named setting " + std::to_string(index) +
                                                 " out of range (" + std::to_string(all.size()) +
                                                 " named)");
    const kvrt::validate::RecordSetting& s = all[index];
    *out = kvrt_named_setting{s.tune_name.c_str(),
                              s.name.c_str(),
                              kvrt::api::to_c_verdict(s.verdict),
                              s.n_ctx,
                              s.bytes_per_token,
                              kvrt::api::to_c_matmul(s.matmul)};
    return KVRT_OK;
  });
}

const char* kvrt_named_settings_record_path(const kvrt_named_settings* settings) {
  return settings ? settings->list.record_path.c_str() : "";
}

kvrt_status kvrt_session_create_named(const kvrt_model* model, const char* name,
                                      const char* record_path, const kvrt_session_options* options,
                                      kvrt_session** out_session) {
  return guard([&] {
    KVRT_REQUIRE(out_session);
    *out_session = nullptr;
    KVRT_REQUIRE(model);
    KVRT_REQUIRE(name);
    KVRT_REQUIRE(options);
    kvrt::validate::check_setting_name(name);
    kvrt_session_options plain =
        *options;  // the named setting replaces the struct's KV setting and matmul
    kvrt_kv_config_default(&plain.kv);
    plain.matmul = KVRT_MATMUL_F32;
    kvrt::validate::SessionRequest request =
        kvrt::api::session_request(*model, kvrt::api::to_options(plain), record_path);
    request.name = name;
    return kvrt::api::create_session(*model, request, options->max_memory_bytes, out_session);
  });
}
