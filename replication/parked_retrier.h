// ParkedRetrier: the node's retries of parked entries (SPEC R17), whichever peer they came
// from and whether or not that peer is linked (issue 41, point 12).
//
// A link parks what it cannot apply yet (Parking::Park, in the batch's own WriteBatch). Until
// issue 41 that link also retried them, so with its origin down or removed a peer's
// acknowledged writes stayed parked on a node whose table was live again: never applied,
// never relayed, reported as 0. Here one thread retries every peer's parked entries, found in
// storage: once at Start, on every catalog change (Wake) and every Parking::kRetryInterval.
// What a retry applies is logged like any applied peer entry, so the senders relay it.
//
// Invariants:
//  1. One pass at a time (pass_mu_): entries are never applied twice by two retries. A link
//     may apply a newer version of a key meanwhile; last-writer-wins (D5) orders them.
//  2. counts_ is what the last pass found in storage, plus what links parked after it
//     (Parked). A park while a pass counts may be missed, and a duplicate parked again counts
//     twice, until the next pass (at most kRetryInterval later).
//
// Lock order: pass_mu_, then mu_. pass_mu_ is held through a pass's applies, synced writes
// included, whose commits run the change log's listener under it: pass_mu_ comes before
// every lock the listener takes (Cluster::mu_, LinkSession::mu_). mu_ is never held across
// a write.
#pragma once

#include <cstdint>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "catalog/local_node.h"

namespace cairn::replication {

class ParkedRetrier {
 public:
  // Parked entries of one peer.
  struct Counts {
    uint64_t entries = 0;
    int64_t oldest_ms = 0;     // wall ms (the node's HLC wall clock) the oldest was parked
    std::string oldest_table;  // "db.table" of the oldest
  };

  explicit ParkedRetrier(catalog::LocalNode* node) : node_(node) {}
  ~ParkedRetrier() { Stop(); }
  ParkedRetrier(const ParkedRetrier&) = delete;
  ParkedRetrier& operator=(const ParkedRetrier&) = delete;

  // Starts the thread; its first pass counts what earlier runs parked. Idempotent.
  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Ends the thread (after the pass under way). Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  // The catalog changed: a parked entry's table may be live now, or proven dead.
  void Wake() ABSL_LOCKS_EXCLUDED(mu_);

  // A link parked `n` entries from `peer`, of `table` ("db.table"), at wall ms `parked_ms`.
  void Parked(const std::string& peer, const std::string& table, uint64_t n, int64_t parked_ms)
      ABSL_LOCKS_EXCLUDED(mu_);
  Counts CountsOf(const std::string& peer) const ABSL_LOCKS_EXCLUDED(mu_);
  // Every peer with entries parked here, configured or not (a removed peer's stay counted).
  absl::btree_map<std::string, Counts> AllCounts() const ABSL_LOCKS_EXCLUDED(mu_);

  // One pass: for every peer with parked entries in storage, applies (or retires as dead)
  // what can go now and recounts what stays. A peer whose retry fails keeps its entries and
  // its counts (retried next time) and the others go on; the first error is returned.
  absl::Status RetryAll() ABSL_LOCKS_EXCLUDED(pass_mu_, mu_);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  catalog::LocalNode* const node_;
  absl::Mutex pass_mu_ ABSL_ACQUIRED_BEFORE(mu_);  // invariant 1
  mutable absl::Mutex mu_;
  absl::btree_map<std::string, Counts> counts_ ABSL_GUARDED_BY(mu_);  // invariant 2
  bool wake_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // started and joined by the owner's thread
};

}  // namespace cairn::replication
