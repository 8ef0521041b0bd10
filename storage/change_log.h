// ChangeLog: sequence numbers and keys of the per-database change log (SPEC R5, D4).
//
// A writer reserves sequence numbers, puts its entries into the same WriteBatch as the
// records they describe, commits, and then releases the reservation. Sequence numbers are
// handed out in order but batches may commit out of order, so each database keeps a
// *committed watermark*: the highest seq such that every reservation at or below it has been
// released. Readers (the peer senders) stream only up to the watermark, so they never skip
// an entry that commits late. A reservation released without a commit leaves a gap, which
// readers simply do not find; its numbers are never handed out again, not even after a
// restart (invariant 2).
//
// Retention (SPEC R12): Trim() deletes a database's oldest entries beyond a count or an age
// and records how far it trimmed (storage key logtrim/<db>), so sequence numbers never
// restart below a peer's cursor, even when every entry is gone. A reader that finds its
// position at or below TrimmedThrough() has lost entries and must fall back to a full copy.
//
// Tombstone horizon (SPEC D5): a reservation stamps its entries' logged_ms from the engine's
// clock, under the database's lock and never below an earlier one, so logged_ms does not
// decrease with seq. After Recover() and each Trim() the log tells the engine the smallest
// logged_ms any retained or future entry can have (Engine::SetTombstoneHorizon); compaction
// purges only tombstones logged before it, so no tombstone goes while its entry is retained.
//
// Thread-safe. Lock order: ChangeLog::mu_ before Sequencer::mu_; the commit listener is
// called with neither held.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
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

// Invariants:
//  (1) A database's committed watermark never decreases, within a process or across restarts.
//  (2) No sequence number above the database's persisted high-water (loghw/<db>, a synced
//      write) is handed out, and Recover() resumes above it: a number a peer may have seen
//      (sent, or passed by its cursor as a gap of a failed commit) is never reused, even after
//      a lost unsynced WAL tail (SPEC R15).
class ChangeLog {
 public:
  // How far ahead of the numbers in use the high-water is persisted: one synced write per
  // this many sequence numbers of a database, and one per database after each restart.
  static constexpr uint64_t kHighWaterStep = 1 << 20;
  static constexpr uint64_t kMaxSeq = UINT64_MAX - 1;

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

  // Called after a commit moved some database's watermark (the peer senders' and the change
  // subscriptions' wake-up), on the committing thread, with no ChangeLog lock held: the
  // database, and the tag of every commit the move made visible (TagScope) when they all had
  // the same one, else null. Added before concurrent use; each is called, in the order added.
  using CommitListener = std::function<void(absl::string_view db, const std::string* tag)>;
  void AddCommitListener(CommitListener listener) { listeners_.push_back(std::move(listener)); }
  // While one lives, the commits of this thread carry `tag` to the listener (a replica's
  // applier names the peer whose own writes it applies, design 0004); an inner one wins.
  class TagScope {
   public:
    explicit TagScope(const std::string* tag);
    ~TagScope();
    TagScope(const TagScope&) = delete;
    TagScope& operator=(const TagScope&) = delete;

   private:
    const std::string* const previous_;
  };

  // Every database that has a log (or had one: trimmed to nothing).
  std::vector<std::string> Databases() ABSL_LOCKS_EXCLUDED(mu_);
  // Entries at or below this seq were trimmed (0: none).
  uint64_t TrimmedThrough(absl::string_view db) ABSL_LOCKS_EXCLUDED(mu_);
  // Deletes the oldest committed entries of `db` beyond the newest `keep_entries`, and those
  // logged before `min_logged_ms` (up to `max_scan` of them per call), then moves the
  // tombstone horizon. Entries from `keep_from` on (0: none) are kept, for a peer that still
  // needs them (R17: a full copy's tail), unless more than kPinnedRetentionFactor times
  // `keep_entries` would stay. Returns how many entries went.
  absl::StatusOr<uint64_t> Trim(absl::string_view db, uint64_t keep_entries, uint64_t min_logged_ms,
                                uint64_t keep_from = 0, uint64_t max_scan = 100000)
      ABSL_LOCKS_EXCLUDED(mu_);
  // How much longer than its retention a peer's need can hold a log (Trim's keep_from).
  static constexpr uint64_t kPinnedRetentionFactor = 2;

  class Sequencer;
  // A run of `count` consecutive sequence numbers. Releasing it (destruction) tells the
  // watermark this range is settled, committed or not.
  class Reservation {
   public:
    Reservation() = default;
    Reservation(Reservation&& other) noexcept
        : seq_(other.seq_),
          first_(other.first_),
          count_(other.count_),
          logged_ms_(other.logged_ms_) {
      other.seq_ = nullptr;
    }
    Reservation& operator=(Reservation&&) = delete;
    Reservation(const Reservation&) = delete;
    ~Reservation();
    uint64_t first() const { return first_; }
    uint64_t count() const { return count_; }
    // The logged_ms of these entries (ChangeEntry.logged_ms, and a tombstone's, D5).
    uint64_t logged_ms() const { return logged_ms_; }

   private:
    friend class ChangeLog;
    Reservation(Sequencer* seq, uint64_t first, uint64_t count, uint64_t logged_ms)
        : seq_(seq), first_(first), count_(count), logged_ms_(logged_ms) {}
    Sequencer* seq_ = nullptr;
    uint64_t first_ = 0;
    uint64_t count_ = 0;
    uint64_t logged_ms_ = 0;
  };

  // Fails only when the high-water cannot be persisted (the engine's write error) or the
  // log's numbers are used up.
  absl::StatusOr<Reservation> Reserve(absl::string_view db, uint64_t count)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Adds the entry at `seq` to `batch` (the batch of the write it logs).
  void Append(rocksdb::WriteBatch* batch, absl::string_view db, uint64_t seq,
              const v1::ChangeEntry& entry);

  // Every entry at or below this seq is committed (or a gap). 0 when the log is empty.
  uint64_t CommittedSeq(absl::string_view db) ABSL_LOCKS_EXCLUDED(mu_);
  // The highest seq handed out so far (0 when none): the entry of every row visible now is
  // at or below it, even one whose reservation is not released yet (anti-entropy, R18).
  uint64_t ReservedSeq(absl::string_view db) ABSL_LOCKS_EXCLUDED(mu_);

  // Per-database state. Exposed only for Reservation.
  class Sequencer {
   public:
    // `last`: every number up to it is settled; `durable`: the persisted high-water.
    Sequencer(ChangeLog* owner, std::string db, uint64_t last, uint64_t durable, uint64_t now_ms)
        : owner_(owner),
          db_(std::move(db)),
          next_(last + 1),
          durable_(durable),
          watermark_(last),
          trimmed_(0),
          min_next_ms_(now_ms),
          floor_ms_(now_ms) {}
    // The first seq of `count`, and their logged_ms (from `now_ms`, never below an earlier
    // reservation's or a horizon already published).
    absl::StatusOr<uint64_t> Reserve(uint64_t count, uint64_t now_ms, uint64_t* logged_ms)
        ABSL_LOCKS_EXCLUDED(mu_);
    // `tag`: this thread's TagScope's (null: none).
    void Release(uint64_t first, const std::string* tag) ABSL_LOCKS_EXCLUDED(mu_);
    uint64_t trimmed() const ABSL_LOCKS_EXCLUDED(mu_);
    void set_trimmed(uint64_t t) ABSL_LOCKS_EXCLUDED(mu_);
    uint64_t watermark() const ABSL_LOCKS_EXCLUDED(mu_);
    uint64_t reserved() const ABSL_LOCKS_EXCLUDED(mu_);  // next_ - 1
    // Numbers a restart skipped, [first, last], which hold no entry (retention by count
    // does not count them).
    void AddHole(uint64_t first, uint64_t last) ABSL_LOCKS_EXCLUDED(mu_);
    // The seq `n` used numbers below `top` (holes not counted); 0 if there are fewer.
    uint64_t BackBy(uint64_t top, uint64_t n) const ABSL_LOCKS_EXCLUDED(mu_);

    // For the tombstone horizon: the watermark and trim point now, and a logged_ms at or
    // below that of every entry pending now or reserved from now on.
    struct Bounds {
      uint64_t watermark, trimmed, unsettled_ms;
    };
    Bounds HorizonBounds(uint64_t now_ms) ABSL_LOCKS_EXCLUDED(mu_);
    uint64_t floor_ms() const ABSL_LOCKS_EXCLUDED(mu_);
    void ObserveLogged(uint64_t ms) ABSL_LOCKS_EXCLUDED(mu_);  // at recovery: the last entry's
    void set_floor_ms(uint64_t ms) ABSL_LOCKS_EXCLUDED(mu_);

   private:
    ChangeLog* const owner_;
    const std::string db_;
    mutable absl::Mutex mu_;
    uint64_t next_ ABSL_GUARDED_BY(mu_);           // next seq to hand out
    uint64_t durable_ ABSL_GUARDED_BY(mu_);        // persisted high-water, invariant (2)
    bool extending_ ABSL_GUARDED_BY(mu_) = false;  // a thread is persisting a higher one
    std::map<uint64_t, uint64_t> holes_ ABSL_GUARDED_BY(mu_);  // first -> last, see AddHole
    // First seq of each unreleased run -> its logged_ms.
    std::map<uint64_t, uint64_t> pending_ ABSL_GUARDED_BY(mu_);
    // The tags of the runs released since pending_ was last empty (some not visible yet),
    // for the listener when the watermark moves: kNone, kOne (all had `waiting_tag_`), kMixed
    // (an untagged run, or two tags).
    enum class Waiting { kNone, kOne, kMixed };
    Waiting waiting_ ABSL_GUARDED_BY(mu_) = Waiting::kNone;
    std::string waiting_tag_ ABSL_GUARDED_BY(mu_);
    uint64_t watermark_ ABSL_GUARDED_BY(mu_);           // < every pending seq, <= next_ - 1
    uint64_t trimmed_ ABSL_GUARDED_BY(mu_);             // <= watermark_
    uint64_t last_logged_ms_ ABSL_GUARDED_BY(mu_) = 0;  // logged_ms never decreases with seq
    uint64_t min_next_ms_ ABSL_GUARDED_BY(mu_);         // every later reservation's floor
    // <= the logged_ms of every entry of this log retained now or logged later.
    uint64_t floor_ms_ ABSL_GUARDED_BY(mu_);
  };

 private:
  // Only writers (Reserve) create a database's state; queries use Find and treat a missing
  // one as an empty log, so a name that is only asked about costs nothing for good.
  Sequencer* GetOrCreate(absl::string_view db) ABSL_LOCKS_EXCLUDED(mu_);
  Sequencer* Find(absl::string_view db) ABSL_LOCKS_EXCLUDED(mu_);  // null if none
  uint64_t NowMs() const;                                          // the engine's clock
  absl::StatusOr<uint64_t> TrimLocked(absl::string_view db, Sequencer* seq, uint64_t keep_entries,
                                      uint64_t min_logged_ms, uint64_t keep_from, uint64_t max_scan)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(trim_mu_);
  absl::Status RecoverSequences() ABSL_LOCKS_EXCLUDED(mu_);
  // Stores `high_water` as `db`'s high-water, synced (R15).
  absl::Status PersistHighWater(absl::string_view db, uint64_t high_water);
  // Publishes the first tombstone horizon (Recover's last step).
  absl::Status RecoverHorizon() ABSL_LOCKS_EXCLUDED(mu_);
  // Recomputes `seq`'s floor from its first retained entry and what is pending.
  absl::Status RefreshFloor(absl::string_view db, Sequencer* seq) ABSL_LOCKS_EXCLUDED(mu_);
  // Engine::SetTombstoneHorizon(the smallest floor of every database's log).
  void PublishHorizon() ABSL_LOCKS_EXCLUDED(mu_);

  Engine* const engine_;
  uint64_t log_id_ = 0;                    // set by Recover
  std::vector<CommitListener> listeners_;  // added before concurrent use
  absl::Mutex trim_mu_;                    // one Trim at a time
  absl::Mutex mu_;
  // Never erased: Reservations hold raw pointers.
  absl::flat_hash_map<std::string, std::unique_ptr<Sequencer>> dbs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn::storage
