// Parking: a peer's entries that cannot be applied yet (SPEC R17).
//
// An entry whose table is not defined here yet (its definition was skipped, or it belongs to
// a newer generation relayed ahead of its schema, R14) or is dropping here cannot be applied
// now, but skipping it would lose it for good. Refusing its whole batch, as before, stalled
// every table and database that peer sends behind it. Instead the receiver parks such entries
// in the meta family, in the same WriteBatch as the rest of the batch and its cursor (so a
// crash parks nothing twice and loses nothing). The node's ParkedRetrier retries them,
// whichever peer they came from and whether or not it is linked, whenever the schema changes
// and every kRetryInterval: an entry applies once its table is live, and is discarded once a
// marker proves its generation dead (C6, D7). Each parked version is kept (applying them all
// is last-writer-wins, D5); parking holds what the stuck table was sent, no more.
//
// One Parking per peer and user: Park from the link's applier (ReceiverState), Retry from the
// ParkedRetrier's pass. Not thread-safe; the two share nothing but storage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "cairn/storage/v1/records.pb.h"
#include "catalog/local_node.h"
#include "rocksdb/write_batch.h"

namespace cairn::replication {

// A parked entry older than this is reported in cluster_status and /metrics (R17).
inline constexpr absl::Duration kParkedReportAfter = absl::Minutes(10);

class Parking {
 public:
  static constexpr absl::Duration kRetryInterval = absl::Seconds(5);
  static constexpr size_t kRetryChunk = 1000;  // entries per apply when retrying

  Parking(catalog::LocalNode* node, std::string peer);

  // Adds `entries` (of `db`) to `wb` as parked. Call from the WriteBatch of the batch they
  // came in. Reads nothing, so it cannot fail between the batch's entries and its cursor.
  void Park(const std::string& db, const std::vector<storage::v1::ChangeEntry>& entries,
            rocksdb::WriteBatch* wb);
  // Applies (or discards as dead) every parked entry of the peer whose table can take it
  // now, and counts what stays (count, oldest_ms, oldest_table).
  absl::Status Retry();

  uint64_t count() const { return count_; }
  // Wall time the oldest entry still parked was parked (ms; 0 when none), and its table.
  int64_t oldest_ms() const { return oldest_ms_; }
  const std::string& oldest_table() const { return oldest_table_; }

 private:
  catalog::LocalNode* const node_;
  const std::string peer_;
  uint64_t count_ = 0;
  int64_t oldest_ms_ = 0;
  std::string oldest_table_;  // "db.table"
};

}  // namespace cairn::replication
