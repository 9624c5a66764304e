// What run, chat and info print about a KV cache: its size, and the bytes per token of each
// layer kind (full and sliding-window, with the positions a sliding-window layer stops at).
#pragma once

#include <string>

#include "kv/cache_layout.h"
#include "model/session.h"

namespace kvrt::cli {

// "26 full layers 13312 bytes/token" or, with sliding windows, "13 full layers 6656 bytes/token;
// 13 sliding-window layers (window 4096) 6656 bytes/token, up to 4352 positions (28.3 MiB)".
std::string layer_kinds(const kv::CacheLayout& layout);

// The cache's lines of a run or chat report, on stderr.
void report_kv_cache(const model::Session& session);

}  // namespace kvrt::cli
