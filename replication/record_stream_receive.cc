// ReceiverState (record_stream.h): the subscriber's side of a change stream: the Subscribe
// it sends, refetches (R14), and applying each batch with its cursor in one WriteBatch (R6).
// The sender's side, LogSender, is record_stream.cc.
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "catalog/names.h"
#include "common/fault.h"
#include "common/fault_points.h"
#include "common/status.h"
#include "replication/internal/steady_clock.h"
#include "replication/record_stream.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"
#include "storage/rocksdb_status.h"

namespace cairn::replication {

using storage::Cf;
using storage::ToSlice;
using storage::ToView;
using storage::v1::ChangeEntry;
using storage::v1::StoredRecord;

ReceiverState::ReceiverState(catalog::LocalNode* node, std::string peer, uint64_t peer_log_id,
                             Exclusions exclusions, ParkedRetrier* parked)
    : node_(node),
      peer_(std::move(peer)),
      peer_log_id_(peer_log_id),
      exclusions_(std::move(exclusions)),
      parking_(node, peer_),
      parked_(parked) {}

absl::StatusOr<peer::v1::Subscribe> ReceiverState::BuildSubscribe() {
  peer::v1::Subscribe sub;
  const std::string prefix = storage::CursorPrefix(peer_);
  auto it = node_->engine->NewIterator(Cf::kMeta, nullptr, storage::PrefixSuccessor(prefix));
  for (it->Seek(ToSlice(prefix)); it->Valid(); it->Next()) {
    storage::v1::ReplicaCursor cursor;
    if (!cursor.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      continue;
    }
    // A cursor into another log (the peer's directory was replaced) is worthless: copy.
    if (cursor.log_id() != peer_log_id_) continue;
    peer::v1::DbCursor* c = sub.add_cursors();
    c->set_database(std::string(ToView(it->key()).substr(prefix.size())));
    c->set_seq(cursor.seq());
    if (cursor.has_copy()) *c->mutable_copy() = cursor.copy();
    // Status starts from the stored cursor, so a batch that does not move it (a refetch)
    // does not make this node look behind by the peer's whole log.
    DbProgress& p = progress_[c->database()];
    p.cursor = p.head = cursor.seq();
    // The peer sends every entry of its own after the cursor (OriginAdvert since).
    if (!cursor.has_copy()) p.since = p.high = cursor.seq();
  }
  CAIRN_RETURN_IF_ERROR(storage::FromRocks(it->status()));
  for (const std::string& t : exclusions_.List()) sub.add_exclude(t);
  CAIRN_ASSIGN_OR_RETURN(peer::v1::Refetch refetch, NewRefetches());
  *sub.mutable_refetch() = std::move(*refetch.mutable_tables());
  // Decision 86: every table this node dropped locally, whatever this link refetched.
  sub.clear_echo();
  if (!echo_) return sub;
  const std::string echo_prefix(storage::kEchoPrefix);
  auto e = node_->engine->NewIterator(Cf::kMeta, nullptr, storage::PrefixSuccessor(echo_prefix));
  for (e->Seek(ToSlice(echo_prefix)); e->Valid(); e->Next()) {
    const absl::string_view name = ToView(e->key()).substr(echo_prefix.size());
    const size_t nul = name.find('\0');
    if (nul == absl::string_view::npos) continue;
    peer::v1::TableRefetch* t = sub.add_echo();
    t->set_database(std::string(name.substr(0, nul)));
    t->set_table(std::string(name.substr(nul + 1)));
  }
  CAIRN_RETURN_IF_ERROR(storage::FromRocks(e->status()));
  return sub;
}

absl::StatusOr<peer::v1::Refetch> ReceiverState::NewRefetches() {
  peer::v1::Refetch out;
  const std::string prefix(storage::kRefetchPrefix);
  auto r = node_->engine->NewIterator(Cf::kMeta, nullptr, storage::PrefixSuccessor(prefix));
  for (r->Seek(ToSlice(prefix)); r->Valid(); r->Next()) {
    // "refetch/<db>/<table>\0<peer>"
    const absl::string_view name = ToView(r->key()).substr(prefix.size());
    const size_t slash = name.find('/');
    const size_t nul = name.find('\0');
    if (slash == absl::string_view::npos || nul == absl::string_view::npos || nul < slash ||
        name.substr(nul + 1) != peer_) {
      continue;
    }
    std::pair<std::string, std::string> id(name.substr(0, slash),
                                           name.substr(slash + 1, nul - slash - 1));
    if (refetch_asked_.count(id) > 0) continue;
    // After a local drop (value 0, decision 44) the table is asked for once a peer's
    // definition made it live here again; until then its rows have nowhere to go.
    if (r->value().size() >= 8 && storage::GetBigEndian64(ToView(r->value())) == 0 &&
        !node_->catalog->Snapshot()->FindTable(id.first, id.second).ok()) {
      continue;
    }
    refetch_asked_.insert(id);
    peer::v1::TableRefetch* t = out.add_tables();
    t->set_database(id.first);
    t->set_table(id.second);
    // After a local drop of a replicated table: from now on this link's stream carries this
    // node's own writes of it too (decision 86).
    if (echo_) {
      std::string unused;
      bool echoed = false;
      CAIRN_RETURN_IF_ERROR(
          node_->engine->Get(Cf::kMeta, storage::EchoKey(id.first, id.second), &unused, &echoed));
      if (echoed) *out.add_echo() = *t;
    }
  }
  CAIRN_RETURN_IF_ERROR(storage::FromRocks(r->status()));
  return out;
}

absl::Status ReceiverState::Apply(const peer::v1::ChangeBatch& batch,
                                  catalog::ApplyStats* stats_out) {
  const std::string& db = batch.database();
  // A peer's value: a name this node could not hold would also split parked keys wrongly.
  CAIRN_RETURN_IF_ERROR(catalog::ValidateDatabaseName(db));
  // Read in place (issue 23 part 3): a batch's entries are not copied on their way in.
  std::vector<const ChangeEntry*> entries;
  entries.reserve(batch.entries_size());
  for (const ChangeEntry& e : batch.entries()) {
    if (exclusions_.Excludes(db, e.table())) continue;  // R11, receiver's side
    entries.push_back(&e);
  }
  // Decision 156: a peer's writes are foreground work that verifies and strips give way to.
  if (!entries.empty()) node_->activity.Note(absl::Now());
  DbProgress& p = progress_[db];
  // The cursor that goes into the same batch (R6). Refetch batches leave it alone.
  std::optional<storage::v1::ReplicaCursor> cursor;
  if (!batch.has_refetch()) {
    cursor.emplace();
    cursor->set_log_id(peer_log_id_);
    if (batch.has_copy() && !batch.copy().done()) {
      *cursor->mutable_copy() = batch.copy();
    } else if (batch.has_copy()) {
      cursor->set_seq(batch.copy().target_seq());
    } else {
      // The sender may hold entries back before last_seq (design 0004): a resubscription
      // starts before them.
      cursor->set_seq(batch.has_cursor_seq() ? std::min(batch.cursor_seq(), batch.last_seq())
                                             : batch.last_seq());
    }
  }
  std::vector<ChangeEntry> parked;  // R17: filled by ApplyPeerEntries before extra runs
  auto extra = [&](rocksdb::WriteBatch* wb) {
    if (!parked.empty()) parking_.Park(db, parked, wb);
    // why ignored (both): WriteBatch fails only beyond 4 GiB.
    if (cursor.has_value()) {
      wb->Put(node_->engine->cf(Cf::kMeta), ToSlice(storage::CursorKey(peer_, db)),
              cursor->SerializeAsString())
          .PermitUncheckedError();
    }
    if (batch.refetch_done()) {
      // R14: this peer has sent everything it holds of a table asked for again.
      wb->Delete(node_->engine->cf(Cf::kMeta),
                 ToSlice(storage::RefetchKey(db, batch.refetch().table(), peer_)))
          .PermitUncheckedError();
    }
  };
  [[maybe_unused]] FaultRegistry* faults = node_->catalog->options().faults;  // hooks off: unused
  CAIRN_RETURN_IF_ERROR(CAIRN_FAULT(faults, fault_points::kReplApplyBeforeCommit));
  // Only the peer's own writes, each with its place in the peer's log: the commit tells the
  // senders so (Cluster::OnCommit), and those whose peers get them elsewhere stay asleep.
  std::optional<storage::ChangeLog::TagScope> tag;
  if (!batch.has_copy() && !batch.has_refetch() &&
      std::all_of(entries.begin(), entries.end(), [&](const ChangeEntry* e) {
        return e->origin() == peer_ && e->origin_seq() != 0;
      })) {
    tag.emplace(&peer_);
  }
  absl::StatusOr<catalog::ApplyStats> applied =
      node_->records->ApplyPeerEntries(db, entries, extra, &parked);
  tag.reset();
  CAIRN_ASSIGN_OR_RETURN(catalog::ApplyStats stats, std::move(applied));
  if (stats.parked > 0) {
    spdlog::info("[{}] {} entr{} of '{}' from {} parked: table not live here yet (R17)",
                 node_->records->node_name(), stats.parked, stats.parked == 1 ? "y" : "ies", db,
                 peer_);
    if (parked_ != nullptr && !parked.empty()) {
      parked_->Parked(peer_, absl::StrCat(db, ".", parked.front().table()), stats.parked,
                      absl::ToUnixMillis(node_->hlc->WallNow()));
    }
  }
  // why ignored: the batch is committed; only crash, delay and block matter here.
  CAIRN_FAULT(faults, fault_points::kReplApplyAfterCommit).IgnoreError();
  if (batch.refetch_done()) {
    refetch_asked_.erase({db, batch.refetch().table()});
    spdlog::info("[{}] {}.{}: {} sent its rows again (R14)", node_->records->node_name(), db,
                 batch.refetch().table(), peer_);
  }
  if (stats_out != nullptr) *stats_out = stats;
  ++batches_;
  entries_applied_ += stats.applied;
  entries_received_ += static_cast<uint64_t>(batch.entries_size());
  for (const ChangeEntry* e : entries) p.newest_version = std::max(p.newest_version, e->version());
  p.head = std::max(p.head, batch.head_seq());
  if (cursor.has_value()) {
    if (cursor->has_copy()) {
      if (!p.copy.has_value()) {
        p.copy_started = internal::SteadyNow();
        p.copy_rows_at_start = batch.copy().rows_done() - batch.entries_size();
      }
      p.copy = cursor->copy();
    } else {
      if (p.copy.has_value()) {
        spdlog::info("[{}] full copy of '{}' from {} done: {} row(s)", node_->records->node_name(),
                     db, peer_, batch.copy().rows_done());
      }
      p.copy.reset();
      p.cursor = cursor->seq();
    }
  }
  // What this node can advertise of the peer as an origin (Direct).
  if (batch.has_copy()) {
    p.streaming = batch.copy().done();
    p.since = p.high = batch.copy().target_seq();
  } else if (!batch.has_refetch()) {
    p.cursor = std::max(p.cursor, batch.last_seq());  // lag: where the stream is
    p.high = std::max(p.high, batch.last_seq());
    p.streaming = true;
    // The peer left some of its own writes out: from here on only (OriginAdvert since).
    if (batch.origin_gap()) p.since = p.high;
    p.excluding = batch.origin_excludes();
  }
  // P7: the batch may complete a copy this node was catching up with. The batch is committed
  // whatever this says: a failed check is tried again with the next batch.
  absl::Status ready = node_->catalog->MarkReadyIfCaughtUp(db);
  if (!ready.ok()) {
    spdlog::warn("[{}] readiness of '{}' not checked: {}", node_->records->node_name(), db,
                 ready.ToString());
  }
  return absl::OkStatus();
}

std::optional<DirectOrigin> ReceiverState::Direct(const std::string& db) const {
  auto it = progress_.find(db);
  // Tables of `db` this route leaves out come from elsewhere (R11).
  if (!origins_ || it == progress_.end() || !it->second.streaming || it->second.excluding ||
      exclusions_.AnyIn(db)) {
    return std::nullopt;
  }
  return DirectOrigin{peer_log_id_, it->second.since, it->second.high};
}

ReceiveStats ReceiverState::Stats(absl::Time now) const {
  ReceiveStats s;
  s.batches = batches_;
  s.entries_applied = entries_applied_;
  s.entries_received = entries_received_;
  uint64_t done = 0, total = 0, rows_since = 0;
  absl::Time earliest = now;
  for (const auto& [db, p] : progress_) {
    s.cursors[db] = p.cursor;
    if (p.head > p.cursor) {
      s.lag_entries += p.head - p.cursor;
      s.lag_by_db[db] = p.head - p.cursor;
    }
    s.newest_applied_ms = std::max<int64_t>(
        s.newest_applied_ms, static_cast<int64_t>(HybridClock::PhysicalMs(p.newest_version)));
    if (p.copy.has_value()) {
      s.copying.insert(db);
      s.copy_active = true;
      done += p.copy->rows_done();
      total += std::max(p.copy->rows_total(), p.copy->rows_done());
      rows_since += p.copy->rows_done() - std::min(p.copy->rows_done(), p.copy_rows_at_start);
      earliest = std::min(earliest, p.copy_started);
    }
  }
  if (s.copy_active) {
    // Done rows over the sender's count at the start; never 100 before the copy ends.
    s.copy_percent = total == 0 ? 0 : std::min(99.9, 100.0 * done / total);
    const double secs = absl::ToDoubleSeconds(now - earliest);
    s.copy_rows_per_s = secs > 0 ? rows_since / secs : 0;
  }
  return s;
}

}  // namespace cairn::replication
