#include "kv_report.h"

#include <cstdio>

namespace kvrt::cli {

namespace {

std::string format(const char* fmt, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

}  // namespace

std::string layer_kinds(const kv::CacheLayout& layout) {
  std::string out;
  for (const kv::LayerKind& k : layout.layer_kinds()) {
    if (!out.empty()) out += "; ";
    out += std::to_string(k.n_layers) +
           (k.sliding_window == 0
                ? " full layers "
                : " sliding-window layers (window " + std::to_string(k.sliding_window) + ") ");
    out += format("%.1f", k.bytes_per_token) + " bytes/token";
    if (k.sliding_window > 0)
      out += ", up to " + std::to_string(k.kept) + " positions (" +
             format("%.1f", double(k.packed_bytes) / (1 << 20)) + " MiB)";
  }
  return out;
}

void report_kv_cache(const model::Session& s) {
  const kv::KvCache& kv = s.kv_cache();
  std::fprintf(
      stderr,
      "kvrt: KV cache %s: %.1f bytes/token, %zu bytes in use (%d positions), %zu allocated\n",
      kv.config().name().c_str(), kv.bytes_per_token(), kv.bytes_in_use(s.n_past()), s.n_past(),
      kv.bytes_allocated());
  if (!kv.shape().windows.empty())
    std::fprintf(stderr, "kvrt: KV layers: %s\n", layer_kinds(kv.layout()).c_str());
}

}  // namespace kvrt::cli
