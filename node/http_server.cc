#include "node/http_server.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status.h"
#include "httplib.h"
#include "spdlog/spdlog.h"

namespace cairn::node {
namespace {

constexpr char kJson[] = "application/json";
// Idle keep-alive connections are closed after this, which also bounds how long Stop()
// waits for them (SIGTERM must finish within 10 s, SPEC §6).
constexpr time_t kKeepAliveTimeoutSeconds = 3;
// A client that stalls mid-request for this long loses its connection (and its thread).
constexpr time_t kReadTimeoutSeconds = 5;
constexpr time_t kWriteTimeoutSeconds = 5;

// Per pool thread: the request being served. httplib runs one request at a time per thread,
// from the pre-routing handler to the logger.
thread_local absl::Time t_start;
thread_local std::string t_operation;

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

void SetReply(httplib::Response& res, const Reply& reply) {
  res.status = reply.status;
  res.set_content(reply.body, kJson);
}

}  // namespace

absl::Status HttpServer::Authorize(const std::string& header) const {
  if (options_.admin_password.empty()) return absl::OkStatus();
  if (header.size() > 6 && absl::EqualsIgnoreCase(header.substr(0, 6), "basic ")) {
    std::string decoded;
    if (absl::Base64Unescape(absl::StripAsciiWhitespace(header.substr(6)), &decoded)) {
      const size_t colon = decoded.find(':');
      if (colon != std::string::npos) {
        // Both comparisons always run: the time taken does not tell which one failed.
        const int user_ok = ConstantTimeEquals(decoded.substr(0, colon), options_.admin_user);
        const int password_ok =
            ConstantTimeEquals(decoded.substr(colon + 1), options_.admin_password);
        if ((user_ok & password_ok) != 0) return absl::OkStatus();
      }
    }
  }
  return Error(ErrorCode::kUnauthorized,
               header.empty() ? "credentials required (Basic auth)" : "wrong user or password");
}

HttpServer::HttpServer(const OpsApi* api, Metrics* metrics, HttpServerOptions options)
    : api_(api), metrics_(metrics), options_(std::move(options)) {}

HttpServer::~HttpServer() { Stop(); }

absl::StatusOr<HostPort> HttpServer::Start() {
  if (options_.tls_cert_file.empty()) {
    server_ = std::make_unique<httplib::Server>();
  } else {
    server_ = std::make_unique<httplib::SSLServer>(options_.tls_cert_file.c_str(),
                                                   options_.tls_key_file.c_str());
    if (!server_->is_valid()) {
      server_.reset();
      return Error(ErrorCode::kBadRequest,
                   absl::StrCat("cannot serve HTTPS with certificate ", options_.tls_cert_file,
                                " and key ", options_.tls_key_file,
                                ": not a PEM certificate chain and its matching key"));
    }
  }
  httplib::Server& svr = *server_;
  const int threads = options_.threads;
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  svr.set_tcp_nodelay(true);  // else 44 ms per request on a keep-alive connection
  svr.set_keep_alive_max_count(1'000'000);
  svr.set_keep_alive_timeout(kKeepAliveTimeoutSeconds);
  svr.set_read_timeout(kReadTimeoutSeconds, 0);
  svr.set_write_timeout(kWriteTimeoutSeconds, 0);
  svr.set_payload_max_length(options_.max_body_bytes);
  // httplib's default also sets SO_REUSEPORT, which lets a second node bind the same port
  // and silently take half its connections. Only SO_REUSEADDR here.
  // The callback sees the listening socket before bind(); remember it (see below).
  int listen_fd = -1;
  svr.set_socket_options([&listen_fd](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd = sock;
  });

  // Runs before any body is read. The body limit holds only for bodies sent with
  // Content-Length (httplib reads chunked and compressed bodies whole, unbounded), so those
  // are refused here, unread; the connection closes after the answer.
  svr.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    t_start = absl::Now();
    t_operation = "unknown";
    if (req.method != "POST") return httplib::Server::HandlerResponse::Unhandled;
    absl::Status refused;
    if (req.has_header("Transfer-Encoding")) {
      refused = Error(ErrorCode::kBadRequest,
                      "chunked request bodies are not accepted: send the body with Content-Length");
    } else if (req.has_header("Content-Encoding") &&
               !absl::EqualsIgnoreCase(req.get_header_value("Content-Encoding"), "identity")) {
      refused = Error(ErrorCode::kBadRequest, "compressed request bodies are not accepted");
    }
    if (refused.ok()) return httplib::Server::HandlerResponse::Unhandled;
    res.set_header("Connection", "close");
    SetReply(res, ErrorReply(refused));
    return httplib::Server::HandlerResponse::Handled;
  });

  svr.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    t_operation = "health";
    if (draining_.load()) {
      SetReply(res, ErrorReply(Error(ErrorCode::kShuttingDown, "the node is shutting down")));
      return;
    }
    res.set_content(nlohmann::json{{"status", "ok"}, {"node_name", options_.node_name}}.dump(),
                    kJson);
  });

  svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    t_operation = "metrics";
    res.set_content(metrics_->RenderPrometheus(), "text/plain; version=0.0.4");
  });

  svr.Post("/", [this](const httplib::Request& req, httplib::Response& res) {
    if (draining_.load()) {
      res.set_header("Connection", "close");
      SetReply(res, ErrorReply(Error(ErrorCode::kShuttingDown, "the node is shutting down")));
      return;
    }
    // The body was read (at most --max-body-bytes) before this check: answering with it unread
    // would make the kernel reset the connection, and the client might never see the 401.
    if (absl::Status auth = Authorize(req.get_header_value("Authorization")); !auth.ok()) {
      res.set_header("WWW-Authenticate", "Basic realm=\"cairn\"");
      SetReply(res, ErrorReply(auth));
      return;
    }
    Reply reply = api_->Handle(req.body);
    t_operation = reply.operation;
    metrics_->RecordWrites(reply.operation, reply.records_written);
    if (reply.stream) {
      res.status = 200;
      auto stream = std::move(reply.stream);
      const std::string node_name = options_.node_name;
      res.set_chunked_content_provider(kJson, [stream, node_name](size_t, httplib::DataSink& sink) {
        // Returning false without done() aborts the transfer: the client sees a body cut
        // short, never a well-formed answer with records missing.
        bool complete = false;
        try {
          complete = stream([&sink](absl::string_view piece) {
            return sink.is_writable() && sink.write(piece.data(), piece.size());
          });
        } catch (const std::exception& e) {
          spdlog::error("[{}] streamed answer failed: {}", node_name, e.what());
        }
        if (complete) sink.done();
        return complete;
      });
      return;
    }
    SetReply(res, reply);
  });

  // httplib's own refusals (413 for a body over the limit, 400 for a broken request, 404 for
  // an unknown path) get the API's error shape. Replies we built already have a body.
  svr.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        absl::Status error;
        if (res.status == 413) {
          error = Error(ErrorCode::kBodyTooLarge,
                        absl::StrCat("the body is larger than the limit (--max-body-bytes)"));
        } else if (res.status == 404 || res.status == 405) {
          res.status = 400;
          error = Error(ErrorCode::kBadRequest,
                        absl::StrCat("no such endpoint: ", req.method, " ", req.path,
                                     " (operations are POST /; also GET /health, GET /metrics)"));
        } else {
          res.status = 400;
          error = Error(ErrorCode::kBadRequest, "malformed HTTP request");
        }
        Reply reply = ErrorReply(error);
        res.status = reply.status;
        res.set_content(reply.body, kJson);
        return httplib::Server::HandlerResponse::Handled;
      }));

  svr.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    const absl::Time start = t_start == absl::Time() ? absl::Now() : t_start;
    const absl::Duration latency = absl::Now() - start;
    metrics_->RecordRequest(t_operation, res.status, latency);
    spdlog::debug("[{}] {} {} {} -> {} in {}", options_.node_name, req.remote_addr, req.method,
                  t_operation, res.status, absl::FormatDuration(latency));
    t_start = absl::Time();
    t_operation = "unknown";  // for requests httplib refuses before routing
  });

  int port = options_.listen.port;
  if (port == 0) {
    port = svr.bind_to_any_port(options_.listen.host);
    if (port < 0) port = 0;
  } else if (!svr.bind_to_port(options_.listen.host, port)) {
    port = 0;
  }
  // cpp-httplib 0.11 listens with a backlog of 5: a burst of new connections overflows the
  // accept queue, and connections completed by SYN cookies then lose their request (the client
  // reads a reset). Linux lets listen() on a listening socket raise its backlog.
  if (port != 0 && listen_fd >= 0 && ::listen(listen_fd, SOMAXCONN) != 0) {
    spdlog::warn("[{}] could not raise the listen backlog: {}", options_.node_name,
                 std::strerror(errno));
  }
  svr.set_socket_options([](int) {});  // drops the reference to the local listen_fd
  if (port == 0) {
    return Error(ErrorCode::kInternal, absl::StrCat("cannot listen on ", options_.listen.ToString(),
                                                    " (address in use or not local)"));
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // stop() is a no-op until the loop runs: wait for it, so a Stop() right after Start()
  // (a SIGTERM during startup) cannot leave the thread serving forever.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!server_->is_running() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  HostPort bound = options_.listen;
  bound.port = port;
  return bound;
}

void HttpServer::Stop() {
  if (server_ == nullptr) return;
  server_->stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
}

}  // namespace cairn::node
