// ChangeFeed: what one change subscription reads (SPEC §8: W2, W3, W4, W6). The live rows of a
// table, or its one record, at one snapshot; then every change logged after that snapshot, in
// the order of the database's change log (R5), local writes and entries applied from peers
// alike. No network and no waiting: the subscription endpoint (node/) decides when to read
// more and how to send it. Thread-compatible: one per subscriber. Design 0012.
//
// How the state and the stream meet (W2). Open reads the log's committed watermark W, then
// takes a RocksDB snapshot S: every entry at or below W committed before S, so S holds it.
// Entries above W that S also holds (batches that committed before S out of sequence order,
// their reservations not yet released) are collected as the feed's `in_state_` set and skipped
// when the stream reaches them; every other entry above W commits after S and is streamed. A
// record and its log entry share one WriteBatch, so "S holds the entry" is "S holds the row".
//
// Invariants:
//  (1) `position_` never decreases; every entry at or below it was either in the state sent,
//      sent as an event, skipped as another table's or key's, or superseded (below).
//  (2) `in_state_` holds only sequence numbers above `position_`.
//  (3) An event's body is the stored row of exactly the entry's version and origin (D5). An
//      entry whose row has moved on was superseded by a later entry of the same key, which
//      this feed reaches later (W3: the last event of a key is its stored row); the stream
//      skips it, as replication does (replication/record_stream.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "catalog/local_node.h"
#include "catalog/schema.h"
#include "common/clock.h"
#include "nlohmann/json.hpp"
#include "storage/engine.h"

namespace cairn::catalog {

// Where a feed stands: after this sequence number of this node's log (Hello.log_id), in this
// generation of the table. Text form "<seq>-<log id, 16 hex>-<generation, 16 hex>": opaque to
// clients, valid only on the node that issued it (W4).
struct FeedCursor {
  uint64_t seq = 0;
  uint64_t log_id = 0;
  Hlc generation = 0;

  std::string ToString() const;
  // BAD_REQUEST naming the text when it is not a cursor's form.
  static absl::StatusOr<FeedCursor> Parse(absl::string_view text);
};

struct FeedOptions {
  std::string database;
  std::string table;
  std::optional<nlohmann::json> id;         // set: the feed of this one record
  std::optional<FeedCursor> since;          // W4: resume after it; no state is sent
  bool current = true;                      // W2: the state first (false: changes from now on)
  std::vector<std::string> get_attributes;  // empty or ["*"]: every attribute
};

struct FeedEvent {
  enum class Op { kPut, kDelete };
  Op op = Op::kPut;
  nlohmann::json id;      // the primary key
  nlohmann::json record;  // projected; null for a delete
  Hlc version = 0;        // its __updatedtime__ is HybridClock::PhysicalMs(version)
  std::string origin;     // the node that made the write (D4)
  FeedCursor cursor;      // resume after this event
};

// Why a feed ends. Anything else the feed meets is an error status.
enum class FeedEnd {
  kNone,            // it goes on
  kResyncRequired,  // W4: the log no longer holds what follows the position (R12), or the
                    // cursor is another log's (another node, or this one restored)
  kDropped,         // W6, C9: the table's generation it follows is dropped
};

class ChangeFeed {
 public:
  // Checks the table, the attributes named and the id; takes the snapshot (W2) unless resuming
  // (`since`) or `current` is false. TABLE_NOT_FOUND when the table is not live; a `since`
  // cursor of a generation no longer live opens a feed that ends at once as kDropped, and one
  // beyond this log's watermark is BAD_REQUEST (no node issues such a cursor). `node` outlives
  // the feed.
  static absl::StatusOr<std::unique_ptr<ChangeFeed>> Open(LocalNode* node, FeedOptions options);

  // The state of W2, before any Next: each live row (or the record) at the snapshot, as a put
  // event whose cursor is the feed's start, in key order, reading at most `max_rows` stored
  // rows (deleted ones included) a call; the next call goes on after the last. Visits nothing
  // when Open took no snapshot. A drop of the
  // table cancels it (C9): returns kDropped. The snapshot is released once StateDone().
  absl::StatusOr<FeedEnd> ReadState(const std::function<void(FeedEvent)>& visit,
                                    size_t max_rows = std::numeric_limits<size_t>::max());
  // Whether the state is all read (or there was none to read).
  bool StateDone() const { return snapshot_ == nullptr; }

  // The changes logged after the position, up to the committed watermark and at most
  // `max_entries` log entries read (of every table of the database), appended to `out` in log
  // order. kNone when nothing is due too; the position moves past every entry read.
  absl::StatusOr<FeedEnd> Next(size_t max_entries, std::vector<FeedEvent>* out);

  // Resume after this: the position (invariant 1) in cursor form.
  FeedCursor position() const;
  // Whether the position is at the log's committed watermark (nothing to read now).
  bool CaughtUp() const;

 private:
  ChangeFeed(LocalNode* node, FeedOptions options, TableRef def, std::string key)
      : node_(node), options_(std::move(options)), def_(std::move(def)), key_(std::move(key)) {}

  // The entries above the watermark the snapshot holds (W2), for `in_state_`.
  absl::Status CollectInState();
  bool Follows(const storage::v1::ChangeEntry& e) const;  // this table (and key)?
  // The live definition of the feed's generation; null once it is dropped.
  TableRef LiveDef() const;
  // A stored body as events show it: dropped values out (C15), projected (get_attributes).
  nlohmann::json Project(const TableDef& def, Hlc version, const std::string& body) const;

  LocalNode* const node_;
  const FeedOptions options_;
  const TableRef def_;     // the generation followed
  const std::string key_;  // encoded primary key of a record's feed; empty: the table's
  uint64_t position_ = 0;  // invariant (1)
  absl::btree_set<uint64_t> in_state_;                 // invariant (2)
  std::unique_ptr<storage::ScopedSnapshot> snapshot_;  // until the state is read
  std::string state_after_;  // the last record key the state visited; empty: none yet
  FeedEnd ended_ = FeedEnd::kNone;
};

}  // namespace cairn::catalog
