// Candidate settings (KV cache and matmul precision) as data (validation/settings.toml) and where
// the bundled validation data lives.
#pragma once

#include <string>
#include <vector>

#include "validate/runner.h"

namespace kvrt::validate {

// $KVRT_VALIDATION_DIR, else validation/ in kvrt's data directory (common/data_dir.h).
std::string default_validation_dir();

// [[setting]] entries: label, and the setting as kv = "k=q4,v=q4,axis=channel,r=32" (the syntax of
// kv::parse_setting, per-layer formats included) and/or the single fields k, v, group, k_axis,
// residual, rotate, sinks (applied after kv), and matmul = "f32" (default) or "bf16". Errors name
// file and line.
std::vector<Setting> read_settings(const std::string& path);

// A short table label for a setting given without one, e.g. "q4/q4 ch r32", "q4/q4 norot", "q8/q8
// bf16" or "q4/q4 sinks4 layers[0,-1]=q8".
std::string setting_label(const kv::KvConfig& kv, ops::MatmulPrecision matmul);

// The negative control: q8 keys and values with every stored scale perturbed by a relative
// `scale_noise`. It must FAIL.
Setting negative_control(float scale_noise);

}  // namespace kvrt::validate
