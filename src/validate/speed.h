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
//
// A busy machine (other jobs on the same cores) takes the cores from a segment for whole
// scheduler slices. Two defences:
//  - the kernel's count of the time this process's threads waited, runnable, for a core
//    (/proc/self/task/*/schedstat) marks each segment that lost more than kMaxStolenShare of its
//    time as disturbed: a long segment under steady load is slowed evenly, so its repeats agree
//    with each other and only this count shows it;
//  - the settings are timed in turns, one segment each per round, so a burst of load falls on all
//    of them alike rather than on the one timed during it.
// Each rate is that of its fastest undisturbed segment. Rounds repeat until every setting has
// kMinUndisturbed undisturbed segments and the third-fastest of them is within `target_spread` of
// the fastest, or until `max_seconds`. That relative gap is the reported spread; a rate with fewer
// undisturbed segments, or a spread above kUnreliableSpread, is UNRELIABLE, and --prefer speed
// never picks on it (validate/recommend.h). Where the kernel does not report waiting time, every
// segment counts as undisturbed and the spread alone decides.
#pragma once

#include <vector>

#include "model/session.h"

namespace kvrt::validate {

// A spread above this after the last round: the machine's load decided the rate, not the setting.
constexpr double kUnreliableSpread = 0.10;
// A segment whose threads waited for a core longer than this share of its time is disturbed.
constexpr double kMaxStolenShare = 0.02;
// Undisturbed segments a rate needs to be reliable.
constexpr int kMinUndisturbed = 3;

struct Speed {
  double prefill_tok_s = 0;  // 0: not measured
  double decode_tok_s = 0;
  double prefill_spread =
      0;  // over the undisturbed segments: (third-fastest's time / fastest's) - 1
  double decode_spread = 0;
  int repeats = 0;                                      // segments of each kind timed
  int prefill_undisturbed = 0, decode_undisturbed = 0;  // of those, the ones not disturbed

  bool prefill_reliable() const {
    return prefill_undisturbed >= kMinUndisturbed && prefill_spread <= kUnreliableSpread;
  }
  bool decode_reliable() const {
    return decode_undisturbed >= kMinUndisturbed && decode_spread <= kUnreliableSpread;
  }
};

struct SpeedOptions {
  int prefill_tokens = 256;  // one chunk, at most the session's context / 4
  int decode_tokens = 8;     // steps, at most the session's context / 4
  int repeats = 3;           // rounds at least; 0 = not measured
  double min_seconds = 0.1;  // ... and more until each setting's segments took this long together
  double target_spread =
      0.03;  // ... and more until every spread of kMinUndisturbed segments is at most this
  double max_seconds = 6;  // ... but no more rounds once prefill or decode took half this
};

// One session to time and where its result goes. `scratch` is storage for its cache (a
// SessionState of this session); both are overwritten.
struct SpeedLane {
  model::Session* session = nullptr;
  model::SessionState* scratch = nullptr;
  Speed* out = nullptr;
};

// Times every lane at a context of n_ctx positions (at most each session's own), in turns.
void measure_speeds(const std::vector<SpeedLane>& lanes, int n_ctx, const SpeedOptions& o);

// The spread of a set of segment times (seconds): third-fastest / fastest - 1, or with fewer than
// three, the slowest / fastest - 1; 0 for one time.
double time_spread(std::vector<double> seconds);

}  // namespace kvrt::validate
