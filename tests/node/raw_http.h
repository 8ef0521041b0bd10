// Raw HTTP/1.1 over a plain TCP socket, for tests that must send what no HTTP client library
// would: malformed framing, trickled bytes, pipelined requests, bodies the server should not
// read. Sockets may be bound to any 127.0.0.0/8 source address, so a test can look like many
// clients.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace cairn::testing {

class RawConnection {
 public:
  // Connects to 127.0.0.1:`port` from `from` (any 127.x.y.z); check ok(). A
  // `receive_buffer` (bytes) fixes SO_RCVBUF, so the kernel reads little ahead of the test.
  RawConnection(int port, const std::string& from = "127.0.0.1", int receive_buffer = 0);
  ~RawConnection();
  RawConnection(RawConnection&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  // Blocking send of everything; false on error.
  bool Send(const std::string& data);
  // Non-blocking: sends what the socket takes now. Bytes sent, or -1 once the connection
  // is closed or reset.
  ssize_t SendSome(const std::string& data);
  void ShutdownWrite();
  void Close();

  // Reads until `buffer` holds one complete response (by Content-Length or the closing
  // chunk; with `head_only`, the answer to a HEAD: its head alone), the peer closes, or
  // `timeout` passes. Leftover bytes stay buffered for the next.
  struct Response {
    int status = 0;  // 0: none (closed, reset or timed out first)
    std::string head, body;
  };
  Response Read(absl::Duration timeout = absl::Seconds(10), bool head_only = false);
  // True when the server closed (or reset) the connection within `timeout`; bytes it sent
  // first are discarded.
  bool ClosedWithin(absl::Duration timeout);

  // A streamed answer (Server-Sent Events) as it arrives: waits up to `timeout` for more, then
  // returns the body bytes that came since the last call, de-chunked. The head is read first:
  // streamed_status() and streamed_head() once it is in; streamed_ended() once the closing
  // chunk came or the server closed.
  std::string ReadStreamed(absl::Duration timeout);
  int streamed_status() const { return streamed_status_; }
  const std::string& streamed_head() const { return streamed_head_; }
  bool streamed_ended() const { return streamed_ended_; }

 private:
  // Moves the complete chunks (or, without chunking, everything) of buffer_ to `out`.
  void DecodeStreamed(std::string* out);

  int fd_ = -1;
  std::string buffer_;
  int streamed_status_ = 0;
  std::string streamed_head_;
  bool streamed_chunked_ = false;
  bool streamed_ended_ = false;
};

// "Authorization: Basic ..." for admin:`password`, with its CRLF.
std::string BasicAuthLine(const std::string& password = "test-password");
// A complete POST / with Content-Length (and the credentials unless `auth` is empty).
std::string PostRequest(const std::string& body, const std::string& auth = BasicAuthLine());
// A process's resident set, in bytes (0 if unknown).
uint64_t ResidentBytes(pid_t pid);
// Raises this process's descriptor limit to its hard limit; returns the new soft limit.
uint64_t RaiseDescriptorLimit();

}  // namespace cairn::testing
