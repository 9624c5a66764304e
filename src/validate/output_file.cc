#include "validate/output_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/error.h"
#include "common/regular_file.h"

namespace kvrt::validate {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void cannot_write(const std::string& what, const std::string& path,
                               const std::string& why, ErrorKind kind = ErrorKind::kInput) {
  throw Error("cannot write " + what + " '" + path + "': " + why, kind);
}

// The file an output path names: the path itself, or the final target of a symlink.
std::string output_target(const std::string& path, const std::string& what) {
  if (path.empty()) cannot_write(what, path, "the path is empty", ErrorKind::kUsage);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr) {
    const int err = errno;
    std::error_code ec;
    if (err == ENOENT)
      cannot_write(what, path,
                   "it is a symbolic link to '" + fs::read_symlink(path, ec).string() +
                       "', which does not exist",
                   ErrorKind::kUsage);
    cannot_write(what, path, std::strerror(err), ErrorKind::kUsage);
  }
  std::string target(real);
  std::free(real);
  return target;
}

// Refuses an existing target that is not a regular file.
void check_target_type(const std::string& target, const std::string& path,
                       const std::string& what) {
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    cannot_write(what, path,
                 std::string("it is ") + file_type_name(st.st_mode) + ", not a regular file",
                 ErrorKind::kUsage);
}

// ".<name>.kvrt-tmp." for the target's file name (shortened so the temporary name fits NAME_MAX).
std::string temp_prefix(const fs::path& target) {
  return "." + target.filename().string().substr(0, 200) + ".kvrt-tmp.";
}

fs::path directory_of(const fs::path& target) {
  return target.has_parent_path() ? target.parent_path() : fs::path(".");
}

// Removes temporary files of `target` whose process is gone (killed between link and rename).
void remove_stale_temps(const fs::path& target) {
  const std::string prefix = temp_prefix(target);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(directory_of(target), ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH) ::unlink(e.path().c_str());
  }
}

// Puts the complete `text` in a file named `tmp`: written unnamed (O_TMPFILE) and linked when
// the filesystem allows it, else written under its name. Throws naming `path`.
void write_temp(const fs::path& dir, const std::string& tmp, const std::string& text,
                const std::string& path, const std::string& what) {
  {
    const FileHandle f(::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666));
    if (f.fd() >= 0) {
      if (!write_all(f.fd(), text)) cannot_write(what, path, std::strerror(errno));
      const std::string proc = "/proc/self/fd/" + std::to_string(f.fd());
      if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, tmp.c_str(), AT_SYMLINK_FOLLOW) == 0) return;
    }
  }
  const FileHandle f(
      ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666));
  if (f.fd() < 0) cannot_write(what, path, std::strerror(errno));
  if (!write_all(f.fd(), text)) {
    const int err = errno;
    ::unlink(tmp.c_str());
    cannot_write(what, path, std::strerror(err));
  }
}

// Makes the rename itself durable: a crash after it leaves the new name, not the old one.
void sync_directory(const fs::path& dir) {
  const FileHandle d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (d.fd() >= 0) ::fsync(d.fd());
}

}  // namespace

void check_output_path(const std::string& path, const std::string& what) {
  const std::string target = output_target(path, what);
  check_target_type(target, path, what);
  std::error_code ec;
  fs::path dir = directory_of(fs::absolute(target, ec));
  while (!dir.empty() && !fs::exists(dir, ec) && dir != dir.root_path()) dir = dir.parent_path();
  if (!fs::is_directory(dir, ec))
    cannot_write(what, path, "'" + dir.string() + "' is not a directory", ErrorKind::kUsage);
  if (::access(dir.c_str(), W_OK) != 0)
    cannot_write(what, path,
                 "directory '" + dir.string() + "' is not writable (" + std::strerror(errno) + ")",
                 ErrorKind::kUsage);
  remove_stale_temps(target);
}

void write_file_atomic(const std::string& path, const std::string& text, const std::string& what) {
  static std::atomic<unsigned> counter{0};
  const fs::path target = output_target(path, what);
  check_target_type(target, path, what);
  const fs::path dir = directory_of(target);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    cannot_write(what, path, "cannot create directory '" + dir.string() + "': " + ec.message());
  remove_stale_temps(target);
  const std::string tmp =
      (dir / (temp_prefix(target) + std::to_string(::getpid()) + "." + std::to_string(counter++)))
          .string();
  write_temp(dir, tmp, text, path, what);
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    cannot_write(what, path, std::strerror(err));
  }
  sync_directory(dir);
}

namespace {

// Opens the lock file of `path` and locks it: with `wait`, creating it (and its directory) and
// blocking until the lock is free; without, only an existing lock file, only trying (a lock
// another process holds is then fine). Returns the descriptor, or -1 when there is no lock file
// to check; throws naming the lock file when it is not a regular file or cannot be opened or
// locked.
int open_lock(const std::string& path, const std::string& what, bool wait) {
  const fs::path lock = output_target(path, what) + ".lock";
  std::error_code ec;
  struct stat lst {};
  if (!wait && ::lstat(lock.c_str(), &lst) != 0 && errno == ENOENT) return -1;
  if (wait) fs::create_directories(directory_of(lock), ec);
  const int fd = ::open(lock.c_str(),
                        O_RDWR | (wait ? O_CREAT : 0) | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0)
    cannot_write(what, path,
                 "cannot open lock file '" + lock.string() + "': " + std::strerror(errno));
  struct stat st {};
  int err = ::fstat(fd, &st) != 0 ? errno : S_ISREG(st.st_mode) ? 0 : -1;
  while (err == 0 && ::flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) != 0)
    err = errno == EINTR ? 0 : !wait && errno == EWOULDBLOCK ? -2 : errno;
  if (err != 0 && err != -2) {
    ::close(fd);
    cannot_write(what, path,
                 "cannot lock '" + lock.string() + "': " +
                     (err > 0 ? std::strerror(err) : std::string("it is not a regular file")));
  }
  return fd;
}

}  // namespace

OutputLock::OutputLock(const std::string& path, const std::string& what)
    : fd_(open_lock(path, what, true)) {}

void check_lock_path(const std::string& path, const std::string& what) {
  const int fd = open_lock(path, what, false);
  if (fd >= 0) ::close(fd);
}

OutputLock::~OutputLock() { ::close(fd_); }

bool write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    done += size_t(n);
  }
  return ::fsync(fd) == 0;
}

}  // namespace kvrt::validate
