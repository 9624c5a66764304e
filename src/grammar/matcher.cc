#include "grammar/matcher.h"

#include <algorithm>
#include <limits>

#include "common/error.h"

namespace kvrt::grammar {
namespace {

uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> grammar,
                 std::shared_ptr<const Vocabulary> vocabulary, const MatcherLimits& limits)
    : grammar_(std::move(grammar)),
      vocab_(std::move(vocabulary)),
      limits_(limits),
      n_classes_(grammar_->n_classes()) {
  KVRT_ASSERT(grammar_ && vocab_);
  walk_states_.resize(size_t(vocab_->max_depth()) + 1);
  reset();
}

void Matcher::clear_memo() {
  nodes_.assign(1, StackNode{-1, -1});
  node_ids_.clear();
  state_stacks_.clear();
  state_begin_.assign(1, 0);
  state_ids_.clear();
  next_.clear();
  masks_.clear();
  std::vector<int32_t> none;
  intern_state(none);  // state 0: dead
}

void Matcher::reset() {
  clear_memo();
  current_ = initial_state();
  ended_ = false;
}

int32_t Matcher::initial_state() {
  out_.clear();
  seen_.clear();
  const Grammar& g = *grammar_;
  for (int32_t a = g.rule_alts[size_t(g.root)]; a < g.rule_alts[size_t(g.root) + 1]; ++a)
    expand(g.alt_begin[size_t(a)], kEmptyStack);
  return intern_state(out_);
}

int32_t Matcher::intern_stack(int32_t pos, int32_t next) {
  auto [it, added] = node_ids_.try_emplace(pair_key(pos, next), int32_t(nodes_.size()));
  if (added) nodes_.push_back({pos, next});
  return it->second;
}

int32_t Matcher::intern_state(std::vector<int32_t>& stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  std::string key(reinterpret_cast<const char*>(stacks.data()), stacks.size() * sizeof(int32_t));
  auto [it, added] = state_ids_.try_emplace(std::move(key), int32_t(state_begin_.size()) - 1);
  if (added) {
    if (state_begin_.size() > limits_.max_states)
      throw Error("grammar: the matcher met more than " + std::to_string(limits_.max_states) +
                      " states in one step (the grammar is too large or ambiguous to match)",
                  ErrorKind::kResource);
    state_stacks_.insert(state_stacks_.end(), stacks.begin(), stacks.end());
    state_begin_.push_back(uint32_t(state_stacks_.size()));
    next_.resize(next_.size() + size_t(n_classes_), kUnknown);
  }
  return it->second;
}

// Adds to out_ every stack whose top is a byte set, reached from `pos` over `tail` by entering
// rules and leaving finished ones. A reference in last place pushes no return node (a tail call),
// so right recursion such as x* keeps stacks flat.
void Matcher::expand(int32_t pos, int32_t tail) {
  const Grammar& g = *grammar_;
  work_.clear();
  work_.push_back({pos, tail});
  while (!work_.empty()) {
    const auto [p, t] = work_.back();
    work_.pop_back();
    if (!seen_.insert(pair_key(p, t)).second) continue;
    const int32_t e = g.elements[size_t(p)];
    if (e >= 0) {
      out_.push_back(intern_stack(p, t));
    } else if (e == Grammar::kEnd) {
      if (t == kEmptyStack) {
        out_.push_back(kEmptyStack);
      } else {
        work_.push_back({nodes_[size_t(t)].pos, nodes_[size_t(t)].next});
      }
    } else {
      const int32_t r = Grammar::rule_of(e);
      const int32_t ret = g.elements[size_t(p) + 1] == Grammar::kEnd ? t : intern_stack(p + 1, t);
      for (int32_t a = g.rule_alts[size_t(r)]; a < g.rule_alts[size_t(r) + 1]; ++a)
        work_.push_back({g.alt_begin[size_t(a)], ret});
    }
    if (out_.size() > limits_.max_stacks)
      throw Error("grammar: more than " + std::to_string(limits_.max_stacks) +
                      " live parses at once (the grammar is too ambiguous to match)",
                  ErrorKind::kResource);
  }
}

int32_t Matcher::compute_step(int32_t state, int cls) {
  const Grammar& g = *grammar_;
  const uint8_t byte = g.class_byte[size_t(cls)];
  out_.clear();
  seen_.clear();
  for (int32_t s : stacks_of(state)) {
    if (s == kEmptyStack) continue;
    const StackNode n = nodes_[size_t(s)];
    if (g.sets[size_t(g.elements[size_t(n.pos)])].has(byte)) expand(n.pos + 1, n.next);
  }
  const int32_t to = intern_state(out_);
  next_[size_t(state) * size_t(n_classes_) + size_t(cls)] = to;
  return to;
}

int32_t Matcher::step(int32_t state, uint8_t byte) {
  const int cls = grammar_->byte_class[byte];
  const int32_t to = next_[size_t(state) * size_t(n_classes_) + size_t(cls)];
  return to != kUnknown ? to : compute_step(state, cls);
}

int32_t Matcher::walk(int32_t state, std::string_view bytes) {
  for (char c : bytes) {
    if (state == kDead) break;
    state = step(state, uint8_t(c));
  }
  return state;
}

// Drops the memo but keeps the current state's stacks (copied out as positions, then interned
// again), so that memory stays bounded over a long generation.
void Matcher::compact_if_large() {
  if (state_begin_.size() <= limits_.compact_states && nodes_.size() <= limits_.compact_nodes)
    return;
  std::vector<std::vector<int32_t>> stacks;  // positions, top first
  for (int32_t s : stacks_of(current_)) {
    std::vector<int32_t>& v = stacks.emplace_back();
    for (; s != kEmptyStack; s = nodes_[size_t(s)].next) v.push_back(nodes_[size_t(s)].pos);
  }
  clear_memo();
  std::vector<int32_t> tops;
  for (const std::vector<int32_t>& v : stacks) {
    int32_t node = kEmptyStack;
    for (auto it = v.rbegin(); it != v.rend(); ++it) node = intern_stack(*it, node);
    tops.push_back(node);
  }
  current_ = intern_state(tops);
}

bool Matcher::can_end() const {
  if (ended_) return false;
  const std::span<const int32_t> s = stacks_of(current_);
  return !s.empty() && s.front() == kEmptyStack;  // sorted: the empty stack, id 0, comes first
}

bool Matcher::must_end() const {
  const std::span<const int32_t> s = stacks_of(current_);
  return ended_ || (s.size() == 1 && s.front() == kEmptyStack);
}

void Matcher::fill_mask(std::span<uint64_t> mask) {
  KVRT_ASSERT(mask.size() == vocab_->mask_words());
  if (ended_) {
    std::fill(mask.begin(), mask.end(), 0);
    return;
  }
  compact_if_large();
  for (CachedMask& c : masks_) {
    if (c.state == current_) {
      std::copy(c.bits.begin(), c.bits.end(), mask.begin());
      c.used = ++uses_;
      return;
    }
  }
  walk_trie(mask);
  if (limits_.cached_masks == 0) return;
  if (masks_.size() < limits_.cached_masks) {
    masks_.push_back({current_, 0, {}});
  } else {
    std::min_element(masks_.begin(), masks_.end(), [](const CachedMask& a, const CachedMask& b) {
      return a.used < b.used;
    })->state = current_;
  }
  auto it = std::find_if(masks_.begin(), masks_.end(),
                         [&](const CachedMask& c) { return c.state == current_; });
  it->bits.assign(mask.begin(), mask.end());
  it->used = ++uses_;
}

void Matcher::walk_trie(std::span<uint64_t> mask) {
  std::fill(mask.begin(), mask.end(), 0);
  if (can_end())
    for (int32_t id : vocab_->end_of_generation())
      mask[size_t(id) >> 6] |= uint64_t(1) << (id & 63);
  const std::span<const Vocabulary::Node> nodes = vocab_->nodes();
  const uint8_t* cls = grammar_->byte_class.data();
  const size_t nc = size_t(n_classes_);
  int32_t* states = walk_states_.data();  // [depth]: the state after the node's bytes
  states[0] = current_;
  for (size_t i = 0; i < nodes.size();) {
    const Vocabulary::Node& n = nodes[i];
    const int32_t from = states[n.depth - 1];
    int32_t to = next_[size_t(from) * nc + cls[n.byte]];
    if (to == kUnknown) to = compute_step(from, cls[n.byte]);
    if (to == kDead) {
      i = size_t(n.subtree_end);
      continue;
    }
    states[n.depth] = to;
    for (int32_t id : vocab_->tokens_of(i)) mask[size_t(id) >> 6] |= uint64_t(1) << (id & 63);
    ++i;
  }
}

bool Matcher::allows(int32_t token) {
  KVRT_ASSERT(token >= 0 && token < vocab_->n_vocab());
  if (ended_) return false;
  if (vocab_->is_end_of_generation(token)) return can_end();
  const std::string_view piece = vocab_->piece(token);
  if (piece.empty()) return false;
  compact_if_large();
  return walk(current_, piece) != kDead;
}

void Matcher::accept(int32_t token) {
  if (!allows(token))
    throw Error("grammar: token " + std::to_string(token) + " is not allowed here by the grammar",
                ErrorKind::kUsage);
  if (vocab_->is_end_of_generation(token)) {
    ended_ = true;
    return;
  }
  current_ = walk(current_, vocab_->piece(token));
}

bool Matcher::accept_text(std::string_view text) {
  if (ended_) return false;
  compact_if_large();
  const int32_t to = walk(current_, text);
  if (to == kDead) return false;
  current_ = to;
  return true;
}

void apply_mask(std::span<const uint64_t> mask, std::span<float> logits) {
  KVRT_ASSERT(mask.size() * 64 >= logits.size());
  for (size_t id = 0; id < logits.size(); ++id)
    if (!((mask[id >> 6] >> (id & 63)) & 1)) logits[id] = -std::numeric_limits<float>::infinity();
}

}  // namespace kvrt::grammar
