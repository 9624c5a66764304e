// The precision flags shared by run, chat and validate, the settings a validation record binds:
// the KV cache, --kv SETTING (the syntax of kv::parse_setting), then single fields that override
// it: --kv-k, --kv-v, --group, --k-axis, --residual, --rotate; and the prefill products, --matmul.
#pragma once

#include <string>

#include "command_line.h"
#include "kv/kv_config.h"
#include "ops/matmul.h"

namespace kvrt::cli {

struct KvOptions {
  std::string setting, k, v, axis;  // empty: not given
  int group = -1;                   // -1: not given
  int residual = -1;
  bool rotate = false;
  std::string matmul;  // empty: not given (f32)

  void add_to(CommandLine& cl);
  bool formats_given() const { return !setting.empty() || !k.empty() || !v.empty(); }
  bool given() const { return formats_given() || !matmul.empty(); }
  kv::KvConfig config() const;       // throws kvrt::Error(kUsage) naming the bad field
  kv::SettingReader reader() const;  // the fields given, before finish() settles the rotation
  // --matmul, checked against this CPU: a precision it cannot run is a kvrt::Error(kUsage) saying
  // why.
  ops::MatmulPrecision matmul_precision() const;
};

}  // namespace kvrt::cli
