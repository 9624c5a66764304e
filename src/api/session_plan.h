// The bytes a Session will allocate, computed from the model's shape and the options alone, so
// the C API can refuse a session over the caller's memory cap before allocating anything.
// tests/test_c_api.cc checks it against Session::bytes_allocated() for every KV setting.
#pragma once

#include <cstddef>

#include "model/config.h"
#include "model/session.h"

namespace kvrt::api {

// Same count as Session::bytes_allocated(): KV cache storage plus the per-chunk scratch.
// Throws kvrt::Error(kUsage) for options a Session would refuse (n_ctx, group size).
size_t planned_session_bytes(const model::ModelConfig& config, const model::SessionOptions& options);

// The context length a Session resolves `n_ctx` to (0 = the model's).
int resolved_n_ctx(const model::ModelConfig& config, int n_ctx);

}  // namespace kvrt::api
