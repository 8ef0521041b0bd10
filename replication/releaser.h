// Releaser: a node removed from a database's members lets go of its rows only once the
// members that remain hold every one of them (design 0013, P8). The placement that removes
// this node records the release (storage::ReleaseKey); from then on the store refuses the
// database's client operations here (they are forwarded, P4) and drops peers' entries of it
// (P3). Each pass, for each pending release:
//
//   1. Drain: no operation admitted before the removal is still running (the gates, C9);
//      every one admitted later sees the removal (RecordStore::AdmitRows) and writes nothing.
//      The log position reached then, `through`, covers every write this node holds.
//   2. Acks: every member ready under the current placement (P7; a leaving or catching-up
//      member never confirms, P9) has acknowledged this node's log of the database through
//      `through` (LinkSession::acked_cursor: what it stores durably with the batches).
//   3. Digests: a push-only comparison with each of them (AntiEntropy, VerifyMode::kRelease)
//      finds nothing it lacks, compares every replicated table and leaves nothing unsettled.
//      Rows that reached this node by a full copy or a repair, not through its log, are
//      covered here.
//   4. Release: Catalog::ReleaseRows, under the database's lock and only if the placement is
//      still the one confirmed; then the database's change log here is trimmed away.
//
// A step that is not done ends the database's pass; what it waits for is kept for
// cluster_status. A placement that makes this node a member again cancels the release. A
// crash at any point leaves the release key, and the first pass after the restart starts
// again at step 1.
//
// Thread-safe. Lock order: mu_ is a leaf; no lock is held across a call or a write.
#pragma once

#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "catalog/catalog.h"
#include "catalog/local_node.h"

namespace cairn::replication {

class Cluster;

class Releaser {
 public:
  // Passes run every `interval` once started.
  Releaser(catalog::LocalNode* node, Cluster* cluster, absl::Duration interval);
  ~Releaser();  // Stop()
  Releaser(const Releaser&) = delete;
  Releaser& operator=(const Releaser&) = delete;

  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Idempotent; waits for a pass in progress (a comparison ends at its next step once the
  // cluster's verify calls are cancelled, AntiEntropy::Stop).
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // One pass now. Returns what each pending release waits for; a database released or
  // cancelled in this pass is not in it.
  absl::btree_map<std::string, std::string> RunOnce() ABSL_LOCKS_EXCLUDED(mu_);
  // As of the last pass: the databases being released here and what each waits for.
  absl::btree_map<std::string, std::string> Waiting() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Steps 1-4 for one database: what it waits for, in words; empty once released or
  // cancelled.
  std::string Step(const catalog::Catalog::PendingRelease& release);
  // Steps 2 and 3 against the members ready in `d`: what is not confirmed yet; empty when
  // every one confirmed.
  std::string Unconfirmed(const catalog::DatabaseDef& d, uint64_t through);
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  catalog::LocalNode* const node_;
  Cluster* const cluster_;
  const absl::Duration interval_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::btree_map<std::string, std::string> waiting_ ABSL_GUARDED_BY(mu_);
  std::thread loop_;  // started by Start, joined by Stop
};

}  // namespace cairn::replication
