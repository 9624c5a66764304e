#include "validate/speed.h"

#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>

namespace kvrt::validate {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The state of a session after positions [0, n_past) holding synthetic keys and values, written
// through the cache as a forward pass writes them (so quantized, windowed and rotated alike).
void fill(model::SessionState& state, const model::ModelConfig& c, int n_past) {
  constexpr int kChunk = 64;
  const size_t row = size_t(c.n_kv_heads) * size_t(c.head_dim);
  std::vector<float> k(kChunk * row), v(kChunk * row);  // [kChunk][n_kv_heads][head_dim]
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  state.kv->clear();
  for (int pos = 0; pos < n_past; pos += kChunk) {
    const int n = std::min(kChunk, n_past - pos);
    for (int layer = 0; layer < c.n_layers; ++layer) {
      for (size_t i = 0; i < size_t(n) * row; ++i) k[i] = normal(rng), v[i] = normal(rng);
      state.kv->write(layer, pos, n, k.data(), v.data());
    }
  }
  state.n_past = n_past;
  std::fill(state.last_logits.begin(), state.last_logits.end(), 0.0f);
}

std::vector<int32_t> some_tokens(int n, int n_vocab) {
  std::vector<int32_t> t(size_t(n), 0);
  for (int i = 0; i < n; ++i) t[size_t(i)] = int32_t((int64_t(i) * 7919 + 13) % n_vocab);
  return t;
}

// Nanoseconds the threads of this process have spent runnable but waiting for a core (the second
// field of /proc/self/task/TID/schedstat, summed), or -1 where the kernel does not report it.
int64_t waited_ns() {
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  int64_t total = 0;
  bool any = false;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%.20s/schedstat", e->d_name);
    if (std::FILE* f = std::fopen(path, "r")) {
      long long on_cpu = 0, waiting = 0;
      if (std::fscanf(f, "%lld %lld", &on_cpu, &waiting) == 2) total += waiting, any = true;
      std::fclose(f);
    }
  }
  ::closedir(dir);
  return any ? total : -1;
}

// One kind of segment (a prefill chunk, or decode steps) on every lane.
struct Segment {
  int n_tokens = 0;
  int n_past = 0;  // positions in the cache before it
  bool one_by_one = false;
};

// The times of one lane's segments: all, and the undisturbed ones.
struct Times {
  std::vector<double> all, undisturbed;
};

// Times `seg` on every lane, one segment per lane per round, starting each round at the next lane.
std::vector<Times> time_rounds(const std::vector<SpeedLane>& lanes, const Segment& seg,
                               const SpeedOptions& o) {
  constexpr int kMaxRounds = 64;
  const model::ModelConfig& c = lanes[0].session->model().config();
  const std::vector<int32_t> tokens = some_tokens(seg.n_tokens, c.n_vocab);
  for (const SpeedLane& l : lanes) fill(*l.scratch, c, seg.n_past);
  std::vector<Times> times(lanes.size());
  const Clock::time_point start = Clock::now();
  const auto done = [&](int round) {
    if (round < o.repeats) return false;
    if (round >= kMaxRounds || seconds_since(start) >= o.max_seconds / 2) return true;
    for (const Times& t : times) {
      double total = 0;
      for (double x : t.all) total += x;
      if (total < o.min_seconds || int(t.undisturbed.size()) < kMinUndisturbed ||
          time_spread(t.undisturbed) > o.target_spread)
        return false;
    }
    return true;
  };
  for (int round = 0; !done(round); ++round) {
    for (size_t i = 0; i < lanes.size(); ++i) {
      const size_t lane = (i + size_t(round)) % lanes.size();
      const SpeedLane& l = lanes[lane];
      l.session->restore(*l.scratch);
      const int64_t waited0 = waited_ns();
      const Clock::time_point t0 = Clock::now();
      if (seg.one_by_one) {
        for (const int32_t& t : tokens) l.session->eval(&t, 1);
      } else {
        l.session->eval(tokens.data(), int(tokens.size()));
      }
      const double t = std::max(seconds_since(t0), 1e-9);
      const int64_t waited1 = waited_ns();
      times[lane].all.push_back(t);
      if (waited0 < 0 || waited1 < 0 || double(waited1 - waited0) * 1e-9 <= kMaxStolenShare * t)
        times[lane].undisturbed.push_back(t);
    }
  }
  return times;
}

// The rate of `n_tokens` per segment: of the fastest undisturbed segment, or of the fastest of all
// when none was (and then UNRELIABLE: the counts say so).
void rate_of(const Times& t, int n_tokens, double& tok_s, double& spread, int& n_undisturbed) {
  const std::vector<double>& use = t.undisturbed.empty() ? t.all : t.undisturbed;
  tok_s = n_tokens / *std::min_element(use.begin(), use.end());
  spread = time_spread(use);
  n_undisturbed = int(t.undisturbed.size());
}

}  // namespace

double time_spread(std::vector<double> seconds) {
  if (seconds.size() < 2) return 0;
  std::sort(seconds.begin(), seconds.end());
  return seconds[std::min<size_t>(2, seconds.size() - 1)] / seconds[0] - 1;
}

void measure_speeds(const std::vector<SpeedLane>& lanes, int n_ctx, const SpeedOptions& o) {
  if (lanes.empty() || o.repeats <= 0) return;
  for (const SpeedLane& l : lanes) n_ctx = std::min(n_ctx, l.session->n_ctx());
  if (n_ctx < 4) return;
  const int n_prefill = std::max(1, std::min(o.prefill_tokens, n_ctx / 4));
  const int n_decode = std::max(1, std::min(o.decode_tokens, n_ctx / 4));
  const std::vector<Times> prefill =
      time_rounds(lanes, {n_prefill, n_ctx / 2 - n_prefill / 2, false}, o);
  const std::vector<Times> decode = time_rounds(lanes, {n_decode, n_ctx - n_decode, true}, o);
  for (size_t i = 0; i < lanes.size(); ++i) {
    Speed& s = *lanes[i].out;
    rate_of(prefill[i], n_prefill, s.prefill_tok_s, s.prefill_spread, s.prefill_undisturbed);
    rate_of(decode[i], n_decode, s.decode_tok_s, s.decode_spread, s.decode_undisturbed);
    s.repeats = int(std::min(prefill[i].all.size(), decode[i].all.size()));
    lanes[i].session->reset();
  }
}

}  // namespace kvrt::validate
