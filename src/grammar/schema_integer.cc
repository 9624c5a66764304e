// Integers between bounds, digit by digit: for each length, the fixed-length decimal strings
// between two bounds, split at the first digit where they differ (the construction of
// llama.cpp's converter and of regex range generators). Bounds are exact decimal strings, so any
// magnitude works; no leading zeros, no "-0".
#include <cmath>
#include <cstdio>

#include "grammar/schema_internal.h"

namespace kvrt::grammar::detail {
namespace {

struct Bound {
  bool negative = false;
  std::string magnitude;  // decimal, no leading zeros ("0" for zero)
};

std::string strip_zeros(std::string digits) {
  const size_t nz = digits.find_first_not_of('0');
  return nz == std::string::npos ? "0" : digits.substr(nz);
}

// -1, 0, 1 as magnitudes a < b, a == b, a > b.
int compare_magnitude(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

bool less(const Bound& a, const Bound& b) {
  if (a.negative != b.negative) return a.negative;
  const int c = compare_magnitude(a.magnitude, b.magnitude);
  return a.negative ? c > 0 : c < 0;
}

std::string digit_class(int lo, int hi) {
  if (lo == hi) return "\"" + std::to_string(lo) + "\"";
  return "[" + std::to_string(lo) + "-" + std::to_string(hi) + "]";
}

std::string any_digits(size_t n) {
  if (n == 0) return "";
  return n == 1 ? "[0-9]" : "[0-9]{" + std::to_string(n) + "}";
}

std::string join(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

// Strings of lo.size() digits from lo to hi (same length, lo <= hi).
std::string fixed_length(const std::string& lo, const std::string& hi) {
  size_t common = 0;
  while (common < lo.size() && lo[common] == hi[common]) ++common;
  const std::string prefix = common ? "\"" + lo.substr(0, common) + "\"" : "";
  if (common == lo.size()) return prefix;
  const int a = lo[common] - '0', b = hi[common] - '0';
  const std::string lo_rest = lo.substr(common + 1), hi_rest = hi.substr(common + 1);
  const size_t r = lo_rest.size();
  const bool lo_zeros = lo_rest.find_first_not_of('0') == std::string::npos;
  const bool hi_nines = hi_rest.find_first_not_of('9') == std::string::npos;
  std::vector<std::string> alts;
  // First digit a takes lo_rest..9...9, b takes 0...0..hi_rest, those between take anything
  // (a and b join the middle when their part is everything).
  if (!lo_zeros)
    alts.push_back("\"" + std::to_string(a) + "\" " + fixed_length(lo_rest, std::string(r, '9')));
  const int mid_lo = lo_zeros ? a : a + 1, mid_hi = hi_nines ? b : b - 1;
  if (mid_lo <= mid_hi)
    alts.push_back(digit_class(mid_lo, mid_hi) + (r ? " " + any_digits(r) : ""));
  if (!hi_nines)
    alts.push_back("\"" + std::to_string(b) + "\" " + fixed_length(std::string(r, '0'), hi_rest));
  const std::string body = join(alts);
  return prefix.empty() ? body : prefix + " " + body;
}

// Magnitudes from lo to hi (no hi: unbounded), without leading zeros.
std::string magnitudes(const std::string& lo, const std::string* hi) {
  std::vector<std::string> alts;
  const size_t last = hi ? hi->size() : lo.size();
  for (size_t len = lo.size(); len <= last; ++len) {
    const std::string first = len == lo.size() ? lo : "1" + std::string(len - 1, '0');
    const std::string end = hi && len == hi->size() ? *hi : std::string(len, '9');
    alts.push_back(fixed_length(first, end));
  }
  if (!hi) alts.push_back("[1-9] [0-9]{" + std::to_string(lo.size()) + ",}");  // more digits
  return join(alts);
}

}  // namespace

std::string SchemaConverter::integer(const Json* minimum, const Json* maximum,
                                     const std::string& path) {
  // The bounds as exact integers: minimum rounded up, maximum rounded down.
  auto bound = [&](const Json* n, bool up, const char* key) -> std::optional<Bound> {
    if (n == nullptr) return std::nullopt;
    Bound b;
    if (n->text.find_first_of(".eE") == std::string::npos) {
      b.negative = n->text[0] == '-';
      b.magnitude = strip_zeros(n->text.substr(b.negative ? 1 : 0));
    } else {
      const double v = up ? std::ceil(n->number()) : std::floor(n->number());
      if (!std::isfinite(v)) fail(path, key, "beyond the range of a double");
      char buf[512];
      std::snprintf(buf, sizeof buf, "%.0f", std::fabs(v));
      b.negative = v < 0;
      b.magnitude = strip_zeros(buf);
    }
    if (b.magnitude == "0") b.negative = false;
    return b;
  };
  const std::optional<Bound> lo = bound(minimum, true, "minimum");
  const std::optional<Bound> hi = bound(maximum, false, "maximum");
  if (lo && hi && less(*hi, *lo)) return kNever;
  std::vector<std::string> alts;
  if (!lo || lo->negative) {  // negative values: magnitudes from max(1, -hi) to -lo
    const std::string from = hi && hi->negative ? hi->magnitude : "1";
    alts.push_back("\"-\" " + magnitudes(from, lo ? &lo->magnitude : nullptr));
  }
  if (!hi || !hi->negative)
    alts.push_back(
        magnitudes(lo && !lo->negative ? lo->magnitude : "0", hi ? &hi->magnitude : nullptr));
  std::string body;
  for (size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + alts[i];
  return rule("int-range", body) + " " + primitive("space");
}

}  // namespace kvrt::grammar::detail
