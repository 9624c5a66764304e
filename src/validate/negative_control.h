// The negative control of kvrt validate: a q8/q8 cache whose stored scales are damaged on purpose
// (a relative error of up to `scale_noise`), which must FAIL. The damage is done here, in the
// test harness, through the session's after_cache_write hook: the product cache knows nothing of
// it.
#pragma once

#include <functional>
#include <string>

#include "kv/kv_cache.h"

namespace kvrt::validate {

// The hook that damages, after each write of a layer, the scales of every token tile position
// packed since the last call (kvrt::Error(kUsage) for caches without token tiles). With `layer`
// >= 0 only that layer is damaged, and only its sides stored in token tiles: an FP32 side has no
// scales, so storing it in FP32 protects it (kvrt tune's known-answer test).
std::function<void(kv::KvCache&, int layer, int pos0, int n_tokens)> scale_damage(float scale_noise,
                                                                                  int layer = -1);

// The name a damaged setting is recorded under: the cache's name with ",noise=<scale_noise>" (and
// ",noise_layer=<layer>"), so it can never stand for the undamaged setting in a record.
std::string damaged_name(const kv::KvConfig& kv, float scale_noise, int layer = -1);

}  // namespace kvrt::validate
