/* An LD_PRELOAD library for tests that need kvrt stopped at one file operation, as a crash or a
 * slow disk would stop it (tests/test_files.cc). It wraps rename(2):
 *   KVRT_HOOK_KILL_RENAME=SUFFIX  SIGKILL the process in a rename whose target ends in SUFFIX
 *                                 (the output is complete in its temporary file, not yet in place);
 *   KVRT_HOOK_HOLD_RENAME=SUFFIX  in such a rename, create $KVRT_HOOK_DIR/held and wait (at most
 *                                 120 s) until $KVRT_HOOK_DIR/release exists, then rename. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int ends_with(const char* s, const char* suffix) {
  const size_t n = strlen(s), m = strlen(suffix);
  return m > 0 && n >= m && strcmp(s + n - m, suffix) == 0;
}

static void hold(void) {
  const char* dir = getenv("KVRT_HOOK_DIR");
  if (dir == NULL) return;
  char held[4096], release[4096];
  snprintf(held, sizeof held, "%s/held", dir);
  snprintf(release, sizeof release, "%s/release", dir);
  const int fd = open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  if (fd >= 0) close(fd);
  for (int i = 0; i < 12000 && access(release, F_OK) != 0; ++i) usleep(10000);
}

int rename(const char* from, const char* to) {
  int (*real)(const char*, const char*) =
      (int (*)(const char*, const char*))dlsym(RTLD_NEXT, "rename");
  const char* kill_suffix = getenv("KVRT_HOOK_KILL_RENAME");
  const char* hold_suffix = getenv("KVRT_HOOK_HOLD_RENAME");
  if (kill_suffix && ends_with(to, kill_suffix)) raise(SIGKILL);
  if (hold_suffix && ends_with(to, hold_suffix)) hold();
  return real(from, to);
}
