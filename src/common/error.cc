#include "common/error.h"

#include <cstdio>
#include <cstdlib>

namespace kvrt {

void assert_fail(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "kvrt: internal error: %s failed at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace kvrt
