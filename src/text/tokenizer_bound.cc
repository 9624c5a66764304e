// How many bytes of text one token can stand for at most, so that a caller can refuse text that
// cannot fit in a context before tokenizing all of it (tokenizing is far slower than reading).
#include <algorithm>

#include "text/tokenizer_impl.h"
#include "text/unicode.h"

namespace kvrt::model::detail {
namespace {

// BPE emits one token per merged piece when every byte symbol and every merge result is a token;
// otherwise it drops the bytes of a piece it has no token for, and no bound holds. Words are
// re-encoded UTF-8, where bytes 0xC0, 0xC1 and 0xF5-0xFF never occur.
bool bpe_keeps_every_byte(const Vocab& v) {
  std::string symbol;
  for (int b = 0; b < 256; ++b) {
    if (b == 0xC0 || b == 0xC1 || b >= 0xF5) continue;
    symbol.clear();
    unicode::append_utf8(unicode::byte_to_cp(uint8_t(b)), symbol);
    if (v.find(symbol) < 0) return false;
  }
  std::string merged;
  for (const auto& [pair, rank] : v.merge_ranks) {
    const size_t space = pair.find(' ', 1);  // as read_merges split it
    merged.assign(pair, 0, space);
    merged.append(pair, space + 1);
    if (v.find(merged) < 0) return false;
  }
  return true;
}

}  // namespace

// Every token stands for at most as many bytes as its own text: SPM spells a space as the 3-byte
// U+2581 and a byte token as "<0xHH>", byte-level BPE spells each byte as a 1- or 2-byte symbol;
// only BPE's reading of text as UTF-8 can shrink it, by at most 4 to 1 (an overlong 4-byte
// sequence of an ASCII character). Text a special token with rstrip (Phi-3) swallows has no token.
size_t max_bytes_per_token(const Vocab& v) {
  for (const TokenData& t : v.tokens)
    if (t.rstrip) return 0;
  if (v.kind == VocabKind::kBpe && !bpe_keeps_every_byte(v)) return 0;
  size_t longest = 0;
  for (const TokenData& t : v.tokens) longest = std::max(longest, t.text.size());
  return longest * (v.kind == VocabKind::kBpe ? 4 : 1);
}

}  // namespace kvrt::model::detail
