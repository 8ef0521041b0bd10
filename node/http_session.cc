// One connection of the operations API: reads a request at a time (headers, then the checks
// that need no body, then the body), runs it on a worker, writes the answer, and starts over.
// Every step runs on the connection's strand; only the operation and a streamed answer's
// producer run on a worker. The numbered guarantees are HttpServer's (node/http_server.h).
#include "node/http_session.h"

#include <poll.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <limits>
#include <optional>
#include <thread>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "boost/asio/dispatch.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "boost/beast/ssl.hpp"
#include "boost/beast/websocket/rfc6455.hpp"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "node/http_websocket.h"
#include "node/subscription_wire.h"
#include "spdlog/spdlog.h"

namespace cairn::node::http_internal {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

constexpr char kJson[] = "application/json";
constexpr char kEventStream[] = "text/event-stream";
constexpr size_t kReadChunk = 8 << 10;
// How long a worker that has just answered waits for the same client's next request before
// handing the connection back to the I/O threads (ServeOnWorker).
constexpr absl::Duration kFastPathWait = absl::Microseconds(500);
// After an answer to a request whose body we will not read, how long its client may go on
// sending (read and thrown away, at most the stated bytes) before the connection closes.
// Closing with unread bytes would make the kernel reset the connection, and the client might
// lose the answer.
constexpr absl::Duration kLingerTime = absl::Seconds(2);
// Without credentials, a body up to this size is read (a token request); a larger one is not.
constexpr uint64_t kTokenRequestBytes = 1024;

std::chrono::nanoseconds Chrono(absl::Duration d) { return absl::ToChronoNanoseconds(d); }

absl::string_view Sv(beast::string_view v) { return absl::string_view(v.data(), v.size()); }

std::string Truncated(absl::string_view s, size_t n) {
  return s.size() <= n ? std::string(s) : absl::StrCat(s.substr(0, n), "...");
}

// The head of an answer: status line and headers up to the blank line.
std::string Head(int status, bool http10, absl::string_view content_type, absl::string_view length,
                 bool close, absl::string_view extra) {
  const auto reason = http::obsolete_reason(static_cast<http::status>(status));
  return absl::StrCat(
      http10 ? "HTTP/1.0 " : "HTTP/1.1 ", status, " ",
      absl::string_view(reason.data(), reason.size()), "\r\nContent-Type: ", content_type, length,
      close ? "\r\nConnection: close" : (http10 ? "\r\nConnection: keep-alive" : ""), extra,
      "\r\n\r\n");
}

std::string ChunkOf(absl::string_view data) {
  return absl::StrCat(absl::Hex(data.size()), "\r\n", data, "\r\n");
}

// Sets the calling stream thread's CPU priority (HttpShared::streamers), once per thread.
// Linux applies both calls to the calling thread only. Best effort: a refusal leaves the
// thread as it was.
void SetStreamThreadPriority(SearchPriority priority) {
  thread_local bool set = false;
  if (set) return;
  set = true;
  if (priority == SearchPriority::kIdle) {
    const sched_param param{};
    ::sched_setscheduler(0, SCHED_IDLE, &param);
  } else if (priority == SearchPriority::kLow) {
    errno = 0;
    const int process_nice = ::getpriority(PRIO_PROCESS, 0);
    if (errno != 0) return;
    const int nice = std::min(process_nice + HttpShared::kStreamNice, 19);
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), nice);
  }
}

// Runs a streamed answer's producer while it holds one of `cpus` (decision 134): it waits
// for a slot before it starts, gives the slot up while its reader keeps it waiting, and
// hands it to a waiting stream at each of its deadline's probes.
absl::Status ProduceInTurn(
    CpuSlots& cpus, Deadline& deadline, ReplyStream& rs,
    const std::function<absl::Status(const std::function<bool(absl::string_view)>&)>& produce) {
  CAIRN_RETURN_IF_ERROR(cpus.Acquire(deadline));
  // The slot while the producer computes: given back however the producer ends (an exception
  // included), and the deadline left without a pause.
  struct Turn {
    CpuSlots& cpus;
    Deadline& deadline;
    bool held = true;
    ~Turn() {
      deadline.SetPause(nullptr);
      if (held) cpus.Release();
    }
  } turn{cpus, deadline};
  deadline.SetPause([&turn] {
    absl::Status s = turn.held ? turn.cpus.Yield(turn.deadline) : turn.cpus.Acquire(turn.deadline);
    turn.held = s.ok();
    return s;
  });
  return produce([&](absl::string_view piece) {
    if (!rs.Full()) return rs.Write(piece);
    if (turn.held) cpus.Release();
    turn.held = false;
    if (!rs.Write(piece)) return false;
    turn.held = cpus.Acquire(deadline).ok();
    return turn.held;  // out of time waiting for a slot: stop as at the deadline
  });
}

template <class Stream>
class Session : public Connection, public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  Session(std::shared_ptr<HttpShared> shared, Stream stream, std::string address,
          std::string client, bool health_only)
      : shared_(std::move(shared)),
        opt_(shared_->options),
        stream_(std::move(stream)),
        executor_(stream_.get_executor()),
        timer_(executor_),
        address_(std::move(address)),
        client_(std::move(client)),
        health_only_(health_only) {}

  ~Session() override {
    shared_->Unregister(this);
    if (!handed_over_) shared_->Release(client_, waiting_since_ns.load() == kEvicted);
  }

  // Starts on the connection's own strand (the caller runs on the acceptor's), so that a
  // Cancel() posted as soon as the session is registered runs after the start, never beside it.
  void Run() {
    net::dispatch(executor_, [self = Self()] {
      self->shared_->Register(self.get());
      if constexpr (kTls) {
        self->Lowest().expires_after(Chrono(self->opt_.request_timeout));
        self->stream_.async_handshake(net::ssl::stream_base::server, [self](beast::error_code ec) {
          if (ec) return self->Abort(ec);
          self->ReadRequest();
        });
      } else {
        self->ReadRequest();
      }
    });
  }

  std::shared_ptr<Connection> Pin() override { return this->weak_from_this().lock(); }

  void Evict() override {
    net::post(executor_, [self = Self()] {
      if (!self->busy_) self->CloseNow();
    });
  }

  void Cancel() override {
    net::post(executor_, [self = Self()] {
      // A streamed answer is cut (Stop() has given running operations their time first).
      if (self->reply_stream_ != nullptr || !self->busy_) self->CloseNow();
    });
  }

 private:
  std::shared_ptr<Session> Self() { return this->shared_from_this(); }
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  // --- Reading a request ------------------------------------------------------------------

  void NewParser() {
    parser_.emplace();
    parser_->header_limit(opt_.header_limit);
    // Checked by us once the credentials are (OnHeader). Not boost::none: Beast 1.74 compares
    // the length against the optional, and every length is greater than none.
    parser_->body_limit(std::numeric_limits<uint64_t>::max());
    operation_ = "unknown";
    head_ = false;
  }

  void ReadRequest() {
    if (closed_) return;
    if (shared_->draining.load()) return CloseNow();
    busy_ = false;
    // Waiting for a request from now (from its accept, for the first): evictable while it
    // has passed no credential check (HttpShared::Admit).
    int64_t since = 0;
    if (!waiting_since_ns.compare_exchange_strong(since, absl::ToUnixNanos(absl::Now())) &&
        since == kEvicted) {
      return CloseNow();
    }
    NewParser();
    if (buffer_.size() > 0) return ReadHeader();  // a pipelined request is already here
    // Guarantee 3: an idle connection closes after idle_timeout.
    Lowest().expires_after(Chrono(opt_.idle_timeout));
    stream_.async_read_some(buffer_.prepare(kReadChunk),
                            [self = Self()](beast::error_code ec, size_t n) {
                              self->buffer_.commit(n);
                              if (ec) return self->Abort(ec);
                              self->ReadHeader();
                            });
  }

  // `fresh`: the request starts here; else its first bytes were read on a worker (NextOnWorker).
  void ReadHeader(bool fresh = true) {
    // Guarantee 3: from the first byte, one deadline for the whole request.
    if (fresh) start_ = absl::Now();
    Lowest().expires_after(Chrono(opt_.request_timeout));
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = Self()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (closed_) return;
    // Its slot was given to another connection while the headers arrived (HttpShared::Admit).
    if (waiting_since_ns.exchange(0) == kEvicted) {
      waiting_since_ns.store(kEvicted);  // the slot is released once, by Admit
      return CloseNow();
    }
    busy_ = true;
    if (ec == http::error::header_limit) {
      return Refuse(Error(ErrorCode::kHeaderTooLarge,
                          absl::StrCat("the request's headers are larger than the limit of ",
                                       opt_.header_limit, " bytes")),
                    opt_.header_limit);
    }
    if (ec == beast::error::timeout || ec == http::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::operation_aborted || ec == net::error::connection_reset) {
      return Abort(ec);
    }
    if (ec) {
      ++shared_->malformed;
      return Refuse(
          Error(ErrorCode::kBadRequest, absl::StrCat("malformed HTTP request: ", ec.message())),
          opt_.header_limit);
    }
    const auto& req = parser_->get();
    http10_ = req.version() < 11;
    keep_alive_ = req.keep_alive();
    // Guarantee 5.
    if (static_cast<size_t>(std::distance(req.begin(), req.end())) > opt_.max_header_fields) {
      return Refuse(
          Error(ErrorCode::kHeaderTooLarge, absl::StrCat("the request has more than ",
                                                         opt_.max_header_fields, " header fields")),
          opt_.header_limit);
    }
    if (req.count(http::field::content_length) > 1) {
      ++shared_->malformed;
      return Refuse(Error(ErrorCode::kBadRequest, "more than one Content-Length header"),
                    opt_.header_limit);
    }
    const bool chunked = req.count(http::field::transfer_encoding) > 0;
    const uint64_t length = parser_->content_length().value_or(0);
    const bool has_body = chunked || length > 0;
    const absl::string_view target = Sv(req.target());

    // Guarantee 9: HEAD is GET without the body (Encode leaves it out).
    head_ = req.method() == http::verb::head;
    const bool get = req.method() == http::verb::get || head_;
    if (get && (target == "/health" || target == "/metrics")) {
      if (has_body) {
        return Refuse(Error(ErrorCode::kBadRequest, "a GET request carries no body"),
                      opt_.header_limit);
      }
      if (target == "/health") {
        operation_ = "health";
        if (shared_->draining.load()) {
          return Respond(ErrorReply(Error(ErrorCode::kShuttingDown, "the node is shutting down")),
                         true);
        }
        Reply ok;
        ok.body = nlohmann::json{{"status", "ok"}, {"node_name", opt_.node_name}}.dump();
        return Respond(ok, /*close=*/health_only_);  // a kept slot serves one request
      }
      operation_ = "metrics";
      auto serve_metrics = [this] {
        Reply metrics;
        metrics.body = shared_->metrics->RenderPrometheus();
        Respond(metrics, /*close=*/health_only_, "text/plain; version=0.0.4");
      };
      if (opt_.metrics_require_auth && !CheckCredentials(req[http::field::authorization],
                                                         /*token_request=*/false, serve_metrics)) {
        return;
      }
      return serve_metrics();
    }
    if (req.method() == http::verb::get && IsSubscribeTarget(target) && opt_.subscribe) {
      return OnSubscribe(has_body);
    }
    if (health_only_) {
      // Admitted into a slot kept for monitoring (HttpShared::Admission::kHealthOnly).
      return Refuse(Error(ErrorCode::kTooManyConnections,
                          "too many connections (--max-connections): only /health and /metrics "
                          "are answered"),
                    has_body ? opt_.header_limit : 0, /*close=*/true);
    }
    if (req.method() != http::verb::post || target != "/") {
      return Refuse(Error(ErrorCode::kBadRequest,
                          absl::StrCat("no such endpoint: ", Truncated(Sv(req.method_string()), 16),
                                       " ", Truncated(target, 200),
                                       " (operations are POST /; also GET /health, GET /metrics, "
                                       "GET /subscribe/<database>/<table>)")),
                    has_body ? opt_.header_limit : 0, /*close=*/has_body);
    }
    if (shared_->draining.load()) {
      return Refuse(Error(ErrorCode::kShuttingDown, "the node is shutting down"),
                    opt_.header_limit);
    }
    // Guarantee 4: credentials before anything of the body. Without any, a body small enough
    // to be a token request (Harper's create_authentication_tokens carries its credentials in
    // the body) is read, and only that operation may run (Caller::Kind::kAnonymous).
    const bool token_request = !chunked && parser_->content_length().has_value() &&
                               length <= kTokenRequestBytes &&
                               req.count(http::field::expect) == 0;  // no 100 without them
    if (!CheckCredentials(req[http::field::authorization], token_request,
                          [this] { AfterCredentials(); })) {
      return;
    }
    AfterCredentials();
  }

  // A GET /subscribe/... (SPEC W1): credentials as for an operation, then the subscription is
  // opened on a worker and its events streamed (BeginStream) until it ends.
  void OnSubscribe(bool has_body) {
    operation_ = "subscribe";
    if (has_body) {
      return Refuse(Error(ErrorCode::kBadRequest, "a GET request carries no body"),
                    opt_.header_limit);
    }
    if (health_only_) {
      return Refuse(Error(ErrorCode::kTooManyConnections,
                          "too many connections (--max-connections): only /health and /metrics "
                          "are answered"),
                    0);
    }
    if (shared_->draining.load()) {
      return Refuse(Error(ErrorCode::kShuttingDown, "the node is shutting down"), 0);
    }
    const auto& req = parser_->get();
    if (!CheckCredentials(req[http::field::authorization], /*token_request=*/false,
                          [this] { OpenSubscription(); })) {
      return;
    }
    OpenSubscription();
  }

  void OpenSubscription() {
    const auto& req = parser_->get();
    const bool websocket = beast::websocket::is_upgrade(req);
    if (websocket) {
      // What Beast would refuse at the upgrade, refused before a subscription opens for it.
      if (absl::Status checked = CheckUpgrade(req); !checked.ok()) return Refuse(checked, 0);
    }
    // The stream holds the connection: while the subscription is idle no operation of the
    // connection is pending to hold it (a search's producer thread holds it instead). The
    // cycle ends with the stream: the connection drops its reply stream and clears `pump`
    // when it closes or the stream finishes, and the hub drops its sink when it ends or finds
    // the connection gone. `pump` moves to a WebSocket session with the connection.
    auto pump = std::make_shared<std::function<void()>>([self = Self()] { self->Pump(); });
    auto rs = std::make_shared<ReplyStream>(
        [executor = executor_, pump] {
          net::post(executor, [pump] {
            if (*pump) (*pump)();
          });
        },
        opt_.write_timeout, absl::InfiniteFuture());
    pump_ = pump;
    net::post(shared_->workers, [self = Self(), rs, websocket,
                                 target = std::string(Sv(req.target())),
                                 last_id = std::string(Sv(req["Last-Event-ID"]))] {
      absl::Status opened;
      try {
        opened = self->opt_.subscribe(target, last_id, self->caller_, rs,
                                      websocket ? EventFraming::kWebSocket : EventFraming::kSse);
      } catch (const std::exception& e) {  // guarantee 7, as for an operation
        self->Internal(e.what());          // logged and counted
        opened = Error(ErrorCode::kInternal,
                       "internal error: the subscription failed unexpectedly (the node's log "
                       "has the details)");
      }
      net::post(self->executor_, [self, rs, opened, websocket] {
        if (self->closed_) return rs->Cancel();
        if (!opened.ok()) {
          self->DropPump();
          return self->Respond(ErrorReply(opened), false);
        }
        if (websocket) return self->HandOverToWebSocket(rs);
        self->BeginStream(rs, nullptr, kEventStream);
      });
    });
  }

  // The WebSocket handshake's own fields (RFC 6455 §4.2.1), and nothing sent after the request
  // before its answer (§4.1: those bytes would be lost with the HTTP session's buffer).
  absl::Status CheckUpgrade(const http::request<http::string_body>& req) const {
    if (req[http::field::sec_websocket_version] != "13") {
      return Error(ErrorCode::kBadRequest, "a WebSocket upgrade needs Sec-WebSocket-Version: 13");
    }
    if (req[http::field::sec_websocket_key].size() != 24) {
      return Error(ErrorCode::kBadRequest,
                   "a WebSocket upgrade needs a Sec-WebSocket-Key of 16 bytes in base64");
    }
    if (buffer_.size() > 0) {
      return Error(ErrorCode::kBadRequest,
                   "bytes came after the WebSocket upgrade request before its answer");
    }
    return absl::OkStatus();
  }

  // The subscription opened for an upgrade: the connection, its admission and the stream's
  // wake-ups go to a WebSocket session (node/http_websocket.h); this session ends with
  // nothing of the connection left (closed_: a Cancel or an Evict of it does nothing).
  void HandOverToWebSocket(std::shared_ptr<ReplyStream> rs) {
    closed_ = true;
    handed_over_ = true;
    shared_->Unregister(this);
    StrandPump pump = std::move(pump_);
    *pump = nullptr;  // the WebSocket session points it at itself
    StartWebSocket(shared_, std::move(stream_), parser_->release(), std::move(rs), std::move(pump),
                   client_, start_);
    start_ = absl::InfinitePast();  // recorded by the WebSocket session
  }

  // The rest of OnHeader for a `POST /` whose credentials are good: framing, then the body.
  void AfterCredentials() {
    const auto& req = parser_->get();
    const bool chunked = req.count(http::field::transfer_encoding) > 0;
    const uint64_t length = parser_->content_length().value_or(0);
    if (chunked) {
      return Refuse(Error(ErrorCode::kLengthRequired,
                          "chunked request bodies are not accepted: send the body with "
                          "Content-Length"),
                    opt_.header_limit);
    }
    if (!parser_->content_length().has_value()) {
      return Refuse(
          Error(ErrorCode::kLengthRequired, "a request body needs a Content-Length header"),
          opt_.header_limit);
    }
    if (const auto enc = req[http::field::content_encoding];
        !enc.empty() && !absl::EqualsIgnoreCase(Sv(enc), "identity")) {
      return Refuse(Error(ErrorCode::kBadRequest, "compressed request bodies are not accepted"),
                    opt_.header_limit);
    }
    if (length > opt_.max_body_bytes) {
      // An authenticated client: read the body it announced and throw it away (within the
      // request's deadline), so that it hears the answer.
      return Refuse(Error(ErrorCode::kBodyTooLarge,
                          absl::StrCat("the body is larger than the limit of ", opt_.max_body_bytes,
                                       " bytes (--max-body-bytes)")),
                    length);
    }
    const auto expect = req[http::field::expect];
    if (!http10_ && absl::EqualsIgnoreCase(Sv(expect), "100-continue")) {
      out_ = "HTTP/1.1 100 Continue\r\n\r\n";
      return net::async_write(stream_, net::buffer(out_),
                              [self = Self()](beast::error_code ec, size_t) {
                                if (ec) return self->Abort(ec);
                                self->ReadBody();
                              });
    }
    ReadBody();
  }

  // Guarantee 4. True when the request may go on now with `caller_` set; false when it was
  // refused (answered 401, after the guard's delay) or waits for a password's hash, which runs
  // on the hashing threads (argon2id takes tens of milliseconds: never on this I/O thread nor
  // a worker), `then` running on the strand once the credentials are good. `token_request`: without
  // credentials, the request may still ask for tokens (kAnonymous).
  bool CheckCredentials(boost::beast::string_view header, bool token_request,
                        std::function<void()> then) {
    if (shared_->auth == nullptr) {
      caller_ = Caller();
      caller_.kind = Caller::Kind::kOpen;
      caller_.address = address_;
      proven.store(true);
      return true;
    }
    std::optional<absl::StatusOr<Caller>> quick = shared_->auth->Quick(Sv(header));
    if (quick.has_value()) return Admit(std::move(*quick), header.empty() && token_request);
    // A password to hash. Bounded: past kMaxPendingHashes waiting (a flood of new or wrong
    // passwords) the request is refused at once, and remembered passwords and tokens go on;
    // checks of one address or one claimed user wait their turn in the guard (LoginGuard
    // invariant 1) before their hash is queued.
    if (shared_->hashing.load() >= HttpShared::kMaxPendingHashes) {
      Refuse(Error(ErrorCode::kTooManyConnections,
                   "too many logins are being checked right now; try again"),
             opt_.header_limit);
      return false;
    }
    const std::string claimed = Authenticator::ClaimedUser(Sv(header));
    auto hash = [self = Self(), header = std::string(Sv(header)), claimed,
                 then = std::move(then)]() mutable {
      self->shared_->hashing.fetch_add(1);
      net::post(self->shared_->hashers,
                [self, header = std::move(header), claimed, then = std::move(then)]() mutable {
                  absl::StatusOr<Caller> result = self->shared_->auth->Authenticate(header);
                  self->shared_->hashing.fetch_sub(1);
                  // The guard's reservation ends here, whether or not the connection is still there
                  // (LoginGuard invariant 2).
                  LoginGuard& logins = self->shared_->logins;
                  absl::Duration delay;
                  if (!result.ok()) {
                    delay = logins.Failed(self->client_, claimed, absl::Now(), /*reserved=*/true);
                  } else if (result->verified_password) {
                    logins.Succeeded(self->client_, claimed, /*reserved=*/true);
                  } else {
                    logins.Released(self->client_, claimed);
                  }
                  net::post(self->executor_, [self, result = std::move(result), delay,
                                              then = std::move(then)]() mutable {
                    if (self->closed_) return;
                    if (self->Admit(std::move(result), /*token_request=*/false, delay)) then();
                  });
                });
    };
    const std::optional<absl::Duration> wait =
        shared_->logins.Reserve(client_, claimed, absl::Now());
    if (!wait.has_value()) {
      RefuseLogins();
      return false;
    }
    if (*wait == absl::ZeroDuration()) {
      hash();
      return false;
    }
    timer_.expires_after(Chrono(*wait));
    timer_.async_wait(
        [self = Self(), claimed, hash = std::move(hash)](beast::error_code ec) mutable {
          if (ec || self->closed_) return self->shared_->logins.Released(self->client_, claimed);
          hash();
        });
    return false;
  }

  // Too many failed logins of this address or of the user it claims (LoginGuard invariant 1).
  void RefuseLogins() {
    Refuse(Error(ErrorCode::kTooManyLogins,
                 absl::StrCat("too many failed logins from this address or for this user: try "
                              "again in ",
                              absl::FormatDuration(LoginGuard::kMaxDelay))),
           opt_.header_limit);
  }

  // What the credentials came to: true with `caller_` set, or false with the request refused.
  // `counted`: the guard has counted a hashed check's outcome already, and this is the delay
  // of its failure (CheckCredentials); unset for what needed no hash.
  bool Admit(absl::StatusOr<Caller> result, bool token_request,
             std::optional<absl::Duration> counted = std::nullopt) {
    if (result.ok()) {
      caller_ = *std::move(result);
      caller_.address = address_;
      proven.store(true);
      return true;
    }
    if (token_request) {
      // A token request checks a password too (in the operation): it waits its turn in the
      // guard as a login does, and the operation's answer ends the reservation (EndAnonymous).
      caller_ = Caller();
      caller_.kind = Caller::Kind::kAnonymous;
      caller_.address = address_;
      const std::optional<absl::Duration> wait = shared_->logins.Reserve(client_, "", absl::Now());
      if (!wait.has_value()) {
        RefuseLogins();
        return false;
      }
      anonymous_reserved_ = true;
      if (*wait == absl::ZeroDuration()) return true;
      timer_.expires_after(Chrono(*wait));
      timer_.async_wait([self = Self()](beast::error_code ec) {
        if (ec || self->closed_) {
          self->EndAnonymous(0);
          return;
        }
        self->AfterCredentials();
      });
      return false;
    }
    const absl::Status auth = result.status();
    const absl::Duration delay =
        counted.has_value()
            ? *counted
            : shared_->logins.Failed(
                  client_,
                  Authenticator::ClaimedUser(Sv(parser_->get()[http::field::authorization])),
                  absl::Now());
    Reply reply = ErrorReply(auth);
    if (delay == absl::ZeroDuration()) {
      Send(reply, true, opt_.header_limit, kJson, "\r\nWWW-Authenticate: Basic realm=\"cairn\"");
      return false;
    }
    timer_.expires_after(Chrono(delay));
    timer_.async_wait([self = Self(), reply = std::move(reply)](beast::error_code ec) {
      if (ec || self->closed_) return;
      self->Send(reply, true, self->opt_.header_limit, kJson,
                 "\r\nWWW-Authenticate: Basic realm=\"cairn\"");
    });
    return false;
  }

  void ReadBody() {
    parser_->body_limit(opt_.max_body_bytes);
    http::async_read(stream_, buffer_, *parser_,
                     [self = Self()](beast::error_code ec, size_t) { self->OnBody(ec); });
  }

  void OnBody(beast::error_code ec) {
    if (closed_) return;
    if (ec == beast::error::timeout || ec == http::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::operation_aborted || ec == net::error::connection_reset ||
        ec == http::error::partial_message) {
      return Abort(ec);
    }
    if (ec) {
      ++shared_->malformed;
      return Refuse(Error(ErrorCode::kBadRequest,
                          absl::StrCat("malformed HTTP request body: ", ec.message())),
                    opt_.header_limit);
    }
    std::string body = std::move(parser_->get().body());
    parser_.reset();
    if (body.find('\0') != std::string::npos) {
      return Respond(ErrorReply(Error(ErrorCode::kBadRequest, "the body contains a NUL byte")),
                     false);
    }
    Dispatch(std::move(body));
  }

  // --- Running the operation --------------------------------------------------------------

  void Dispatch(std::string body) {
    shared_->running.fetch_add(1);
    net::post(shared_->workers, [self = Self(), body = std::move(body)]() mutable {
      self->ServeOnWorker(std::move(body));
      self->shared_->running.fetch_sub(1);
    });
  }

  // The end of a request's login as the operation answered it (`status`; 0: it never ran):
  // ends a token request's reservation in the guard (LoginGuard invariant 2), counts a 401 as
  // a failed login (U8) and a token request's 200 as a verified password. Returns how long to
  // wait before answering. Runs where the request is (the strand, or the worker owning it).
  absl::Duration EndAnonymous(int status) {
    LoginGuard& logins = shared_->logins;
    if (anonymous_reserved_) {
      anonymous_reserved_ = false;
      if (status == 200) {
        logins.Succeeded(client_, "", /*reserved=*/true);
        return absl::ZeroDuration();
      }
      logins.Released(client_, "");
    }
    if (status != 401) return absl::ZeroDuration();
    return logins.Failed(client_, caller_.Who(), absl::Now());
  }

  // On a worker, which owns the connection until it hands it back to the strand (nothing else
  // touches it meanwhile: the strand reads nothing while an operation runs, and Cancel()
  // leaves a busy connection alone). Runs the operation and answers. The answer goes out from
  // here when the socket takes it at once (the common case), sparing the client a wait for an
  // I/O thread; and while the client's next request follows at once, it is served here too
  // (NextOnWorker), so a lone client pays one thread hand-off per request, not two.
  void ServeOnWorker(std::string body) {
    for (;;) {
      auto deadline = std::make_shared<Deadline>(start_ + opt_.operation_timeout, ClientProbe());
      Reply reply = RunOperation(body, deadline.get());
      if (reply.stream) return RunStream(std::move(reply), std::move(deadline));
      if (reply.error_code == "REQUEST_TIMEOUT") shared_->TimedOut(address_, reply.operation);
      const bool close = !keep_alive_ || shared_->draining.load();
      std::string bytes = Encode(reply, close, kJson, "");
      // A 401 from the operation (a token request's wrong password, a bad refresh token) is a
      // failed login (U8): counted, and answered after the guard's delay, as at the door.
      const absl::Duration delay = EndAnonymous(reply.status);
      const size_t written = delay == absl::ZeroDuration() ? WriteFromWorker(bytes) : 0;
      if (written == bytes.size() && !close) {
        operation_ = reply.operation;
        status_ = reply.status;
        Record();
        std::optional<std::string> next = NextOnWorker();
        if (!next.has_value()) return;  // handed back
        body = std::move(*next);
        continue;
      }
      net::post(executor_,
                [self = Self(), bytes = std::move(bytes), written, close, status = reply.status,
                 op = std::move(reply.operation), delay]() mutable {
                  if (self->closed_) return;
                  self->operation_ = std::move(op);
                  self->status_ = status;
                  if (delay == absl::ZeroDuration()) {
                    return self->SendBytes(std::move(bytes), written, close, 0);
                  }
                  self->timer_.expires_after(Chrono(delay));
                  self->timer_.async_wait(
                      [self, bytes = std::move(bytes), close](beast::error_code ec) mutable {
                        if (ec || self->closed_) return;
                        self->SendBytes(std::move(bytes), 0, close, 0);
                      });
                });
      return;
    }
  }

  // On the worker that owns the connection, after an answer went out whole: the next
  // request's body when it arrives within kFastPathWait, complete, and plainly acceptable
  // (FastPathEligible). Anything else goes back to the strand at the step it reached, where
  // the full checks run; then nullopt.
  std::optional<std::string> NextOnWorker() {
    auto hand_back = [this](std::function<void(Session*)> step) {
      net::post(executor_, [self = Self(), step = std::move(step)] { step(self.get()); });
      return std::nullopt;
    };
    auto read_request = [](Session* s) { s->ReadRequest(); };
    if constexpr (kTls) {
      return hand_back(read_request);
    } else {
      if (shared_->draining.load()) return hand_back(read_request);
      auto& socket = Lowest().socket();
      if (buffer_.size() == 0) {
        pollfd p{socket.native_handle(), POLLIN, 0};
        const timespec wait{0, static_cast<long>(absl::ToInt64Nanoseconds(kFastPathWait))};
        if (ppoll(&p, 1, &wait, nullptr) != 1) return hand_back(read_request);
        beast::error_code ec;
        const size_t n = socket.read_some(buffer_.prepare(kReadChunk), ec);  // non-blocking
        buffer_.commit(n);
        if (ec == net::error::would_block) return hand_back(read_request);
        if (ec) return hand_back([ec](Session* s) { s->Abort(ec); });
      }
      NewParser();
      start_ = absl::Now();
      beast::error_code ec;
      buffer_.consume(parser_->put(buffer_.data(), ec));  // stops after the header
      if (ec == http::error::need_more || (!ec && !parser_->is_header_done())) {
        return hand_back([](Session* s) { s->ReadHeader(/*fresh=*/false); });
      }
      if (ec || !FastPathEligible()) {
        // The worker set no deadline: the request's starts now, on the strand (guarantee 3).
        return hand_back([ec](Session* s) {
          s->Lowest().expires_after(Chrono(s->opt_.request_timeout));
          s->OnHeader(ec);
        });
      }
      parser_->body_limit(opt_.max_body_bytes);
      if (!parser_->is_done()) buffer_.consume(parser_->put(buffer_.data(), ec));
      if (ec || !parser_->is_done()) {
        return hand_back([ec](Session* s) { s->OnBody(ec ? ec : http::error::partial_message); });
      }
      std::string body = std::move(parser_->get().body());
      parser_.reset();
      if (body.find('\0') != std::string::npos) {
        return hand_back([](Session* s) {
          s->busy_ = true;
          s->Respond(ErrorReply(Error(ErrorCode::kBadRequest, "the body contains a NUL byte")),
                     false);
        });
      }
      return body;
    }
  }

  // A POST / that OnHeader would pass without any answer of its own, with its whole body
  // already read. Conservative: anything unusual takes the full path on the strand.
  bool FastPathEligible() {
    const auto& req = parser_->get();
    if (req.method() != http::verb::post || Sv(req.target()) != "/") return false;
    if (static_cast<size_t>(std::distance(req.begin(), req.end())) > opt_.max_header_fields) {
      return false;
    }
    if (req.count(http::field::content_length) != 1 ||
        req.count(http::field::transfer_encoding) != 0 || req.count(http::field::expect) != 0 ||
        req.count(http::field::content_encoding) != 0) {
      return false;
    }
    const uint64_t length = parser_->content_length().value_or(0);
    if (length > opt_.max_body_bytes || buffer_.size() < length) return false;
    if (shared_->auth == nullptr) {
      caller_ = Caller();
      caller_.kind = Caller::Kind::kOpen;
    } else {
      // Only credentials good without a hash: anything else takes the strand's full path.
      std::optional<absl::StatusOr<Caller>> quick =
          shared_->auth->Quick(Sv(req[http::field::authorization]));
      if (!quick.has_value() || !quick->ok()) return false;
      caller_ = **std::move(quick);
    }
    caller_.address = address_;
    proven.store(true);
    http10_ = req.version() < 11;
    keep_alive_ = req.keep_alive();
    return true;
  }

  // Whether the client is still connected (guarantee 8): it has not closed or reset its end.
  // Pipelined bytes waiting to be read do not count as leaving.
  std::function<bool()> ClientProbe() {
    const int fd = Lowest().socket().native_handle();
    return [fd] {
      pollfd p{fd, POLLRDHUP, 0};
      return ::poll(&p, 1, 0) != 1 || (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) == 0;
    };
  }

  // On a worker. Guarantee 7.
  Reply RunOperation(absl::string_view body, Deadline* deadline) {
    Reply reply;
    try {
      reply = shared_->handler(body, caller_, deadline);
    } catch (const std::exception& e) {
      reply = Internal(e.what());
    } catch (...) {
      reply = Internal("an exception that is not a std::exception");
    }
    shared_->metrics->RecordWrites(reply.operation, reply.records_written);
    return reply;
  }

  Reply Internal(absl::string_view what) {
    ++shared_->internal_errors;
    spdlog::error("[{}] an operation from {} failed with an exception: {} (answered 500)",
                  opt_.node_name, address_, std::string(what));
    return ErrorReply(Error(ErrorCode::kInternal,
                            "internal error: the operation failed unexpectedly (the node's log "
                            "has the details)"));
  }

  // On a worker: hands a streamed answer's producer to a stream thread (guarantee 8), and
  // the connection to its strand, which sends what the producer writes.
  void RunStream(Reply reply, std::shared_ptr<Deadline> deadline) {
    std::weak_ptr<Session> weak = this->weak_from_this();
    auto rs = std::make_shared<ReplyStream>(
        [weak] {
          if (auto self = weak.lock()) {
            net::post(self->executor_, [self] { self->Pump(); });
          }
        },
        opt_.write_timeout, deadline->at());
    net::post(executor_, [self = Self(), rs, deadline, op = reply.operation] {
      self->operation_ = op;
      self->BeginStream(rs, deadline, kJson);
    });
    shared_->running.fetch_add(1);
    net::post(shared_->streamers, [self = Self(), rs, deadline, op = reply.operation,
                                   computes = reply.stream_computes,
                                   produce = std::move(reply.stream)] {
      SetStreamThreadPriority(self->opt_.stream_priority);
      absl::Status status;
      try {
        status = computes ? ProduceInTurn(self->shared_->stream_cpus, *deadline, *rs, produce)
                          : produce([&rs](absl::string_view piece) { return rs->Write(piece); });
      } catch (const std::exception& e) {
        spdlog::error("[{}] streamed answer to {} failed: {}", self->opt_.node_name, self->address_,
                      e.what());
        ++self->shared_->internal_errors;
        status = Error(ErrorCode::kInternal, "internal error: the answer failed unexpectedly");
      }
      if (GetErrorCode(status) == ErrorCode::kRequestTimeout) {
        self->shared_->TimedOut(self->address_, op);
      }
      rs->Finish(std::move(status));
      self->shared_->running.fetch_sub(1);
    });
  }

  // `deadline`: the producer's (null: none, a subscription's).
  void BeginStream(std::shared_ptr<ReplyStream> rs, std::shared_ptr<Deadline> deadline,
                   absl::string_view content_type) {
    if (closed_) {
      if (deadline != nullptr) deadline->Cancel();
      return rs->Cancel();
    }
    reply_stream_ = std::move(rs);
    stream_deadline_ = std::move(deadline);
    chunked_reply_ = !http10_;
    if (!chunked_reply_) keep_alive_ = false;  // HTTP/1.0: the answer ends with the connection
    // Events are not to be cached, nor held back by a proxy's buffering.
    const absl::string_view extra =
        content_type == kEventStream ? "\r\nCache-Control: no-cache\r\nX-Accel-Buffering: no" : "";
    stream_head_ =
        Head(200, http10_, content_type, chunked_reply_ ? "\r\nTransfer-Encoding: chunked" : "",
             !keep_alive_ || shared_->draining.load(), extra);
    Pump();
  }

  void Pump() {
    if (closed_ || writing_ || reply_stream_ == nullptr) return;
    ReplyStream::Taken t = reply_stream_->Take();
    if (!stream_head_.empty()) {
      // Nothing sent yet: the status line waits for the first bytes, and a producer that
      // failed before any (a deadline, a drop) gets a plain error answer.
      if (t.data.empty() && !t.finished) return;
      if (t.data.empty() && !t.status.ok()) {
        reply_stream_.reset();
        DropPump();
        stream_deadline_.reset();
        stream_head_.clear();
        return Respond(ErrorReply(t.status), false);
      }
      status_ = 200;
    }
    std::string out = std::move(stream_head_);
    stream_head_.clear();
    if (!t.data.empty()) out += chunked_reply_ ? ChunkOf(t.data) : t.data;
    const bool finished = t.finished;
    const bool complete = t.finished && t.status.ok();
    if (complete && chunked_reply_) out += "0\r\n\r\n";
    if (out.empty()) {
      if (finished) FinishStream(false);
      return;  // idle until the producer writes again
    }
    writing_ = true;
    out_ = std::move(out);
    Lowest().expires_after(Chrono(opt_.write_timeout));
    net::async_write(stream_, net::buffer(out_),
                     [self = Self(), finished, complete](beast::error_code ec, size_t) {
                       self->writing_ = false;
                       if (ec) return self->Abort(ec);
                       if (finished) return self->FinishStream(complete);
                       self->Pump();
                     });
  }

  void FinishStream(bool complete) {
    reply_stream_.reset();
    DropPump();
    stream_deadline_.reset();
    Record();
    if (!complete || !keep_alive_) return CloseNow();  // a cut answer: the client must see it
    ReadRequest();
  }

  // --- Answering --------------------------------------------------------------------------

  // An answer after which the connection continues (unless the client or a drain says not).
  void Respond(const Reply& reply, bool close, absl::string_view content_type = kJson) {
    Send(reply, close || !keep_alive_ || shared_->draining.load(), 0, content_type, "");
  }

  // A refusal: the answer, then the connection closes. `drain` bytes more of the request are
  // read and thrown away first (so the client hears the answer); 0: close at once.
  void Refuse(const absl::Status& error, uint64_t drain, bool close = true) {
    // A refusal that may keep the connection still honours the client and a drain.
    close = close || !keep_alive_ || shared_->draining.load();
    Send(ErrorReply(error), close, close ? drain : 0, kJson, "");
  }

  void Send(const Reply& reply, bool close, uint64_t drain, absl::string_view content_type,
            absl::string_view extra) {
    if (anonymous_reserved_) EndAnonymous(0);  // refused before the operation ran
    if (closed_) return;
    busy_ = true;
    status_ = reply.status;
    SendBytes(Encode(reply, close, content_type, extra), 0, close, drain);
  }

  // An answer's bytes. Reads only what is fixed while a request is served (http10_).
  std::string Encode(const Reply& reply, bool close, absl::string_view content_type,
                     absl::string_view extra) const {
    std::string out = Head(reply.status, http10_, content_type,
                           absl::StrCat("\r\nContent-Length: ", reply.body.size()), close, extra);
    if (!head_) out += reply.body;  // guarantee 9: a HEAD's answer has none
    return out;
  }

  // Sends `bytes` from `offset` on (what precedes it went out already), then goes on to the
  // next request, or closes.
  void SendBytes(std::string bytes, size_t offset, bool close, uint64_t drain) {
    auto sent = [this, close, drain] {
      Record();
      if (!close) return ReadRequest();
      Linger(drain);
    };
    if (offset >= bytes.size()) return sent();
    out_ = std::move(bytes);
    Lowest().expires_after(Chrono(opt_.write_timeout));
    net::async_write(stream_, net::buffer(out_) + offset,
                     [self = Self(), sent](beast::error_code ec, size_t) {
                       if (ec) return self->Abort(ec);
                       sent();
                     });
  }

  // On a worker, plain TCP only: writes what the socket takes now, without waiting. Safe
  // because nothing else touches the socket while an operation runs: the connection reads
  // nothing until it has answered, and Cancel() leaves a busy connection alone. The strand
  // sees the bytes written through the post that follows.
  size_t WriteFromWorker(const std::string& bytes) {
    if constexpr (kTls) {
      return 0;
    } else {
      beast::error_code ec;
      auto& socket = Lowest().socket();
      socket.non_blocking(true, ec);
      if (ec) return 0;
      const size_t n = socket.write_some(net::buffer(bytes), ec);
      return ec ? 0 : n;
    }
  }

  void Record() {
    if (start_ == absl::InfinitePast()) return;
    shared_->metrics->RecordRequest(operation_, status_, absl::Now() - start_);
    start_ = absl::InfinitePast();
  }

  // --- Closing ----------------------------------------------------------------------------

  void Linger(uint64_t bytes) {
    beast::error_code ignored;
    Lowest().socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
    lingered_ = 0;
    linger_limit_ = bytes;
    if (bytes == 0) return CloseNow();
    // What is already buffered counts.
    lingered_ = buffer_.size();
    buffer_.consume(buffer_.size());
    Lowest().expires_after(Chrono(bytes > opt_.header_limit ? opt_.request_timeout : kLingerTime));
    LingerRead();
  }

  void LingerRead() {
    if (closed_ || lingered_ >= linger_limit_) return CloseNow();
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(scratch_.size(), linger_limit_ - lingered_));
    Lowest().async_read_some(net::buffer(scratch_.data(), want),
                             [self = Self()](beast::error_code ec, size_t n) {
                               self->lingered_ += n;
                               if (ec) return self->CloseNow();
                               self->LingerRead();
                             });
  }

  void Abort(beast::error_code ec) {
    if (ec == beast::error::timeout) ++shared_->timeouts;
    CloseNow();
  }

  void CloseNow() {
    if (anonymous_reserved_) EndAnonymous(0);  // the request ends without its operation
    if (closed_) return;
    closed_ = true;
    if (reply_stream_ != nullptr) reply_stream_->Cancel();
    reply_stream_.reset();
    DropPump();
    if (stream_deadline_ != nullptr) stream_deadline_->Cancel();  // a producer finding nothing
    stream_deadline_.reset();
    timer_.cancel();
    beast::error_code ignored;
    Lowest().socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
    Lowest().close();
  }

  const std::shared_ptr<HttpShared> shared_;
  const HttpServerOptions& opt_;
  Stream stream_;
  // The connection's strand, kept apart from stream_: after a hand-off to a WebSocket session
  // stream_ is moved from, and a Cancel that was already on its way still posts here.
  const net::any_io_executor executor_;
  net::steady_timer timer_;    // delays a refused login (LoginGuard)
  const std::string address_;  // the client's address, for logs and audit
  const std::string client_;   // its ClientKey: the connection caps and the login guard count this
  const bool health_only_;     // HttpShared::Admission::kHealthOnly
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string out_;  // the bytes being written; kept alive until the write completes

  // The request being served.
  Caller caller_;                            // who sent it (set before its body is read)
  absl::Time start_ = absl::InfinitePast();  // its first byte; InfinitePast: recorded
  std::string operation_ = "unknown";
  int status_ = 0;
  bool http10_ = false;
  bool head_ = false;  // a HEAD: the answer without its body
  bool keep_alive_ = true;
  bool busy_ = false;  // a request is past its first byte and not yet answered
  // A token request holds a reservation in the login guard until EndAnonymous.
  bool anonymous_reserved_ = false;
  bool closed_ = false;   // the socket is closed; nothing more starts
  bool writing_ = false;  // a streamed answer's write is in flight

  // A subscription's wake-up target (http_websocket.h), which holds this session: cleared when
  // its stream ends or the connection closes.
  void DropPump() {
    if (pump_ == nullptr) return;
    *pump_ = nullptr;
    pump_.reset();
  }
  StrandPump pump_;
  bool handed_over_ = false;  // the connection went to a WebSocket session

  // A streamed answer, and the deadline its producer checks (cancelled when the connection
  // closes).
  std::shared_ptr<ReplyStream> reply_stream_;
  std::shared_ptr<Deadline> stream_deadline_;
  bool chunked_reply_ = true;
  std::string stream_head_;

  // Reading and throwing away after a refusal.
  uint64_t lingered_ = 0, linger_limit_ = 0;
  std::array<char, 16 << 10> scratch_{};
};

}  // namespace

void StartSession(std::shared_ptr<HttpShared> shared, net::ip::tcp::socket socket,
                  std::string address, std::string client, bool health_only,
                  net::ssl::context* tls) {
  beast::tcp_stream tcp(std::move(socket));
  if (tls == nullptr) {
    std::make_shared<Session<beast::tcp_stream>>(std::move(shared), std::move(tcp),
                                                 std::move(address), std::move(client), health_only)
        ->Run();
  } else {
    using TlsStream = beast::ssl_stream<beast::tcp_stream>;
    std::make_shared<Session<TlsStream>>(std::move(shared), TlsStream(std::move(tcp), *tls),
                                         std::move(address), std::move(client), health_only)
        ->Run();
  }
}

HttpShared::HttpShared(OperationHandler h, Metrics* m, HttpServerOptions o)
    : options(std::move(o)),
      handler(std::move(h)),
      metrics(m),
      auth(options.authenticator),
      logins(options.node_name, options.free_login_failures),
      workers(static_cast<size_t>(std::max(1, options.worker_threads))),
      hashers(static_cast<size_t>(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 4))),
      streamers(kStreamThreads),
      stream_cpus(options.stream_cpus) {}

std::string ClientKey(const net::ip::address& address) {
  if (address.is_v4()) return address.to_string();
  const net::ip::address_v6 v6 = address.to_v6();
  if (v6.is_v4_mapped()) return net::ip::make_address_v4(net::ip::v4_mapped, v6).to_string();
  net::ip::address_v6::bytes_type bytes = v6.to_bytes();
  std::fill(bytes.begin() + 8, bytes.end(), 0);
  return absl::StrCat(net::ip::address_v6(bytes).to_string(), "/64");
}

HttpShared::Admission HttpShared::Admit(const std::string& client, int max_total) {
  std::shared_ptr<Connection> evicted;
  Admission admission = Admission::kAdmitted;
  {
    absl::MutexLock lock(&mu);
    auto it = per_client_.find(client);
    if (it != per_client_.end() && it->second >= options.max_connections_per_client) {
      return Admission::kRefused;
    }
    const int open_slots = max_total - ReservedSlots(max_total);
    if (connections_ >= open_slots) evicted = TakeOverLongestWaiting();
    if (connections_ >= max_total) return Admission::kRefused;
    if (connections_ >= open_slots) admission = Admission::kHealthOnly;
    ++per_client_[client];
    ++connections_;
  }
  if (evicted != nullptr) {
    ++evicted_connections;
    evicted->Evict();
  }
  return admission;
}

std::shared_ptr<Connection> HttpShared::TakeOverLongestWaiting() {
  // A linear pass, only near the cap: at most max_connections entries, a few microseconds.
  Connection* oldest = nullptr;
  int64_t oldest_since = 0;
  for (Connection* c : registered_) {
    const int64_t since = c->waiting_since_ns.load();
    if (since <= 0 || c->proven.load()) continue;
    if (oldest == nullptr || since < oldest_since) {
      oldest = c;
      oldest_since = since;
    }
  }
  if (oldest == nullptr) return nullptr;
  std::shared_ptr<Connection> pinned = oldest->Pin();
  // A request of it started since the pass (the swap fails): it is left alone.
  if (pinned == nullptr ||
      !oldest->waiting_since_ns.compare_exchange_strong(oldest_since, Connection::kEvicted)) {
    return nullptr;
  }
  --connections_;
  return pinned;
}

void HttpShared::Release(const std::string& client, bool taken_over) {
  absl::MutexLock lock(&mu);
  if (!taken_over) --connections_;
  auto it = per_client_.find(client);
  if (it != per_client_.end() && --it->second <= 0) per_client_.erase(it);
}

void HttpShared::Register(Connection* c) {
  absl::MutexLock lock(&mu);
  registered_.insert(c);
}

void HttpShared::Unregister(Connection* c) {
  absl::MutexLock lock(&mu);
  registered_.erase(c);
}

void HttpShared::CancelAll() {
  std::vector<std::shared_ptr<Connection>> pinned;
  {
    absl::MutexLock lock(&mu);
    for (Connection* c : registered_) {
      if (auto p = c->Pin()) pinned.push_back(std::move(p));
    }
  }
  for (const auto& c : pinned) c->Cancel();
}

void HttpShared::TimedOut(const std::string& address, const std::string& operation) {
  ++cancelled_operations;
  const int64_t now = absl::ToUnixNanos(absl::Now());
  int64_t last = last_cancel_log_ns.load();
  if (now - last < absl::ToInt64Nanoseconds(kCancelLogEvery) ||
      !last_cancel_log_ns.compare_exchange_strong(last, now)) {
    ++unlogged_cancels;
    return;
  }
  spdlog::warn(
      "[{}] {} from {} stopped at its deadline or when its client left (503 "
      "REQUEST_TIMEOUT; {} more since the last such line)",
      options.node_name, operation, address, unlogged_cancels.exchange(0));
}

int HttpShared::connections() const {
  absl::MutexLock lock(&mu);
  return connections_;
}

}  // namespace cairn::node::http_internal
