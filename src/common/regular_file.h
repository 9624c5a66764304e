// Files kvrt reads: regular files only. Opening never blocks (a FIFO is refused, not waited on),
// a directory, device or socket is refused by name, and a file read whole into memory has a size
// limit that the error names. Every failure says why (strerror: "Too many open files", ...).
#pragma once

#include <cstddef>
#include <string>

namespace kvrt {

// Limits on files read whole into memory.
constexpr size_t kMaxTextFileBytes = size_t(64) << 20;  // prompts, acceptance-set texts
constexpr size_t kMaxTomlFileBytes = size_t(16) << 20;  // thresholds, settings, manifests, records

// "a FIFO", "a directory", "a character device", ... for the file type bits of a st_mode.
const char* file_type_name(unsigned mode);

// A file descriptor, closed when the object goes away.
class FileHandle {
 public:
  explicit FileHandle(int fd = -1) : fd_(fd) {}
  ~FileHandle();
  FileHandle(FileHandle&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  FileHandle& operator=(FileHandle&&) = delete;
  FileHandle(const FileHandle&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// Opens `path` read-only without blocking and refuses anything but a regular file. Errors are
// kvrt::Error(kInput) "cannot read <what> '<path>': <why>"; a missing file says
// "No such file or directory" (errno ENOENT is kept in the message, see missing_file()).
FileHandle open_regular_file(const std::string& path, const std::string& what);

// The whole content of a regular file of at most `max_bytes` bytes.
std::string read_regular_file(const std::string& path, const std::string& what, size_t max_bytes);

// Whether `path` names nothing (lstat says ENOENT); a path that exists but cannot be read is not
// missing.
bool missing_file(const std::string& path);

}  // namespace kvrt
