#include "common/resident_memory.h"

#include <unistd.h>

#include <fstream>

namespace kvrt {

std::optional<size_t> resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t total_pages = 0, resident_pages = 0;
  if (!(statm >> total_pages >> resident_pages)) return std::nullopt;
  const long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) return std::nullopt;
  return resident_pages * size_t(page);
}

}  // namespace kvrt
