#include "validate/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/error.h"

namespace kvrt::validate {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void cannot_write(const std::string& what, const std::string& path, const std::string& why,
                               ErrorKind kind = ErrorKind::kInput) {
  throw Error("cannot write " + what + " '" + path + "': " + why, kind);
}

// Writes all of `text` to `fd`; false on any failure.
bool write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

}  // namespace

void check_output_path(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (path.empty()) cannot_write(what, path, "the path is empty", ErrorKind::kUsage);
  if (fs::is_directory(path, ec)) cannot_write(what, path, "it is a directory", ErrorKind::kUsage);
  fs::path dir = fs::absolute(path, ec).parent_path();
  while (!dir.empty() && !fs::exists(dir, ec) && dir != dir.root_path()) dir = dir.parent_path();
  if (!fs::is_directory(dir, ec)) cannot_write(what, path, "'" + dir.string() + "' is not a directory", ErrorKind::kUsage);
  if (::access(dir.c_str(), W_OK) != 0)
    cannot_write(what, path, "directory '" + dir.string() + "' is not writable", ErrorKind::kUsage);
}

void write_file_atomic(const std::string& path, const std::string& text, const std::string& what) {
  static std::atomic<unsigned> counter{0};
  const fs::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) cannot_write(what, path, std::strerror(errno));
  const bool written = write_all(fd, text);
  const int saved = errno;
  if (::close(fd) != 0 || !written) {
    ::unlink(tmp.c_str());
    cannot_write(what, path, std::strerror(written ? errno : saved));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    cannot_write(what, path, std::strerror(err));
  }
}

}  // namespace kvrt::validate
