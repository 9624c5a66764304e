#include "grammar/vocabulary.h"

#include <algorithm>

#include "common/error.h"
#include "text/tokenizer.h"

namespace kvrt::grammar {
namespace {

// Pieces longer than this never match (no tokenizer kvrt reads has one; it keeps depth 16-bit).
constexpr size_t kMaxPieceBytes = 4096;

}  // namespace

Vocabulary::Vocabulary(const std::vector<std::string>& pieces, std::vector<int32_t> eog)
    : n_vocab_(int32_t(pieces.size())), pieces_(pieces), eog_(std::move(eog)) {
  std::sort(eog_.begin(), eog_.end());
  eog_.erase(std::unique(eog_.begin(), eog_.end()), eog_.end());
  for (int32_t id : eog_)
    if (id < 0 || id >= n_vocab_)
      throw Error("grammar: end-of-generation token " + std::to_string(id) +
                  " is not in the vocabulary of " + std::to_string(n_vocab_) + " tokens");
  // Tokens sorted by piece: a depth-first walk of the trie visits them in this order.
  std::vector<int32_t> order;
  for (int32_t id = 0; id < n_vocab_; ++id) {
    const std::string& p = pieces_[size_t(id)];
    if (!p.empty() && p.size() <= kMaxPieceBytes && !is_end_of_generation(id)) order.push_back(id);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return pieces_[size_t(a)] < pieces_[size_t(b)]; });
  // Nodes on the path of the previous piece stay open until a piece leaves them.
  std::vector<int32_t> open;  // node index per depth - 1
  std::string_view prev;
  for (int32_t id : order) {
    const std::string_view p = pieces_[size_t(id)];
    size_t common = 0;
    while (common < prev.size() && common < p.size() && prev[common] == p[common]) ++common;
    for (size_t d = open.size(); d > common; --d)
      nodes_[size_t(open[d - 1])].subtree_end = int32_t(nodes_.size());
    open.resize(common);
    for (size_t d = common; d < p.size(); ++d) {
      open.push_back(int32_t(nodes_.size()));
      nodes_.push_back({uint8_t(p[d]), uint16_t(d + 1), 0, int32_t(node_tokens_.size())});
    }
    node_tokens_.push_back(id);
    max_depth_ = std::max(max_depth_, int(p.size()));
    prev = p;
  }
  for (int32_t n : open) nodes_[size_t(n)].subtree_end = int32_t(nodes_.size());
  nodes_.push_back({0, 0, int32_t(nodes_.size()) + 1, int32_t(node_tokens_.size())});
}

Vocabulary Vocabulary::from_tokenizer(const model::Tokenizer& tokenizer) {
  std::vector<std::string> pieces(size_t(tokenizer.n_vocab()));
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id)
    pieces[size_t(id)] = tokenizer.token_to_piece(id);
  return Vocabulary(pieces, tokenizer.end_of_generation_ids());
}

bool Vocabulary::is_end_of_generation(int32_t id) const {
  return std::binary_search(eog_.begin(), eog_.end(), id);
}

std::string_view Vocabulary::piece(int32_t id) const {
  KVRT_ASSERT(id >= 0 && id < n_vocab_);
  return pieces_[size_t(id)];
}

}  // namespace kvrt::grammar
