// How a product's rows of W are cut into items for the thread pool (common/thread_pool.h), which
// its threads claim one at a time. Units are W rows (packed decode) or blocks of rows (blocked
// tiles); every item is a run of whole units, so an output is computed the same way whichever
// thread runs its item.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "ops/decode_size.h"
#include "ops/matmul.h"

namespace kvrt::ops {

struct RowItems {
  RowItems() = default;
  // About kItemBytes of W per item: small enough that a thread that starts late or is
  // descheduled leaves little for the others to wait on, large enough that claiming (one atomic
  // add) and the break in the kernels' read-ahead cost little.
  static constexpr int64_t kItemBytes = 128 * 1024;
  static constexpr int64_t kMinParallelFlops = 1 << 16;  // smaller products run as one item

  RowItems(const WeightMatrix& w, int64_t m, int64_t n_units, int n_threads) : n_units(n_units) {
    int64_t items = (w.n_out * int64_t(w.row_bytes()) + kItemBytes - 1) / kItemBytes;
    // Larger products (no oneDNN, or many sessions' rows): each item reads all rows of x, so a
    // few items per thread.
    if (m > kDecodeMaxTokens) items = std::min<int64_t>(items, 4 * int64_t(n_threads));
    if (2 * m * w.n_out * w.n_in < kMinParallelFlops) items = 1;
    items = std::clamp<int64_t>(items, 1, std::max<int64_t>(n_units, 1));
    per_item = (n_units + items - 1) / items;
    n_items = per_item > 0 ? (n_units + per_item - 1) / per_item : 0;
  }
  int64_t first(int64_t item) const {
    return std::min(n_units, item * per_item);
  }  // of item, in units

  int64_t n_units = 0;
  int64_t per_item = 0;
  int64_t n_items = 0;
};

// The items of a group of products (Matmul::run) in one loop of the pool: product p's items
// follow product p - 1's.
struct GroupItems {
  void add(int64_t n_items) {
    first[n + 1] = first[n] + n_items;
    ++n;
  }
  int64_t total() const { return first[n]; }
  size_t product(int64_t item) const {  // whose item it is
    size_t p = 0;
    while (item >= first[p + 1]) ++p;
    return p;
  }

  std::array<int64_t, Matmul::kMaxGroup + 1> first{};  // [product]: its first item; [n]: the total
  size_t n = 0;
};

}  // namespace kvrt::ops
