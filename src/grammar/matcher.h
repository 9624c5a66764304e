// The token-level grammar matcher: for one generation, which tokens of the vocabulary the grammar
// allows next, and the state after each accepted token.
//
// The state is a set of stacks of a pushdown automaton over bytes (llama.cpp's design, over the
// compiled grammar of grammar.h). Stacks are hash-consed into a shared tree and sets of them are
// interned, so a state is one integer and the step from a state by a byte is memoized in a table
// (a lazily built DFA over the states met so far). A mask is then one pass over the vocabulary's
// trie (grammar/vocabulary.h) with a table lookup per trie node, skipping the subtree of every
// byte that leads nowhere. Bytes, not code points, are matched, so a token that ends inside a
// UTF-8 character leaves a state that accepts exactly the rest of that character.
//
// One matcher per generation, used by one thread at a time; the grammar and the vocabulary are
// shared. Per decode step the generation loop calls
//   fill_mask(mask)      -> the allowed tokens (end-of-generation only where the grammar may end)
//   accept(token)        -> after sampling one of them
// or, to skip the mask when the sampled token is allowed anyway, allows(token) first.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/vocabulary.h"

namespace kvrt::grammar {

struct MatcherLimits {
  // Live stacks in one state: more means a grammar too ambiguous to match (kvrt::Error,
  // ErrorKind::kResource, from the call that meets it).
  size_t max_stacks = 4096;
  // States remembered at once. Past `compact_states` (or compact_nodes stack nodes) the memo is
  // dropped before the next call, keeping only the current state; more than `max_states` met
  // within one call is refused as above. A state costs one table row of 4 bytes per byte class.
  size_t compact_states = size_t(1) << 14;
  size_t compact_nodes = size_t(1) << 20;
  size_t max_states = size_t(1) << 18;
  // Masks kept for the states they were computed for (most recently used first out): inside a
  // string or a repetition the state comes back at every token, and its mask is then a copy.
  size_t cached_masks = 8;
};

class Matcher {
 public:
  Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocabulary,
          const MatcherLimits& limits = {});

  // mask[n_vocab / 64 rounded up] (Vocabulary::mask_words()): bit (id % 64) of word id / 64 is
  // set when token id may come next. Never a token that leads to a dead end; the
  // end-of-generation tokens only when can_end(); nothing after an end-of-generation token.
  void fill_mask(std::span<uint64_t> mask);
  // Whether `token` may come next (what fill_mask would say of it, without the whole mask).
  bool allows(int32_t token);
  // Advances past `token`; throws kvrt::Error (kUsage) when the grammar does not allow it.
  void accept(int32_t token);
  // Advances past raw text (e.g. a reply's prefix written by the server); false, and no change,
  // when the grammar does not allow it.
  bool accept_text(std::string_view text);

  // The text so far is a whole match of the grammar: end-of-generation is allowed.
  bool can_end() const;
  // Nothing but the end may follow (the grammar is complete), or the end was accepted.
  bool must_end() const;
  // An end-of-generation token was accepted.
  bool ended() const { return ended_; }
  void reset();

 private:
  static constexpr int32_t kDead = 0;        // the empty set of stacks
  static constexpr int32_t kUnknown = -1;    // a transition not computed yet
  static constexpr int32_t kEmptyStack = 0;  // the stack of a finished match

  int32_t step(int32_t state, uint8_t byte);
  int32_t compute_step(int32_t state, int cls);
  int32_t walk(int32_t state, std::string_view bytes);
  void expand(int32_t pos, int32_t tail);
  int32_t intern_stack(int32_t pos, int32_t next);
  int32_t intern_state(std::vector<int32_t>& stacks);
  int32_t initial_state();
  void compact_if_large();
  void clear_memo();
  void walk_trie(std::span<uint64_t> mask);
  std::span<const int32_t> stacks_of(int32_t state) const {
    return {state_stacks_.data() + state_begin_[size_t(state)],
            size_t(state_begin_[size_t(state) + 1] - state_begin_[size_t(state)])};
  }

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const Vocabulary> vocab_;
  MatcherLimits limits_;
  int n_classes_;

  // Stack nodes: (position of the next element, the node below). Node 0 is the empty stack.
  struct StackNode {
    int32_t pos, next;
  };
  std::vector<StackNode> nodes_;
  std::unordered_map<uint64_t, int32_t> node_ids_;
  // States: sorted sets of stack nodes, interned; state 0 is the empty set (dead).
  std::vector<int32_t> state_stacks_;
  std::vector<uint32_t> state_begin_;  // [n_states + 1]
  std::unordered_map<std::string, int32_t> state_ids_;
  std::vector<int32_t> next_;  // [n_states][n_classes]: the step by a byte of each class

  int32_t current_ = kDead;
  bool ended_ = false;

  struct CachedMask {
    int32_t state;
    uint64_t used;               // use counter when last read or written
    std::vector<uint64_t> bits;  // [mask_words]
  };
  std::vector<CachedMask> masks_;  // at most limits_.cached_masks
  uint64_t uses_ = 0;

  // Scratch of compute_step and fill_mask.
  std::vector<int32_t> out_;
  std::vector<std::pair<int32_t, int32_t>> work_;
  std::unordered_set<uint64_t> seen_;
  std::vector<int32_t> walk_states_;  // [max_depth + 1]
};

// Sets the logits of the tokens `mask` leaves out to -infinity (logits[n_vocab]).
void apply_mask(std::span<const uint64_t> mask, std::span<float> logits);

}  // namespace kvrt::grammar
