#include "storage/change_log.h"

#include <algorithm>
#include <optional>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "storage/keys.h"
#include "storage/rocksdb_status.h"

namespace cairn::storage {

namespace {

thread_local const std::string* current_tag = nullptr;  // ChangeLog::TagScope

}  // namespace

ChangeLog::TagScope::TagScope(const std::string* tag) : previous_(current_tag) {
  current_tag = tag;
}
ChangeLog::TagScope::~TagScope() { current_tag = previous_; }

ChangeLog::Reservation::~Reservation() {
  if (seq_ != nullptr && count_ > 0) seq_->Release(first_, current_tag);
}

absl::StatusOr<uint64_t> ChangeLog::Sequencer::Reserve(uint64_t count, uint64_t now_ms,
                                                       uint64_t* logged_ms) {
  while (true) {
    uint64_t target = 0;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](Sequencer* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) { return !s->extending_; },
          this));
      if (next_ > kMaxSeq - count) {
        return absl::ResourceExhaustedError(
            absl::StrCat("the change log of '", db_, "' has used every sequence number"));
      }
      if (next_ + count - 1 <= durable_) {
        const uint64_t first = next_;
        next_ += count;
        *logged_ms = std::max({now_ms, last_logged_ms_, min_next_ms_});
        last_logged_ms_ = *logged_ms;
        pending_.emplace(first, *logged_ms);
        return first;
      }
      // Invariant (2): numbers above the persisted high-water are not handed out. One thread
      // extends it, outside the lock (a synced write); the others wait for it.
      extending_ = true;
      target = next_ + count - 1 + std::min(kHighWaterStep, kMaxSeq - (next_ + count - 1));
    }
    absl::Status persisted = owner_->PersistHighWater(db_, target);
    absl::MutexLock lock(&mu_);
    extending_ = false;
    CAIRN_RETURN_IF_ERROR(persisted);
    durable_ = std::max(durable_, target);
  }
}

ChangeLog::Sequencer::Bounds ChangeLog::Sequencer::HorizonBounds(uint64_t now_ms) {
  absl::MutexLock lock(&mu_);
  // Reservations from now on are logged at or after this.
  min_next_ms_ = std::max({min_next_ms_, last_logged_ms_, now_ms});
  uint64_t unsettled = min_next_ms_;
  for (const auto& [first, logged_ms] : pending_) unsettled = std::min(unsettled, logged_ms);
  return {watermark_, trimmed_, unsettled};
}

uint64_t ChangeLog::Sequencer::floor_ms() const {
  absl::MutexLock lock(&mu_);
  return floor_ms_;
}

void ChangeLog::Sequencer::ObserveLogged(uint64_t ms) {
  absl::MutexLock lock(&mu_);
  last_logged_ms_ = std::max(last_logged_ms_, ms);
}

void ChangeLog::Sequencer::set_floor_ms(uint64_t ms) {
  absl::MutexLock lock(&mu_);
  floor_ms_ = ms;
}

void ChangeLog::Sequencer::Release(uint64_t first, const std::string* tag) {
  bool moved = false;
  std::optional<std::string> told;  // the tag the listener gets (none: null)
  {
    absl::MutexLock lock(&mu_);
    pending_.erase(first);
    const uint64_t w = pending_.empty() ? next_ - 1 : pending_.begin()->first - 1;
    moved = w != watermark_;
    watermark_ = w;
    // This run's tag joins those released before it and still waiting to become visible.
    if (tag == nullptr || (waiting_ == Waiting::kOne && waiting_tag_ != *tag)) {
      waiting_ = Waiting::kMixed;
    } else if (waiting_ == Waiting::kNone) {
      waiting_ = Waiting::kOne;
      waiting_tag_ = *tag;
    }
    if (moved && waiting_ == Waiting::kOne) told = waiting_tag_;
    if (pending_.empty()) {
      // Every released run is visible now. (With runs still pending, one released above them
      // is not: its tag stays for the next move, which may tell more than it shows, never
      // less.)
      waiting_ = Waiting::kNone;
      waiting_tag_.clear();
    }
  }
  if (!moved) return;
  for (const CommitListener& listener : owner_->listeners_) {
    listener(db_, told.has_value() ? &*told : nullptr);
  }
}

void ChangeLog::Sequencer::AddHole(uint64_t first, uint64_t last) {
  absl::MutexLock lock(&mu_);
  holes_[first] = last;
}

uint64_t ChangeLog::Sequencer::BackBy(uint64_t top, uint64_t n) const {
  absl::MutexLock lock(&mu_);
  uint64_t pos = top;  // counting numbers in (pos, top]
  for (auto it = holes_.upper_bound(pos); n > 0 && it != holes_.begin();) {
    --it;
    const uint64_t first = it->first, last = std::min(it->second, pos);
    if (last < first) continue;        // the hole is above pos (cannot happen: upper_bound)
    const uint64_t span = pos - last;  // used numbers between the hole and pos
    if (span >= n) return pos - n;
    n -= span;
    pos = first - 1;
  }
  return pos > n ? pos - n : 0;
}

uint64_t ChangeLog::Sequencer::trimmed() const {
  absl::MutexLock lock(&mu_);
  return trimmed_;
}

void ChangeLog::Sequencer::set_trimmed(uint64_t t) {
  absl::MutexLock lock(&mu_);
  trimmed_ = std::max(trimmed_, t);
  if (next_ <= trimmed_) {
    next_ = trimmed_ + 1;
    if (pending_.empty()) watermark_ = trimmed_;
  }
}

uint64_t ChangeLog::Sequencer::watermark() const {
  absl::MutexLock lock(&mu_);
  return watermark_;
}

uint64_t ChangeLog::Sequencer::reserved() const {
  absl::MutexLock lock(&mu_);
  return next_ - 1;
}

absl::Status ChangeLog::ForgetIdentity(Engine* engine) {
  rocksdb::WriteBatch batch;
  // why ignored: WriteBatch::Delete/DeleteRange only fail beyond 4 GiB.
  batch.Delete(engine->cf(Cf::kMeta), ToSlice(kLogIdKey)).PermitUncheckedError();
  batch
      .DeleteRange(engine->cf(Cf::kMeta), ToSlice(kCursorPrefix),
                   ToSlice(PrefixSuccessor(kCursorPrefix)))
      .PermitUncheckedError();
  CAIRN_RETURN_IF_ERROR(engine->Write(&batch));
  return engine->Flush();
}

absl::Status ChangeLog::Recover() {
  CAIRN_RETURN_IF_ERROR(RecoverSequences());
  return RecoverHorizon();
}

absl::Status ChangeLog::RecoverSequences() {
  {
    std::string value;
    bool found = false;
    CAIRN_RETURN_IF_ERROR(engine_->Get(Cf::kMeta, kLogIdKey, &value, &found));
    if (found && value.size() == 8) {
      log_id_ = GetBigEndian64(value);
    } else {
      log_id_ = absl::Uniform<uint64_t>(absl::BitGen(), 1, UINT64_MAX);
      std::string encoded;
      PutBigEndian64(log_id_, &encoded);
      rocksdb::WriteBatch batch;
      // why ignored: WriteBatch::Put only fails beyond 4 GiB.
      batch.Put(engine_->cf(Cf::kMeta), ToSlice(kLogIdKey), encoded).PermitUncheckedError();
      CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
    }
  }
  // Per database: how far it was trimmed, its persisted high-water (R15) and its last entry.
  struct Found {
    uint64_t trimmed = 0, high_water = 0, last = 0, last_logged_ms = 0;
    std::map<uint64_t, uint64_t> holes;
  };
  absl::flat_hash_map<std::string, Found> found;
  for (absl::string_view prefix : {kLogTrimPrefix, kLogHighWaterPrefix}) {
    auto t = engine_->NewIterator(Cf::kMeta, nullptr, PrefixSuccessor(prefix));
    for (t->Seek(ToSlice(prefix)); t->Valid(); t->Next()) {
      if (t->value().size() != 8) {
        return absl::DataLossError(absl::StrCat("malformed ", prefix, " value"));
      }
      Found& f = found[ToView(t->key()).substr(prefix.size())];
      (prefix == kLogTrimPrefix ? f.trimmed : f.high_water) = GetBigEndian64(ToView(t->value()));
    }
    CAIRN_RETURN_IF_ERROR(FromRocks(t->status()));
  }
  {
    auto t = engine_->NewIterator(Cf::kMeta, nullptr, PrefixSuccessor(kLogHolePrefix));
    for (t->Seek(ToSlice(kLogHolePrefix)); t->Valid(); t->Next()) {
      const absl::string_view rest = ToView(t->key()).substr(kLogHolePrefix.size());
      if (rest.size() < 9 || rest[rest.size() - 9] != '\0' || t->value().size() != 8) {
        return absl::DataLossError("malformed loghole key");
      }
      found[rest.substr(0, rest.size() - 9)].holes[GetBigEndian64(rest.substr(rest.size() - 8))] =
          GetBigEndian64(ToView(t->value()));
    }
    CAIRN_RETURN_IF_ERROR(FromRocks(t->status()));
  }
  // Visit each database's run of keys once: jump to its last key, then past it.
  auto it = engine_->NewIterator(Cf::kChangeLog);
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
    Found& f = found[db];
    f.last = GetBigEndian64(ToView(it->key()).substr(nul + 1));
    v1::ChangeEntry e;
    if (e.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      f.last_logged_ms = e.logged_ms();  // logged_ms keeps not decreasing
    }
    it->Seek(next_db);
  }
  CAIRN_RETURN_IF_ERROR(FromRocks(it->status()));
  // The numbers this restart skips (above the last entry, up to the high-water) are a hole:
  // recorded, so that retention by count counts entries, not numbers.
  rocksdb::WriteBatch holes;
  for (auto& [db, f] : found) {
    const uint64_t used = std::max(f.trimmed, f.last);
    if (f.high_water <= used) continue;
    f.holes[used + 1] = f.high_water;
    std::string last;
    PutBigEndian64(f.high_water, &last);
    // why ignored: WriteBatch::Put only fails beyond 4 GiB.
    holes.Put(engine_->cf(Cf::kMeta), ToSlice(LogHoleKey(db, used + 1)), last)
        .PermitUncheckedError();
  }
  if (holes.Count() > 0) CAIRN_RETURN_IF_ERROR(engine_->Write(&holes));
  const uint64_t now_ms = NowMs();
  absl::MutexLock lock(&mu_);
  if (!dbs_.empty()) return absl::FailedPreconditionError("ChangeLog::Recover called twice");
  for (const auto& [db, f] : found) {
    // Every number up to the high-water may have been seen by a peer (sent, or passed by a
    // cursor as a gap): all of them count as settled, and none is handed out again (R15). A
    // log written before high-waters were kept resumes after its last entry.
    const uint64_t last = std::max({f.trimmed, f.high_water, f.last});
    auto seq = std::make_unique<Sequencer>(this, db, last, f.high_water, now_ms);
    seq->set_trimmed(f.trimmed);
    seq->ObserveLogged(f.last_logged_ms);
    for (const auto& [first, last_of_hole] : f.holes) {
      if (last_of_hole > f.trimmed) seq->AddHole(first, last_of_hole);
    }
    dbs_[db] = std::move(seq);
  }
  return absl::OkStatus();
}

absl::Status ChangeLog::PersistHighWater(absl::string_view db, uint64_t high_water) {
  std::string value;
  PutBigEndian64(high_water, &value);
  rocksdb::WriteBatch batch;
  // why ignored: WriteBatch::Put only fails beyond 4 GiB.
  batch.Put(engine_->cf(Cf::kMeta), ToSlice(LogHighWaterKey(db)), value).PermitUncheckedError();
  // Synced whatever --sync-writes says: a lost high-water after a power loss would hand out
  // again numbers a peer has already passed (R15), one sync per kHighWaterStep numbers.
  return engine_->SyncedWrite(&batch);
}

absl::Status ChangeLog::RecoverHorizon() {
  for (const std::string& db : Databases()) {
    CAIRN_RETURN_IF_ERROR(RefreshFloor(db, Find(db)));
  }
  PublishHorizon();
  return absl::OkStatus();
}

uint64_t ChangeLog::NowMs() const {
  return static_cast<uint64_t>(std::max<int64_t>(0, absl::ToUnixMillis(engine_->clock()->Now())));
}

absl::Status ChangeLog::RefreshFloor(absl::string_view db, Sequencer* seq) {
  // Bounds first: an entry committed after them was pending or not yet reserved, and is
  // covered by unsettled_ms; one committed before is in the store for the read below.
  const Sequencer::Bounds b = seq->HorizonBounds(NowMs());
  uint64_t floor = b.unsettled_ms;
  if (b.watermark > b.trimmed) {
    // The first retained entry has the smallest logged_ms of those committed.
    auto it = engine_->NewIterator(Cf::kChangeLog, nullptr, LogKey(db, b.watermark + 1));
    it->Seek(ToSlice(LogKey(db, b.trimmed + 1)));
    if (it->Valid()) {
      v1::ChangeEntry e;
      if (!e.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
        return absl::DataLossError(absl::StrCat("unreadable change-log entry of '", db, "'"));
      }
      floor = std::min<uint64_t>(floor, e.logged_ms());
    }
    CAIRN_RETURN_IF_ERROR(FromRocks(it->status()));
  }
  seq->set_floor_ms(floor);
  return absl::OkStatus();
}

void ChangeLog::PublishHorizon() {
  uint64_t horizon = NowMs();  // no log at all: nothing logged before now is named
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [db, seq] : dbs_) horizon = std::min(horizon, seq->floor_ms());
  }
  engine_->SetTombstoneHorizon(static_cast<int64_t>(std::min<uint64_t>(horizon, INT64_MAX)));
}

std::vector<std::string> ChangeLog::Databases() {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [db, seq] : dbs_) out.push_back(db);
  std::sort(out.begin(), out.end());
  return out;
}

uint64_t ChangeLog::TrimmedThrough(absl::string_view db) {
  Sequencer* seq = Find(db);
  return seq == nullptr ? 0 : seq->trimmed();
}

absl::StatusOr<uint64_t> ChangeLog::Trim(absl::string_view db, uint64_t keep_entries,
                                         uint64_t min_logged_ms, uint64_t keep_from,
                                         uint64_t max_scan) {
  absl::MutexLock one(&trim_mu_);
  Sequencer* seq = Find(db);
  if (seq == nullptr) return 0;
  CAIRN_ASSIGN_OR_RETURN(uint64_t trimmed,
                         TrimLocked(db, seq, keep_entries, min_logged_ms, keep_from, max_scan));
  // Whether or not anything went, the horizon moves with time (an idle log's floor is now).
  CAIRN_RETURN_IF_ERROR(RefreshFloor(db, seq));
  PublishHorizon();
  return trimmed;
}

absl::StatusOr<uint64_t> ChangeLog::TrimLocked(absl::string_view db, Sequencer* seq,
                                               uint64_t keep_entries, uint64_t min_logged_ms,
                                               uint64_t keep_from, uint64_t max_scan) {
  trim_mu_.AssertHeld();
  const uint64_t first = seq->trimmed() + 1;
  const uint64_t committed = seq->watermark();
  if (committed < first) return 0;
  uint64_t cut = first - 1;  // trim every entry <= cut
  // By count of entries held: the numbers restarts skipped are not entries (invariant 2).
  cut = std::max(cut, seq->BackBy(committed, keep_entries));
  // By age: entries are in commit order, so stop at the first young one.
  auto it = engine_->NewIterator(Cf::kChangeLog, nullptr, LogKey(db, committed + 1));
  uint64_t scanned = 0;
  for (it->Seek(ToSlice(LogKey(db, cut + 1))); it->Valid() && scanned < max_scan;
       it->Next(), ++scanned) {
    v1::ChangeEntry e;
    if (!e.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) break;
    if (e.logged_ms() >= min_logged_ms) break;
    cut = GetBigEndian64(absl::string_view(it->key().data() + it->key().size() - 8, 8));
  }
  CAIRN_RETURN_IF_ERROR(FromRocks(it->status()));
  if (keep_from != 0 && cut >= keep_from) {
    // A peer still needs entries from keep_from on: keep them, within a hard bound (R12: a
    // slow peer never holds the log without limit).
    const uint64_t bound = keep_entries > UINT64_MAX / kPinnedRetentionFactor
                               ? UINT64_MAX
                               : keep_entries * kPinnedRetentionFactor;
    const uint64_t hard_cut = seq->BackBy(committed, bound);
    cut = std::min(cut, std::max(keep_from - 1, hard_cut));
  }
  if (cut < first) return 0;
  rocksdb::WriteBatch batch;
  std::string through;
  PutBigEndian64(cut, &through);
  // why ignored (both): WriteBatch fails only beyond 4 GiB.
  batch
      .DeleteRange(engine_->cf(Cf::kChangeLog), ToSlice(LogKey(db, first)),
                   ToSlice(LogKey(db, cut + 1)))
      .PermitUncheckedError();
  batch.Put(engine_->cf(Cf::kMeta), ToSlice(LogTrimKey(db)), through).PermitUncheckedError();
  CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
  seq->set_trimmed(cut);
  return cut - first + 1;
}

ChangeLog::Sequencer* ChangeLog::Find(absl::string_view db) {
  absl::MutexLock lock(&mu_);
  auto it = dbs_.find(db);
  return it == dbs_.end() ? nullptr : it->second.get();
}

ChangeLog::Sequencer* ChangeLog::GetOrCreate(absl::string_view db) {
  absl::MutexLock lock(&mu_);
  auto& slot = dbs_[db];
  // Its floor is now: below every logged_ms it will give, above no published horizon.
  if (slot == nullptr) slot = std::make_unique<Sequencer>(this, std::string(db), 0, 0, NowMs());
  return slot.get();
}

absl::StatusOr<ChangeLog::Reservation> ChangeLog::Reserve(absl::string_view db, uint64_t count) {
  if (count == 0) return Reservation();
  Sequencer* seq = GetOrCreate(db);
  uint64_t logged_ms = 0;
  CAIRN_ASSIGN_OR_RETURN(const uint64_t first, seq->Reserve(count, NowMs(), &logged_ms));
  return Reservation(seq, first, count, logged_ms);
}

void ChangeLog::Append(rocksdb::WriteBatch* batch, absl::string_view db, uint64_t seq,
                       const v1::ChangeEntry& entry) {
  std::string value;
  entry.SerializeToString(&value);
  // why ignored: WriteBatch::Put only fails on oversized keys/values, which the caller bounds.
  batch->Put(engine_->cf(Cf::kChangeLog), LogKey(db, seq), value).PermitUncheckedError();
}

uint64_t ChangeLog::CommittedSeq(absl::string_view db) {
  Sequencer* seq = Find(db);
  return seq == nullptr ? 0 : seq->watermark();
}

uint64_t ChangeLog::ReservedSeq(absl::string_view db) {
  Sequencer* seq = Find(db);
  return seq == nullptr ? 0 : seq->reserved();
}

}  // namespace cairn::storage
