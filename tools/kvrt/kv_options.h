// KV-cache flags shared by run, chat, bench and validate: --kv SETTING (the syntax of
// kv::parse_setting), then single fields that override it: --kv-k, --kv-v, --group, --k-axis,
// --residual, --rotate.
#pragma once

#include <string>

#include "command_line.h"
#include "kv/kv_config.h"

namespace kvrt::cli {

struct KvOptions {
  std::string setting, k, v, axis;  // empty: not given
  int group = -1;                   // -1: not given
  int residual = -1;
  bool rotate = false;

  void add_to(CommandLine& cl);
  bool formats_given() const { return !setting.empty() || !k.empty() || !v.empty(); }
  kv::KvConfig config() const;  // throws kvrt::Error(kUsage) naming the bad field
};

}  // namespace kvrt::cli
