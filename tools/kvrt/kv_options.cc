#include "kv_options.h"

#include <string>

#include "common/error.h"
#include "kv/formats.h"

namespace kvrt::cli {

void KvOptions::add_to(CommandLine& cl) {
  cl.add("--kv", "SETTING",
         std::string("KV cache setting: a format for keys and values (f32 default, ") +
             kv::format_names() +
             "), then fields k=, v=, g=, axis=, r=, rot=, sinks= and per-layer formats "
             "layers[LIST]=, k[LIST]=, v[LIST]= "
             "(negative indices count from the last layer); e.g. q8, k=q8,v=q4, "
             "q4,axis=channel,r=32 or q4,sinks=4,layers[0,-1]=q8; "
             "run, chat and serve also take a name kvrt tune wrote into the record (tuned)",
         &setting);
  cl.add("--kv-k", "FMT", "format of keys (the k= field)", &k);
  cl.add("--kv-v", "FMT", "format of values (the v= field)", &v);
  cl.add(
      "--group", "G",
      "values per quantization group, dividing head_dim (default: the largest that fits, up to 32)",
      &group, 0, 128);
  cl.add("--k-axis", "AXIS",
         "key quantization groups: token (along head_dim) or channel (along tokens)", &axis);
  cl.add("--residual", "R", "most recent tokens kept in FP32 (default 0)", &residual, 0, 1 << 20);
  cl.add_flag("--rotate",
              "Hadamard-rotate K, Q and V before quantization (the default of a quantized setting; "
              "rot=0 turns it off)",
              &rotate);
  cl.add("--matmul", "PREC",
         "precision of the prefill matrix products: f32 (default) or bf16 (CPUs with AVX512-BF16 "
         "or AMX; "
         "validated like a KV setting)",
         &matmul);
}

ops::MatmulPrecision KvOptions::matmul_precision() const {
  if (matmul.empty()) return ops::MatmulPrecision::kF32;
  const ops::MatmulPrecision p = ops::parse_matmul_precision(matmul);
  ops::require_matmul_precision(p);
  return p;
}

kv::SettingReader KvOptions::reader() const {
  kv::SettingReader r;
  if (!setting.empty()) r.text(setting);
  if (!k.empty()) r.field("k", k);
  if (!v.empty()) r.field("v", v);
  if (!axis.empty()) r.field("axis", axis);
  if (group >= 0) r.field("g", std::to_string(group));
  if (residual >= 0) r.field("r", std::to_string(residual));
  if (rotate) r.field("rot", "1");
  return r;
}

kv::KvConfig KvOptions::config() const { return reader().finish(); }

}  // namespace kvrt::cli
