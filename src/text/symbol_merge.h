// The pair-merge loop shared by the SentencePiece and BPE tokenizers: pieces of text in a doubly
// linked list, candidate pairs in a priority queue (best first), stale pairs skipped.
#pragma once

#include <cstddef>
#include <vector>

namespace kvrt::model::detail {

// A piece of the text; n == 0 once merged into its left neighbour.
struct Symbol {
  int prev;
  int next;
  size_t offset;  // bytes into the text
  size_t n;       // bytes
};

// Merges the queued pairs (elements with left, right and size = bytes of the merged piece) in
// queue order; try_add(left, right) queues the pair of two neighbours if the vocabulary has it.
template <class Queue, class TryAdd>
void merge_queued_pairs(std::vector<Symbol>& symbols, Queue& queue, TryAdd&& try_add) {
  while (!queue.empty()) {
    const auto b = queue.top();
    queue.pop();
    Symbol& left = symbols[b.left];
    Symbol& right = symbols[b.right];
    if (left.n == 0 || right.n == 0 || left.n + right.n != b.size) continue;  // stale
    left.n += right.n;
    right.n = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = b.left;
    try_add(left.prev, b.left);
    try_add(b.left, left.next);
  }
}

}  // namespace kvrt::model::detail
