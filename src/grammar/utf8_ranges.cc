#include "grammar/utf8_ranges.h"

#include <algorithm>

#include "common/error.h"

namespace kvrt::grammar {
namespace {

constexpr uint32_t kSurrogateLo = 0xD800, kSurrogateHi = 0xDFFF;

int encoded_length(uint32_t cp) {
  if (cp < 0x80) return 1;
  if (cp < 0x800) return 2;
  if (cp < 0x10000) return 3;
  return 4;
}

void encode(uint32_t cp, uint8_t* out) {
  const int n = encoded_length(cp);
  if (n == 1) {
    out[0] = uint8_t(cp);
    return;
  }
  static constexpr uint8_t kLead[] = {0, 0, 0xC0, 0xE0, 0xF0};
  for (int k = n - 1; k > 0; --k) {
    out[k] = uint8_t(0x80 | (cp & 0x3F));
    cp >>= 6;
  }
  out[0] = uint8_t(kLead[n] | cp);
}

// [lo, hi] holds no surrogate. Splits it until every piece has one length and aligned
// continuation bytes, so that each byte position spans a plain range.
void split(uint32_t lo, uint32_t hi, std::vector<Utf8Sequence>& out) {
  for (uint32_t last : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= last && last < hi) {
      split(lo, last, out);
      split(last + 1, hi, out);
      return;
    }
  }
  const int n = encoded_length(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;  // the low i continuation bytes
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split(lo, lo | m, out);
        split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split(lo, (hi & ~m) - 1, out);
        split(hi & ~m, hi, out);
        return;
      }
    }
  }
  Utf8Sequence s;
  s.n = n;
  encode(lo, s.lo);
  encode(hi, s.hi);
  out.push_back(s);
}

}  // namespace

std::vector<CodeRange> normalize_ranges(std::vector<CodeRange> ranges) {
  std::vector<CodeRange> cut;
  for (CodeRange r : ranges) {
    if (r.lo > r.hi || r.lo > kMaxCodePoint) continue;
    r.hi = std::min(r.hi, kMaxCodePoint);
    if (r.hi < kSurrogateLo || r.lo > kSurrogateHi) {
      cut.push_back(r);
      continue;
    }
    if (r.lo < kSurrogateLo) cut.push_back({r.lo, kSurrogateLo - 1});
    if (r.hi > kSurrogateHi) cut.push_back({kSurrogateHi + 1, r.hi});
  }
  std::sort(cut.begin(), cut.end(), [](CodeRange a, CodeRange b) { return a.lo < b.lo; });
  std::vector<CodeRange> merged;
  for (CodeRange r : cut) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

std::vector<CodeRange> complement_ranges(const std::vector<CodeRange>& ranges) {
  std::vector<CodeRange> out;
  uint32_t next = 0;
  for (CodeRange r : ranges) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return normalize_ranges(std::move(out));
}

std::vector<Utf8Sequence> utf8_sequences(const std::vector<CodeRange>& ranges) {
  std::vector<Utf8Sequence> out;
  for (CodeRange r : ranges) {
    KVRT_ASSERT(r.lo <= r.hi && r.hi <= kMaxCodePoint &&
                (r.hi < kSurrogateLo || r.lo > kSurrogateHi));
    split(r.lo, r.hi, out);
  }
  return out;
}

void append_utf8(uint32_t cp, std::string& out) {
  uint8_t bytes[4];
  encode(cp, bytes);
  out.append(reinterpret_cast<const char*>(bytes), size_t(encoded_length(cp)));
}

}  // namespace kvrt::grammar
