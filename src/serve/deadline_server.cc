#include "serve/deadline_server.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace kvrt::serve {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

int to_ms(time_t sec, time_t usec) { return int(sec * 1000 + usec / 1000); }

// The address and port of a socket's end, as cpp-httplib gives them (numeric host).
void endpoint(socket_t sock, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  auto* a = reinterpret_cast<sockaddr*>(&addr);
  if ((peer ? getpeername(sock, a, &len) : getsockname(sock, a, &len)) != 0) return;
  std::array<char, NI_MAXHOST> host{};
  std::array<char, NI_MAXSERV> serv{};
  if (getnameinfo(a, len, host.data(), host.size(), serv.data(), serv.size(),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return;
  ip = host.data();
  port = std::atoi(serv.data());
}

// One connection's socket as cpp-httplib's Stream, with a read buffer kept across the requests of
// the connection and a deadline for the current request.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(socket_t sock, int read_timeout_ms, int write_timeout_ms)
      : sock_(sock), read_timeout_ms_(read_timeout_ms), write_timeout_ms_(write_timeout_ms) {}

  // Waits up to `idle_ms` for the first byte of the next request; false when none came, or when
  // the server stops (its `listening` socket is closed).
  bool wait_for_request(int idle_ms, const std::atomic<socket_t>& listening) {
    const Clock::time_point end = Clock::now() + milliseconds(idle_ms);
    while (off_ == end_ && listening != INVALID_SOCKET) {
      const int left = int(std::chrono::ceil<milliseconds>(end - Clock::now()).count());
      if (left <= 0) return false;
      // Short waits: a stopping server is noticed within one.
      const int n = wait(POLLIN, std::min(left, 50));
      if (n < 0) return false;
      if (n > 0) return true;
    }
    return off_ != end_;
  }
  void start_request(Clock::time_point deadline) { deadline_ = deadline; }
  bool timed_out() const { return timed_out_; }

  bool is_readable() const override { return off_ != end_ || wait_readable(); }
  bool is_writable() const override { return wait(POLLOUT, write_timeout_ms_) > 0 && alive(); }
  ssize_t read(char* ptr, size_t size) override {
    if (off_ == end_) {
      if (!wait_readable()) return -1;
      const ssize_t n = recv(sock_, buf_.data(), buf_.size(), 0);
      if (n <= 0) return n;
      off_ = 0;
      end_ = size_t(n);
    }
    const size_t n = std::min(size, end_ - off_);
    std::memcpy(ptr, buf_.data() + off_, n);
    off_ += n;
    return ssize_t(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    return send(sock_, ptr, size, MSG_NOSIGNAL);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    endpoint(sock_, true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    endpoint(sock_, false, ip, port);
  }
  socket_t socket() const override { return sock_; }

 private:
  int wait(short events, int timeout_ms) const {
    pollfd p{sock_, events, 0};
    int n;
    do n = poll(&p, 1, timeout_ms);
    while (n < 0 && errno == EINTR);
    return n;
  }
  // Data to read within the per-read timeout and before the request's deadline.
  bool wait_readable() const {
    const int left = int(std::chrono::ceil<milliseconds>(deadline_ - Clock::now()).count());
    if (left > 0 && wait(POLLIN, std::min(left, read_timeout_ms_)) > 0) return true;
    timed_out_ = timed_out_ || Clock::now() >= deadline_;
    return false;
  }
  // The peer has not closed its end (a write to it may still arrive).
  bool alive() const {
    if (wait(POLLIN, 0) <= 0) return true;
    char c;
    return recv(sock_, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
  }

  const socket_t sock_;
  const int read_timeout_ms_;
  const int write_timeout_ms_;
  Clock::time_point deadline_ = Clock::time_point::max();
  mutable bool timed_out_ = false;
  std::array<char, 4096> buf_;  // bytes received, [off_, end_) not yet read
  size_t off_ = 0, end_ = 0;
};

// The connection this worker thread serves (cpp-httplib calls the handlers of a request on the
// thread that reads it).
thread_local const ConnectionStream* t_connection = nullptr;

}  // namespace

bool request_timed_out() { return t_connection && t_connection->timed_out(); }

bool DeadlineServer::process_and_close_socket(socket_t sock) {
  bool ok = false;
  {
    ConnectionStream stream(sock, to_ms(read_timeout_sec_, read_timeout_usec_),
                            to_ms(write_timeout_sec_, write_timeout_usec_));
    t_connection = &stream;
    // cpp-httplib's keep-alive loop: at most keep_alive_max_count_ requests, each within
    // keep_alive_timeout_sec_ of the last, the last one answered with "Connection: close".
    for (size_t left = keep_alive_max_count_;
         left > 0 && stream.wait_for_request(int(keep_alive_timeout_sec_ * 1000), svr_sock_);
         --left) {
      stream.start_request(Clock::now() + deadline_);
      bool closed = false;
      ok = process_request(stream, left == 1, closed, nullptr);
      if (!ok || closed || stream.timed_out()) break;
    }
    t_connection = nullptr;
  }
  shutdown(sock, SHUT_RDWR);
  close(sock);
  return ok;
}

}  // namespace kvrt::serve
