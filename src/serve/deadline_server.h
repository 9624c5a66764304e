// cpp-httplib's server with a total deadline on the arrival of every request.
// cpp-httplib 0.11 times each read of a request on its own, so a client that sends a byte of its
// request line or headers every few seconds holds a worker thread for as long as it likes. This
// server reads its connections through a stream of its own whose reads fail once the request has
// taken `deadline` since its first byte: a request line that does not arrive in time closes the
// connection, headers or a body that do not are answered 408 (request_timed_out() tells the error
// handler), and the connection is closed. Parsing and routing stay cpp-httplib's: this class
// replaces only its per-connection loop (the private virtual process_and_close_socket, overridden
// as its SSLServer does) around the protected process_request.
#pragma once

#include <httplib.h>

#include <chrono>

namespace kvrt::serve {

class DeadlineServer : public httplib::Server {
 public:
  explicit DeadlineServer(std::chrono::milliseconds deadline) : deadline_(deadline) {}

 private:
  bool process_and_close_socket(socket_t sock) override;
  const std::chrono::milliseconds deadline_;
};

// On the thread answering a request of a DeadlineServer (its handlers, error handler and logger):
// that request missed its deadline before all of it arrived.
bool request_timed_out();

}  // namespace kvrt::serve
