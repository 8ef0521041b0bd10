// Engine: the node's one RocksDB instance and its fixed column families (SPEC §2a).
//
// Families by kind: catalog, records, indexes, changelog, meta. They share one block cache
// and one WriteBufferManager, so memory stays bounded however many tables exist. The engine
// knows nothing of tables: callers build WriteBatches with the key layouts of storage/keys.h.
//
// Lifecycle: Open() -> use from any thread -> destroy (closes the DB; no call may be in
// flight). Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "rocksdb/compaction_filter.h"
#include "rocksdb/db.h"
#include "rocksdb/write_batch.h"

namespace cairn::storage {

enum class Cf : int { kCatalog = 0, kRecords, kIndexes, kChangeLog, kMeta };
inline constexpr int kNumCfs = 5;

struct EngineOptions {
  std::string path;
  rocksdb::Env* env = nullptr;           // null: rocksdb::Env::Default()
  bool sync_writes = false;              // fsync every batch (--sync-writes)
  size_t block_cache_bytes = 64 << 20;   // shared by every family
  size_t write_buffer_bytes = 64 << 20;  // shared memtable budget (WriteBufferManager)
  // Delete tombstones older than this are purged by compaction (SPEC D5), measured from when
  // this node wrote them (StoredRecord.logged_ms), and never while the change log still names
  // them (SetTombstoneHorizon).
  absl::Duration tombstone_retention = absl::Hours(24 * 7);
  // The node's wall clock: tombstone ages and the change log's logged_ms (one clock, D5).
  // null: the system clock.
  Clock* clock = nullptr;
};

// A family whose memtable has taken this many range deletions since its last flush is flushed
// (without waiting). RocksDB 7.8 fragments a mutable memtable's range tombstones again for
// every new iterator: a thousand drops would make every read of the family cost a thousand
// tombstones (issue 23). Flushed, they are fragmented once per table file.
inline constexpr int kRangeDeletesBeforeFlush = 64;

// Invariants:
//  (1) Once a write fails, bg_error_ is set and every later Write() fails with it: the
//      durable state of the failed batch is unknown until the node restarts (cf. leveldb).
//  (2) range_deletes_[f] counts the range deletions written to family f since this engine
//      last asked for its flush; a write that takes it to kRangeDeletesBeforeFlush asks.
class Engine {
 public:
  static absl::StatusOr<std::unique_ptr<Engine>> Open(const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Commits `batch` atomically: WAL always on, fsync'd when sync_writes.
  absl::Status Write(rocksdb::WriteBatch* batch) ABSL_LOCKS_EXCLUDED(mu_);
  // Commits `batch` and fsyncs the WAL whatever sync_writes says: for what must survive a
  // power loss even on a node that does not sync its records (the log's high-water, R15).
  absl::Status SyncedWrite(rocksdb::WriteBatch* batch) ABSL_LOCKS_EXCLUDED(mu_);

  // Point read. OK with *found = false when absent.
  absl::Status Get(Cf cf, absl::string_view key, std::string* value, bool* found,
                   const rocksdb::Snapshot* snapshot = nullptr);

  // An iterator over keys below `upper_bound` and from `lower_bound` on (empty: unbounded);
  // a lower bound makes a backward scan (SeekToLast, Prev) stop at it.
  std::unique_ptr<rocksdb::Iterator> NewIterator(Cf cf, const rocksdb::Snapshot* snapshot = nullptr,
                                                 absl::string_view upper_bound = {},
                                                 absl::string_view lower_bound = {});

  rocksdb::DB* db() { return db_.get(); }
  rocksdb::ColumnFamilyHandle* cf(Cf c) { return handles_[static_cast<int>(c)]; }
  const EngineOptions& options() const { return options_; }

  // Syncs the WAL and flushes every family's memtable, waiting for it (clean shutdown).
  absl::Status Flush();

  // A consistent copy of the whole database in `dir`, which must not exist (RocksDB
  // checkpoint: SST files are hard-linked when `dir` is on the same filesystem, copied
  // otherwise; the WAL is flushed first). Opening `dir` as a database gives the state at one
  // point in time, every family together.
  absl::Status Checkpoint(const std::string& dir);

  // Current sticky error (OK when healthy).
  absl::Status health() const ABSL_LOCKS_EXCLUDED(mu_);

  Clock* clock() const { return clock_; }

  // SPEC D5: every change-log entry still retained was logged at or after `ms` (the change log
  // says so after each trim). Compaction purges only tombstones logged before it, so none is
  // purged while a log entry names it. Until first set, no tombstone is purged.
  void SetTombstoneHorizon(int64_t ms) {
    tombstone_horizon_ms_.store(ms, std::memory_order_release);
  }
  int64_t tombstone_horizon() const {
    return tombstone_horizon_ms_.load(std::memory_order_acquire);
  }

 private:
  explicit Engine(EngineOptions options) : options_(std::move(options)) {}
  absl::Status WriteWith(const rocksdb::WriteOptions& options, rocksdb::WriteBatch* batch)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Invariant (2), after `batch` committed.
  void CountRangeDeletes(rocksdb::WriteBatch* batch);

  const EngineOptions options_;
  Clock* clock_ = nullptr;  // options_.clock or the system clock
  // Read by purge_filter_ on compaction threads; declared before db_ so it outlives it.
  std::atomic<int64_t> tombstone_horizon_ms_{0};
  std::shared_ptr<rocksdb::CompactionFilter> purge_filter_;  // used by db_; declared first
  std::unique_ptr<rocksdb::DB> db_;
  std::array<rocksdb::ColumnFamilyHandle*, kNumCfs> handles_{};
  rocksdb::ColumnFamilyHandle* default_cf_ = nullptr;
  rocksdb::WriteOptions write_options_;
  rocksdb::WriteOptions no_hint_options_;  // for batches with a range delete (Write)
  std::array<std::atomic<int>, kNumCfs> range_deletes_{};  // invariant (2)
  mutable absl::Mutex mu_;
  absl::Status bg_error_ ABSL_GUARDED_BY(mu_);  // sticky, invariant (1)
};

// A read snapshot released on destruction.
class ScopedSnapshot {
 public:
  explicit ScopedSnapshot(Engine* engine) : db_(engine->db()), snapshot_(db_->GetSnapshot()) {}
  ~ScopedSnapshot() { db_->ReleaseSnapshot(snapshot_); }
  ScopedSnapshot(const ScopedSnapshot&) = delete;
  ScopedSnapshot& operator=(const ScopedSnapshot&) = delete;
  const rocksdb::Snapshot* get() const { return snapshot_; }

 private:
  rocksdb::DB* db_;
  const rocksdb::Snapshot* snapshot_;
};

inline rocksdb::Slice ToSlice(absl::string_view s) { return rocksdb::Slice(s.data(), s.size()); }
inline absl::string_view ToView(const rocksdb::Slice& s) {
  return absl::string_view(s.data(), s.size());
}

// Little-endian int64 deltas merged by addition (the meta family's count/ keys).
std::string EncodeCountDelta(int64_t delta);
int64_t DecodeCount(absl::string_view value);

}  // namespace cairn::storage
