// cairnd: runs one cairn node (SPEC §6).
//
//   cairnd --name n1 --data-dir var/n1 [--ops-listen 127.0.0.1:9925] [--config node.yaml] ...
//
// Startup: parse the configuration, open the data directory (completing interrupted drops,
// C10), serve the operations API and the peer port, then write <data-dir>/ready.json with the
// bound addresses. SIGTERM or SIGINT: refuse new requests (503), finish in-flight ones, flush,
// remove ready.json, exit 0. SIGKILL at any moment loses no acknowledged write: every write
// is in the WAL before it is acknowledged.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "absl/debugging/failure_signal_handler.h"
#include "absl/debugging/symbolize.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "catalog/local_node.h"
#include "common/fault.h"
#include "common/status.h"
#include "grpcpp/grpcpp.h"
#include "node/audit.h"
#include "node/authenticator.h"
#include "node/backup.h"
#include "node/config.h"
#include "node/credentials.h"
#include "node/forwarded_operations.h"
#include "node/http_server.h"
#include "node/metrics.h"
#include "node/ops_api.h"
#include "node/ready_file.h"
#include "node/subscription_hub.h"
#include "replication/cluster.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"
#include "storage/engine.h"

namespace cairn::node {
namespace {

// Past this, a shutdown gives up waiting for in-flight requests (SPEC §6 allows 10 s).
constexpr absl::Duration kShutdownDeadline = absl::Seconds(8);
// How long subscribers get to take their `event: shutdown` before the connections close.
constexpr absl::Duration kSubscriptionFlush = absl::Seconds(1);

void SetUpLogging(const NodeConfig& config) {
  auto logger = spdlog::stderr_color_mt(config.name);
  // One line per event: time, level, node name, message (STYLE: structured, greppable).
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l node=%n %v", spdlog::pattern_time_type::utc);
  logger->set_level(spdlog::level::from_str(config.log_level));
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

// The signing key (U5) and the bootstrap admin (U1).
absl::Status StartUsers(const NodeConfig& config, catalog::LocalNode* node) {
  CAIRN_RETURN_IF_ERROR(node->users->EnsureSigningKey(NewSigningKey()));
  if (config.admin_password.empty() ||
      node->catalog->Snapshot()->principals->AuthenticationRequired()) {
    return absl::OkStatus();  // no admin to make, or the users table is the authority now
  }
  CAIRN_ASSIGN_OR_RETURN(std::string hash, HashPassword(config.admin_password));
  CAIRN_ASSIGN_OR_RETURN(bool made, node->users->Bootstrap(config.admin_user, hash));
  if (made) {
    spdlog::info("created the admin user '{}' with the super_user role (U1)", config.admin_user);
  }
  return absl::OkStatus();
}

void AddNodeMetrics(Metrics* metrics, catalog::LocalNode* node) {
  catalog::Catalog* catalog = node->catalog.get();
  metrics->AddExternal(
      {"cairn_catalog_tables", "Live table generations in the catalog.", "gauge", [catalog] {
         double n = 0;
         for (const auto& [name, db] : catalog->Snapshot()->databases) {
           n += db->tables.size();
         }
         return n;
       }});
  metrics->AddExternal({"cairn_catalog_databases", "Databases in the catalog.", "gauge", [catalog] {
                          return static_cast<double>(catalog->Snapshot()->databases.size());
                        }});
  metrics->AddExternal(
      {"cairn_drops_in_progress", "Table drops between tombstone and finish (C9).", "gauge",
       [catalog] { return static_cast<double>(catalog->drop_stats().in_progress); }});
  metrics->AddExternal({"cairn_drop_drains_total", "Drop drains completed (C9 step 2).", "counter",
                        [catalog] { return static_cast<double>(catalog->drop_stats().drains); }});
  metrics->AddExternal(
      {"cairn_drop_drain_timeouts_total", "Drop drains that timed out (C9).", "counter",
       [catalog] { return static_cast<double>(catalog->drop_stats().drain_timeouts); }});
  metrics->AddExternal(
      {"cairn_drop_drain_seconds_total", "Time drops spent waiting for in-flight work (C9 step 2).",
       "counter",
       [catalog] { return absl::ToDoubleSeconds(catalog->drop_stats().drain_time_total); }});
  metrics->AddExternal(
      {"cairn_rows_retired_total",
       "Rows that died with a generation a peer's drop retired, or were purged by one (C8).",
       "counter", [catalog] { return static_cast<double>(catalog->drop_stats().rows_retired); }});
  catalog::RecordStore* records = node->records.get();
  metrics->AddExternal(
      {"cairn_attribute_values_stripped_total",
       "Values of dropped attributes removed from rows: by strips, and from peers' rows on "
       "apply (C15).",
       "counter", [records] { return static_cast<double>(records->values_stripped()); }});
}

void AddSubscriptionMetrics(Metrics* metrics, SubscriptionHub* hub) {
  metrics->AddExternal({"cairn_subscriptions", "Change subscriptions open (SPEC §8).", "gauge",
                        [hub] { return static_cast<double>(hub->open()); }});
  metrics->AddExternal({"cairn_subscription_events_total",
                        "Events written to change subscriptions (state rows and changes).",
                        "counter", [hub] { return static_cast<double>(hub->events_sent()); }});
  metrics->AddExternal({"cairn_subscription_overflows_total",
                        "Subscriptions ended because their reader fell a buffer behind (W5).",
                        "counter", [hub] { return static_cast<double>(hub->overflows()); }});
  metrics->AddExternal({"cairn_subscription_resyncs_total",
                        "Subscriptions ended with resync_required: the log no longer held their "
                        "cursor (W4).",
                        "counter", [hub] { return static_cast<double>(hub->resyncs()); }});
  metrics->AddExternal({"cairn_subscriptions_refused_total",
                        "Subscriptions refused over --max-subscriptions or its per-user cap.",
                        "counter", [hub] { return static_cast<double>(hub->refused()); }});
}

void AddReplicationMetrics(Metrics* metrics, replication::Cluster* cluster) {
  metrics->AddExternal({"cairn_peer_refused_calls_total",
                        "Calls to the peer port refused before anything was applied (R2)",
                        "counter",
                        [cluster] { return static_cast<double>(cluster->refused_calls()); }});
  metrics->AddExternal(
      {"cairn_replication_lag_entries",
       "Change-log entries of its peers this node has not applied yet (R12), summed.", "gauge",
       [cluster] {
         double n = 0;
         for (const replication::PeerStatus& p : cluster->Status()) n += p.lag_entries;
         return n;
       }});
  // Per peer, from cluster_status: what an alert on one link needs.
  auto per_peer = [cluster](std::function<double(const replication::PeerStatus&)> read) {
    return [cluster, read] {
      std::vector<std::pair<std::string, double>> series;
      for (const replication::PeerStatus& p : cluster->Status())
        series.emplace_back(p.name, read(p));
      return series;
    };
  };
  metrics->AddExternalSeries({"cairn_peer_connected", "1 while the link with the peer is up.",
                              "gauge", "peer", per_peer([](const replication::PeerStatus& p) {
                                return p.connected && p.authenticated ? 1.0 : 0.0;
                              })});
  metrics->AddExternalSeries({"cairn_peer_lag_entries",
                              "Entries of the peer's change log not yet applied here (R12).",
                              "gauge", "peer", per_peer([](const replication::PeerStatus& p) {
                                return static_cast<double>(p.lag_entries);
                              })});
  metrics->AddExternalSeries(
      {"cairn_peer_lag_seconds",
       "How far behind the peer in time: now minus the write time of the newest entry applied "
       "from it while entries wait; 0 when caught up.",
       "gauge", "peer",
       per_peer([](const replication::PeerStatus& p) { return p.lag_ms / 1000.0; })});
  metrics->AddExternalSeries(
      {"cairn_peer_full_copy_percent",
       "Progress of the full copy (R7) being received from the peer; 0 when none runs.", "gauge",
       "peer", per_peer([](const replication::PeerStatus& p) {
         return p.full_copy_active ? p.full_copy_percent : 0.0;
       })});
  metrics->AddExternalSeries(
      {"cairn_peer_clock_offset_ms",
       "The peer's wall clock minus this node's at its last Hello, latency included (R16).",
       "gauge", "peer", per_peer([](const replication::PeerStatus& p) {
         return static_cast<double>(p.clock_offset_ms);
       })});
  // R18: anti-entropy on this node, as caller and callee.
  replication::AntiEntropy* ae = cluster->anti_entropy();
  const ForegroundActivity* activity = &cluster->node()->activity;
  metrics->AddExternal(
      {"cairn_foreground_last_seconds",
       "Unix time of this node's last foreground work (a client's request other than verify, "
       "a peer's batch applied): verifies and strips run at --background-busy-share of their "
       "rate for 100 ms after it (decision 156).",
       "gauge",
       [activity] { return absl::ToDoubleSeconds(activity->last() - absl::UnixEpoch()); }});
  metrics->AddExternal({"cairn_antientropy_rows_compared_total",
                        "Rows this node's verifies compared with a peer (R18).", "counter",
                        [ae] { return static_cast<double>(ae->rows_compared_total()); }});
  metrics->AddExternal(
      {"cairn_antientropy_rows_repaired_total",
       "Rows a verify repaired on this node (R18): each means some other rule failed.", "counter",
       [ae] { return static_cast<double>(ae->rows_repaired_total()); }});
  metrics->AddExternal({"cairn_antientropy_verify_seconds_total",
                        "Time this node's verifies took, table by table (R18).", "counter",
                        [ae] { return ae->seconds_total(); }});
  metrics->AddExternal({"cairn_antientropy_verifies_total",
                        "Verifies of one database with one peer this node ran (R18).", "counter",
                        [ae] { return static_cast<double>(ae->runs_total()); }});
  metrics->AddExternal(
      {"cairn_clock_offset_refusals_total",
       "Peer links, batches, snapshots and forwarded drops refused because a "
       "clock or stamp was ahead of this node's by more than --max-clock-offset "
       "(R16).",
       "counter", [cluster] { return static_cast<double>(cluster->clock_bound().refusals()); }});
  metrics->AddExternalSeries(
      {"cairn_peer_parked_entries",
       "Entries from the peer parked until their table is defined here (R17).", "gauge", "peer",
       per_peer([](const replication::PeerStatus& p) {
         return static_cast<double>(p.parked_entries);
       })});
  metrics->AddExternal(
      {"cairn_parked_entries",
       "Entries parked here from every peer, a removed one's included (R17), retried whether "
       "or not their peer is linked.",
       "gauge", [cluster] {
         uint64_t n = 0;
         for (const auto& [peer, c] : cluster->parked()->AllCounts()) n += c.entries;
         return static_cast<double>(n);
       }});
  metrics->AddExternalSeries(
      {"cairn_peer_parked_oldest_seconds",
       "How long the oldest entry parked from the peer has waited for its table (R17); 0 when "
       "none. Over 600 s it is also in cluster_status last_error.",
       "gauge", "peer", per_peer([cluster](const replication::PeerStatus& p) {
         const absl::Time now = cluster->node()->hlc->WallNow();  // Parking's clock
         return p.oldest_parked_ms == 0
                    ? 0.0
                    : std::max(0.0, absl::ToDoubleSeconds(
                                        now - absl::FromUnixMillis(p.oldest_parked_ms)));
       })});
  metrics->AddExternal(
      {"cairn_schema_messages_sent_total", "DB_SCHEMA messages this node sent its peers (R3).",
       "counter", [cluster] { return static_cast<double>(cluster->schema_messages_sent()); }});
  metrics->AddExternal({"cairn_schema_bytes_sent_total",
                        "Bytes of the DB_SCHEMA messages this node sent its peers (R3).", "counter",
                        [cluster] { return static_cast<double>(cluster->schema_bytes_sent()); }});
  metrics->AddExternal(
      {"cairn_schema_tables_sent_total",
       "Table definitions in the DB_SCHEMA messages this node sent its peers (R3).", "counter",
       [cluster] { return static_cast<double>(cluster->schema_tables_sent()); }});
  metrics->AddExternal({"cairn_replication_entries_received_total",
                        "Entries of the peers' change batches this node received (R5, R7, R14).",
                        "counter",
                        [cluster] { return static_cast<double>(cluster->entries_received()); }});
  metrics->AddExternal({"cairn_replication_entries_applied_total",
                        "Entries received from peers that changed a record here (D5).", "counter",
                        [cluster] { return static_cast<double>(cluster->entries_applied()); }});
  metrics->AddExternal(
      {"cairn_replication_entries_duplicate_total",
       "Entries received from peers that this node already held (D5 identity ties).", "counter",
       [cluster] { return static_cast<double>(cluster->entries_duplicate()); }});
  metrics->AddExternal(
      {"cairn_replication_entries_not_member_total",
       "Entries received from peers of databases this node is not a member of, dropped (P3).",
       "counter", [cluster] { return static_cast<double>(cluster->entries_not_member()); }});
  metrics->AddExternal(
      {"cairn_replication_links_failed_total",
       "Peer links that ended with an error (a peer gone, a cut, a closed transport).", "counter",
       [cluster] { return static_cast<double>(cluster->links_failed()); }});
  metrics->AddExternal(
      {"cairn_schema_resyncs_total",
       "Requests to a peer for a database whole, retries included: the schema digests stayed "
       "apart or a DB_SCHEMA could not be applied whole (R3). Still in a steady cluster, but "
       "for peers that really differ (R11, C11).",
       "counter", [cluster] { return static_cast<double>(cluster->schema_resyncs()); }});
  metrics->AddExternal({"cairn_replication_full_copies_active",
                        "Full copies (R7) this node is receiving.", "gauge", [cluster] {
                          double n = 0;
                          for (const replication::PeerStatus& p : cluster->Status()) {
                            n += p.full_copy_active ? 1 : 0;
                          }
                          return n;
                        }});
}

// The peer port: the Peer service (Link, Forward, Verify, Operate) of the cluster.
absl::StatusOr<std::unique_ptr<grpc::Server>> StartPeerServer(const HostPort& listen,
                                                              replication::Cluster* cluster,
                                                              HostPort* bound) {
  grpc::ServerBuilder builder;
  builder.RegisterService(cluster->service());
  cluster->ConfigureServer(&builder);
  int port = 0;
  builder.AddListeningPort(listen.ToString(), cluster->ServerCredentials(), &port);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return Error(ErrorCode::kInternal,
                 absl::StrCat("cannot listen on ", listen.ToString(), " for peers"));
  }
  *bound = listen;
  bound->port = port;
  return server;
}

// SPEC R2, issue 18: the peer port is never open. Without --cluster-secret-file and without
// TLS, the node uses a random secret of its own, kept in <data-dir>/cluster-secret (0600), so
// it accepts no peer until it is given the cluster's secret (or TLS).
absl::StatusOr<std::string> OwnClusterSecret(const std::string& data_dir) {
  const std::string path = data_dir + "/cluster-secret";
  std::string secret;
  if (std::ifstream in(path); in) {
    std::getline(in, secret);
    if (!secret.empty()) return secret;
  }
  std::string random(32, '\0');
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  if (!urandom.read(random.data(), static_cast<std::streamsize>(random.size()))) {
    return Error(ErrorCode::kInternal, "cannot read /dev/urandom");
  }
  secret = absl::WebSafeBase64Escape(random);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || ::write(fd, secret.data(), secret.size()) != static_cast<ssize_t>(secret.size()) ||
      ::fsync(fd) != 0) {
    if (fd >= 0) ::close(fd);
    return Error(ErrorCode::kInternal, absl::StrCat("cannot write ", path));
  }
  ::close(fd);
  spdlog::warn(
      "no --cluster-secret-file and no TLS: this node accepts no peer. It generated its own "
      "secret in {}; give every node of the cluster one secret with --cluster-secret-file "
      "(or TLS) to link them",
      path);
  return secret;
}

int Run(const NodeConfig& config) {
  // Every thread inherits this mask: SIGTERM and SIGINT are taken by sigwait() below only.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  SetUpLogging(config);
  auto fail = [&](absl::string_view what, const absl::Status& s) {
    spdlog::critical("{}: {}", std::string(what), s.ToString());
    spdlog::shutdown();
    return 1;
  };

  std::error_code ec;
  // Created 0700 whatever the umask: it holds every record and the node's secrets.
  if (!std::filesystem::exists(config.data_dir, ec)) {
    std::filesystem::create_directories(config.data_dir, ec);
    if (!ec) {
      std::filesystem::permissions(config.data_dir, std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::replace, ec);
    }
  }
  if (ec) return fail("creating the data directory", Error(ErrorCode::kInternal, ec.message()));
  std::string cluster_secret = config.cluster_secret;
  if (cluster_secret.empty() && config.tls_cert_file.empty()) {
    absl::StatusOr<std::string> own = OwnClusterSecret(config.data_dir);
    if (!own.ok()) return fail("cluster secret", own.status());
    cluster_secret = *own;
  }
  const std::string ready_path = config.data_dir + "/ready.json";
  std::filesystem::remove(ready_path, ec);  // left by a killed process; not ours to trust

  FaultRegistry faults;
  for (const std::string& spec : config.faults) {
    if (absl::Status s = faults.SetFromSpec(spec); !s.ok()) return fail("--fault", s);
    spdlog::warn("fault armed at start: {}", spec);
  }

  catalog::LocalNodeOptions node_options;
  node_options.name = config.name;
  node_options.sync_writes = config.sync_writes;
  node_options.drop_drain_timeout = config.drop_drain_timeout;
  node_options.tombstone_retention = config.tombstone_retention;
  node_options.max_attributes_per_table = config.max_attributes_per_table;
  node_options.strip_rate = config.strip_rate;
  node_options.background_busy_share = config.background_busy_share;
  node_options.faults = config.enable_test_hooks ? &faults : nullptr;
  // Test hooks: a wall clock that set_clock can shift (clock faults); otherwise the system's.
  OffsetClock clock;
  node_options.clock = config.enable_test_hooks ? &clock : nullptr;
  // A backup's directory (node/backup.h): this start restores it (decision 51).
  absl::StatusOr<std::optional<PendingRestore>> restore = FindPendingRestore(config.data_dir);
  if (!restore.ok()) return fail("restoring", restore.status());
  node_options.restored = restore->has_value();
  if (node_options.restored) {
    const PendingRestore& r = **restore;
    if (absl::Status s =
            CheckRestore(r, absl::Now(), config.tombstone_retention, config.restore_stale_backup);
        !s.ok()) {
      return fail("restoring " + config.data_dir, s);
    }
    if (r.node != config.name) {
      spdlog::warn("restoring a backup of node '{}' as node '{}'", r.node, config.name);
    }
    spdlog::warn(
        "{} is a backup taken {}: restoring it with a new log identity; every peer "
        "sends a full copy (merged, SPEC R7) to bring back what changed since",
        config.data_dir, absl::FormatTime(absl::RFC3339_sec, r.created, absl::UTCTimeZone()));
  }
  RemoveUnfinishedBackups(config.backup_dir);
  const absl::Time open_start = absl::Now();
  auto node = catalog::LocalNode::Open(config.data_dir + "/db", node_options);
  if (!node.ok()) return fail("opening " + config.data_dir, node.status());
  if (node_options.restored) {
    if (absl::Status s = MarkRestored(config.data_dir); !s.ok()) return fail("restoring", s);
  }
  spdlog::info("opened {} in {}", config.data_dir, absl::FormatDuration(absl::Now() - open_start));
  // After the open: a startup that fails its recovery on an injected error would only
  // refuse to start again and again (the same seed fires the same way), which tests nothing.
  if (config.buggify_seed != 0) {
    BuggifyOptions buggify;
    buggify.seed = config.buggify_seed;
    buggify.crashes = config.buggify_crashes;
    faults.EnableBuggify(buggify);
    spdlog::warn("buggify on: seed {}{}; fault points fire on their own", buggify.seed,
                 buggify.crashes ? ", crashes included" : "");
  }

  // SPEC U5: the token signing key (an earlier start's, or a peer's once linked: the oldest
  // stays), and U1: the admin user, made from the flags only while the catalog has no user.
  if (absl::Status s = StartUsers(config, node->get()); !s.ok()) return fail("users and roles", s);
  AuthOptions auth_options;
  auth_options.node_name = config.name;
  auth_options.operation_token_ttl = config.operation_token_ttl;
  auth_options.refresh_token_ttl = config.refresh_token_ttl;
  Authenticator authenticator((*node)->catalog.get(), auth_options);
  Audit audit(config.name);

  Metrics metrics;
  AddNodeMetrics(&metrics, node->get());
  metrics.AddExternal({"cairn_auth_refused_operations_total",
                       "Operations refused to a caller's role (SPEC U4, U8)", "counter",
                       [&audit] { return static_cast<double>(audit.refused_total()); }});
  OpsApiOptions api_options;
  api_options.node_name = config.name;
  api_options.enable_test_hooks = config.enable_test_hooks;
  api_options.faults = &faults;
  api_options.clock = config.enable_test_hooks ? &clock : nullptr;
  api_options.backup_dir = config.backup_dir;
  api_options.authenticator = &authenticator;
  api_options.audit = &audit;
  api_options.operation_timeout = config.operation_timeout;
  api_options.max_sort_bytes = config.max_sort_bytes;
  api_options.replicated_confirmation = config.replicated_confirmation;
  api_options.confirmation_timeout = config.confirmation_timeout;
  replication::ClusterOptions cluster_options;
  cluster_options.node_name = config.name;
  cluster_options.secret = cluster_secret;
  cluster_options.tls_cert = config.tls_cert;
  cluster_options.tls_key = config.tls_key;
  cluster_options.tls_ca = config.tls_ca;
  for (const PeerConfig& p : config.peers) {
    replication::PeerRoute route{p.name, p.address.ToString(), {}};
    for (const auto& [db, table] : p.exclude) route.exclude.Add(db, table);
    cluster_options.peers.push_back(std::move(route));
  }
  cluster_options.log_retention_entries = config.log_retention_entries;
  cluster_options.log_retention_age = config.log_retention_age;
  cluster_options.max_clock_offset = config.max_clock_offset;
  cluster_options.verify.interval = config.verify_interval;
  cluster_options.verify.rate = config.verify_rate;
  cluster_options.verify.busy_share = config.background_busy_share;
  replication::Cluster cluster(node->get(), cluster_options);
  api_options.cluster = &cluster;
  AddReplicationMetrics(&metrics, &cluster);
  OpsApi api(node->get(), api_options);
  // Design 0013, P4: operations peers forward here run through `api`; declared before the
  // peer server, which serves them, so it outlives it.
  ForwardedOperations forwarded(&api, &authenticator);
  cluster.SetOperationRunner(&forwarded);
  metrics.AddExternal({"cairn_forwarded_operations_total",
                       "Operations on rows this node does not hold, or is still catching up "
                       "on, that a member answered (design 0013, P4, P7).",
                       "counter",
                       [&api] { return static_cast<double>(api.forwarded_operations()); }});
  metrics.AddExternal({"cairn_forward_schema_waits_total",
                       "Waits of a forwarded operation for members to learn a table this node "
                       "holds (design 0013, P4).",
                       "counter",
                       [&api] { return static_cast<double>(api.forward_schema_waits()); }});
  // Declared before the HTTP server, so it outlives the server's connections (its sinks).
  SubscriptionOptions subscription_options;
  subscription_options.buffer_bytes = config.subscription_buffer;
  subscription_options.max_subscriptions = config.max_subscriptions;
  subscription_options.max_per_user = config.max_subscriptions_per_user;
  subscription_options.audit = &audit;
  SubscriptionHub subscriptions(node->get(), subscription_options);
  AddSubscriptionMetrics(&metrics, &subscriptions);

  HttpServerOptions http_options;
  http_options.node_name = config.name;
  http_options.listen = config.ops_listen;
  http_options.authenticator = &authenticator;
  http_options.max_body_bytes = config.max_body_bytes;
  http_options.worker_threads = HttpThreadsFor(config);
  http_options.io_threads = HttpIoThreadsFor(config);
  http_options.max_connections = config.max_connections;
  http_options.max_connections_per_client = config.max_connections_per_client;
  http_options.header_limit = config.max_header_bytes;
  http_options.request_timeout = config.request_timeout;
  http_options.operation_timeout = config.operation_timeout;
  http_options.stream_priority = config.search_priority;
  http_options.stream_cpus = config.search_cpus;
  http_options.idle_timeout = config.idle_timeout;
  http_options.metrics_require_auth = config.metrics_require_auth;
  http_options.tls_cert_file = config.ops_tls_cert_file;
  http_options.tls_key_file = config.ops_tls_key_file;
  http_options.subscribe = [&subscriptions](absl::string_view target,
                                            absl::string_view last_event_id, const Caller& caller,
                                            std::shared_ptr<EventSink> sink, EventFraming framing) {
    return subscriptions.Subscribe(target, last_event_id, caller, std::move(sink), framing);
  };
  HttpServer http(&api, &metrics, http_options);
  // On every way out (an early failure included), subscriptions end while the server that
  // sends them still runs: the hub's last writes wake its connections.
  absl::Cleanup end_subscriptions = [&subscriptions] {
    subscriptions.Shutdown(absl::ZeroDuration());
  };
  absl::StatusOr<HostPort> ops = http.Start();
  if (!ops.ok()) return fail("operations API", ops.status());

  HostPort peer;
  auto peer_server = StartPeerServer(config.peer_listen, &cluster, &peer);
  if (!peer_server.ok()) return fail("peer port", peer_server.status());

  if (config.admin_password.empty()) {
    spdlog::warn(
        "no admin password configured: the operations API accepts every request, so "
        "it listens on loopback only");
  }
  if (config.ops_tls_cert_file.empty() && !IsLoopbackHost(ops->host)) {
    spdlog::warn(
        "the operations API on {} is plain HTTP: the admin password and every record cross the "
        "network in the clear; set --ops-tls-cert-file and --ops-tls-key-file",
        ops->ToString());
  }
  spdlog::info("serving: ops {} ({}, {} threads), peer {} ({}); ready file {}", ops->ToString(),
               config.ops_tls_cert_file.empty() ? "HTTP" : "HTTPS", http_options.worker_threads,
               peer.ToString(), config.tls_cert_file.empty() ? "plaintext" : "mutual TLS",
               ready_path);
  if (absl::Status s = cluster.Start(); !s.ok()) return fail("peer links", s);
  ReadyInfo ready{config.name, ops->ToString(), peer.ToString(), static_cast<int>(getpid())};
  if (absl::Status s = WriteReadyFile(ready_path, ready); !s.ok()) return fail("ready.json", s);

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  const absl::Time stop_start = absl::Now();
  spdlog::info("signal {}: draining", signal_number);
  std::filesystem::remove(ready_path, ec);  // no longer ready for new work
  // SPEC §6: exit within 10 s. A request that will not finish (a drop waiting out its drain
  // budget, a stream to a client that stopped reading) must not hold the process: past the
  // deadline it exits without the flush, which loses nothing acknowledged (the WAL has it).
  std::thread([] {
    absl::SleepFor(kShutdownDeadline);
    spdlog::error(
        "shutdown took longer than {}; exiting without flushing (the WAL holds every "
        "acknowledged write)",
        absl::FormatDuration(kShutdownDeadline));
    spdlog::shutdown();
    _exit(0);
  }).detach();
  subscriptions.Shutdown(kSubscriptionFlush);  // W6: `event: shutdown`, before the drain
  http.BeginDrain();
  cluster.anti_entropy()->Stop();  // a verify in flight ends at its next step
  cluster.CancelOperateCalls();    // a forwarded operation (P4) answers its client now
  http.Stop();
  cluster.Stop();
  (*peer_server)->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  (*node)->records->StopStrips();  // a running strip stays pending for the next start (C15)
  absl::Status flushed = (*node)->Flush();
  if (!flushed.ok()) spdlog::error("flush at shutdown: {}", flushed.ToString());
  node->reset();
  std::filesystem::remove(ready_path, ec);
  spdlog::info("stopped in {}", absl::FormatDuration(absl::Now() - stop_start));
  spdlog::shutdown();
  return flushed.ok() ? 0 : 1;
}

}  // namespace
}  // namespace cairn::node

int main(int argc, char** argv) {
  // A crash (an assertion in a library, a fault) prints its stack to the log before it dies.
  absl::InitializeSymbolizer(argv[0]);
  absl::InstallFailureSignalHandler(absl::FailureSignalHandlerOptions());
  // Connections are descriptors: take the hard limit, so that --max-connections (and not the
  // shell's default of 1024) is what caps them.
  if (rlimit limit{}; getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  cairn::node::ParsedCommandLine parsed = cairn::node::ParseCommandLine(argc, argv);
  if (!parsed.run) {
    std::fputs(parsed.message.c_str(), parsed.exit_code == 0 ? stdout : stderr);
    return parsed.exit_code;
  }
  return cairn::node::Run(parsed.config);
}
