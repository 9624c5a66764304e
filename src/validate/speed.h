// Speed beside quality: each setting's prefill and decode tok/s at the validated context, from
// short timed segments on the setting's own session, on this machine.
//
// A segment needs a cache already holding the positions before it, but not their values: the
// time of attention over a KV cache does not depend on what it stores. So the cache is filled
// with synthetic keys and values (written through the cache, quantized like real ones), not by
// a forward pass over the whole context, and only the segment runs the model:
//  - prefill: one chunk of tokens whose middle is at half the context. Attention's cost grows
//    linearly with the position, so that chunk costs what an average chunk of a prefill of the
//    whole context costs: its rate is the prefill rate of that context.
//  - decode: single-token steps at the end of the context.
// Each is the best of a few repeats (the machine may be busy; the best is the least disturbed),
// and of more while the repeats have taken under min_seconds together (a small model's segment
// takes milliseconds: one scheduler tick would decide it).
#pragma once

#include "model/session.h"

namespace kvrt::validate {

struct Speed {
  double prefill_tok_s = 0;  // 0: not measured
  double decode_tok_s = 0;
};

struct SpeedOptions {
  int prefill_tokens = 256;  // one chunk, at most the session's context / 4
  int decode_tokens = 8;     // steps, at most the session's context / 4
  int repeats = 2;           // best of at least this many; 0 = not measured
  double min_seconds = 0.1;  // ... and of more (at most 64) until they took this long together
};

// Times `session` at a context of n_ctx positions (at most its own). `scratch` is storage for its
// cache (SessionState of this session); both are overwritten.
Speed measure_speed(model::Session& session, model::SessionState& scratch, int n_ctx, const SpeedOptions& o);

}  // namespace kvrt::validate
