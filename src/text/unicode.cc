#include "text/unicode.h"

#include <algorithm>
#include <array>

#include "common/error.h"

namespace kvrt::model::unicode {
namespace {

// GPT-2 keeps the printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') as themselves and
// moves the other 68 bytes, in order, to U+0100, U+0101, ...
constexpr bool byte_is_printable(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

constexpr int kNumMovedBytes = 68;

constexpr std::array<uint16_t, 256> make_byte_to_cp() {
  std::array<uint16_t, 256> t{};
  int n_moved = 0;
  for (int b = 0; b < 256; ++b) t[b] = byte_is_printable(b) ? b : 256 + n_moved++;
  return t;
}

constexpr std::array<uint8_t, kNumMovedBytes> make_moved_bytes() {
  std::array<uint8_t, kNumMovedBytes> t{};
  int n_moved = 0;
  for (int b = 0; b < 256; ++b)
    if (!byte_is_printable(b)) t[n_moved++] = uint8_t(b);
  return t;
}

constexpr std::array<uint16_t, 256> kByteToCp = make_byte_to_cp();
constexpr std::array<uint8_t, kNumMovedBytes> kMovedBytes = make_moved_bytes();
static_assert(kByteToCp[' '] == 0x120 && kByteToCp['\n'] == 0x10A, "GPT-2 maps ' ' to 'Ġ'");

[[noreturn]] void bad_utf8(size_t offset) {
  throw Error("text is not valid UTF-8 at byte offset " + std::to_string(offset));
}

}  // namespace

uint8_t cp_flags(uint32_t cp) {
  if (cp > kMaxCodepoint) return 0;
  auto before = [](uint32_t c, const CpRange& r) { return c < r.first; };
  const CpRange* it = std::upper_bound(kCpRanges, kCpRanges + kNumCpRanges, cp, before);
  return (it - 1)->flags;
}

size_t utf8_len(uint8_t lead) {
  static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[lead >> 4];
}

std::vector<uint32_t> utf8_to_cps(std::string_view s) {
  std::vector<uint32_t> cps;
  cps.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const uint8_t lead = uint8_t(s[i]);
    // Sequence length from the lead byte; 0 for a continuation byte or an invalid lead.
    const size_t n = lead < 0x80   ? 1
                     : lead < 0xC0 ? 0
                     : lead < 0xE0 ? 2
                     : lead < 0xF0 ? 3
                     : lead < 0xF8 ? 4
                                   : 0;
    if (n == 0 || i + n > s.size()) bad_utf8(i);
    uint32_t cp = n == 1 ? lead : lead & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
      const uint8_t c = uint8_t(s[i + k]);
      if ((c & 0xC0) != 0x80) bad_utf8(i);
      cp = (cp << 6) | (c & 0x3F);
    }
    if (cp > kMaxCodepoint) bad_utf8(i);
    cps.push_back(cp);
    i += n;
  }
  return cps;
}

void append_utf8(uint32_t cp, std::string& out) {
  KVRT_ASSERT(cp <= kMaxCodepoint);
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

uint32_t byte_to_cp(uint8_t byte) { return kByteToCp[byte]; }

int cp_to_byte(uint32_t cp) {
  if (cp < 256) return byte_is_printable(int(cp)) ? int(cp) : -1;
  if (cp < 256 + kNumMovedBytes) return kMovedBytes[cp - 256];
  return -1;
}

}  // namespace kvrt::model::unicode
