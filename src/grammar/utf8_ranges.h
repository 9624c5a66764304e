// Code-point ranges as UTF-8 byte sequences: the grammar matches bytes, so a character class
// becomes the few byte sequences that spell exactly its code points (the split of Russ Cox's
// RE2 and Rust's regex-syntax Utf8Sequences). A token that ends inside a character is then simply
// a matcher state in the middle of a sequence.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvrt::grammar {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

struct CodeRange {
  uint32_t lo, hi;  // inclusive
  bool operator==(const CodeRange&) const = default;
};

// One byte sequence: byte k lies in [lo[k], hi[k]], for k < n (1 to 4).
struct Utf8Sequence {
  int n = 0;
  uint8_t lo[4] = {}, hi[4] = {};
};

// Sorts and merges `ranges`, removes the surrogates U+D800..U+DFFF (no UTF-8 text holds them) and
// what lies above U+10FFFF.
std::vector<CodeRange> normalize_ranges(std::vector<CodeRange> ranges);

// The complement of normalized `ranges` within the valid code points.
std::vector<CodeRange> complement_ranges(const std::vector<CodeRange>& ranges);

// Byte sequences that spell exactly the code points of normalized `ranges`, none a prefix of
// another, in increasing order.
std::vector<Utf8Sequence> utf8_sequences(const std::vector<CodeRange>& ranges);

// Appends the UTF-8 bytes of `cp` (a valid code point).
void append_utf8(uint32_t cp, std::string& out);

}  // namespace kvrt::grammar
