// HttpServer: the operations API over HTTP/1.1, on Boost.Beast over Asio, built for a hostile
// network (docs/design/0008-front-doors.md). `POST /` runs an operation, `GET /health` and
// `GET /metrics` answer without credentials (unless --metrics-require-auth), and
// `GET /subscribe/...` streams a table's changes as Server-Sent Events, or over WebSocket when
// the request asks for the upgrade (SPEC §8, with credentials; HttpServerOptions::subscribe).
//
// What it guarantees, whatever a client sends (each is a test in tests/node/front_door_test.cc):
//  1. Threads do not grow with connections: `io_threads` run every socket (an idle or slow
//     connection holds no thread), `worker_threads` run operations (RocksDB never runs on an
//     I/O thread).
//  2. Connections are capped in total and per client (an IPv4 address, an IPv6 /64); the
//     excess is refused at once (503 on plain HTTP, a close on HTTPS), never queued. Near the
//     total cap the longest-waiting connection that never passed a credential check is closed
//     to admit the newcomer, and the last slots serve /health and /metrics only (decision 129).
//  3. A request has one deadline from its first byte to its last (`request_timeout`); a
//     connection between requests closes after `idle_timeout`. A trickle cannot hold a slot.
//  4. Credentials are checked from the headers before the body is read: a request without them
//     is answered 401 and at most `header_limit` more bytes of it are read; no `100 Continue`
//     goes out for it. Repeated failures from one address are answered more and more slowly.
//     One exception: a body of at most 1 KiB without credentials is read, for the one
//     operation that carries its credentials in the body (create_authentication_tokens), after
//     the same delay a failed login from that address would get. A password's hash (argon2id)
//     runs on a worker, never on an I/O thread.
//  5. Headers are limited in bytes and in count (431); a body needs exactly one
//     `Content-Length` (411 without, 400 for two), at most `max_body_bytes` (413); chunked and
//     compressed bodies are refused. Malformed requests (a header line without a colon, a space
//     before one, a NUL) get 400 and the connection closes.
//  6. Pipelined requests are answered in order, one at a time.
//  7. An exception escaping an operation is a 500 INTERNAL, logged and counted.
//  8. An operation has a deadline, `operation_timeout` from its request's first byte (shorter
//     with the request's `timeout_ms`), and is cancelled when its client leaves; its work
//     checks both at every row it reads (common/deadline.h). A streamed answer (the searches)
//     is produced on a thread of its own pool, never a worker, so slow readers cannot take
//     the workers; its status line waits for its first bytes (an error before them is a plain
//     error answer); it ends at the deadline, when its client takes nothing for
//     `write_timeout`, or reads slower than ReplyStream::kMinReadRate. Stream threads run
//     at `stream_priority` (idle by default), at most `stream_cpus` of them computing at
//     once (the others wait their turn, common/cpu_slots.h), so a search yields the cores to
//     point operations, and a connection's kernel buffer holds at most 128 KiB unsent.
//  9. `HEAD` is answered as `GET` without the body.
// With a certificate it serves HTTPS only (a plaintext request gets no answer). Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/deadline.h"
#include "node/authenticator.h"
#include "node/config.h"
#include "node/event_sink.h"
#include "node/http_auth.h"
#include "node/metrics.h"
#include "node/ops_api.h"
#include "node/subscription_wire.h"

namespace cairn::node {

struct HttpServerOptions {
  std::string node_name;
  HostPort listen;
  // Who requests come from (SPEC U5). Null: no credentials are asked, every request is a
  // super user's (tests, benchmarks). It asks for none either while the catalog holds no user.
  Authenticator* authenticator = nullptr;
  bool metrics_require_auth = false;
  uint64_t max_body_bytes = 10 << 20;
  uint32_t header_limit = 16 << 10;  // bytes of request line and headers
  uint32_t max_header_fields = 100;
  int io_threads = 2;
  int worker_threads = 32;
  int max_connections = 4096;
  int max_connections_per_client = 256;
  absl::Duration request_timeout = absl::Seconds(10);      // first byte to last byte of a request
  absl::Duration idle_timeout = absl::Seconds(5);          // between requests on one connection
  absl::Duration write_timeout = absl::Seconds(10);        // per write of an answer
  absl::Duration operation_timeout = absl::Seconds(60);    // guarantee 8
  SearchPriority stream_priority = SearchPriority::kIdle;  // of the stream threads (guarantee 8)
  int stream_cpus = 0;  // streams computing at once (guarantee 8; 0: CPUs - 1, at least 1)
  // Failed logins a minute, per address or user, answered without delay (LoginGuard); only a
  // test that fails logins in bulk raises it.
  int free_login_failures = LoginGuard::kFreeFailures;
  // HTTPS when both are set: PEM files of the certificate chain and its key.
  std::string tls_cert_file, tls_key_file;
  // GET /subscribe/... (SPEC §8): opens a change subscription, given the request's target, its
  // Last-Event-ID header, who sent it, the stream its events go to, and their framing (a
  // WebSocket upgrade asks for kWebSocket). OK: the events flow into `sink` (its first bytes
  // written already); else the error is the answer. Runs on a worker. Null: the endpoint is
  // not served.
  std::function<absl::Status(absl::string_view target, absl::string_view last_event_id,
                             const Caller& caller, std::shared_ptr<EventSink> sink,
                             EventFraming framing)>
      subscribe;
};

// Runs one operation: the body of a `POST /`, who sent it and its deadline in, its reply out.
// Runs on a worker thread; a streamed reply's producer runs later, on a stream thread, while
// the deadline still lives.
using OperationHandler =
    std::function<Reply(absl::string_view body, const Caller& caller, Deadline* deadline)>;

class HttpServer {
 public:
  HttpServer(OperationHandler handler, Metrics* metrics, HttpServerOptions options);
  // Serves `api`'s operations.
  HttpServer(const OpsApi* api, Metrics* metrics, HttpServerOptions options);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds (port 0: any free port) and serves. Returns the bound address; connections made
  // once this returns are served.
  absl::StatusOr<HostPort> Start();
  // From now on requests answer 503 SHUTTING_DOWN and connections close after them.
  void BeginDrain();
  // Stops accepting, lets running operations finish, closes every connection and joins the
  // threads.
  void Stop();

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn::node
