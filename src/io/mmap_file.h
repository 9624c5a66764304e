// A read-only memory mapping of a whole file. Weights point straight into it (zero-copy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/regular_file.h"

namespace kvrt::io {

class MmapFile {
 public:
  explicit MmapFile(const std::string& path);  // throws kvrt::Error naming the path
  ~MmapFile();
  MmapFile(const MmapFile&) = delete;
  MmapFile& operator=(const MmapFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Drops this process's copy of the whole pages inside [p, p + n) of the map: they stop counting
  // as its resident memory, and a later read maps them again from the page cache.
  void release(const uint8_t* p, size_t n) const;
  // Copies the n bytes at p (inside the map) from the file itself, not the map, so their pages
  // stay out of this process (rows of a released tensor). Throws kvrt::Error naming the path when
  // the file no longer holds them.
  void read(const uint8_t* p, size_t n, void* dst) const;

 private:
  std::string path_;
  FileHandle file_;  // kept open for read()
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace kvrt::io
