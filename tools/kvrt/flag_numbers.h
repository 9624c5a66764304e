// Strict numbers for flag values, shared by every option of the CLI: the whole value is the number
// (no spaces, no '+', no hex, no trailing text) and its range is checked at full width before it
// is narrowed, so 4294967424 is never read as 128. Errors are kvrt::Error(kUsage) naming the flag
// and the value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvrt::cli {

// An integer from min to max.
int64_t parse_flag_int(const std::string& flag, std::string_view value, int64_t min, int64_t max);
// Any integer from 0 to 2^64 - 1.
uint64_t parse_flag_u64(const std::string& flag, std::string_view value);
// A finite number from min to max.
float parse_flag_float(const std::string& flag, std::string_view value, float min, float max);
// Integers from min to max separated by commas ("1024,4096").
std::vector<int> parse_flag_int_list(const std::string& flag, std::string_view value, int min,
                                     int max);

}  // namespace kvrt::cli
