// ChangeLog: sequence numbers and keys of the per-database change log (SPEC R5, D4).
//
// A writer reserves sequence numbers, puts its entries into the same WriteBatch as the
// records they describe, commits, and then releases the reservation. Sequence numbers are
// handed out in order but batches may commit out of order, so each database keeps a
// *committed watermark*: the highest seq such that every reservation at or below it has been
// released. Readers (the peer senders) stream only up to the watermark, so they never skip
// an entry that commits late. A reservation released without a commit leaves a gap, which
// readers simply do not find.
//
// Retention (SPEC R12): Trim() deletes a database's oldest entries beyond a count or an age
// and records how far it trimmed (storage key logtrim/<db>), so sequence numbers never
// restart below a peer's cursor, even when every entry is gone. A reader that finds its
// position at or below TrimmedThrough() has lost entries and must fall back to a full copy.
//
// Thread-safe. Lock order: ChangeLog::mu_ before Sequencer::mu_; the commit listener is
// called with neither held.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cairn/storage/v1/records.pb.h"
#include "rocksdb/write_batch.h"
#include "storage/engine.h"

namespace cairn::storage {

class ChangeLog {
 public:
  explicit ChangeLog(Engine* engine) : engine_(engine) {}

  // Reads the last sequence number of every database's log and the log id (creating it on a
  // fresh directory). Call once, before any Reserve().
  absl::Status Recover() ABSL_LOCKS_EXCLUDED(mu_);

  // For a database restored from a copy (a backup): forgets this log's identity and every
  // cursor on a peer's log, in one batch, then flushes. The next Recover() takes a new log id,
  // so peers read this node's log again from a full copy, and this node reads each peer's
  // from a full copy too: a restored node lacks its own writes made after the copy, and a
  // log stream never sends a node its own writes (decisions 49, 51). Call before Recover().
  static absl::Status ForgetIdentity(Engine* engine);

  // Identity of this log, random and fixed for the data directory (Hello.log_id).
  uint64_t log_id() const { return log_id_; }

  // Called after a commit moved some database's watermark (the peer senders' wake-up), on
  // the committing thread, with no ChangeLog lock held. Set once, before concurrent use.
  void SetCommitListener(std::function<void()> listener) { listener_ = std::move(listener); }

  // Every database that has a log (or had one: trimmed to nothing).
  std::vector<std::string> Databases() ABSL_LOCKS_EXCLUDED(mu_);
  // Entries at or below this seq were trimmed (0: none).
  uint64_t TrimmedThrough(absl::string_view db) ABSL_LOCKS_EXCLUDED(mu_);
  // Deletes the oldest committed entries of `db` beyond the newest `keep_entries`, and those
  // logged before `min_logged_ms` (up to `max_scan` of them per call). Returns how many.
  absl::StatusOr<uint64_t> Trim(absl::string_view db, uint64_t keep_entries, uint64_t min_logged_ms,
                                uint64_t max_scan = 100000) ABSL_LOCKS_EXCLUDED(mu_);

  class Sequencer;
  // A run of `count` consecutive sequence numbers. Releasing it (destruction) tells the
  // watermark this range is settled, committed or not.
  class Reservation {
   public:
    Reservation() = default;
    Reservation(Reservation&& other) noexcept
        : seq_(other.seq_), first_(other.first_), count_(other.count_) {
      other.seq_ = nullptr;
    }
    Reservation& operator=(Reservation&&) = delete;
    Reservation(const Reservation&) = delete;
    ~Reservation();
    uint64_t first() const { return first_; }
    uint64_t count() const { return count_; }

   private:
    friend class ChangeLog;
    Reservation(Sequencer* seq, uint64_t first, uint64_t count)
        : seq_(seq), first_(first), count_(count) {}
    Sequencer* seq_ = nullptr;
    uint64_t first_ = 0;
    uint64_t count_ = 0;
  };

  Reservation Reserve(absl::string_view db, uint64_t count) ABSL_LOCKS_EXCLUDED(mu_);

  // Adds the entry at `seq` to `batch` (the batch of the write it logs).
  void Append(rocksdb::WriteBatch* batch, absl::string_view db, uint64_t seq,
              const v1::ChangeEntry& entry);

  // Every entry at or below this seq is committed (or a gap). 0 when the log is empty.
  uint64_t CommittedSeq(absl::string_view db) ABSL_LOCKS_EXCLUDED(mu_);

  // Per-database state. Exposed only for Reservation.
  class Sequencer {
   public:
    Sequencer(ChangeLog* owner, uint64_t last)
        : owner_(owner), next_(last + 1), watermark_(last), trimmed_(0) {}
    uint64_t Reserve(uint64_t count) ABSL_LOCKS_EXCLUDED(mu_);
    void Release(uint64_t first) ABSL_LOCKS_EXCLUDED(mu_);
    uint64_t trimmed() const ABSL_LOCKS_EXCLUDED(mu_);
    void set_trimmed(uint64_t t) ABSL_LOCKS_EXCLUDED(mu_);
    uint64_t watermark() const ABSL_LOCKS_EXCLUDED(mu_);

   private:
    ChangeLog* const owner_;
    mutable absl::Mutex mu_;
    uint64_t next_ ABSL_GUARDED_BY(mu_);               // next seq to hand out
    std::set<uint64_t> pending_ ABSL_GUARDED_BY(mu_);  // first seq of unreleased runs
    uint64_t watermark_ ABSL_GUARDED_BY(mu_);          // < every pending seq, <= next_ - 1
    uint64_t trimmed_ ABSL_GUARDED_BY(mu_);            // <= watermark_
  };

 private:
  // Only writers (Reserve) create a database's state; queries use Find and treat a missing
  // one as an empty log, so a name that is only asked about costs nothing for good.
  Sequencer* GetOrCreate(absl::string_view db) ABSL_LOCKS_EXCLUDED(mu_);
  Sequencer* Find(absl::string_view db) ABSL_LOCKS_EXCLUDED(mu_);  // null if none

  Engine* const engine_;
  uint64_t log_id_ = 0;             // set by Recover
  std::function<void()> listener_;  // set once, before concurrent use
  absl::Mutex trim_mu_;             // one Trim at a time
  absl::Mutex mu_;
  // Never erased: Reservations hold raw pointers.
  absl::flat_hash_map<std::string, std::unique_ptr<Sequencer>> dbs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn::storage
