// Record change streams (SPEC R5-R8, R11, R12, R14, D5, D7): both halves of one direction of
// a link, with no network in them. LinkSession moves their messages.
//
//   LogSender      (this node -> peer) turns the peer's Subscribe into ChangeBatches: a
//                  full copy of a database the peer has no usable cursor for (R7), then this
//                  node's change log from the cursor on (R5), and merging copies of single
//                  tables the peer asks for again (R14 refetch).
//   ReceiverState  (peer -> this node) builds the Subscribe from this node's stored cursors
//                  and applies each ChangeBatch together with its cursor in one WriteBatch
//                  (R6), so a crash at any point resumes exactly where the batch left off.
//
// Crash semantics, receiver side: a batch is applied, logged for relay, its entries that
// cannot apply yet parked (R17, Parking), and its cursor moved, all in one WriteBatch; before
// it commits nothing of it happened, after it everything did.
//
// Sender invariant (R15): the cursor a batch moves the peer to never passes an entry that was
// not sent, unless the entry is provably not for the peer (node-local, excluded, the peer's
// own, superseded in a generation that is still the live one, or of a table that is gone).
// A resubscription starts after the last committed cursor. A batch that arrives twice (never,
// with one claimed subscription per peer, but cheaply so) is made of identity ties (D5).
//
// Neither class is thread-safe: each is owned by one LinkSession and used by one thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cairn/peer/v1/peer.pb.h"
#include "catalog/local_node.h"
#include "replication/origin_holds.h"
#include "replication/parked_retrier.h"
#include "replication/parking.h"
#include "replication/schema_sync.h"

namespace cairn::replication {

// One batch in this many goes to refetches while there are any (R17).
inline constexpr uint64_t kRefetchShare = 4;

struct StreamLimits {
  size_t max_entries = 1000;   // per ChangeBatch
  size_t max_bytes = 1 << 20;  // of record bodies per ChangeBatch (a bigger row goes alone)
  absl::Duration hold_limit = kHoldLimit;  // OriginHolds
};

class LogSender {
 public:
  // `peer`: the node this stream goes to; `exclusions`: the route's (R11, sender's side).
  LogSender(catalog::LocalNode* node, std::string peer, Exclusions exclusions,
            StreamLimits limits = {});

  // Starts serving the peer's subscription: cursors it can serve stream from there; the
  // others (and every database it has no cursor for) get a full copy first.
  void Subscribe(const peer::v1::Subscribe& subscribe);
  bool subscribed() const { return subscribed_; }

  // Fills `out` with the next batch of some database that has work (round robin), read
  // against `snap` — whose tables the peer must already have been sent (the caller sends
  // DB_SCHEMA of a snapshot at least this new first). False when there is nothing to send.
  absl::StatusOr<bool> Next(const catalog::CatalogSnapshot& snap, peer::v1::ChangeBatch* out);

  // R14: the peer asks again for every row of these tables (queued behind earlier ones).
  void Refetch(const peer::v1::Refetch& refetch);
  // Design 0004: the origins the peer receives directly (OriginHolds).
  void Advertise(const peer::v1::OriginAdvert& advert) { holds_.Advertise(advert); }
  // Entries are held for the peer: the caller calls Next again within the hold limit.
  bool holding() const { return holds_.holding(); }
  absl::flat_hash_set<std::pair<std::string, std::string>> Skipping() const {
    return holds_.Skipping();
  }

  // Per database, the first log entry this peer still needs: after its cursor, or after a
  // full copy's target (the copy's tail). The log keeps them while it can (R17, Trim).
  absl::btree_map<std::string, uint64_t> Needs() const;

  // True (once) when Next stopped before an entry whose table is newer than the snapshot it
  // was given (R15): the caller sends the peer a newer DB_SCHEMA and calls Next again with it.
  // Until then Next produces nothing.
  bool TakeStaleSnapshot() { return std::exchange(stale_snapshot_, false); }
  // True (once) when Next stopped reading a log with more in it (reads the peer gets from
  // its origin, design 0004): the caller calls Next again.
  bool TakeMore() { return std::exchange(more_, false); }

 private:
  struct Db {
    uint64_t sent_seq = 0;         // log position sent through
    uint64_t reported_cursor = 0;  // the peer's stored cursor as of the last batch (cursor_seq)
    std::optional<storage::v1::CopyPosition> copy;  // a full copy in progress
    bool started = false;                           // copy or cursor decided
  };
  struct TableCopy {
    std::string db, table;
    std::string after_key;
  };

  bool Excluded(absl::string_view db, absl::string_view table) const;
  // Design 0013, P3: the databases `snap` no longer places on the peer are sent nothing and
  // keep no log for it (Needs); should one become the peer's again, its stream starts over
  // as a full copy (R7), which covers whatever the peer dropped meanwhile.
  void ForgetNonMembers(const catalog::CatalogSnapshot& snap);
  // The live, replicating, not excluded tables of `db`, in name order.
  std::vector<catalog::TableRef> CopyTables(const catalog::CatalogSnapshot& snap,
                                            const std::string& db) const;
  // Starts a full copy of `db` at the current watermark. False (and stale_snapshot_) when
  // `snap` lacks a table of `db` that the catalog has now: the copy would miss its rows.
  bool StartCopy(const catalog::CatalogSnapshot& snap, const std::string& db, Db* state);
  absl::StatusOr<bool> CopyInstead(const catalog::CatalogSnapshot& snap, const std::string& db,
                                   Db* state, peer::v1::ChangeBatch* out);
  // The generation id of the live replicating `table` in `snap`, 0 if none.
  static uint64_t LiveGeneration(const catalog::CatalogSnapshot& snap, const std::string& db,
                                 const std::string& table);
  // Appends rows of `def` after `*after_key` until the batch is full; true when the table
  // is exhausted. Advances *after_key.
  absl::StatusOr<bool> CopyRows(const catalog::TableDef& def, std::string* after_key,
                                peer::v1::ChangeBatch* out, size_t* bytes);
  absl::StatusOr<bool> NextCopy(const catalog::CatalogSnapshot& snap, const std::string& db,
                                Db* state, peer::v1::ChangeBatch* out);
  absl::StatusOr<bool> NextLog(const catalog::CatalogSnapshot& snap, const std::string& db,
                               Db* state, peer::v1::ChangeBatch* out);
  // One read of NextLog, in phases: ScanLog, ReadRows, CutAtNewerTable, then the batch.
  // `*silent`: it produced a batch the peer does not need (no entries, no gap, its cursor
  // unmoved); the stream has moved past it all the same.
  absl::StatusOr<bool> ReadLog(const catalog::CatalogSnapshot& snap, const std::string& db,
                               Db* state, peer::v1::ChangeBatch* out, bool* silent);
  // Nothing new in the log: a batch that only moves the peer's cursor, if the holds let it.
  bool CursorOnly(const std::string& db, uint64_t committed, Db* state, peer::v1::ChangeBatch* out);
  // An entry of the log to send, with its table's generation in the round's snapshot (0: not
  // there, or not replicating).
  struct LogRead {
    uint64_t seq;
    storage::v1::ChangeEntry entry;
    uint64_t generation;
  };
  // What one scan of the log found.
  struct LogScan {
    std::vector<LogRead> reads;
    uint64_t last = 0;        // the log position read through
    bool origin_gap = false;  // an entry of this node's own left out (ChangeBatch.origin_gap)
  };
  // Reads entries (from, committed] of `db` for this peer, at most a batch of them.
  absl::Status ScanLog(const catalog::CatalogSnapshot& snap, const std::string& db, uint64_t from,
                       uint64_t committed, LogScan* scan);
  // The rows the reads name, in one MultiGet; none where the row has another version now.
  absl::StatusOr<std::vector<std::optional<storage::v1::StoredRecord>>> ReadRows(
      const std::vector<LogRead>& reads);
  // R15: ends the scan before the first entry with no row whose table is newer than the
  // round's snapshot (stale_snapshot_).
  void CutAtNewerTable(const std::string& db,
                       const std::vector<std::optional<storage::v1::StoredRecord>>& rows,
                       LogScan* scan);
  absl::StatusOr<bool> NextRefetch(const catalog::CatalogSnapshot& snap,
                                   peer::v1::ChangeBatch* out);

  catalog::LocalNode* const node_;
  const std::string self_;  // this node's name: the origin of its own writes
  // The log stream skips the entries this peer wrote itself: it holds them already (its
  // store keeps every write it acknowledged for as long as its log id lasts; a rebuilt or
  // restored node has a new log id and no cursors, so it gets full copies, decision 51).
  // Full copies and refetches send them.
  const std::string peer_;
  Exclusions exclusions_;
  const StreamLimits limits_;
  // Entries the peer gets from their origin directly (design 0004): skipped, held, replayed.
  OriginHolds holds_;
  bool subscribed_ = false;
  absl::btree_map<std::string, Db> dbs_;
  uint64_t dbs_version_ = UINT64_MAX;  // the catalog version dbs_ was last completed from
  std::deque<TableCopy> refetch_;
  // (db, table) the peer dropped locally: its own writes of them are sent too (decision 86).
  absl::flat_hash_set<std::pair<std::string, std::string>> echo_;
  uint64_t refetch_turn_ = 0;
  std::string last_db_;          // round robin position
  bool stale_snapshot_ = false;  // see TakeStaleSnapshot
  bool more_ = false;            // see TakeMore
};

// What the receiver side reports per peer (cluster_status).
struct ReceiveStats {
  uint64_t lag_entries = 0;  // summed over lag_by_db
  // Entries of each database the peer has logged past the cursor (head - cursor). Status
  // sums only the databases this node holds rows of (design 0013, P3).
  absl::btree_map<std::string, uint64_t> lag_by_db;
  int64_t newest_applied_ms = 0;         // physical time of the newest version last applied
  int64_t LagMs(absl::Time now) const {  // 0 when caught up
    return lag_entries == 0 ? 0 : std::max<int64_t>(0, absl::ToUnixMillis(now) - newest_applied_ms);
  }
  bool copy_active = false;
  double copy_percent = 0;
  double copy_rows_per_s = 0;
  uint64_t batches = 0;
  uint64_t entries_applied = 0;
  uint64_t entries_received = 0;                   // in log and copy batches, applied or not
  absl::btree_map<std::string, uint64_t> cursors;  // last applied seq per database
  // Databases with a full copy from the peer under way, or one the peer stopped sending.
  absl::btree_set<std::string> copying;
};

// Design 0004: this node receives every entry of the peer's own in `db` with an origin
// sequence number above `since` directly from it, and has applied them through `seq`
// (peer::v1::OriginAdvert.Origin).
struct DirectOrigin {
  uint64_t log_id = 0;
  uint64_t since = 0;
  uint64_t seq = 0;
  bool operator==(const DirectOrigin& o) const {
    return log_id == o.log_id && since == o.since && seq == o.seq;
  }
};

class ReceiverState {
 public:
  // `parked`: told what Apply parks (R17; null: nobody), and retries it.
  ReceiverState(catalog::LocalNode* node, std::string peer, uint64_t peer_log_id,
                Exclusions exclusions, ParkedRetrier* parked = nullptr);

  // The Subscribe for this peer: stored cursors taken against its current log id, the
  // route's exclusions, and the tables this node must fetch again from it (R14).
  absl::StatusOr<peer::v1::Subscribe> BuildSubscribe();
  // R14: refetches stored for this peer that this link has not asked for yet (a marker
  // retired a generation here after the link subscribed). Empty: nothing new.
  absl::StatusOr<peer::v1::Refetch> NewRefetches();
  // The peer speaks records.echo.v1: Subscribe and Refetch name the tables this node dropped
  // locally (decision 86). Without it they do not (R1: nothing the peer did not advertise).
  void set_echo(bool peer_speaks_echo) { echo_ = peer_speaks_echo; }
  // The peer speaks records.origins.v1: it says when it leaves out writes of its own
  // (origin_gap), so it may be advertised as a direct origin (Direct).
  void set_origins(bool peer_speaks_origins) { origins_ = peer_speaks_origins; }

  // Applies one batch and its cursor in one WriteBatch (R6). Entries of tables the route
  // excludes are dropped (R11, receiver's side); entries of a table not defined here yet, or
  // dropping, are parked in the same WriteBatch (R17). An error leaves nothing of the batch
  // applied.
  // `stats`, when given, receives what the apply did with the batch's entries.
  absl::Status Apply(const peer::v1::ChangeBatch& batch, catalog::ApplyStats* stats = nullptr);

  ReceiveStats Stats(absl::Time now) const;
  // What this node may advertise of the peer as an origin in `db` (design 0004): set once a
  // log batch of it arrived on this subscription (a full copy first: once that is done), and
  // only if neither end's route excludes a table of it (R11) and the peer speaks
  // records.origins.v1.
  std::optional<DirectOrigin> Direct(const std::string& db) const;

 private:
  struct DbProgress {
    uint64_t cursor = 0;
    uint64_t head = 0;
    uint64_t newest_version = 0;  // of the entries last applied (lag_ms)
    std::optional<storage::v1::CopyPosition> copy;
    absl::Time copy_started;
    uint64_t copy_rows_at_start = 0;
    // Direct: a log batch arrived since the subscription (or a full copy ended); every entry
    // of the peer's own above `since` came in a log batch, through `high`.
    bool streaming = false;
    bool excluding = false;  // the peer's route leaves tables of it out (origin_excludes)
    uint64_t since = 0;
    uint64_t high = 0;
  };

  catalog::LocalNode* const node_;
  const std::string peer_;
  const uint64_t peer_log_id_;
  const Exclusions exclusions_;
  absl::btree_map<std::string, DbProgress> progress_;
  absl::btree_set<std::pair<std::string, std::string>> refetch_asked_;  // (db, table)
  bool echo_ = false;                                                   // see set_echo
  bool origins_ = false;                                                // see set_origins
  Parking parking_;
  ParkedRetrier* const parked_;
  uint64_t batches_ = 0;
  uint64_t entries_applied_ = 0;
  uint64_t entries_received_ = 0;
};

}  // namespace cairn::replication
