// Cluster: this node's peer links (SPEC R1-R4, R9-R13). It serves the Peer gRPC service,
// dials every configured peer (reconnecting with capped, jittered exponential backoff), and
// over each Link stream sends this node's DB_SCHEMA snapshots and applies the peer's. It
// forwards drops to every peer and answers peers' forwarded drops. Thread-safe.
//
// A link is symmetric: whichever side dialed, both ends send Hello and then their snapshots,
// so a route configured on one side only is enough for both to converge. Two routes (each
// side dialing the other) make two links; applying a snapshot twice changes nothing (R4).
//
// Records (R5-R8): every link also carries change streams both ways (LinkSession). A commit
// on this node wakes every link's sender through the change log's listener (OnCommit), but
// for one that only applied a peer's own writes (LinkSession::NotifyCommit) and those of
// peers that hold no rows of the database (P3).
//
// Implemented by concern: cluster.cc (start and stop, membership, sessions, fan-out,
// retention, the cut hook), peer_service.cc (the Peer service and authentication),
// cluster_dial.cc (dialers and channels), cluster_forward.cc (forwarded drops, both ways),
// cluster_verify.cc (anti-entropy's calls), cluster_status.cc (cluster_status),
// cluster_operate.cc (forwarded operations), cluster_confirm.cc (confirmed writes, P10).
//
// Lock order: membership_mu_ before ListenerHook::mu before Cluster::mu_ before
// LinkSession::mu_ before confirm_mu_, a leaf. Only membership_mu_ is held across a storage write
// (a peer row, by add_node / remove_node, which it serializes); none is held across network I/O or
// catalog writes: sessions are copied out from under mu_ before they are notified.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cairn/peer/v1/peer.grpc.pb.h"
#include "catalog/local_node.h"
#include "common/log_limiter.h"
#include "common/status.h"
#include "grpcpp/server_builder.h"
#include "replication/anti_entropy.h"
#include "replication/clock_bound.h"
#include "replication/operation_runner.h"
#include "replication/origin_book.h"
#include "replication/origin_holds.h"
#include "replication/parked_retrier.h"
#include "replication/releaser.h"
#include "replication/schema_sync.h"

namespace cairn::replication {

struct PeerRoute {
  std::string name;
  std::string address;  // HOST:PORT of its peer port
  Exclusions exclude;   // R11: tables neither sent to nor accepted from this peer
  uint64_t id = 0;      // set by Cluster: tells a re-added route from the one removed
};

struct ClusterOptions {
  std::string node_name;
  // Shared cluster secret (R2), sent as call metadata and required from callers. Empty and no
  // TLS either: every peer call is refused (the port is never open to anyone).
  std::string secret;
  std::vector<PeerRoute> peers;
  // Mutual TLS (R2), PEM text: this node's certificate chain and key, and the CA that signs
  // every node's certificate. All three or none. A node's certificate names it (SAN DNS or
  // CN); a caller's claimed name must be one of its certificate's names, and a dialed peer's
  // certificate must name the route's node.
  std::string tls_cert, tls_key, tls_ca;
  absl::Duration backoff_initial = absl::Milliseconds(50);
  absl::Duration backoff_max = absl::Seconds(5);
  // How often a link's channel pings a peer that sent nothing (a peer that does not answer
  // within 5 s is down), and so how often this node's server lets a peer ping it. The two
  // must agree: gRPC's server default allows one ping per 5 minutes on a quiet connection and
  // ends it ("too many pings") at the third, with every call on it (decision 113).
  absl::Duration keepalive = absl::Seconds(10);
  // Longer than a peer's drop drain budget (10 s by default, C9), so that a drop that
  // completes there is not reported failed here.
  absl::Duration forward_timeout = absl::Seconds(15);
  // Change-log retention per database (R12): entries beyond the newest `log_retention_entries`
  // or logged longer than `log_retention_age` ago are trimmed; a peer whose cursor is older
  // gets a full copy (R7). The age must not exceed the tombstone retention (D5): the log
  // names rows without their bodies, so a delete must still be visible while it is logged.
  uint64_t log_retention_entries = 10'000'000;
  absl::Duration log_retention_age = absl::Hours(24 * 7);
  absl::Duration trim_interval = absl::Seconds(10);
  // Design 0013, P8: how often a removed member checks whether it may let go of its rows.
  absl::Duration release_interval = absl::Seconds(1);
  // R16: how far ahead of this node's wall clock a peer's clock and stamps may be.
  absl::Duration max_clock_offset = absl::Milliseconds(500);
  // Design 0004: how long a relay held for a subscriber that gets its origin directly may
  // wait for the subscriber's advert (OriginHolds). Tests raise it to keep a hold in place.
  absl::Duration hold_limit = kHoldLimit;
  AntiEntropyOptions verify;  // R18
};

// R10: what became of a forwarded drop on one peer. kFailed: the peer did not apply it (it was
// unreachable, refused it, or answered something this node cannot read).
enum class DropOutcome { kDropped, kKept, kAbsent, kFailed };
// R10's words: "dropped", "kept", "absent", "failed".
absl::string_view DropOutcomeName(DropOutcome outcome);

// R10: one peer's answer to a forwarded drop.
struct PeerDropStatus {
  std::string node;
  DropOutcome outcome = DropOutcome::kFailed;
  std::string reason;
  // kFailed because the peer answered an error with its code (SPEC §5); else kUnspecified.
  ErrorCode code = ErrorCode::kUnspecified;
};

// cluster_status, per peer.
struct PeerStatus {
  std::string name;
  std::string address;
  bool connected = false;
  bool authenticated = false;
  bool schema_in_sync = false;
  std::string last_error;
  std::vector<std::string> capabilities;
  absl::btree_map<std::string, uint64_t> digests;  // the peer's last digest per database
  // Records received from it (R5-R7): how far this node is behind the peer's log, and the
  // full copy in progress, if any.
  uint64_t lag_entries = 0;
  int64_t lag_ms = 0;
  bool full_copy_active = false;
  double full_copy_percent = 0;
  double full_copy_rows_per_s = 0;
  uint64_t entries_received = 0;  // since the link came up
  // R16: the peer's wall clock minus ours at its last Hello (ms; one-way latency included).
  int64_t clock_offset_ms = 0;
  // R17: its entries parked here until their table is defined, and how old the oldest is.
  uint64_t parked_entries = 0;
  int64_t oldest_parked_ms = 0;                         // wall ms the oldest was parked; 0: none
  absl::btree_map<std::string, uint64_t> cursors;       // last applied seq of its log, per database
  absl::btree_map<std::string, VerifyRecord> verified;  // R18: the last verify, per database
};

class LinkSession;

class Cluster {
 public:
  Cluster(catalog::LocalNode* node, ClusterOptions options);
  ~Cluster();  // Stop()
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // The Peer service, for the node's gRPC server. Register before the server starts.
  grpc::Service* service();
  // Credentials for the peer port: mutual TLS when configured, else plaintext.
  std::shared_ptr<grpc::ServerCredentials> ServerCredentials() const;
  // Server settings the links need: message size (one record may be as large as a request)
  // and the keepalive pings the peers' channels send (decision 113).
  void ConfigureServer(grpc::ServerBuilder* builder) const;
  bool tls() const { return !options_.tls_cert.empty(); }

  // Loads the peers added at run time and starts dialing. Call once, after the server
  // serves. (Catalog changes are followed from construction on.)
  absl::Status Start() ABSL_LOCKS_EXCLUDED(mu_);
  // add_node (R13): adds a route and, once started, dials it. `persist`: stored in the
  // catalog family, so it is dialed again after a restart. BAD_REQUEST for this node's own name,
  // NODE_EXISTS for a name already routed.
  absl::Status AddPeer(const PeerRoute& route, bool persist = false) ABSL_LOCKS_EXCLUDED(mu_);
  // remove_node: forgets a route (and its stored row) and ends its outbound link. A route from
  // the configuration returns at the next start. NODE_NOT_FOUND for an unknown name.
  absl::Status RemovePeer(const std::string& name) ABSL_LOCKS_EXCLUDED(mu_);

  // Ends every link and joins the dialers. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // R9, R10: sends the drop to every peer (in parallel, each with a deadline) and reports
  // what each did. An unreachable peer is kFailed: it learns the drop from the marker in the
  // next snapshot it receives.
  std::vector<PeerDropStatus> ForwardDropTable(const std::string& db, const std::string& table,
                                               Hlc dropped_time);
  // `dropped_time` stands for tables not in `tables` (those the origin did not hold); each
  // table in `tables` is dropped with its own stamp (C7); `database_marker` (P1) retires the
  // database's placements stamped before it.
  std::vector<PeerDropStatus> ForwardDropDatabase(
      const std::string& db, Hlc dropped_time,
      const std::vector<std::pair<std::string, Hlc>>& tables = {}, Hlc database_marker = 0);

  std::vector<PeerStatus> Status() const ABSL_LOCKS_EXCLUDED(mu_);
  // Design 0013, P2: the nodes a placement may name, sorted: this node and every peer it knows
  // (its routes and the peers linked to it), removed ones excluded.
  std::vector<std::string> KnownNodes() const ABSL_LOCKS_EXCLUDED(mu_);
  // P6: the peers linked now that did not advertise placement.v1 in their last Hello.
  std::vector<std::string> PeersWithoutPlacement() const ABSL_LOCKS_EXCLUDED(mu_);
  // Design 0013, P3 item 6: the peers with a live link now, sorted.
  std::vector<std::string> LinkedPeers() const ABSL_LOCKS_EXCLUDED(mu_);

  // Design 0013, P4: who runs the operations peers forward here (Operate). Set before the
  // peer port serves, and outliving it; unset, Operate answers UNIMPLEMENTED.
  void SetOperationRunner(OperationRunner* runner) { runner_.store(runner); }
  OperationRunner* operation_runner() const { return runner_.load(); }
  // P4: of `members` (in the order to try them), those an operation can be forwarded to now:
  // a route from this node, a live link that is not cut, and "placement.forward.v1" in the
  // member's last Hello. This node is never among them.
  std::vector<std::string> ForwardTargets(const std::vector<std::string>& members) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // P4: starts an Operate call to `member` that ends by `deadline`. UNAVAILABLE without a
  // route to it or when its channel does not connect within 2 s (no call was made then);
  // CANCELLED once CancelOperateCalls ran.
  absl::StatusOr<std::unique_ptr<OperateCall>> Operate(const std::string& member,
                                                       const peer::v1::OperateRequest& request,
                                                       absl::Time deadline)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Ends the Operate calls in flight, and refuses new ones: for shutdown, before the HTTP
  // server waits for its requests (a forward would otherwise hold one until its deadline).
  void CancelOperateCalls() ABSL_LOCKS_EXCLUDED(mu_);
  // For OperateCall's destructor.
  void EndOperateCall(grpc::ClientContext* context) ABSL_LOCKS_EXCLUDED(mu_);

  // One pass of log retention (R12), as the trimmer runs every trim_interval: each
  // database's log beyond its retention goes, except what a linked peer still needs while
  // the log stays within twice its retention (ChangeLog::Trim's keep_from).
  void TrimOnce() ABSL_LOCKS_EXCLUDED(mu_);

  // Test hook (SPEC §6, "a link can be cut and restored per peer"): while `peer` is cut, this
  // node ends its links with it, does not dial it, refuses its calls (UNAVAILABLE) and does
  // not forward drops to it: a network partition between the two, as either side sees it.
  // Cutting on one side is enough; both sides may cut. Restoring lets the dialers reconnect.
  void CutLink(const std::string& peer) ABSL_LOCKS_EXCLUDED(mu_);
  void RestoreLink(const std::string& peer) ABSL_LOCKS_EXCLUDED(mu_);
  bool IsCut(const std::string& peer) const ABSL_LOCKS_EXCLUDED(mu_);

  // ---- For LinkSession and the service.
  const ClusterOptions& options() const { return options_; }
  catalog::LocalNode* node() const { return node_; }
  // Authenticates a caller (R2): the secret, then the claimed name. Returns the name. A
  // refusal is counted and logged at most once per kRefusalLogEvery per source address.
  absl::StatusOr<std::string> Authenticate(const grpc::ServerContext& context) const;
  static constexpr absl::Duration kRefusalLogEvery = absl::Seconds(10);
  // Authenticate's checks, without counting or logging.
  absl::StatusOr<std::string> CheckCaller(const grpc::ServerContext& context) const;
  // Peer calls refused by Authenticate, for /metrics.
  uint64_t refused_calls() const { return refusals_.total(); }
  void AddClientMetadata(grpc::ClientContext* context) const;
  void Register(const std::shared_ptr<LinkSession>& s) ABSL_LOCKS_EXCLUDED(mu_);
  // `connected`: the session got as far as the peer's Hello (it counted as a link).
  void Unregister(const LinkSession* s, const absl::Status& why, bool connected)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A peer's Hello or snapshot arrived on a link.
  void OnHello(const std::string& peer, const peer::v1::Hello& hello) ABSL_LOCKS_EXCLUDED(mu_);
  void OnSchema(const std::string& peer, const std::string& db, uint64_t digest)
      ABSL_LOCKS_EXCLUDED(mu_);
  bool stopping() const { return stopping_.load(); }
  // The R11 exclusions of the route to `peer` (none for a peer without a route).
  Exclusions ExclusionsFor(const std::string& peer) const ABSL_LOCKS_EXCLUDED(mu_);
  // One link per peer applies its records (R6). True if `s` holds (or now took) the claim.
  bool ClaimReceiver(const std::string& peer, const LinkSession* s) ABSL_LOCKS_EXCLUDED(mu_);
  // Releasing withdraws the peer as a direct origin (OriginBook).
  void ReleaseReceiver(const std::string& peer, const LinkSession* s) ABSL_LOCKS_EXCLUDED(mu_);
  // Design 0004: the claimed subscription to `peer` applied a batch of `db`; what this node
  // may now advertise of it as a direct origin (the links then tell their peers).
  void UpdateOrigin(const std::string& peer, const std::string& db,
                    const std::optional<DirectOrigin>& direct) ABSL_LOCKS_EXCLUDED(mu_);
  OriginMap origins() const { return origin_book_.Snapshot(); }
  // R17: the parked entries of every peer, retried and counted node-wide.
  ParkedRetrier* parked() { return &parked_; }
  const ParkedRetrier* parked() const { return &parked_; }
  // R16: checks peers' clocks and stamps; counts refusals.
  ClockBound& clock_bound() { return clock_bound_; }
  const ClockBound& clock_bound() const { return clock_bound_; }
  // The offset a peer's Hello showed (R16), for cluster_status.
  void RecordClockOffset(const std::string& peer, int64_t offset_ms) ABSL_LOCKS_EXCLUDED(mu_);
  // R18: anti-entropy, both sides (replication/anti_entropy.h).
  AntiEntropy* anti_entropy() { return anti_entropy_.get(); }
  Releaser* releaser() { return releaser_.get(); }
  // Design 0013, P8: how far `peer` has applied this node's log of `db` as its links know
  // (LinkSession::acked_cursor, the highest over its links); none without one.
  std::optional<uint64_t> AckedCursor(const std::string& peer, const std::string& db) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Design 0013, P10: how far this node's own writes of `db` have reached `peer`
  // (LinkSession::acked_own_writes, the highest over its links); none without a link.
  std::optional<uint64_t> AckedOwnWrites(const std::string& peer, const std::string& db) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Commits that woke a writer of a link with `peer` (LinkSession::commit_wakes), the highest
  // over its links; none without a link. What this node's commits cost that link.
  std::optional<uint64_t> CommitWakes(const std::string& peer) const ABSL_LOCKS_EXCLUDED(mu_);

  // ---- Confirmed writes (design 0013, P10; cluster_confirm.cc).
  // While one is held, this node's batches of `db` ask their subscriber for an immediate ack
  // (ChangeBatch.ack_now): taken before a confirmed write, so its batch is one of them.
  class ConfirmScope {
   public:
    ConfirmScope(Cluster* cluster, std::string db);
    ~ConfirmScope();
    ConfirmScope(const ConfirmScope&) = delete;
    ConfirmScope& operator=(const ConfirmScope&) = delete;

   private:
    Cluster* const cluster_;
    const std::string db_;
  };
  bool ConfirmationsPending(const std::string& db) const ABSL_LOCKS_EXCLUDED(confirm_mu_);
  // Waits until `n` of `members` have acknowledged this node's own writes of `db` through
  // `seq` (AckedOwnWrites: over a direct link), or until `deadline` or Stop. Returns those that
  // have, in the order of `members`.
  std::vector<std::string> WaitForConfirmations(const std::string& db, uint64_t seq, size_t n,
                                                const std::vector<std::string>& members,
                                                absl::Time deadline)
      ABSL_LOCKS_EXCLUDED(mu_, confirm_mu_);
  // For LinkSession: a peer acknowledged batches (wakes WaitForConfirmations).
  void OnAck() ABSL_LOCKS_EXCLUDED(confirm_mu_);
  // One Verify call to `peer` over its route, answered within `timeout`. UNAVAILABLE when it
  // has no route from here, is cut, or does not answer in time; the peer's own error, codes
  // kept, when it answered one.
  absl::Status CallVerify(const std::string& peer, const peer::v1::VerifyRequest& request,
                          peer::v1::VerifyResponse* response, absl::Duration timeout)
      ABSL_LOCKS_EXCLUDED(mu_);
  // R9, R10, C8, C14: applies a drop `peer` forwarded (authenticated, its provenance checked)
  // and says what became of it in `response` (dropped, kept or absent); R16 refuses a
  // stamp from the future. Not OK: the call fails with it.
  absl::Status ServeForward(const std::string& peer, const peer::v1::ForwardRequest& request,
                            peer::v1::ForwardResponse* response) ABSL_LOCKS_EXCLUDED(mu_);
  // Cancels every Verify call in flight and refuses new ones (CANCELLED): shutdown.
  void CancelVerifyCalls() ABSL_LOCKS_EXCLUDED(mu_);
  // Connected peers with a route from here that advertised verify.v1, by name.
  std::vector<std::string> VerifyPeers() const ABSL_LOCKS_EXCLUDED(mu_);
  // Counts a LinkMessage this node does not understand (R1).
  void CountUnknownMessage() { unknown_messages_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t unknown_messages() const { return unknown_messages_.load(); }
  // DB_SCHEMA traffic this node sent (R3): messages, their bytes, and the table definitions in
  // them. What a schema change costs the cluster; the schema benchmark reads them.
  void CountSchemaSent(uint64_t bytes, uint64_t tables) {
    schema_messages_sent_.fetch_add(1, std::memory_order_relaxed);
    schema_bytes_sent_.fetch_add(bytes, std::memory_order_relaxed);
    schema_tables_sent_.fetch_add(tables, std::memory_order_relaxed);
  }
  // Entries of the peers' change batches (log, copy and refetch) this node received, and what
  // became of them, over every link since the start: received / applied is how many copies of
  // each write reach this node (issue 23: 1.00 once relays stop sending what an origin sends).
  void CountReceived(uint64_t entries, const catalog::ApplyStats& stats) {
    entries_received_.fetch_add(entries, std::memory_order_relaxed);
    entries_applied_.fetch_add(stats.applied, std::memory_order_relaxed);
    entries_duplicate_.fetch_add(stats.duplicates, std::memory_order_relaxed);
    entries_not_member_.fetch_add(stats.not_member, std::memory_order_relaxed);
  }
  uint64_t entries_received() const { return entries_received_.load(); }
  uint64_t entries_applied() const { return entries_applied_.load(); }
  uint64_t entries_duplicate() const { return entries_duplicate_.load(); }
  // Design 0013, P3 and P11: entries dropped for a database this node is not a member of.
  uint64_t entries_not_member() const { return entries_not_member_.load(); }
  uint64_t schema_messages_sent() const { return schema_messages_sent_.load(); }
  uint64_t schema_bytes_sent() const { return schema_bytes_sent_.load(); }
  uint64_t schema_tables_sent() const { return schema_tables_sent_.load(); }
  // Links that ended with an error while this node ran (a peer going away, a cut, a stream
  // the transport closed): a steady cluster keeps it still.
  uint64_t links_failed() const { return links_failed_.load(); }
  // Requests for a database whole (SchemaRequest), one per database, each retry counted: the
  // digests stayed apart past kSchemaResyncAfter, or a DbSchema could not be applied whole.
  // Deltas and refetches keep a healthy cluster from needing one (R3); peers that really
  // differ (R11 exclusions, a C11 node-local table) ask once per change of the database.
  void CountSchemaResyncs(uint64_t databases) {
    schema_resyncs_.fetch_add(databases, std::memory_order_relaxed);
  }
  uint64_t schema_resyncs() const { return schema_resyncs_.load(); }

 private:
  class Service;  // peer_service.cc
  static std::unique_ptr<grpc::Service> NewService(Cluster* cluster);
  struct PeerState {
    std::string address;  // empty for a peer known only from an inbound link
    int links = 0;        // open sessions with it (either direction)
    std::string last_error;
    std::vector<std::string> capabilities;
    absl::btree_map<std::string, uint64_t> digests;  // its last digest per database
    const LinkSession* receiver = nullptr;           // the link that applies its records (R6)
    int64_t clock_offset_ms = 0;                     // at its last Hello (R16)
    // Whether its last Hello advertised `capability`.
    bool Speaks(absl::string_view capability) const {
      return std::find(capabilities.begin(), capabilities.end(), capability) != capabilities.end();
    }
  };

  // The highest value `of` gives over the links with `peer` (AckedCursor, AckedOwnWrites).
  std::optional<uint64_t> HighestOverLinks(
      const std::string& peer, const std::function<std::optional<uint64_t>(LinkSession&)>& of) const
      ABSL_LOCKS_EXCLUDED(mu_);
  void Dial(PeerRoute route);  // the dialer thread of one route; ends when it is removed
  void DialLoop(const PeerRoute& route);
  // Joins the dialers of removed routes that have returned. Not under mu_.
  void ReapDialers() ABSL_LOCKS_EXCLUDED(mu_);
  bool HasRouteLocked(const std::string& name) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  std::shared_ptr<grpc::Channel> ChannelTo(const PeerRoute& route) ABSL_LOCKS_EXCLUDED(mu_);
  PeerDropStatus Forward(const PeerRoute& route, const peer::v1::ForwardRequest& request);
  std::vector<PeerDropStatus> ForwardToAll(const peer::v1::ForwardRequest& request)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status ServeDropTable(const std::string& peer, const peer::v1::DropTable& d,
                              peer::v1::ForwardResponse* response) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status ServeDropDatabase(const std::string& peer, const peer::v1::DropDatabase& d,
                                 peer::v1::ForwardResponse* response) ABSL_LOCKS_EXCLUDED(mu_);
  void OnCatalogChange() ABSL_LOCKS_EXCLUDED(mu_);
  // `origin`: every entry the commit made visible is that peer's own write, with its place in
  // the peer's log (ReceiverState::Apply's tag); null: anything.
  void OnCommit(absl::string_view db, const std::string* origin) ABSL_LOCKS_EXCLUDED(mu_);
  void TrimLoop() ABSL_LOCKS_EXCLUDED(mu_);  // log retention (R12), until Stop
  bool HasRouteIdLocked(uint64_t id) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  // The catalog listener reaches the Cluster through this, so that Stop() can detach it: the
  // catalog keeps its listener for life and may call it from any thread.
  struct ListenerHook {
    absl::Mutex mu;
    Cluster* cluster ABSL_GUARDED_BY(mu) = nullptr;
  };
  std::shared_ptr<ListenerHook> hook_ = std::make_shared<ListenerHook>();

  catalog::LocalNode* const node_;
  const ClusterOptions options_;
  std::unique_ptr<grpc::Service> service_;
  std::atomic<bool> stopping_{false};
  std::atomic<OperationRunner*> runner_{nullptr};  // P4 (SetOperationRunner)
  std::atomic<uint64_t> unknown_messages_{0};
  mutable LogLimiter refusals_{kRefusalLogEvery};  // Authenticate's, per source address
  std::atomic<uint64_t> entries_received_{0};
  std::atomic<uint64_t> entries_applied_{0};
  std::atomic<uint64_t> entries_not_member_{0};
  std::atomic<uint64_t> entries_duplicate_{0};
  std::atomic<uint64_t> schema_messages_sent_{0};
  std::atomic<uint64_t> schema_bytes_sent_{0};
  std::atomic<uint64_t> schema_tables_sent_{0};
  std::atomic<uint64_t> links_failed_{0};
  std::atomic<uint64_t> schema_resyncs_{0};
  ClockBound clock_bound_;
  OriginBook origin_book_;  // its lock comes after mu_
  // Its mu_ comes after mu_ (Status counts under it); its pass_mu_ before (see its header).
  ParkedRetrier parked_{node_};

  absl::Mutex membership_mu_ ABSL_ACQUIRED_BEFORE(mu_);  // add_node / remove_node, one at a time
  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<LinkSession>> sessions_ ABSL_GUARDED_BY(mu_);
  absl::btree_map<std::string, PeerState> peers_ ABSL_GUARDED_BY(mu_);
  // By "name@address": a peer re-added at a new address gets a new channel.
  absl::flat_hash_map<std::string, std::shared_ptr<grpc::Channel>> channels_ ABSL_GUARDED_BY(mu_);
  // The context of each route's current outbound attempt, to cancel it.
  absl::flat_hash_map<uint64_t, std::shared_ptr<grpc::ClientContext>> dialing_ ABSL_GUARDED_BY(mu_);
  uint64_t next_route_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::vector<PeerRoute> routes_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  // The dialer of each route, by route id; a dialer whose route was removed puts its id in
  // ended_dialers_ as it returns, and the next add_node / remove_node joins it.
  absl::flat_hash_map<uint64_t, std::thread> dialers_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> ended_dialers_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> cut_ ABSL_GUARDED_BY(mu_);  // peers cut off by a test hook
  std::thread trimmer_;                                        // started by Start, joined by Stop
  std::unique_ptr<AntiEntropy> anti_entropy_;  // constructed with the Cluster, stopped by Stop
  std::unique_ptr<Releaser> releaser_;         // likewise (P8)
  // P10. A leaf lock: nothing is called under it.
  mutable absl::Mutex confirm_mu_;
  absl::CondVar acked_;  // ack_epoch_ moved, or stopping_
  uint64_t ack_epoch_ ABSL_GUARDED_BY(confirm_mu_) = 0;
  absl::flat_hash_map<std::string, int> confirming_ ABSL_GUARDED_BY(confirm_mu_);  // per db
  std::atomic<int> confirming_total_{0};  // the sum of confirming_, for a lock-free "none"
  // Verify calls in flight (CallVerify), for CancelVerifyCalls.
  absl::flat_hash_set<grpc::ClientContext*> verify_calls_ ABSL_GUARDED_BY(mu_);
  bool verify_calls_closed_ ABSL_GUARDED_BY(mu_) = false;
  // Operate calls in flight (design 0013, P4), for CancelOperateCalls.
  absl::flat_hash_set<grpc::ClientContext*> operate_calls_ ABSL_GUARDED_BY(mu_);
  bool operate_calls_closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace cairn::replication
