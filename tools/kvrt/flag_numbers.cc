#include "flag_numbers.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "common/error.h"

namespace kvrt::cli {
namespace {

[[noreturn]] void bad_value(const std::string& flag, std::string_view v, const std::string& why) {
  throw Error("invalid value '" + std::string(v) + "' for " + flag + ": " + why, ErrorKind::kUsage);
}

// The number `value` spells, whole; false for anything else (empty, partial, out of T's range).
template <typename T>
bool parse_whole(std::string_view value, T& out) {
  if (value.empty()) return false;
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, out);
  return ec == std::errc() && ptr == end;
}

std::string range_text(int64_t min, int64_t max) {
  return "must be an integer between " + std::to_string(min) + " and " + std::to_string(max);
}

}  // namespace

int64_t parse_flag_int(const std::string& flag, std::string_view value, int64_t min, int64_t max) {
  int64_t x = 0;
  if (!parse_whole(value, x) || x < min || x > max) bad_value(flag, value, range_text(min, max));
  return x;
}

uint64_t parse_flag_u64(const std::string& flag, std::string_view value) {
  uint64_t x = 0;
  if (!parse_whole(value, x))
    bad_value(flag, value, "expected an integer from 0 to 18446744073709551615");
  return x;
}

float parse_flag_float(const std::string& flag, std::string_view value, float min, float max) {
  float x = 0;
  if (!parse_whole(value, x) || !std::isfinite(x)) bad_value(flag, value, "expected a number");
  if (x < min || x > max)
    bad_value(flag, value,
              "must be between " + std::to_string(min) + " and " + std::to_string(max));
  return x;
}

std::vector<int> parse_flag_int_list(const std::string& flag, std::string_view value, int min,
                                     int max) {
  std::vector<int> out;
  for (size_t at = 0; at <= value.size();) {
    const size_t comma = std::min(value.find(',', at), value.size());
    int64_t x = 0;
    if (!parse_whole(value.substr(at, comma - at), x) || x < min || x > max)
      bad_value(flag, value,
                "expected integers between " + std::to_string(min) + " and " + std::to_string(max) +
                    " separated by commas");
    out.push_back(int(x));
    at = comma + 1;
  }
  return out;
}

}  // namespace kvrt::cli
