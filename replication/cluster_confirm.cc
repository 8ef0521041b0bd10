// Cluster: confirmed writes (design 0013, P10). A write that asks for N confirmations waits
// until N other members have acknowledged this node's own writes of its database through the
// write's sequence number: the last_seq of each log batch a member acks, or the cursor it
// stores, whichever is higher (LinkSession::acked_own_writes). The stored cursor alone would
// wait on origin holds: entries of other origins this node relays are held for a member that
// gets them directly, and keep its cursor back until its next advert (up to kAdvertInterval).
// Only direct links count: a member that gets the write by a relay acks the relay's log, not
// this node's. While a confirmed write is pending, the batches
// of its database ask for an immediate ack (ChangeBatch.ack_now), where acks are otherwise
// lazy (kAckEvery). The waiting thread holds no lock; every ack wakes it to look again.
#include <utility>

#include "replication/cluster.h"

namespace cairn::replication {

Cluster::ConfirmScope::ConfirmScope(Cluster* cluster, std::string db)
    : cluster_(cluster), db_(std::move(db)) {
  absl::MutexLock lock(&cluster_->confirm_mu_);
  ++cluster_->confirming_[db_];
  cluster_->confirming_total_.fetch_add(1);
}

Cluster::ConfirmScope::~ConfirmScope() {
  absl::MutexLock lock(&cluster_->confirm_mu_);
  auto it = cluster_->confirming_.find(db_);
  if (it != cluster_->confirming_.end() && --it->second <= 0) cluster_->confirming_.erase(it);
  cluster_->confirming_total_.fetch_sub(1);
}

bool Cluster::ConfirmationsPending(const std::string& db) const {
  if (confirming_total_.load(std::memory_order_relaxed) == 0) return false;
  absl::MutexLock lock(&confirm_mu_);
  return confirming_.contains(db);
}

void Cluster::OnAck() {
  absl::MutexLock lock(&confirm_mu_);
  ++ack_epoch_;
  acked_.SignalAll();
}

std::vector<std::string> Cluster::WaitForConfirmations(const std::string& db, uint64_t seq,
                                                       size_t n,
                                                       const std::vector<std::string>& members,
                                                       absl::Time deadline) {
  for (;;) {
    if (stopping_.load() || absl::Now() >= deadline) {
      // Acks of any database wake the wait; under a steady stream of them it would never
      // time out otherwise. One last look, then the answer.
      deadline = absl::InfinitePast();
    }
    uint64_t epoch = 0;
    {
      absl::MutexLock lock(&confirm_mu_);
      epoch = ack_epoch_;  // before the cursors are read: an ack after it wakes the wait below
    }
    std::vector<std::string> confirmed;
    for (const std::string& m : members) {
      const std::optional<uint64_t> acked = AckedOwnWrites(m, db);
      if (acked.has_value() && *acked >= seq) confirmed.push_back(m);
    }
    if (confirmed.size() >= n || deadline == absl::InfinitePast()) return confirmed;
    absl::MutexLock lock(&confirm_mu_);
    while (ack_epoch_ == epoch && !stopping_.load()) {
      if (acked_.WaitWithDeadline(&confirm_mu_, deadline)) return confirmed;  // timed out
    }
    if (stopping_.load()) return confirmed;
  }
}

}  // namespace cairn::replication
