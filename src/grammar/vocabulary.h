// A model's vocabulary as the grammar matcher sees it: each token's text as bytes, arranged as a
// trie in depth-first order so that a mask is one forward pass over an array, and the
// end-of-generation tokens, which the grammar allows only where it may end. Built once per model;
// immutable, shared by every matcher.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kvrt::model {
class Tokenizer;
}

namespace kvrt::grammar {

class Vocabulary {
 public:
  // `pieces[id]` is token id's text (an empty piece: a control token, which never matches text);
  // `end_of_generation` the ids that end generation (whatever their pieces).
  Vocabulary(const std::vector<std::string>& pieces, std::vector<int32_t> end_of_generation);
  // The tokenizer's pieces (token_to_piece: control tokens give "") and its end-of-generation set.
  static Vocabulary from_tokenizer(const model::Tokenizer& tokenizer);

  int32_t n_vocab() const { return n_vocab_; }
  // 64-bit words a mask of this vocabulary takes: bit (id % 64) of word id / 64.
  size_t mask_words() const { return (size_t(n_vocab_) + 63) / 64; }
  const std::vector<int32_t>& end_of_generation() const { return eog_; }
  bool is_end_of_generation(int32_t id) const;
  std::string_view piece(int32_t id) const;

  // The trie, in depth-first order: node i spells its parent's bytes then byte(i); its subtree
  // is [i, subtree_end(i)); the tokens spelled exactly by it are tokens_of(i). Depth 1 is a
  // child of the (implicit) root.
  struct Node {
    uint8_t byte;
    uint16_t depth;
    int32_t subtree_end;
    int32_t first_token;  // into node_tokens(); node i's end is node i + 1's first_token
  };
  std::span<const Node> nodes() const { return {nodes_.data(), nodes_.size() - 1}; }
  std::span<const int32_t> tokens_of(size_t node) const {
    return {node_tokens_.data() + nodes_[node].first_token,
            size_t(nodes_[node + 1].first_token - nodes_[node].first_token)};
  }
  int max_depth() const { return max_depth_; }

 private:
  int32_t n_vocab_ = 0;
  std::vector<std::string> pieces_;   // [n_vocab]
  std::vector<int32_t> eog_;          // sorted
  std::vector<Node> nodes_;           // [n_nodes + 1]: a sentinel holds the end of the last
  std::vector<int32_t> node_tokens_;  // token ids grouped by node
  int max_depth_ = 0;
};

}  // namespace kvrt::grammar
