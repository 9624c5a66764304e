// Files kvrt writes (validation records, JSON and HTML reports, benchmark JSON): checked before
// the work starts, so a bad path fails in a second rather than after minutes, and written whole
// or not at all.
//
// An output path must be a new path (missing parent directories are created) or an existing
// regular file, which is replaced. A symbolic link is followed: its final target must be a
// regular file, which is replaced while the link stays; a dangling link is refused. A directory,
// FIFO, device or socket is refused and left as it was.
//
// Writing goes to an unnamed temporary file (O_TMPFILE) in the target's directory, which gets a
// name (".<name>.kvrt-tmp.<pid>.<n>") only once its content is complete and synced, just before
// it is renamed over the target; the directory is synced after the rename. So a kill (SIGKILL,
// SIGXFSZ) or a full disk leaves the old file or the new one, never a partial file; a temporary
// name left by a process that died between link and rename is removed by the next write to the
// same path. Where O_TMPFILE is not supported the temporary file is named from the start.
#pragma once

#include <string>

namespace kvrt::validate {

// Throws kvrt::Error(kUsage) naming `path` when it cannot be written: a special file, a dangling
// symlink, an unwritable directory, a parent that is not a directory. `what` names the file in
// the message.
void check_output_path(const std::string& path, const std::string& what);

// Writes `text` to `path` as described above. Throws kvrt::Error(kInput) naming `path` and why
// (e.g. "File too large", "No space left on device").
void write_file_atomic(const std::string& path, const std::string& text, const std::string& what);

// Writes all of `text` to `fd` (retrying short and interrupted writes) and syncs it; false (errno
// set) on any failure.
bool write_all(int fd, const std::string& text);

// An exclusive lock (flock) on "<target>.lock" beside an output's target, held while it lives, so
// that processes that read, merge and replace one file (validation records) do so in turn. The
// lock file stays beside the target; it is empty.
// Checks, without waiting and without creating anything, that OutputLock(path, what) could lock:
// an existing lock file is a regular file that locks (a missing one is made by OutputLock where
// check_output_path allows writing). For a check before the work starts; throws as OutputLock.
void check_lock_path(const std::string& path, const std::string& what);

class OutputLock {
 public:
  OutputLock(const std::string& path, const std::string& what);  // blocks until the lock is free
  ~OutputLock();
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace kvrt::validate
