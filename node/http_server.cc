// HttpServer: the listening socket, admission (guarantee 2), the I/O and worker threads, and
// an orderly stop. A connection's life is node/http_session.cc.
#include "node/http_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "boost/asio/executor_work_guard.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/ssl/context.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/strand.hpp"
#include "common/status.h"
#include "node/http_session.h"
#include "spdlog/spdlog.h"

namespace cairn::node {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using http_internal::HttpShared;

// File descriptors kept for RocksDB, the peer port and the logs when capping connections.
constexpr int kReservedDescriptors = 512;
// TCP_NOTSENT_LOWAT of every connection: with ReplyStream::kMaxQueued, the most of a streamed
// answer produced ahead of its reader.
constexpr int kNotSentLowWater = 128 << 10;

}  // namespace

class HttpServer::Impl {
 public:
  Impl(OperationHandler handler, Metrics* metrics, HttpServerOptions options)
      : shared_(std::make_shared<HttpShared>(std::move(handler), metrics, std::move(options))),
        acceptor_(net::make_strand(ioc_)),
        retry_(acceptor_.get_executor()) {}

  ~Impl() { Stop(); }

  absl::StatusOr<HostPort> Start();
  void BeginDrain() { shared_->draining.store(true); }
  void Stop();

 private:
  const HttpServerOptions& opt() const { return shared_->options; }
  void Accept();
  void Accepted(tcp::socket socket);
  void AddMetrics();

  std::shared_ptr<HttpShared> shared_;
  std::unique_ptr<net::ssl::context> tls_;  // outlives ioc_: streams refer to it
  int max_connections_ = 0;
  net::io_context ioc_;
  tcp::acceptor acceptor_;
  net::steady_timer retry_;  // accept failed (out of descriptors): try again shortly
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
  bool started_ = false, stopped_ = false;
  absl::Time accept_error_logged_ = absl::InfinitePast();
};

absl::StatusOr<HostPort> HttpServer::Impl::Start() {
  const HttpServerOptions& o = opt();
  if (!o.tls_cert_file.empty()) {
    tls_ = std::make_unique<net::ssl::context>(net::ssl::context::tls_server);
    tls_->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                      net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                      net::ssl::context::no_tlsv1_1 | net::ssl::context::single_dh_use);
    boost::system::error_code ec;
    tls_->use_certificate_chain_file(o.tls_cert_file, ec);
    if (!ec) tls_->use_private_key_file(o.tls_key_file, net::ssl::context::pem, ec);
    if (ec) {
      tls_.reset();
      return Error(
          ErrorCode::kBadRequest,
          absl::StrCat("cannot serve HTTPS with certificate ", o.tls_cert_file, " and key ",
                       o.tls_key_file, ": not a PEM certificate chain and its matching key (",
                       ec.message(), ")"));
    }
  }
  // Guarantee 2 needs descriptors: a cap the process cannot reach would fail accept() instead.
  max_connections_ = o.max_connections;
  if (rlimit limit{}; getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    const int usable = static_cast<int>(limit.rlim_cur) - kReservedDescriptors;
    if (usable < max_connections_) {
      max_connections_ = std::max(16, usable);
      spdlog::warn(
          "[{}] --max-connections {} is more than this process's descriptor limit allows "
          "(ulimit -n {}): serving at most {} connections",
          o.node_name, o.max_connections, limit.rlim_cur, max_connections_);
    }
  }

  boost::system::error_code ec;
  tcp::resolver resolver(ioc_);
  auto endpoints = resolver.resolve(o.listen.host, std::to_string(o.listen.port),
                                    tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  auto fail = [&](absl::string_view what) {
    return Error(ErrorCode::kInternal, absl::StrCat("cannot listen on ", o.listen.ToString(), " (",
                                                    what, ": ", ec.message(), ")"));
  };
  if (ec || endpoints.empty()) return fail("resolve");
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();
  acceptor_.open(endpoint.protocol(), ec);
  if (ec) return fail("socket");
  // SO_REUSEADDR only: SO_REUSEPORT would let a second node bind the same port and silently
  // take half the connections.
  acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  acceptor_.bind(endpoint, ec);
  if (ec) return fail("bind");
  acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return fail("listen");
  HostPort bound = o.listen;
  bound.port = acceptor_.local_endpoint().port();

  AddMetrics();
  work_.emplace(net::make_work_guard(ioc_));
  for (int i = 0; i < std::max(1, o.io_threads); ++i) {
    threads_.emplace_back([this] { ioc_.run(); });
  }
  net::post(acceptor_.get_executor(), [this] { Accept(); });
  started_ = true;
  return bound;
}

void HttpServer::Impl::AddMetrics() {
  Metrics* m = shared_->metrics;
  std::shared_ptr<HttpShared> s = shared_;
  m->AddExternal({"cairn_http_connections", "Open connections to the operations API", "gauge",
                  [s] { return static_cast<double>(s->connections()); }});
  m->AddExternal({"cairn_http_connections_refused_total",
                  "Connections refused over --max-connections or --max-connections-per-client",
                  "counter", [s] { return static_cast<double>(s->refused_connections.load()); }});
  m->AddExternal({"cairn_http_connections_evicted_total",
                  "Connections that had passed no credential check, closed near "
                  "--max-connections to admit another",
                  "counter", [s] { return static_cast<double>(s->evicted_connections.load()); }});
  m->AddExternal({"cairn_http_timeouts_total",
                  "Connections closed because a request or an idle connection timed out", "counter",
                  [s] { return static_cast<double>(s->timeouts.load()); }});
  m->AddExternal({"cairn_http_malformed_requests_total",
                  "Requests refused by the HTTP parser or its framing rules", "counter",
                  [s] { return static_cast<double>(s->malformed.load()); }});
  m->AddExternal({"cairn_http_internal_errors_total",
                  "Operations that failed with an exception (answered 500 INTERNAL)", "counter",
                  [s] { return static_cast<double>(s->internal_errors.load()); }});
  m->AddExternal({"cairn_http_operations_cancelled_total",
                  "Operations stopped at their deadline or when their client left (503 "
                  "REQUEST_TIMEOUT, or a streamed answer cut)",
                  "counter", [s] { return static_cast<double>(s->cancelled_operations.load()); }});
  m->AddExternal({"cairn_search_streams_computing",
                  "Streamed searches holding a CPU slot (--search-cpus)", "gauge",
                  [s] { return static_cast<double>(s->stream_cpus.held()); }});
  m->AddExternal({"cairn_search_streams_waiting",
                  "Streamed searches waiting for a CPU slot (--search-cpus)", "gauge",
                  [s] { return static_cast<double>(s->stream_cpus.waiting()); }});
  m->AddExternal({"cairn_http_login_failures_total", "Requests with missing or wrong credentials",
                  "counter", [s] { return static_cast<double>(s->logins.failures_total()); }});
}

void HttpServer::Impl::Accept() {
  acceptor_.async_accept(
      net::make_strand(ioc_), [this](boost::system::error_code ec, tcp::socket socket) {
        if (!acceptor_.is_open()) return;
        if (ec) {
          // Out of descriptors, most likely: the pending connection stays queued; try again
          // shortly rather than spin.
          if (absl::Now() - accept_error_logged_ > absl::Seconds(10)) {
            spdlog::warn("[{}] accept failed: {}", opt().node_name, ec.message());
            accept_error_logged_ = absl::Now();
          }
          retry_.expires_after(std::chrono::milliseconds(50));
          retry_.async_wait([this](boost::system::error_code wait_ec) {
            if (!wait_ec) Accept();
          });
          return;
        }
        Accepted(std::move(socket));
        Accept();
      });
}

void HttpServer::Impl::Accepted(tcp::socket socket) {
  boost::system::error_code ec;
  const tcp::endpoint remote = socket.remote_endpoint(ec);
  if (ec) return;  // already gone
  socket.set_option(tcp::no_delay(true), ec);
  // The kernel keeps at most this much unsent per connection (sent but unacknowledged bytes
  // are not counted, so a fast reader's window is not limited). Without it a reader that
  // keeps its window small makes the kernel buffer up to 4 MiB of answer for it, and the
  // node produce it: 64 such readers took both cores for 10 s (issue 41, decision 133).
  const int not_sent_low_water = kNotSentLowWater;
  ::setsockopt(socket.native_handle(), IPPROTO_TCP, TCP_NOTSENT_LOWAT, &not_sent_low_water,
               sizeof(not_sent_low_water));
  std::string address = remote.address().to_string();
  std::string client = http_internal::ClientKey(remote.address());
  if (shared_->draining.load()) return;  // the socket closes with this scope
  // Guarantee 2: over a cap, refused at once. On plain HTTP the client hears why (one small
  // non-blocking write into an empty socket buffer); on HTTPS it would take a handshake.
  const http_internal::HttpShared::Admission admission = shared_->Admit(client, max_connections_);
  if (admission == http_internal::HttpShared::Admission::kRefused) {
    ++shared_->refused_connections;
    if (tls_ == nullptr) {
      static const std::string kRefusal = [] {
        const std::string body =
            R"({"error":"too many connections (--max-connections, --max-connections-per-client))"
            R"(","code":"TOO_MANY_CONNECTIONS"})";
        return absl::StrCat(
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            "Content-Length: ",
            body.size(), "\r\nConnection: close\r\n\r\n", body);
      }();
      socket.non_blocking(true, ec);
      socket.write_some(net::buffer(kRefusal), ec);
      socket.shutdown(tcp::socket::shutdown_both, ec);
    }
    return;
  }
  http_internal::StartSession(shared_, std::move(socket), std::move(address), std::move(client),
                              admission == http_internal::HttpShared::Admission::kHealthOnly,
                              tls_.get());
}

void HttpServer::Impl::Stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  shared_->draining.store(true);
  net::post(acceptor_.get_executor(), [this] {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    retry_.cancel();
  });
  // Running operations finish and their answers go out (with Connection: close); idle
  // connections close now. Bounded: SIGTERM must finish within 10 s (SPEC §6).
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (shared_->running.load() > 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  shared_->CancelAll();
  while (shared_->connections() > 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(2));
    shared_->CancelAll();
  }
  work_.reset();
  ioc_.stop();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  // A worker still inside an operation holds its connection, whose socket belongs to ioc_:
  // wait for it before ioc_ goes away (and for a password's hash, which posts to it).
  shared_->hashers.join();
  shared_->streamers.join();
  shared_->workers.join();
}

HttpServer::HttpServer(OperationHandler handler, Metrics* metrics, HttpServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(handler), metrics, std::move(options))) {}

HttpServer::HttpServer(const OpsApi* api, Metrics* metrics, HttpServerOptions options)
    : HttpServer([api](absl::string_view body, const Caller& caller,
                       Deadline* deadline) { return api->Handle(body, caller, deadline); },
                 metrics, std::move(options)) {}

HttpServer::~HttpServer() = default;

absl::StatusOr<HostPort> HttpServer::Start() { return impl_->Start(); }
void HttpServer::BeginDrain() { impl_->BeginDrain(); }
void HttpServer::Stop() { impl_->Stop(); }

}  // namespace cairn::node
