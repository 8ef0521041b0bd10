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
// Thread-safe. Lock order: ChangeLog::mu_ before Sequencer::mu_.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cairn/storage/v1/records.pb.h"
#include "rocksdb/write_batch.h"
#include "storage/engine.h"

namespace cairn::storage {

class ChangeLog {
 public:
  explicit ChangeLog(Engine* engine) : engine_(engine) {}

  // Reads the last sequence number of every database's log. Call once, before any Reserve().
  absl::Status Recover() ABSL_LOCKS_EXCLUDED(mu_);

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
  // Blocks until CommittedSeq(db) > after or the deadline; returns the watermark.
  uint64_t WaitForCommitted(absl::string_view db, uint64_t after, absl::Time deadline)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Per-database state. Exposed only for Reservation.
  class Sequencer {
   public:
    explicit Sequencer(uint64_t last) : next_(last + 1), watermark_(last) {}
    uint64_t Reserve(uint64_t count) ABSL_LOCKS_EXCLUDED(mu_);
    void Release(uint64_t first) ABSL_LOCKS_EXCLUDED(mu_);
    uint64_t watermark() const ABSL_LOCKS_EXCLUDED(mu_);
    uint64_t WaitBeyond(uint64_t after, absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);

   private:
    mutable absl::Mutex mu_;
    uint64_t next_ ABSL_GUARDED_BY(mu_);               // next seq to hand out
    std::set<uint64_t> pending_ ABSL_GUARDED_BY(mu_);  // first seq of unreleased runs
    uint64_t watermark_ ABSL_GUARDED_BY(mu_);          // < every pending seq, <= next_ - 1
  };

 private:
  Sequencer* GetOrCreate(absl::string_view db) ABSL_LOCKS_EXCLUDED(mu_);

  Engine* const engine_;
  absl::Mutex mu_;
  // Never erased: Reservations hold raw pointers.
  absl::flat_hash_map<std::string, std::unique_ptr<Sequencer>> dbs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn::storage
