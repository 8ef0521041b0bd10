#include "tests/node/raw_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace cairn::testing {

RawConnection::RawConnection(int port, const std::string& from, int receive_buffer) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return;
  if (receive_buffer > 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
  }
  sockaddr_in local{};
  local.sin_family = AF_INET;
  inet_pton(AF_INET, from.c_str(), &local.sin_addr);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return;
  }
  fd_ = fd;
}

RawConnection::~RawConnection() { Close(); }

void RawConnection::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

bool RawConnection::Send(const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

ssize_t RawConnection::SendSome(const std::string& data) {
  const ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n >= 0) return n;
  return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
}

void RawConnection::ShutdownWrite() { shutdown(fd_, SHUT_WR); }

namespace {

// Waits up to `timeout` for `fd` to be readable and reads what is there into `out`. Returns
// false when the peer closed or reset, or nothing came in time.
bool ReadMore(int fd, std::string* out, absl::Time deadline) {
  const int ms =
      static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now())));
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, ms) <= 0) return false;
  char buf[16384];
  const ssize_t n = recv(fd, buf, sizeof(buf), 0);
  if (n <= 0) return false;
  out->append(buf, static_cast<size_t>(n));
  return true;
}

}  // namespace

RawConnection::Response RawConnection::Read(absl::Duration timeout, bool head_only) {
  const absl::Time deadline = absl::Now() + timeout;
  Response r;
  for (;;) {
    const size_t end = buffer_.find("\r\n\r\n");
    if (end != std::string::npos) {
      std::string head = buffer_.substr(0, end);
      const std::string lower = absl::AsciiStrToLower(head);
      size_t body_start = end + 4;
      if (absl::StartsWith(head, "HTTP/1.1 100") || absl::StartsWith(head, "HTTP/1.0 100")) {
        r.status = 100;
        r.head = head;
        buffer_.erase(0, body_start);
        return r;
      }
      uint64_t length = 0;
      bool by_length = false;
      for (absl::string_view line : absl::StrSplit(lower, "\r\n")) {
        if (absl::ConsumePrefix(&line, "content-length:")) {
          by_length = absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &length);
        }
      }
      if (head_only) {
        by_length = true;
        length = 0;
      }
      const bool chunked = absl::StrContains(lower, "transfer-encoding: chunked");
      bool complete = false;
      std::string body;
      if (by_length) {
        complete = buffer_.size() >= body_start + length;
        if (complete) body = buffer_.substr(body_start, length);
        if (complete) body_start += length;
      } else if (chunked) {
        size_t pos = body_start;
        for (;;) {
          const size_t eol = buffer_.find("\r\n", pos);
          if (eol == std::string::npos) break;
          uint64_t size = 0;
          if (!absl::SimpleHexAtoi(buffer_.substr(pos, eol - pos), &size)) break;
          if (buffer_.size() < eol + 2 + size + 2) break;
          body.append(buffer_, eol + 2, size);
          pos = eol + 2 + size + 2;
          if (size == 0) {
            complete = true;
            body_start = pos;
            break;
          }
        }
      }
      if (complete) {
        r.status = std::atoi(head.c_str() + 9);
        r.head = std::move(head);
        r.body = std::move(body);
        buffer_.erase(0, body_start);
        return r;
      }
    }
    if (!ReadMore(fd_, &buffer_, deadline)) {
      // Closed or timed out: a response without a length ends with the connection.
      if (end != std::string::npos &&
          !absl::StrContains(absl::AsciiStrToLower(buffer_), "transfer-encoding: chunked")) {
        r.status = std::atoi(buffer_.c_str() + 9);
        r.head = buffer_.substr(0, end);
        r.body = buffer_.substr(end + 4);
        buffer_.clear();
      }
      return r;
    }
  }
}

std::string RawConnection::ReadStreamed(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string out;
  for (;;) {
    DecodeStreamed(&out);
    if (!out.empty() || streamed_ended_) return out;
    pollfd p{fd_, POLLIN, 0};
    const int ms =
        static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now())));
    if (poll(&p, 1, ms) <= 0) return out;  // nothing more within the time
    char buf[16384];
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) {
      streamed_ended_ = true;  // closed or reset
      return out;
    }
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

void RawConnection::DecodeStreamed(std::string* out) {
  if (streamed_status_ == 0) {
    const size_t end = buffer_.find("\r\n\r\n");
    if (end == std::string::npos) return;
    streamed_head_ = buffer_.substr(0, end);
    streamed_status_ = std::atoi(streamed_head_.c_str() + 9);
    streamed_chunked_ =
        absl::StrContains(absl::AsciiStrToLower(streamed_head_), "transfer-encoding: chunked");
    buffer_.erase(0, end + 4);
  }
  if (!streamed_chunked_) {
    out->append(buffer_);
    buffer_.clear();
    return;
  }
  for (;;) {
    const size_t eol = buffer_.find("\r\n");
    uint64_t size = 0;
    if (eol == std::string::npos || !absl::SimpleHexAtoi(buffer_.substr(0, eol), &size) ||
        buffer_.size() < eol + 2 + size + 2) {
      return;
    }
    out->append(buffer_, eol + 2, size);
    buffer_.erase(0, eol + 2 + size + 2);
    if (size == 0) {
      streamed_ended_ = true;
      return;
    }
  }
}

bool RawConnection::ClosedWithin(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    pollfd p{fd_, POLLIN, 0};
    const int ms =
        static_cast<int>(std::max<int64_t>(1, absl::ToInt64Milliseconds(deadline - absl::Now())));
    if (poll(&p, 1, ms) <= 0) continue;
    char buf[4096];
    const ssize_t n = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return true;
  }
  return false;
}

std::string BasicAuthLine(const std::string& password) {
  return "Authorization: Basic " + absl::Base64Escape("admin:" + password) + "\r\n";
}

std::string PostRequest(const std::string& body, const std::string& auth) {
  return absl::StrCat("POST / HTTP/1.1\r\nHost: cairn\r\nContent-Type: application/json\r\n", auth,
                      "Content-Length: ", body.size(), "\r\n\r\n", body);
}

uint64_t ResidentBytes(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view v = line;
    if (absl::ConsumePrefix(&v, "VmRSS:")) {
      uint64_t kb = 0;
      if (absl::SimpleAtoi(absl::StripSuffix(absl::StripAsciiWhitespace(v), " kB"), &kb)) {
        return kb << 10;
      }
    }
  }
  return 0;
}

uint64_t RaiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
  getrlimit(RLIMIT_NOFILE, &limit);
  return limit.rlim_cur;
}

}  // namespace cairn::testing
