// BPE (llama.cpp's llm_tokenizer_bpe): each pre-tokenized word is mapped byte by byte to GPT-2's
// printable alphabet (byte-level vocabularies; Gemma 4's merges work on the UTF-8 text itself),
// then adjacent symbols are merged in the order of the merge list (lowest rank first; ties:
// leftmost pair) until no listed pair is left. Vocabularies that ignore merges (Llama 3) take a
// word that is itself a token whole, and Gemma 4 a run of newlines that is a token.
#include <algorithm>
#include <queue>

#include "text/symbol_merge.h"
#include "text/tokenizer_impl.h"
#include "text/unicode.h"

namespace kvrt::model::detail {
namespace {

struct Bigram {
  int left;
  int right;
  int32_t rank;
  size_t size;  // bytes of the merged piece, to detect stale entries
};

// Lowest rank first; on equal ranks the leftmost pair.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

std::string byte_encode(std::string_view word) {
  std::string out;
  out.reserve(word.size() * 2);
  for (char c : word) unicode::append_utf8(unicode::byte_to_cp(uint8_t(c)), out);
  return out;
}

class BpeWord {
 public:
  BpeWord(const Vocab& v, std::string_view word) : v_(v), word_(word) {}

  void run(std::vector<int32_t>& out) {
    for (size_t off = 0; off < word_.size();) {
      const size_t n = std::min(unicode::utf8_len(uint8_t(word_[off])), word_.size() - off);
      const int idx = int(symbols_.size());
      symbols_.push_back({idx - 1, off + n == word_.size() ? -1 : idx + 1, off, n});
      off += n;
    }
    for (int i = 1; i < int(symbols_.size()); ++i) try_add_bigram(i - 1, i);
    merge_queued_pairs(symbols_, queue_, [this](int l, int r) { try_add_bigram(l, r); });
    for (const Symbol& s : symbols_)
      if (s.n > 0) emit(word_.substr(s.offset, s.n), out);
  }

 private:
  void try_add_bigram(int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols_[left];
    const Symbol& r = symbols_[right];
    key_.assign(word_.substr(l.offset, l.n));
    key_ += ' ';
    key_ += word_.substr(r.offset, r.n);
    auto it = v_.merge_ranks.find(key_);
    if (it == v_.merge_ranks.end()) return;
    queue_.push({left, right, it->second, l.n + r.n});
  }

  // A piece that is not a token falls back to the tokens of its single bytes, where they exist
  // (the byte's symbol, or its <0xHH> token when the vocabulary is not byte-level).
  void emit(std::string_view piece, std::vector<int32_t>& out) const {
    const int32_t id = v_.find(piece);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
    for (size_t i = 0; i < piece.size(); ++i) {
      const int32_t byte_id =
          v_.byte_level ? v_.find(piece.substr(i, 1)) : v_.byte_ids[uint8_t(piece[i])];
      if (byte_id >= 0) out.push_back(byte_id);
    }
  }

  const Vocab& v_;
  std::string_view word_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
  std::string key_;  // "left right", reused across lookups
};

}  // namespace

void bpe_encode(const Vocab& v, std::string_view text, std::vector<int32_t>& out) {
  for (const std::string& word : pre_tokenize(v.pre, text)) {
    const std::string encoded = v.byte_level ? byte_encode(word) : word;
    const bool newlines = !v.byte_level && word.find_first_not_of('\n') == word.npos;
    const int32_t whole = v.ignore_merges || newlines ? v.find(encoded) : -1;
    if (whole >= 0) {
      out.push_back(whole);
    } else {
      BpeWord(v, encoded).run(out);
    }
  }
}

}  // namespace kvrt::model::detail
