// A `kvrt serve` process for tests: started on a free loopback port (--port 0; the port is read
// from the line it prints), stopped with SIGTERM when the object goes away.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "test_util.h"

namespace kvrt::test {

class ServeProcess {
 public:
  // args: the flags after `kvrt serve` (shell words); stderr goes to tmp/serve.err.
  ServeProcess(const std::string& args, const TempDir& tmp) : err_path_(tmp / "serve.err") {
    const char* exe = std::getenv("KVRT_EXE");
    const std::string cmd =
        std::string("exec ") + (exe ? exe : "kvrt") + " serve --port 0 " + args + " 2>" + err_path_;
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    // "kvrt serve: listening on http://127.0.0.1:PORT (model NAME)", or nothing when it failed.
    std::string line;
    char c = 0;
    while (read(out[0], &c, 1) == 1 && c != '\n') line += c;
    close(out[0]);
    const size_t colon = line.rfind(':');
    if (line.find("listening on") == std::string::npos || colon == std::string::npos) {
      wait();  // it failed to start and exits by itself
      return;
    }
    port_ = std::atoi(line.c_str() + colon + 1);
  }
  ~ServeProcess() { stop(); }

  int port() const { return port_; }  // 0 when the server did not start
  // Stops the server (SIGTERM) and returns its exit code.
  int stop() {
    if (pid_ > 0) kill(pid_, SIGTERM);
    return wait();
  }
  std::string err() const { return read_file(err_path_); }

 private:
  int wait() {
    if (pid_ > 0) {
      int status = 0;
      waitpid(pid_, &status, 0);
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      pid_ = -1;
    }
    return exit_code_;
  }

  std::string err_path_;
  pid_t pid_ = -1;
  int port_ = 0;
  int exit_code_ = -1;
};

}  // namespace kvrt::test
