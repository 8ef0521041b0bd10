// AntiEntropy: finds and repairs divergence between this node and its peers (SPEC R18, design
// 0007). Both sides of the Verify call: as caller it compares one table generation at a time
// with a peer, top-down through digest trees (catalog/table_digest.h), then key by key in the
// differing leaves, and repairs each side by a merging apply (D5, RecordStore::ApplyPeerEntries:
// never a newer row deleted, only a newer tombstone removes one, every repaired row logged and
// relayed like any applied write); as callee it answers those steps from its own store.
//
// In-flight rows are not divergence. A row one side holds newer is repaired only after the
// other side's cursor on the holder's log has passed the holder's log position taken after
// reading it (so replication had every chance to deliver it) — or has stopped moving for 5 s
// or catch_up_wait has passed (replication is paused or broken: repairing is the point) —
// and then only if the row is still older there and the holder's row is unchanged (a
// changed row is in flight again: counted `unsettled`, left to the next verify).
//
// Runs on demand (Verify, the `verify` operation) and in the background every `interval`
// against every connected peer that speaks verify.v1 and has a route from here, one table at a
// time. Scans on this node — its own and those it serves — share one pace in rows/s, which
// drops to a share of the rate while the node serves foreground work (decision 156).
// Node-local and excluded tables are skipped; a drop during a verify ends that table's
// comparison (C9: scans hold admission tokens and stop at a drop).
//
// Thread-safe. Lock order: mu_ is a leaf; no lock is held across a call, a scan or a write.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cairn/peer/v1/peer.pb.h"
#include "catalog/local_node.h"
#include "common/background_pace.h"

namespace cairn::replication {

class Cluster;

inline constexpr char kVerifyCapability[] = "verify.v1";

struct AntiEntropyOptions {
  absl::Duration interval = absl::Hours(1);  // background runs; 0: none
  uint64_t rate = 200'000;                   // rows/s scanned by verifies on this node; 0: no limit
  // Of `rate`, while the node serves foreground work (node->activity; decision 156).
  double busy_share = 1.0;
  // How long a side waits for its cursor on the other's log before it leaves a difference
  // unsettled.
  absl::Duration catch_up_wait = absl::Seconds(10);
  uint32_t page = 4096;  // stamps per step
};

// One table's comparison with one peer.
struct TableVerify {
  std::string table;
  std::string skipped;  // why it was not compared (empty: compared)
  uint64_t rows_compared = 0;
  uint64_t repaired_here = 0;   // rows this node took from the peer
  uint64_t repaired_there = 0;  // rows the peer took from this node
  uint64_t unsettled = 0;       // differences left to the next verify (in flight)
  uint64_t conflicts = 0;       // same write, other stamps (catalog::StampDiff)
  // Differences the apply could not take (a retired generation, a node-local table of the
  // name, malformed, parked): last-writer-wins does not repair them.
  uint64_t unrepaired = 0;
  // The peer holds another generation of the table, or none: its schema has not converged.
  bool schema_differs = false;
  // The peer's table of the name is node-local (C11): it never holds these rows.
  bool peer_node_local = false;
  uint64_t differing_leaves = 0;
  uint64_t peer_rows = 0;                       // rows in the peer's digest (0: not known yet)
  uint64_t bytes_sent = 0, bytes_received = 0;  // the Verify messages of this comparison
  // Some repair went ahead although a cursor had not caught up (stalled or too slow): the
  // repairs may include rows replication was still to deliver.
  bool repaired_behind_replication = false;
  bool pull_stalled = false, push_stalled = false;  // later pages do not wait again
  // A release's comparison (VerifyMode::kRelease): rows only the peer holds are not pulled.
  bool push_only = false;
  absl::Duration duration;
  uint64_t rows_repaired() const { return repaired_here + repaired_there; }
  bool in_sync() const {
    return !schema_differs && unsettled == 0 && conflicts == 0 && unrepaired == 0;
  }
};

// kRepair: both sides take what they lack, between two members (R18). kRelease (design 0013,
// P8): this node, removed from the database, makes sure a ready member holds every row it
// holds; it pushes what the member lacks and takes nothing.
enum class VerifyMode { kRepair, kRelease };

// One database's comparison with one peer.
struct PeerVerify {
  std::string peer;
  std::string database;
  absl::Status status;  // a failed call or scan; tables holds what was done before it
  std::vector<TableVerify> tables;
  std::string resume_from;  // the table it failed at; the next run of the database starts there
  absl::Time finished;
};

// cluster_status, per peer and database: every table's last comparison together, of the
// tables live now: verified_at is the oldest of them (all verified since), in_sync all of them.
struct VerifyRecord {
  absl::Time verified_at = absl::InfinitePast();
  uint64_t rows_compared = 0;
  uint64_t rows_repaired = 0;
  bool in_sync = false;
  std::string error;
  std::string resume_from;  // see PeerVerify
};

class AntiEntropy {
 public:
  AntiEntropy(catalog::LocalNode* node, Cluster* cluster, AntiEntropyOptions options);
  ~AntiEntropy();  // joins the loop; the owner calls Stop() first (Cluster::Stop)

  // The background loop. Start once; Stop is idempotent, waits for the loop to end and makes
  // every verify still running (on demand) end at its next step with CANCELLED.
  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // Compares `db` (every replicated table, or only `table`) with `peer` now: tables in name
  // order, starting at the one where the last run of the database failed, if any. kRepair
  // needs both to be members; kRelease needs `peer` to be a ready member, and is not
  // recorded for cluster_status.
  PeerVerify Verify(const std::string& peer, const std::string& db,
                    const std::optional<std::string>& table = std::nullopt,
                    VerifyMode mode = VerifyMode::kRepair) ABSL_LOCKS_EXCLUDED(mu_);

  // The callee's side of one step, for the peer service. Errors are the call's status.
  // `cancelled` says the caller has gone (its call was cancelled or timed out): scans stop.
  absl::Status Serve(const std::string& peer, const peer::v1::VerifyRequest& request,
                     peer::v1::VerifyResponse* response, std::function<bool()> cancelled = nullptr);

  absl::btree_map<std::pair<std::string, std::string>, VerifyRecord> Records() const
      ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t rows_compared_total() const { return rows_compared_total_.load(); }
  uint64_t rows_repaired_total() const { return rows_repaired_total_.load(); }
  uint64_t runs_total() const { return runs_total_.load(); }
  double seconds_total() const { return static_cast<double>(micros_total_.load()) / 1e6; }
  // Rows every scan on this node has asked its pace for.
  uint64_t rows_paced() const { return pace_.units_reserved(); }

 private:
  TableVerify VerifyTable(const std::string& peer, const catalog::TableRef& def, VerifyMode mode,
                          absl::Status* error);
  // Steps 1 and 2 of one table (design 0007); VerifyTable counts and logs what they found.
  absl::Status CompareTable(const std::string& peer, const catalog::TableRef& def,
                            TableVerify* out);
  // Step 1: the digests, both sides at once; the leaves that differ (none when the peer
  // skipped the table: `out->skipped`).
  absl::Status DifferingLeaves(const std::string& peer, const catalog::TableRef& def, Hlc settled,
                               int depth, TableVerify* out, std::vector<uint32_t>* leaves);
  // Step 2: the stamps of the differing leaves, page by page, each page settled.
  absl::Status CompareStamps(const std::string& peer, const catalog::TableRef& def, Hlc settled,
                             int depth, const std::vector<uint32_t>& leaves, TableVerify* out);
  // Steps 3-5 for one page of differing keys.
  absl::Status Settle(const std::string& peer, const catalog::TableRef& def,
                      const catalog::StampDiff& diff, uint64_t peer_log_id, uint64_t peer_seq,
                      uint64_t own_seq, TableVerify* out);
  absl::Status Pull(const std::string& peer, const catalog::TableRef& def,
                    const std::vector<catalog::RowStamp>& pull, uint64_t peer_log_id,
                    uint64_t peer_seq, TableVerify* out);
  absl::Status Push(const std::string& peer, const catalog::TableRef& def,
                    const std::vector<catalog::RowStamp>& push, uint64_t own_seq, TableVerify* out);
  // One step; counts its bytes (messages, not framing) in *out.
  absl::Status Call(const std::string& peer, const catalog::TableRef& def,
                    peer::v1::VerifyRequest* request, peer::v1::VerifyResponse* response,
                    TableVerify* out);
  // The callee's steps (anti_entropy_serve.cc). The table a step names, if it is comparable
  // here; else null, with `response` saying why it is skipped.
  catalog::TableRef ServedTable(const std::string& peer, const peer::v1::VerifyTable& t,
                                peer::v1::VerifyResponse* response);
  absl::Status ServeDigest(const catalog::TableRef& def, const peer::v1::VerifyDigest& d,
                           const std::function<bool()>& cancelled, peer::v1::VerifyDigestAnswer* a);
  absl::Status ServeStamps(const catalog::TableRef& def, const peer::v1::VerifyTable& t,
                           const peer::v1::VerifyStamps& s, const std::function<bool()>& cancelled,
                           peer::v1::VerifyStampsAnswer* a);
  absl::Status ServeRows(const catalog::TableRef& def, const peer::v1::VerifyRows& r,
                         peer::v1::VerifyRowsAnswer* a);
  absl::Status ServeBehind(const std::string& peer, const catalog::TableRef& def,
                           const peer::v1::VerifyBehind& b, peer::v1::VerifyBehindAnswer* a);
  absl::Status ServeRepair(const std::string& peer, const catalog::TableRef& def,
                           const peer::v1::VerifyRepair& r, peer::v1::VerifyRepairAnswer* a);
  // Waits until this node's cursor on `peer`'s log of `db` has passed `seq` of `log_id`
  // (true), or stops moving, or `wait` passes (false).
  bool WaitForCursor(const std::string& peer, const std::string& db, uint64_t log_id, uint64_t seq,
                     absl::Duration wait);
  // Paced by the node's rate limit; ends with CANCELLED once this node stops or `cancelled`
  // (a caller gone) says so.
  catalog::DigestScanOptions ScanOptions(Hlc settled_before,
                                         std::function<bool()> cancelled = nullptr);
  Hlc SettledBefore() const;
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  bool Stopping() const ABSL_LOCKS_EXCLUDED(mu_);
  // Design 0013, P3: whether this node and `peer` both hold the rows of `db` in `snap`.
  bool BothMembers(const catalog::CatalogSnapshot& snap, const std::string& db,
                   const std::string& peer) const;
  void Record(const PeerVerify& result, bool whole_database) ABSL_LOCKS_EXCLUDED(mu_);

  catalog::LocalNode* const node_;
  Cluster* const cluster_;
  const AntiEntropyOptions options_;
  // Every scan's rows, its own verifies' and those it answers for peers (R18's bound).
  BackgroundPace pace_;

  std::atomic<uint64_t> rows_compared_total_{0};
  std::atomic<uint64_t> rows_repaired_total_{0};
  std::atomic<uint64_t> runs_total_{0};
  std::atomic<uint64_t> micros_total_{0};

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Per (peer, database): each table's last comparison, and where the next run starts.
  struct TableRecord {
    absl::Time at;
    uint64_t rows_compared = 0, rows_repaired = 0;
    bool in_sync = false;
  };
  struct DbRecord {
    absl::btree_map<std::string, TableRecord> tables;
    std::string resume_from;
    std::string error;  // of the last run
  };
  absl::btree_map<std::pair<std::string, std::string>, DbRecord> records_ ABSL_GUARDED_BY(mu_);
  std::thread loop_;
};

}  // namespace cairn::replication
