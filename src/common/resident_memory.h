// The process's resident memory (RSS): what `kvrt info` and `run` report beside the model file's
// size, so a packed model can be seen to cost its file size plus the cache, not a widened copy.
#pragma once

#include <cstddef>
#include <optional>

namespace kvrt {

// Resident bytes of this process now (Linux: /proc/self/statm); nothing where it is unknown.
std::optional<size_t> resident_bytes();

}  // namespace kvrt
