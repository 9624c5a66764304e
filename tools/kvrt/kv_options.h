// KV-cache flags shared by run, bench and validate: --kv, --kv-k, --kv-v, --group, --k-axis,
// --residual, --rotate.
#pragma once

#include <string>

#include "command_line.h"
#include "kv/kv_config.h"

namespace kvrt::cli {

struct KvOptions {
  std::string both, k, v, axis = "token";
  int group = 0;
  int residual = 0;
  bool rotate = false;

  void add_to(CommandLine& cl);
  kv::KvConfig config() const;  // throws kvrt::Error(kUsage) for an unknown format name
};

}  // namespace kvrt::cli
