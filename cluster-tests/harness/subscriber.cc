// Subscriber: a change subscription read over a plain socket (SPEC §8, W1).
#include "cluster-tests/harness/subscriber.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace cairn::harness {
namespace {

using nlohmann::json;

constexpr size_t kScratchBytes = 256 << 10;  // one recv: many events at a benchmark's rate
constexpr size_t kCompactBytes = 64 << 10;   // consumed bytes dropped from a buffer's front
constexpr absl::Duration kConnectTimeout = absl::Seconds(10);

// RFC 3986 percent-encoding of everything but the unreserved characters.
std::string Escape(absl::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// The id segment of the path (subscription_wire.h): an integer as JSON writes it; a string as
// itself, or quoted when it would read as a number, starts with a quote or is empty.
std::string IdSegment(const json& id) {
  if (id.is_number_integer()) return id.dump();
  if (!id.is_string()) return Escape(id.dump());
  const std::string& s = id.get_ref<const std::string&>();
  int64_t n = 0;
  const bool reads_as_number = absl::SimpleAtoi(s, &n) && absl::StrCat(n) == s;
  if (reads_as_number || s.empty() || s.front() == '"') return Escape(id.dump());
  return Escape(s);
}

std::string Target(const SubscribeRequest& r) {
  std::string target = absl::StrCat("/subscribe/", Escape(r.database), "/", Escape(r.table));
  if (r.id.has_value()) absl::StrAppend(&target, "/", IdSegment(*r.id));
  std::vector<std::string> query;
  if (!r.since.empty()) query.push_back("since=" + Escape(r.since));
  if (!r.current) query.push_back("current=false");
  if (!r.get_attributes.empty()) {
    std::vector<std::string> names;
    for (const std::string& a : r.get_attributes) names.push_back(Escape(a));
    query.push_back("get_attributes=" + absl::StrJoin(names, ","));
  }
  if (!query.empty()) absl::StrAppend(&target, "?", absl::StrJoin(query, "&"));
  return target;
}

// A connected TCP socket (blocking, TCP_NODELAY), or why not. The connect is bounded: a node
// behind a partition (NetLab) never answers the handshake.
absl::StatusOr<int> Connect(std::string host, int port, int receive_buffer) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int gai = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (gai != 0) {
    return absl::UnavailableError(absl::StrCat("cannot resolve ", host, ": ", gai_strerror(gai)));
  }
  absl::Status last = absl::UnavailableError(absl::StrCat("no address for ", host));
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (receive_buffer > 0) {
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
    }
    const int flags = fcntl(fd, F_GETFL, 0);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    int error = 0;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      error = errno;
      if (error == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        const int r = poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(kConnectTimeout)));
        socklen_t length = sizeof(error);
        if (r != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) {
          error = r == 0 ? ETIMEDOUT : errno;
        }
      }
    }
    if (error == 0) {
      fcntl(fd, F_SETFL, flags);
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      freeaddrinfo(found);
      return fd;
    }
    last = absl::UnavailableError(
        absl::StrCat("connecting to ", host, ":", port, ": ", std::strerror(error)));
    close(fd);
  }
  freeaddrinfo(found);
  return last;
}

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::optional<uint64_t> CursorSeq(absl::string_view cursor) {
  const size_t dash = cursor.find('-');
  uint64_t seq = 0;
  if (dash == absl::string_view::npos || !absl::SimpleAtoi(cursor.substr(0, dash), &seq)) {
    return std::nullopt;
  }
  return seq;
}

Subscriber::Subscriber(std::string target, bool parse_data)
    : target_(std::move(target)), parse_data_(parse_data), scratch_(new char[kScratchBytes]) {}

Subscriber::~Subscriber() { Close(); }

absl::StatusOr<std::unique_ptr<Subscriber>> Subscriber::Open(const OpsEndpoint& node,
                                                             const SubscribeRequest& request) {
  if (!node.ca_file.empty()) {
    return absl::UnimplementedError(
        "the harness's subscriber speaks plain HTTP; this node serves HTTPS (--ops-tls-*)");
  }
  std::unique_ptr<Subscriber> s(new Subscriber(Target(request), request.parse_data));
  absl::StatusOr<int> fd = Connect(node.host, node.port, request.receive_buffer);
  if (!fd.ok()) return fd.status();
  s->fd_ = *fd;
  // W1: the same credentials as an operation.
  std::string text = absl::StrCat("GET ", s->target_, " HTTP/1.1\r\nHost: ", node.host, ":",
                                  node.port, "\r\nAccept: text/event-stream\r\n");
  if (!node.password.empty()) {
    absl::StrAppend(&text, "Authorization: Basic ",
                    absl::Base64Escape(absl::StrCat(node.user, ":", node.password)), "\r\n");
  }
  if (!request.last_event_id.empty()) {
    absl::StrAppend(&text, "Last-Event-ID: ", request.last_event_id, "\r\n");
  }
  absl::StrAppend(&text, "\r\n");
  if (!SendAll(s->fd_, text)) {
    return absl::UnavailableError(
        absl::StrCat("sending GET ", s->target_, ": ", std::strerror(errno)));
  }
  return s;
}

void Subscriber::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

bool Subscriber::Receive(absl::Time deadline) {
  if (fd_ < 0 || ended_) return false;
  for (;;) {
    int ms = -1;  // no deadline
    if (deadline != absl::InfiniteFuture()) {
      const absl::Duration left = deadline - absl::Now();
      ms = left <= absl::ZeroDuration()
               ? 0
               : static_cast<int>(std::min<int64_t>(
                     absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))), 1 << 30));
    }
    pollfd p{fd_, POLLIN, 0};
    const int r = poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    const ssize_t n = recv(fd_, scratch_.get(), kScratchBytes, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n <= 0) {  // closed or reset
      ended_ = true;
      return false;
    }
    in_.append(scratch_.get(), static_cast<size_t>(n));
    bytes_ += static_cast<uint64_t>(n);
    return true;
  }
}

void Subscriber::ParseHead() {
  int status = -1;  // not an HTTP answer
  if (head_.size() >= 12 && absl::StartsWith(head_, "HTTP/1.") &&
      !absl::SimpleAtoi(absl::string_view(head_).substr(9, 3), &status)) {
    status = -1;
  }
  status_ = status;
  bool chunked = false;
  std::optional<uint64_t> length;
  for (absl::string_view line : absl::StrSplit(head_, "\r\n")) {
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    const std::string name = absl::AsciiStrToLower(line.substr(0, colon));
    const absl::string_view value = absl::StripAsciiWhitespace(line.substr(colon + 1));
    if (name == "transfer-encoding") {
      chunked = absl::StrContains(absl::AsciiStrToLower(value), "chunked");
    } else if (name == "content-length") {
      uint64_t n = 0;
      if (absl::SimpleAtoi(value, &n)) length = n;
    }
  }
  if (chunked) {
    framing_ = Framing::kChunkSize;
  } else if (length.has_value() && *length > 0) {
    framing_ = Framing::kLength;
    left_ = *length;
  } else if (length.has_value()) {
    framing_ = Framing::kDone;
    ended_ = true;
  } else {
    framing_ = Framing::kToClose;  // HTTP/1.0 style: the body ends with the connection
  }
}

void Subscriber::Decode() {
  for (bool more = true; more;) {
    switch (framing_) {
      case Framing::kHead: {
        const size_t end = in_.find("\r\n\r\n", in_pos_);
        if (end == std::string::npos) {
          more = false;
          break;
        }
        head_ = in_.substr(in_pos_, end - in_pos_);
        in_pos_ = end + 4;
        ParseHead();
        break;
      }
      case Framing::kChunkSize: {
        const size_t eol = in_.find("\r\n", in_pos_);
        if (eol == std::string::npos) {
          more = false;
          break;
        }
        absl::string_view line(in_.data() + in_pos_, eol - in_pos_);
        line = line.substr(0, line.find(';'));  // chunk extensions
        uint64_t size = 0;
        in_pos_ = eol + 2;
        if (!absl::SimpleHexAtoi(absl::StripAsciiWhitespace(line), &size) || size == 0) {
          // The closing chunk (trailers are ignored), or a malformed one: either way the
          // stream is over.
          framing_ = Framing::kDone;
          ended_ = true;
        } else {
          framing_ = Framing::kChunkData;
          left_ = size;
        }
        break;
      }
      case Framing::kChunkData:
      case Framing::kLength: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(left_, in_.size() - in_pos_));
        body_.append(in_, in_pos_, n);
        in_pos_ += n;
        left_ -= n;
        if (left_ > 0) {
          more = false;
        } else if (framing_ == Framing::kLength) {
          framing_ = Framing::kDone;
          ended_ = true;
        } else {
          framing_ = Framing::kChunkEnd;
        }
        break;
      }
      case Framing::kChunkEnd:
        if (in_.size() - in_pos_ < 2) {
          more = false;
        } else {
          in_pos_ += 2;  // the CRLF after a chunk's data
          framing_ = Framing::kChunkSize;
        }
        break;
      case Framing::kToClose:
        body_.append(in_, in_pos_, std::string::npos);
        in_pos_ = in_.size();
        more = false;
        break;
      case Framing::kDone:
        in_pos_ = in_.size();  // nothing follows the end of the answer
        more = false;
        break;
    }
  }
  if (in_pos_ == in_.size()) {
    in_.clear();
    in_pos_ = 0;
  } else if (in_pos_ >= kCompactBytes) {
    in_.erase(0, in_pos_);
    in_pos_ = 0;
  }
}

void Subscriber::ParseEvents(std::vector<SseEvent>* out) {
  for (;;) {
    const size_t end = body_.find("\n\n", search_from_);
    if (end == std::string::npos) {
      // The next search starts where this one could not have missed the end: a "\n\n" may
      // straddle the last byte and the next bytes.
      search_from_ = body_.size() > block_start_ ? body_.size() - 1 : block_start_;
      break;
    }
    ParseBlock(absl::string_view(body_).substr(block_start_, end - block_start_), out);
    block_start_ = search_from_ = end + 2;
  }
  if (block_start_ == body_.size()) {
    body_.clear();
    block_start_ = search_from_ = 0;
  } else if (block_start_ >= kCompactBytes) {
    body_.erase(0, block_start_);
    search_from_ -= block_start_;
    block_start_ = 0;
  }
}

void Subscriber::ParseBlock(absl::string_view block, std::vector<SseEvent>* out) {
  SseEvent e;
  std::string data;
  bool any = false, has_data = false;
  for (absl::string_view line : absl::StrSplit(block, '\n')) {
    absl::ConsumeSuffix(&line, "\r");
    if (line.empty()) continue;
    if (line.front() == ':') {  // a comment: the opening bytes, or a keepalive
      const absl::string_view text = absl::StripAsciiWhitespace(line.substr(1));
      if (text == "subscribed" && !any_event_) opened_ = true;
      if (text == "keepalive") ++keepalives_;
      continue;
    }
    const size_t colon = line.find(':');
    const absl::string_view field = line.substr(0, colon);
    absl::string_view value =
        colon == absl::string_view::npos ? absl::string_view() : line.substr(colon + 1);
    absl::ConsumePrefix(&value, " ");
    if (field == "event") {
      e.name = std::string(value);
      any = true;
    } else if (field == "id") {
      e.id = std::string(value);
      any = true;
    } else if (field == "data") {
      if (has_data) data.push_back('\n');
      data.append(value.data(), value.size());
      has_data = any = true;
    }
  }
  if (!any) return;  // comments only
  if (e.name.empty()) e.name = "message";
  if (parse_data_) {
    e.data = json::parse(data, nullptr, /*allow_exceptions=*/false);
    if (e.data.is_discarded()) e.data = nullptr;
  } else {
    e.text = std::move(data);
  }
  any_event_ = true;
  ++events_;
  out->push_back(std::move(e));
}

absl::Status Subscriber::Refused() const {
  const std::string what = absl::StrCat("GET ", target_, " answered ", status_, ": ",
                                        absl::string_view(body_).substr(0, 1000));
  return status_ == 503 ? absl::UnavailableError(what) : absl::FailedPreconditionError(what);
}

absl::Status Subscriber::Fill(absl::Time deadline, std::vector<SseEvent>* out) {
  const size_t before = out->size();
  const bool was_opened = opened_;
  // The first round looks at what is buffered already; each next one receives first.
  for (bool more = true;; more = Receive(deadline)) {
    Decode();
    if (status_ == 200) {
      ParseEvents(out);
      if (out->size() > before || opened_ != was_opened || ended_ || !more) {
        return absl::OkStatus();
      }
    } else if (status_ != 0) {
      if (ended_ || !more) return Refused();  // the whole error answer, or what came of it
    } else if (ended_) {
      return absl::UnavailableError(
          absl::StrCat("GET ", target_, ": the connection closed before an answer"));
    } else if (!more) {
      return absl::OkStatus();
    }
  }
}

absl::Status Subscriber::Read(absl::Time deadline, std::vector<SseEvent>* out) {
  if (!pending_.empty()) {
    for (SseEvent& e : pending_) out->push_back(std::move(e));
    pending_.clear();
    return absl::OkStatus();
  }
  return Fill(deadline, out);
}

absl::StatusOr<std::vector<SseEvent>> Subscriber::ReadUntil(absl::string_view name,
                                                            absl::Time deadline) {
  std::vector<SseEvent> events, batch;
  for (;;) {
    batch.clear();
    absl::Status s = Read(deadline, &batch);
    if (!s.ok()) return s;
    for (size_t i = 0; i < batch.size(); ++i) {
      if (batch[i].name != name) continue;
      // pending_ is empty here (Read took it): what follows the named event waits for the
      // next read, in order.
      for (size_t j = batch.size(); j > i + 1; --j) pending_.push_front(std::move(batch[j - 1]));
      batch.resize(i + 1);
      for (SseEvent& e : batch) events.push_back(std::move(e));
      return events;
    }
    for (SseEvent& e : batch) events.push_back(std::move(e));
    const bool over = ended_ || fd_ < 0;
    if (batch.empty() && (over || absl::Now() >= deadline)) {
      std::vector<std::string> names;
      for (size_t i = 0; i < events.size() && i < 20; ++i) names.push_back(events[i].name);
      const std::string what =
          absl::StrCat("no `", name, "` event on ", target_, "; came ", events.size(), ": [",
                       absl::StrJoin(names, ", "), events.size() > 20 ? ", ...]" : "]");
      if (over) return absl::FailedPreconditionError(absl::StrCat(what, ", then the end"));
      return absl::DeadlineExceededError(what);
    }
  }
}

absl::Status Subscriber::AwaitOpened(absl::Time deadline) {
  while (!opened_) {
    std::vector<SseEvent> batch;
    absl::Status s = Fill(deadline, &batch);
    for (SseEvent& e : batch) pending_.push_back(std::move(e));
    if (!s.ok()) return s;
    if (opened_) break;
    if (!pending_.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("GET ", target_, ": an event came before `: subscribed`"));
    }
    if (ended_ || fd_ < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("GET ", target_, ": the stream ended before `: subscribed`"));
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("GET ", target_, ": no `: subscribed` in time (answer ", status_, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace cairn::harness
