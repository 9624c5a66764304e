// Prefix reuse: a new request that starts with tokens a session already holds evaluates only the
// rest. kvrt run --prompt-cache, kvrt chat and kvrt_session_eval_reusing share this one rule.
#pragma once

#include <cstdint>

#include "model/session.h"

namespace kvrt::model {

// Tokens at the start of a[0, n_a) and b[0, n_b) that are equal.
int common_prefix(const int32_t* a, int n_a, const int32_t* b, int n_b);

// Keeps the longest prefix of `tokens` (n > 0) the session holds and drops the rest of its
// positions; returns how many it kept, so the caller evaluates tokens[kept, n). When the session
// holds exactly `tokens` it is left as it is and n is returned: its last logits are those of the
// last token. Otherwise at most n - 1 are kept, so that evaluating the rest gives those logits.
// A cache that cannot drop positions exactly (a residual FP32 window, a sliding-window ring that
// has turned; kv::KvCache::truncate) starts over: 0.
int reuse_prefix(Session& session, const int32_t* tokens, int n);

}  // namespace kvrt::model
