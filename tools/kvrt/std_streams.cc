#include "std_streams.h"

#include <fcntl.h>
#include <stdio_ext.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/error.h"

namespace kvrt::cli {

void reserve_standard_fds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int opened =
        open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);  // the lowest free number: fd
    if (opened != fd && opened >= 0) close(opened);
  }
}

void buffer_stdout() {
  static char buffer[size_t(1) << 20];  // glibc takes a size only with a buffer
  if (!isatty(STDOUT_FILENO)) std::setvbuf(stdout, buffer, _IOFBF, sizeof buffer);
}

void write_stdout(std::string_view text) {
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), stdout) == text.size() && std::fflush(stdout) == 0)
    return;
  const int e = errno;
  __fpurge(stdout);  // reported here: the text left in the buffer is not written again at exit
  std::clearerr(stdout);
  throw Error(
      std::string("cannot write to standard output: ") + (e ? std::strerror(e) : "a write failed"),
      ErrorKind::kResource);
}

std::string close_stdout() {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int flush_errno = errno;
  const bool had_error = std::ferror(stdout) != 0;
  errno = 0;
  const bool closed = std::fclose(stdout) == 0;
  if (flushed && !had_error && closed) return "";
  const int e = flush_errno ? flush_errno : errno;
  return std::string("output to standard output was lost: ") +
         (e ? std::strerror(e) : "a write failed");
}

}  // namespace kvrt::cli
