#include "replication/parked_retrier.h"

#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/time/clock.h"
#include "common/status.h"
#include "replication/parking.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"
#include "storage/rocksdb_status.h"

namespace cairn::replication {

void ParkedRetrier::Start() {
  {
    absl::MutexLock lock(&mu_);
    if (thread_.joinable()) return;
    stop_ = false;
    wake_ = true;  // the first pass at once
  }
  thread_ = std::thread([this] { Loop(); });
}

void ParkedRetrier::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void ParkedRetrier::Wake() {
  absl::MutexLock lock(&mu_);
  wake_ = true;
}

void ParkedRetrier::Parked(const std::string& peer, const std::string& table, uint64_t n,
                           int64_t parked_ms) {
  absl::MutexLock lock(&mu_);
  Counts& c = counts_[peer];
  c.entries += n;
  if (c.oldest_ms == 0) {
    c.oldest_ms = parked_ms;
    c.oldest_table = table;
  }
}

ParkedRetrier::Counts ParkedRetrier::CountsOf(const std::string& peer) const {
  absl::MutexLock lock(&mu_);
  auto it = counts_.find(peer);
  return it == counts_.end() ? Counts() : it->second;
}

absl::btree_map<std::string, ParkedRetrier::Counts> ParkedRetrier::AllCounts() const {
  absl::MutexLock lock(&mu_);
  return counts_;
}

void ParkedRetrier::Loop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(
                               +[](ParkedRetrier* r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(r->mu_) {
                                 return r->stop_ || r->wake_;
                               },
                               this),
                           Parking::kRetryInterval);
      if (stop_) return;
      wake_ = false;
    }
    if (absl::Status s = RetryAll(); !s.ok()) {
      spdlog::warn("[{}] retrying parked entries: {}", node_->records->node_name(), s.ToString());
    }
  }
}

absl::Status ParkedRetrier::RetryAll() {
  absl::MutexLock pass(&pass_mu_);
  // The peers with entries parked: each one's keys share ParkedPrefix(peer) ("<prefix><peer>\0").
  std::vector<std::string> peers;
  {
    const std::string all(storage::kParkedPrefix);
    auto it =
        node_->engine->NewIterator(storage::Cf::kMeta, nullptr, storage::PrefixSuccessor(all));
    for (it->Seek(storage::ToSlice(all)); it->Valid();) {
      const absl::string_view rest = storage::ToView(it->key()).substr(all.size());
      const size_t end = rest.find('\0');
      if (end == absl::string_view::npos) {  // never written by this version: not ours
        it->Next();
        continue;
      }
      peers.emplace_back(rest.substr(0, end));
      it->Seek(storage::ToSlice(storage::PrefixSuccessor(storage::ParkedPrefix(peers.back()))));
    }
    CAIRN_RETURN_IF_ERROR(storage::FromRocks(it->status()));
  }
  absl::btree_map<std::string, Counts> found;
  absl::flat_hash_set<std::string> failed;
  absl::Status first_error;
  for (const std::string& peer : peers) {
    Parking parking(node_, peer);
    absl::Status s = parking.Retry();
    if (!s.ok()) {
      // The other peers' entries are not held up by this one's; its counts stay as they were.
      if (first_error.ok()) first_error = s;
      failed.insert(peer);
      continue;
    }
    if (parking.count() > 0) {
      found[peer] = Counts{parking.count(), parking.oldest_ms(), parking.oldest_table()};
    }
  }
  absl::MutexLock lock(&mu_);
  for (auto it = counts_.begin(); it != counts_.end();) {
    it = failed.contains(it->first) ? std::next(it) : counts_.erase(it);
  }
  for (auto& [peer, c] : found) counts_[peer] = std::move(c);
  return first_error;
}

}  // namespace cairn::replication
