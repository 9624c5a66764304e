// SentencePiece-style BPE (llama.cpp's llm_tokenizer_spm): start from UTF-8 characters and
// repeatedly merge the adjacent pair whose concatenation is the vocabulary token with the
// highest score (ties: leftmost pair); pieces left that are not tokens become byte tokens.
#include <algorithm>
#include <queue>

#include "common/error.h"
#include "text/symbol_merge.h"
#include "text/tokenizer_impl.h"
#include "text/unicode.h"

namespace kvrt::model::detail {
namespace {

struct Bigram {
  int left;
  int right;
  float score;
  size_t size;  // bytes of the merged piece, to detect stale entries
};

// Highest score first; on equal scores the leftmost pair.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

class SpmSession {
 public:
  SpmSession(const Vocab& v, std::string_view text) : v_(v), text_(text) {}

  void run(std::vector<int32_t>& out) {
    split_chars();
    for (int i = 1; i < int(symbols_.size()); ++i) try_add_bigram(i - 1, i);
    merge_queued_pairs(symbols_, queue_, [this](int l, int r) { try_add_bigram(l, r); });
    for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next) emit(symbols_[i], out);
  }

 private:
  void split_chars() {
    for (size_t off = 0; off < text_.size();) {
      const size_t n = std::min(unicode::utf8_len(uint8_t(text_[off])), text_.size() - off);
      const int idx = int(symbols_.size());
      symbols_.push_back({idx - 1, off + n == text_.size() ? -1 : idx + 1, off, n});
      off += n;
    }
  }

  void try_add_bigram(int left, int right) {
    if (left < 0 || right < 0) return;
    const size_t size = symbols_[left].n + symbols_[right].n;
    const int32_t id = v_.find(text_.substr(symbols_[left].offset, size));
    if (id < 0) return;
    queue_.push({left, right, v_.tokens[id].score, size});
  }

  void emit(const Symbol& s, std::vector<int32_t>& out) const {
    const std::string_view piece = text_.substr(s.offset, s.n);
    const int32_t id = v_.find(piece);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
    for (char c : piece) {
      const int32_t byte_id = v_.byte_ids[uint8_t(c)];
      if (byte_id < 0)
        throw Error("'" + v_.path + "': the vocabulary has no byte token for byte " +
                    std::to_string(uint8_t(c)) + " of text piece '" + std::string(piece) + "'");
      out.push_back(byte_id);
    }
  }

  const Vocab& v_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
};

}  // namespace

void spm_encode(const Vocab& v, std::string_view text, std::vector<int32_t>& out) {
  SpmSession(v, text).run(out);
}

}  // namespace kvrt::model::detail
