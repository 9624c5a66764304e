// A strict JSON reader (RFC 8259) for the json_valid task check: it only says whether, and where,
// one JSON value ends; it builds nothing. No extensions: no comments, trailing commas, single
// quotes, NaN, leading zeros or raw control characters in strings; strings must be valid UTF-8.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace kvrt::validate {

// Nesting deeper than this is refused (the reader recurses once per level).
constexpr int kJsonMaxDepth = 256;

// The offset just past the one JSON value that starts `text` after optional whitespace, or nullopt
// when `text` does not start with a complete, valid value. What follows the value is not read.
std::optional<size_t> json_value_end(std::string_view text);

// True when `text` is exactly one JSON value, with optional whitespace around it.
bool json_valid(std::string_view text);

}  // namespace kvrt::validate
