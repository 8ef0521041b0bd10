#include "storage/change_log.h"

#include "storage/keys.h"
#include "storage/rocksdb_status.h"

namespace cairn::storage {

ChangeLog::Reservation::~Reservation() {
  if (seq_ != nullptr && count_ > 0) seq_->Release(first_);
}

uint64_t ChangeLog::Sequencer::Reserve(uint64_t count) {
  absl::MutexLock lock(&mu_);
  const uint64_t first = next_;
  next_ += count;
  pending_.insert(first);
  return first;
}

void ChangeLog::Sequencer::Release(uint64_t first) {
  absl::MutexLock lock(&mu_);
  pending_.erase(first);
  watermark_ = pending_.empty() ? next_ - 1 : *pending_.begin() - 1;
}

uint64_t ChangeLog::Sequencer::watermark() const {
  absl::MutexLock lock(&mu_);
  return watermark_;
}

uint64_t ChangeLog::Sequencer::WaitBeyond(uint64_t after, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto beyond = [this, after]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return watermark_ > after; };
  mu_.AwaitWithDeadline(absl::Condition(&beyond), deadline);
  return watermark_;
}

absl::Status ChangeLog::Recover() {
  // Visit each database's run of keys once: jump to its last key, then past it.
  auto it = engine_->NewIterator(Cf::kChangeLog);
  absl::MutexLock lock(&mu_);
  if (!dbs_.empty()) return absl::FailedPreconditionError("ChangeLog::Recover called twice");
  for (it->SeekToFirst(); it->Valid();) {
    absl::string_view key(it->key().data(), it->key().size());
    size_t nul = key.find('\0');
    if (nul == absl::string_view::npos || key.size() != nul + 9) {
      return absl::DataLossError("malformed change-log key");
    }
    std::string db(key.substr(0, nul));
    std::string next_db = db;
    next_db.push_back('\x01');  // sorts after every "<db>\0..." key
    it->SeekForPrev(next_db);
    if (!it->Valid()) break;
    absl::string_view last(it->key().data(), it->key().size());
    dbs_[db] = std::make_unique<Sequencer>(GetBigEndian64(last.substr(nul + 1)));
    it->Seek(next_db);
  }
  return FromRocks(it->status());
}

ChangeLog::Sequencer* ChangeLog::GetOrCreate(absl::string_view db) {
  absl::MutexLock lock(&mu_);
  auto& slot = dbs_[db];
  if (slot == nullptr) slot = std::make_unique<Sequencer>(0);
  return slot.get();
}

ChangeLog::Reservation ChangeLog::Reserve(absl::string_view db, uint64_t count) {
  if (count == 0) return Reservation();
  Sequencer* seq = GetOrCreate(db);
  return Reservation(seq, seq->Reserve(count), count);
}

void ChangeLog::Append(rocksdb::WriteBatch* batch, absl::string_view db, uint64_t seq,
                       const v1::ChangeEntry& entry) {
  std::string value;
  entry.SerializeToString(&value);
  // why ignored: WriteBatch::Put only fails on oversized keys/values, which the caller bounds.
  batch->Put(engine_->cf(Cf::kChangeLog), LogKey(db, seq), value).PermitUncheckedError();
}

uint64_t ChangeLog::CommittedSeq(absl::string_view db) { return GetOrCreate(db)->watermark(); }

uint64_t ChangeLog::WaitForCommitted(absl::string_view db, uint64_t after, absl::Time deadline) {
  return GetOrCreate(db)->WaitBeyond(after, deadline);
}

}  // namespace cairn::storage
