// HttpServer: the operations API over HTTP/1.1 (cpp-httplib). `POST /` runs an operation
// (OpsApi), `GET /health` and `GET /metrics` need no credentials. Basic authentication with
// the admin user when a password is configured; bodies over the limit are refused with 413
// before they are parsed. Each keep-alive connection holds one pool thread while open, so the
// pool bounds concurrent clients; read and idle timeouts free the threads of slow clients.
// With a certificate it serves HTTPS only (a plaintext request gets no answer).
// Thread-safe.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "node/config.h"
#include "node/metrics.h"
#include "node/ops_api.h"

namespace httplib {
class Server;
}

namespace cairn::node {

struct HttpServerOptions {
  std::string node_name;
  HostPort listen;
  std::string admin_user;
  std::string admin_password;  // empty: no authentication (the node listens on loopback only)
  uint64_t max_body_bytes = 10 << 20;
  int threads = 64;
  // HTTPS when both are set: PEM files of the certificate chain and its key.
  std::string tls_cert_file, tls_key_file;
};

class HttpServer {
 public:
  HttpServer(const OpsApi* api, Metrics* metrics, HttpServerOptions options);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds (port 0: any free port) and serves on a background thread. Returns the bound
  // address. Connections made once this returns are served.
  absl::StatusOr<HostPort> Start();
  // From now on requests answer 503 SHUTTING_DOWN and connections close after them.
  void BeginDrain() { draining_.store(true); }
  // Stops accepting, lets in-flight requests finish, and joins the serving thread.
  void Stop();

 private:
  // OK when no password is configured or `authorization` (the header) names the admin user
  // and password; UNAUTHORIZED otherwise.
  absl::Status Authorize(const std::string& authorization) const;

  const OpsApi* const api_;
  Metrics* const metrics_;
  const HttpServerOptions options_;
  const std::string expected_authorization_;  // "Basic base64(user:password)", or empty
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> draining_{false};
};

}  // namespace cairn::node
