#include "io/mmap_file.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "common/regular_file.h"

namespace kvrt::io {

MmapFile::MmapFile(const std::string& path)
    : path_(path), file_(open_regular_file(path, "file")) {  // never blocks on a FIFO
  struct stat st {};
  if (::fstat(file_.fd(), &st) != 0)
    throw Error("cannot read file '" + path + "': " + std::strerror(errno));
  size_ = static_cast<size_t>(st.st_size);
  if (size_ == 0) throw Error("'" + path + "' is empty");
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file_.fd(), 0);
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

void MmapFile::read(const uint8_t* p, size_t n, void* dst) const {
  KVRT_ASSERT(p >= data_ && size_t(p - data_) + n <= size_);
  const off_t at = off_t(p - data_);
  for (size_t done = 0; done < n;) {
    const ssize_t got =
        ::pread(file_.fd(), static_cast<uint8_t*>(dst) + done, n - done, at + off_t(done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error("cannot read '" + path_ + "': " + std::strerror(errno));
    if (got == 0)
      throw Error("'" + path_ + "' ends before byte " + std::to_string(size_t(at) + n) +
                  ": it changed after it was loaded");
    done += size_t(got);
  }
}

MmapFile::~MmapFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace kvrt::io
