// Unicode helpers for the tokenizers: UTF-8 decoding and encoding, general-category flags of a
// code point (generated tables in unicode_tables.cc), and GPT-2's byte-level alphabet, which
// maps every byte to a printable code point so that byte-level BPE works on text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvrt::model::unicode {

// One general-category class per code point (regex \p{N}, \p{L}, \p{Z}, \p{M}, \p{P}, \p{S},
// \p{C}) plus the White_Space property (regex \s).
enum CpFlag : uint8_t {
  kNumber = 0x01,
  kLetter = 0x02,
  kSeparator = 0x04,
  kMark = 0x08,
  kPunctuation = 0x10,
  kSymbol = 0x20,
  kControl = 0x40,
  kWhitespace = 0x80,
};

struct CpRange {
  uint32_t first;  // the range runs to the next entry's `first` (exclusive)
  uint8_t flags;   // CpFlag bits
};

extern const CpRange kCpRanges[];  // sorted by `first`, starting at 0
extern const size_t kNumCpRanges;

constexpr uint32_t kMaxCodepoint = 0x10FFFF;

// CpFlag bits of a code point; 0 above kMaxCodepoint.
uint8_t cp_flags(uint32_t cp);

// Bytes of the UTF-8 sequence that starts with `lead`, judged from its high nibble only
// (1 for continuation bytes), as SentencePiece-style splitting does.
size_t utf8_len(uint8_t lead);

// Code points of `s`. Throws kvrt::Error naming the byte offset on a malformed sequence.
std::vector<uint32_t> utf8_to_cps(std::string_view s);

// Appends the UTF-8 encoding of `cp` (at most kMaxCodepoint).
void append_utf8(uint32_t cp, std::string& out);

// GPT-2 byte-level alphabet: byte -> code point, and back (-1 when `cp` is not in the alphabet).
uint32_t byte_to_cp(uint8_t byte);
int cp_to_byte(uint32_t cp);

}  // namespace kvrt::model::unicode
