#include "io/mmap_file.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "common/regular_file.h"

namespace kvrt::io {

MmapFile::MmapFile(const std::string& path) : path_(path) {
  const FileHandle f = open_regular_file(path, "file");  // never blocks on a FIFO
  struct stat st {};
  if (::fstat(f.fd(), &st) != 0)
    throw Error("cannot read file '" + path + "': " + std::strerror(errno));
  size_ = static_cast<size_t>(st.st_size);
  if (size_ == 0) throw Error("'" + path + "' is empty");
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, f.fd(), 0);
  const int err = errno;
  if (p == MAP_FAILED) throw Error("cannot map '" + path + "': " + std::strerror(err));
  data_ = static_cast<const uint8_t*>(p);
}

void MmapFile::release(const uint8_t* p, size_t n) const {
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (uintptr_t(p) + page - 1) / page * page,
                  end = (uintptr_t(p) + n) / page * page;
  // Advice only: should the kernel refuse it, the pages stay resident and nothing else changes.
  if (begin < end) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

MmapFile::~MmapFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace kvrt::io
