#include "common/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace kvrt {
namespace {

[[noreturn]] void cannot_read(const std::string& what, const std::string& path,
                              const std::string& why) {
  throw Error("cannot read " + what + " '" + path + "': " + why);
}

std::string size_limit(size_t bytes) {
  return bytes % (size_t(1) << 20) == 0 ? std::to_string(bytes >> 20) + " MiB"
                                        : std::to_string(bytes) + " bytes";
}

}  // namespace

const char* file_type_name(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symbolic link";
  }
  return "not a regular file";
}

FileHandle::~FileHandle() {
  if (fd_ >= 0) ::close(fd_);
}

FileHandle open_regular_file(const std::string& path, const std::string& what) {
  if (path.empty()) cannot_read(what, path, "the path is empty");
  // O_NONBLOCK: opening a FIFO without a writer would otherwise wait forever.
  FileHandle f(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  struct stat st {};
  if (f.fd() < 0) {
    const int err = errno;  // a socket cannot be opened at all (ENXIO): name what it is instead
    if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode))
      cannot_read(what, path, std::strerror(err));
  } else if (::fstat(f.fd(), &st) != 0) {
    cannot_read(what, path, std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode))
    cannot_read(what, path,
                std::string("it is ") + file_type_name(st.st_mode) + ", not a regular file");
  const int flags = ::fcntl(f.fd(), F_GETFL);
  if (flags < 0 || ::fcntl(f.fd(), F_SETFL, flags & ~O_NONBLOCK) != 0)
    cannot_read(what, path, std::strerror(errno));
  return f;
}

std::string read_regular_file(const std::string& path, const std::string& what, size_t max_bytes) {
  const FileHandle f = open_regular_file(path, what);
  struct stat st {};
  if (::fstat(f.fd(), &st) == 0 && size_t(st.st_size) > max_bytes)
    cannot_read(what, path, "it is larger than the limit of " + size_limit(max_bytes));
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(f.fd(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) cannot_read(what, path, std::strerror(errno));
    if (n == 0) return text;
    if (text.size() + size_t(n) > max_bytes)
      cannot_read(what, path, "it is larger than the limit of " + size_limit(max_bytes));
    text.append(buf, size_t(n));
  }
}

bool missing_file(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) != 0 && errno == ENOENT;
}

}  // namespace kvrt
