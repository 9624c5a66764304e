#include "kv_options.h"

#include "common/error.h"

namespace kvrt::cli {

void KvOptions::add_to(CommandLine& cl) {
  cl.add("--kv", "FMT", "KV cache format for keys and values: f32 (default), q8, q4", &both);
  cl.add("--kv-k", "FMT", "format of keys (overrides --kv)", &k);
  cl.add("--kv-v", "FMT", "format of values (overrides --kv)", &v);
  cl.add("--group", "G", "values per quantization group, 8..128 power of two (default min(32, head_dim))",
         &group, 0, 128);
  cl.add("--k-axis", "AXIS", "key quantization groups: token (along head_dim) or channel (along tokens)",
         &axis);
  cl.add("--residual", "R", "most recent tokens kept in FP32 (default 0)", &residual, 0, 1 << 20);
  cl.add_flag("--rotate", "Hadamard-rotate K, Q and V before quantization (head_dim power of two)",
              &rotate);
}

kv::KvConfig KvOptions::config() const {
  kv::KvConfig c;
  const std::string base = both.empty() ? "f32" : both;
  c.k_format = kv::parse_format(k.empty() ? base : k);
  c.v_format = kv::parse_format(v.empty() ? base : v);
  c.group_size = group;
  c.k_axis = kv::parse_key_axis(axis);
  c.residual = residual;
  c.rotate = rotate;
  return c;
}

}  // namespace kvrt::cli
