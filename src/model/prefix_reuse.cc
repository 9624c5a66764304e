#include "model/prefix_reuse.h"

#include <algorithm>

#include "common/error.h"

namespace kvrt::model {

int common_prefix(const int32_t* a, int n_a, const int32_t* b, int n_b) {
  const int n = std::min(n_a, n_b);
  int i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

int reuse_prefix(Session& session, const int32_t* tokens, int n) {
  KVRT_ASSERT(n > 0);
  const int same = common_prefix(session.tokens(), session.n_past(), tokens, n);
  if (same == n && session.n_past() == n) return n;
  return session.truncate(std::min(same, n - 1));
}

}  // namespace kvrt::model
