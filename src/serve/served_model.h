// What the server serves, as /v1/models and every response's system_fingerprint name it: the
// model, the KV setting and the precision of the prefill products, the context, and what let the
// setting through the gate (a PASS record at that context, the FP32 baseline, or
// --allow-unvalidated).
#pragma once

#include <string>

namespace kvrt::serve {

struct ServedModel {
  std::string id;          // the name clients give as "model": the file name without .gguf
  std::string kv_setting;  // kv::KvConfig::name()
  std::string matmul;      // ops::matmul_precision_name()
  int n_ctx = 0;           // positions of every slot
  std::string gate;        // "record", "baseline" or "unvalidated"
  std::string record;      // the record's path when gate is "record"

  // "kvrt-VERSION | kv SETTING | matmul PRECISION | validated ctx N" (a record), or ending
  // "| ctx N, FP32 baseline" or "| ctx N, UNVALIDATED".
  std::string fingerprint() const;
};

}  // namespace kvrt::serve
