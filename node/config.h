// NodeConfig: everything cairnd is started with (SPEC §6). Each flag can also be set in the
// YAML file given by --config; a flag on the command line wins over the file. Parsing never
// exits the process: help, errors and the usage text come back to main() as a result.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace cairn::node {

// HOST:PORT. Port 0 asks the kernel for a free port.
struct HostPort {
  std::string host;
  int port = 0;
  std::string ToString() const;
};
// "127.0.0.1:9925", "[::1]:0", "localhost:80". BAD_REQUEST naming `what` when malformed.
absl::StatusOr<HostPort> ParseHostPort(absl::string_view text, absl::string_view what);
// True for 127.0.0.0/8, ::1 and "localhost".
bool IsLoopbackHost(absl::string_view host);

struct PeerConfig {
  std::string name;
  HostPort address;
  std::vector<std::pair<std::string, std::string>> exclude;  // (db, table), R11
};

// The CPU priority of streamed answers' producers (--search-priority; issue 41, decision
// 133): kIdle runs them only on CPU that nothing else of the node wants (Linux SCHED_IDLE),
// kLow at nice +10, kNormal as every other thread.
enum class SearchPriority { kIdle, kLow, kNormal };

struct NodeConfig {
  std::string name;      // required; a C13 name
  std::string data_dir;  // required
  HostPort ops_listen{"127.0.0.1", 9925};
  HostPort peer_listen{"127.0.0.1", 9933};
  std::vector<PeerConfig> peers;  // --peer NAME=HOST:PORT
  std::string cluster_secret_file;
  std::string cluster_secret;  // read from cluster_secret_file
  std::string tls_cert_file, tls_key_file, tls_ca_file;
  std::string tls_cert, tls_key, tls_ca;  // their PEM text, read at start
  // HTTPS for the operations API: this node's certificate chain and key (PEM files, read by
  // the server at start). Both or neither; the peer's certificate may serve for both.
  std::string ops_tls_cert_file, ops_tls_key_file;
  std::string backup_dir;             // create_backup's directory; empty: <data-dir>/backups
  bool restore_stale_backup = false;  // restore a backup older than the tombstone retention

  std::string admin_user = "admin";
  std::string admin_password;  // empty: no authentication, loopback only
  absl::Duration drop_drain_timeout = absl::Seconds(10);
  bool enable_test_hooks = false;
  std::vector<std::string> faults;  // --fault NAME=ACTION, only with enable_test_hooks
  // --buggify-seed: every fault point may fire on its own, as this seed decides (0: off;
  // test hooks only; common/fault.h BuggifyOptions). --buggify-crashes lets it crash too.
  uint64_t buggify_seed = 0;
  bool buggify_crashes = false;
  bool sync_writes = false;

  // How long a delete's tombstone is kept (SPEC D5), from when this node wrote it.
  absl::Duration tombstone_retention = absl::Hours(24 * 7);
  // Change-log retention per database (R12); the age stays within the tombstone retention
  // (the log names rows without their bodies) and defaults to it.
  uint64_t log_retention_entries = 10'000'000;
  absl::Duration log_retention_age = absl::Hours(24 * 7);

  // SPEC R16: how far ahead of this node's wall clock a peer's clock and stamps may be.
  absl::Duration max_clock_offset = absl::Milliseconds(500);
  absl::Duration verify_interval = absl::Hours(1);  // R18 background verify; 0: off
  uint64_t verify_rate = 200'000;                   // R18: rows/s scanned by verifies; 0: no limit

  uint64_t max_body_bytes = 10 << 20;  // SPEC §5: 10 MiB
  int http_threads = 0;                // 0: sized from the machine (HttpThreadsFor)
  // The operations API's front door (docs/operations.md "Security", node/http_server.h).
  int max_connections = 4096;
  int max_connections_per_client = 256;
  uint32_t max_header_bytes = 16 << 10;
  absl::Duration request_timeout = absl::Seconds(10);
  // Bounded work per request (issue 41): an operation's deadline from its first byte (a
  // request's `timeout_ms` may shorten it), and the bytes a sort may hold.
  absl::Duration operation_timeout = absl::Seconds(60);
  uint64_t max_sort_bytes = 32 << 20;
  // Design 0013, P10: the confirmations a write waits for when it names none, and how long.
  uint64_t replicated_confirmation = 0;
  absl::Duration confirmation_timeout = absl::Seconds(5);
  // Change subscriptions (SPEC W5): unsent bytes one may hold before it overflows, and how
  // many may be open on the node and per user.
  uint64_t subscription_buffer = 1 << 20;
  int max_subscriptions = 1024;
  int max_subscriptions_per_user = 128;
  SearchPriority search_priority = SearchPriority::kIdle;
  int search_cpus = 0;  // streamed searches computing at once (0: CPUs - 1; decision 134)
  absl::Duration idle_timeout = absl::Seconds(5);
  bool metrics_require_auth = false;
  // SPEC U5: how long tokens live (create_authentication_tokens).
  absl::Duration operation_token_ttl = absl::Hours(24);
  absl::Duration refresh_token_ttl = absl::Hours(24 * 30);
  // Bounded work per request: a table's attributes from local changes (CatalogOptions).
  size_t max_attributes_per_table = 1000;
  // C15: rows/s a strip of dropped attribute values reads; 0: no limit.
  uint64_t strip_rate = 5'000;
  // Decision 156: the share of --verify-rate and --strip-rate background work keeps while the
  // node serves foreground work (a client's request, a peer's batch) within the last 100 ms.
  double background_busy_share = 0.1;
  std::string log_level = "info";
};

// What ParseCommandLine found: a config to run, or a text to print and an exit status
// (--help, --version, or a usage error).
struct ParsedCommandLine {
  bool run = false;
  NodeConfig config;
  std::string message;  // for stdout when exit_code is 0, stderr otherwise
  int exit_code = 0;
};

// Flags, then the --config YAML file, then CAIRN_ADMIN_USER / CAIRN_ADMIN_PASSWORD, then
// --admin-password-file. Validates the result (ValidateConfig).
ParsedCommandLine ParseCommandLine(int argc, const char* const* argv);

// The rules a config must satisfy before the node starts: a name and a data directory,
// valid addresses, test-hook faults only with --enable-test-hooks, and no non-loopback
// listener without an admin password (SPEC §6). BAD_REQUEST says which rule failed.
absl::Status ValidateConfig(const NodeConfig& config);

// Worker threads for the operations API: they run operations, not connections (an idle or
// slow connection holds none), so the count bounds concurrent operations, not clients.
int HttpThreadsFor(const NodeConfig& config);
// I/O threads for the operations API's sockets.
int HttpIoThreadsFor(const NodeConfig& config);

}  // namespace cairn::node
