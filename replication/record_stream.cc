#include "replication/record_stream.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "catalog/names.h"
#include "common/fault.h"
#include "common/fault_points.h"
#include "common/status.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"
#include "storage/rocksdb_status.h"

namespace cairn::replication {
namespace {

using storage::Cf;
using storage::ToSlice;
using storage::ToView;
using storage::v1::ChangeEntry;
using storage::v1::StoredRecord;

// A stored row as a streamed entry: its true origin, version and row generation (R7, D7).
void RowEntry(const std::string& table, absl::string_view encoded_pk, StoredRecord* rec,
              ChangeEntry* e) {
  e->set_table(table);
  e->set_key(encoded_pk.data(), encoded_pk.size());
  e->set_version(rec->version());
  e->set_origin(rec->origin());
  e->set_row_generation(rec->row_generation());
  if (rec->deleted()) {
    e->set_op(storage::v1::DELETE);  // a newer tombstone removes the row (R7)
  } else {
    e->set_op(storage::v1::PUT);
    e->set_allocated_json(rec->release_json());
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// LogSender

LogSender::LogSender(catalog::LocalNode* node, std::string peer, Exclusions exclusions,
                     StreamLimits limits)
    : node_(node),
      self_(node->records->node_name()),
      peer_(std::move(peer)),
      exclusions_(std::move(exclusions)),
      limits_(limits),
      holds_(limits.hold_limit) {}

void LogSender::Subscribe(const peer::v1::Subscribe& subscribe) {
  subscribed_ = true;
  dbs_.clear();
  holds_.Clear();
  dbs_version_ = UINT64_MAX;
  refetch_.clear();
  for (const std::string& t : subscribe.exclude()) {  // R11: what the subscriber does not ask
    const size_t dot = t.find('.');
    if (dot != std::string::npos) exclusions_.Add(t.substr(0, dot), t.substr(dot + 1));
  }
  for (const peer::v1::DbCursor& c : subscribe.cursors()) {
    Db& state = dbs_[c.database()];
    state.started = true;
    if (c.has_copy()) {
      state.copy = c.copy();  // resume the full copy where it stopped (R7)
    } else {
      state.sent_seq = state.reported_cursor = c.seq();
    }
  }
  for (const peer::v1::TableRefetch& r : subscribe.refetch()) {
    refetch_.push_back(TableCopy{r.database(), r.table(), ""});
  }
  echo_.clear();
  for (const peer::v1::TableRefetch& e : subscribe.echo()) echo_.emplace(e.database(), e.table());
}

absl::btree_map<std::string, uint64_t> LogSender::Needs() const {
  absl::btree_map<std::string, uint64_t> out;
  for (const auto& [db, state] : dbs_) {
    if (state.copy.has_value()) {
      out[db] = state.copy->target_seq() + 1;
    } else if (state.started) {
      out[db] = holds_.CursorFor(db, state.sent_seq) + 1;  // held entries too
    }
  }
  return out;
}

void LogSender::Refetch(const peer::v1::Refetch& refetch) {
  for (const peer::v1::TableRefetch& r : refetch.tables()) {
    refetch_.push_back(TableCopy{r.database(), r.table(), ""});
  }
  for (const peer::v1::TableRefetch& e : refetch.echo()) echo_.emplace(e.database(), e.table());
}

bool LogSender::Excluded(absl::string_view db, absl::string_view table) const {
  return exclusions_.Excludes(db, table);
}

std::vector<catalog::TableRef> LogSender::CopyTables(const catalog::CatalogSnapshot& snap,
                                                     const std::string& db) const {
  std::vector<catalog::TableRef> out;
  if (const catalog::DatabaseDef* d = snap.FindDatabase(db)) {
    for (const auto& [name, def] : d->tables) {                         // btree: name order
      if (def->replicate() && !Excluded(db, name)) out.push_back(def);  // C11, R11
    }
  }
  return out;
}

uint64_t LogSender::LiveGeneration(const catalog::CatalogSnapshot& snap, const std::string& db,
                                   const std::string& table) {
  auto def = snap.FindTable(db, table);
  return def.ok() && (*def)->replicate() ? (*def)->generation_id() : 0;
}

bool LogSender::StartCopy(const catalog::CatalogSnapshot& snap, const std::string& db, Db* state) {
  // Everything committed up to here is in the copy (as that entry or a newer one); the tail
  // resumes after it. Read the watermark before the rows.
  storage::v1::CopyPosition copy;
  copy.set_target_seq(node_->log->CommittedSeq(db));
  // R15: every table an entry up to target_seq was written to, if it is still live, must be in
  // the copy. The catalog now is newer than those writes: when its tables of `db` are the ones
  // `snap` has, nothing is missing. Otherwise the copy waits for a round with a newer snapshot.
  const std::vector<catalog::TableRef> tables = CopyTables(snap, db);
  const catalog::SnapshotRef live = node_->catalog->Snapshot();
  const std::vector<catalog::TableRef> live_tables = CopyTables(*live, db);
  if (!std::equal(tables.begin(), tables.end(), live_tables.begin(), live_tables.end(),
                  [](const catalog::TableRef& a, const catalog::TableRef& b) {
                    return a->generation_id() == b->generation_id();
                  })) {
    stale_snapshot_ = true;
    return false;
  }
  uint64_t total = 0;
  for (const catalog::TableRef& def : tables) {
    auto n = node_->records->RecordCount(*def);
    if (n.ok()) total += *n;
  }
  copy.set_rows_total(total);
  state->copy = std::move(copy);
  state->started = true;
  holds_.ResetDatabase(db);  // the copy carries every row
  spdlog::info("[{}] full copy of '{}' to a peer: {} row(s) through seq {} (R7)",
               node_->records->node_name(), db, total, state->copy->target_seq());
  return true;
}

absl::StatusOr<bool> LogSender::CopyRows(const catalog::TableDef& def, std::string* after_key,
                                         peer::v1::ChangeBatch* out, size_t* bytes) {
  const std::string prefix = storage::GenerationPrefix(def.generation_id());
  const std::string end = storage::GenerationPrefix(def.generation_id() + 1);
  auto it = node_->engine->NewIterator(Cf::kRecords, nullptr, end);
  it->Seek(ToSlice(prefix + *after_key));
  if (it->Valid() && !after_key->empty() && ToView(it->key()).substr(prefix.size()) == *after_key) {
    it->Next();
  }
  for (; it->Valid(); it->Next()) {
    if (static_cast<size_t>(out->entries_size()) >= limits_.max_entries ||
        (*bytes >= limits_.max_bytes && out->entries_size() > 0)) {
      return false;
    }
    StoredRecord rec;
    if (!rec.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) continue;
    const absl::string_view pk = ToView(it->key()).substr(prefix.size());
    *bytes += rec.json().size() + pk.size() + 32;
    RowEntry(def.name(), pk, &rec, out->add_entries());
    after_key->assign(pk.data(), pk.size());
  }
  CAIRN_RETURN_IF_ERROR(storage::FromRocks(it->status()));
  return true;
}

absl::StatusOr<bool> LogSender::NextCopy(const catalog::CatalogSnapshot& snap,
                                         const std::string& db, Db* state,
                                         peer::v1::ChangeBatch* out) {
  storage::v1::CopyPosition& copy = *state->copy;
  // A resumed copy whose tail the log no longer holds starts over (R7, R12).
  if (copy.target_seq() < node_->log->TrimmedThrough(db)) {
    if (!StartCopy(snap, db, state)) return false;
  }
  const std::vector<catalog::TableRef> tables = CopyTables(snap, db);
  size_t bytes = 0;
  auto t = std::lower_bound(
      tables.begin(), tables.end(), copy.table(),
      [](const catalog::TableRef& def, const std::string& name) { return def->name() < name; });
  for (; t != tables.end(); ++t) {
    if ((*t)->name() != copy.table()) {
      copy.set_table((*t)->name());  // the next table, from its first row
      copy.clear_after_key();
    }
    // A drop, recreate or write of this table may land while the copy reads it (R7).
    CAIRN_RETURN_IF_ERROR(
        CAIRN_FAULT(node_->catalog->options().faults, fault_points::kReplCopyTable));
    std::string after = copy.after_key();
    const size_t before = static_cast<size_t>(out->entries_size());
    CAIRN_ASSIGN_OR_RETURN(bool exhausted, CopyRows(**t, &after, out, &bytes));
    copy.set_rows_done(copy.rows_done() + (static_cast<size_t>(out->entries_size()) - before));
    copy.set_after_key(after);
    if (!exhausted) break;
    // Table done: the next one starts after this name.
    copy.set_table((*t)->name() + std::string(1, '\0'));
    copy.clear_after_key();
  }
  out->set_database(db);
  out->set_head_seq(node_->log->CommittedSeq(db));
  if (t == tables.end()) {
    copy.set_done(true);
    spdlog::info("[{}] full copy of '{}' sent: {} row(s)", node_->records->node_name(), db,
                 copy.rows_done());
  }
  *out->mutable_copy() = copy;
  if (copy.done()) {
    state->sent_seq = state->reported_cursor = copy.target_seq();
    state->copy.reset();
  }
  return true;
}

absl::StatusOr<bool> LogSender::CopyInstead(const catalog::CatalogSnapshot& snap,
                                            const std::string& db, Db* state,
                                            peer::v1::ChangeBatch* out) {
  if (!StartCopy(snap, db, state)) return false;
  return NextCopy(snap, db, state, out);
}

absl::StatusOr<bool> LogSender::NextLog(const catalog::CatalogSnapshot& snap, const std::string& db,
                                        Db* state, peer::v1::ChangeBatch* out) {
  // A read whose every entry the peer gets from its origin (design 0004) moves neither the
  // peer's rows nor its cursor: it is not sent, and the stream reads on.
  for (int read = 0; read < 16; ++read) {
    bool silent = false;
    CAIRN_ASSIGN_OR_RETURN(bool produced, ReadLog(snap, db, state, out, &silent));
    if (!silent) return produced;
    out->Clear();
  }
  more_ = true;  // there may be more to read: the caller comes back (TakeMore)
  return false;
}

absl::StatusOr<bool> LogSender::ReadLog(const catalog::CatalogSnapshot& snap, const std::string& db,
                                        Db* state, peer::v1::ChangeBatch* out, bool* silent) {
  if (std::optional<uint64_t> rewind = holds_.Begin(db)) state->sent_seq = *rewind;  // a replay
  const uint64_t committed = node_->log->CommittedSeq(db);
  if (state->sent_seq > committed) {
    // R15: the peer has passed numbers this log never committed (it lost a tail, or runs on
    // a copy of its directory). An empty tail would skip whatever is written under them now.
    spdlog::warn("[{}] a peer's cursor in '{}' ({}) is beyond this node's log ({}); full copy",
                 node_->records->node_name(), db, state->sent_seq, committed);
    return CopyInstead(snap, db, state, out);
  }
  if (committed == state->sent_seq) {
    // Nothing new, but the peer may now cover what was held: it stores the cursor.
    if (!holds_.advertised() || holds_.CursorFor(db, state->sent_seq) <= state->reported_cursor) {
      return false;
    }
    out->set_database(db);
    out->set_last_seq(state->sent_seq);
    out->set_head_seq(committed);
    state->reported_cursor = holds_.CursorFor(db, state->sent_seq);
    out->set_cursor_seq(state->reported_cursor);
    return true;
  }
  const uint64_t from = state->sent_seq + 1;
  if (from <= node_->log->TrimmedThrough(db)) {
    // The peer's cursor fell out of retention (R12): a full copy instead (R7).
    spdlog::warn("[{}] a peer's cursor in '{}' ({}) is older than the retained log; full copy",
                 node_->records->node_name(), db, state->sent_seq);
    return CopyInstead(snap, db, state, out);
  }
  // Read entries (from, committed], then the rows they name in one MultiGet. The log holds no
  // bodies: an entry whose row has another version now was superseded by a later entry of
  // the same key (which this stream also carries) and is skipped.
  struct Read {
    uint64_t seq;
    ChangeEntry entry;
    uint64_t generation;  // of its table in `snap`; 0: not there (or not replicating)
  };
  bool origin_gap = false;  // an entry of this node's own left out (ChangeBatch.origin_gap)
  std::vector<Read> reads;
  std::vector<std::string> keys;
  std::vector<size_t> keyed;  // index into reads of each key
  uint64_t last = from - 1;
  {
    auto it =
        node_->engine->NewIterator(Cf::kChangeLog, nullptr, storage::LogKey(db, committed + 1));
    size_t scanned = 0;  // bounds the work of a batch whose entries are mostly skipped
    for (it->Seek(ToSlice(storage::LogKey(db, from)));
         it->Valid() && keys.size() < limits_.max_entries && scanned < 8 * limits_.max_entries;
         it->Next(), ++scanned) {
      last = storage::GetBigEndian64(ToView(it->key()).substr(db.size() + 1));
      ChangeEntry e;
      if (!e.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) continue;
      // Excluded (R11) or the peer's own writes, which it holds (peer_): relaying them back
      // doubled every link's traffic. Not for this peer, whatever the catalog says. Except in
      // a table the peer dropped locally (decision 86).
      const bool own = e.origin() == self_;
      if (Excluded(db, e.table())) {
        origin_gap |= own;
        continue;
      }
      if (e.origin() == peer_ && !echo_.contains(std::make_pair(db, e.table()))) continue;
      // Design 0004: the peer gets it from its origin (or it was sent before a replay).
      if (holds_.Classify(db, last, e.origin(), own, e.origin_seq(), e.origin_log_id()) !=
          OriginHolds::Verdict::kSend) {
        continue;
      }
      if (own) {  // where it sits in this node's log, for the peer's adverts
        e.set_origin_seq(last);
        e.set_origin_log_id(node_->log->log_id());
      }
      auto def = snap.FindTable(db, e.table());
      Read r{last, std::move(e), def.ok() && (*def)->replicate() ? (*def)->generation_id() : 0};
      if (r.generation != 0) {
        keys.push_back(storage::RecordKey(r.generation, r.entry.key()));
        keyed.push_back(reads.size());
      }
      reads.push_back(std::move(r));
    }
    CAIRN_RETURN_IF_ERROR(storage::FromRocks(it->status()));
    if (!it->Valid()) last = committed;  // the rest up to the watermark are gaps (R5)
  }
  if (from <= node_->log->TrimmedThrough(db)) {
    // Trimmed while we read: what we read may have holes. Start over as a full copy.
    return CopyInstead(snap, db, state, out);
  }
  std::vector<rocksdb::Slice> slices;
  slices.reserve(keys.size());
  for (const std::string& k : keys) slices.push_back(ToSlice(k));
  std::vector<rocksdb::PinnableSlice> values(keys.size());
  std::vector<rocksdb::Status> statuses(keys.size());
  if (!keys.empty()) {
    node_->engine->db()->MultiGet(rocksdb::ReadOptions(), node_->engine->cf(Cf::kRecords),
                                  keys.size(), slices.data(), values.data(), statuses.data());
  }
  std::vector<std::optional<StoredRecord>> rows(reads.size());
  for (size_t k = 0; k < keys.size(); ++k) {
    if (statuses[k].IsNotFound()) continue;
    CAIRN_RETURN_IF_ERROR(storage::FromRocks(statuses[k]));
    const ChangeEntry& e = reads[keyed[k]].entry;
    StoredRecord rec;
    if (rec.ParseFromArray(values[k].data(), static_cast<int>(values[k].size())) &&
        rec.version() == e.version() && rec.origin() == e.origin()) {
      rows[keyed[k]] = std::move(rec);
    }
  }
  // An entry with no row to send is skipped only when that is provably right (R15): its
  // table's generation in `snap` is still the live one (then the row was superseded, or the
  // table is node-local), or the table is gone. A table created, or dropped and created again,
  // after `snap` was taken is not in it: the batch ends before that entry, and the next round
  // sends a newer DB_SCHEMA first.
  catalog::SnapshotRef live;  // taken after the reads: newer than every entry read
  for (size_t i = 0; i < reads.size(); ++i) {
    if (rows[i].has_value()) continue;
    if (live == nullptr) live = node_->catalog->Snapshot();
    const uint64_t now = LiveGeneration(*live, db, reads[i].entry.table());
    if (now == 0) {
      // Gone here: a write of this node's own not sent, so the peer cannot count on this
      // origin for it (decision 86, a local drop). Unless it was written to the node-local
      // table the name is now (C11): nobody relays those. A write to the replicated table
      // the name held before is no such write (its row generation tells).
      if (reads[i].entry.origin() == self_) {
        auto def = live->FindTable(db, reads[i].entry.table());
        origin_gap |= !def.ok() || (*def)->replicate() ||
                      reads[i].entry.row_generation() != (*def)->created_time();
      }
      continue;
    }
    if (reads[i].generation == now) continue;  // superseded by a later entry of the key
    stale_snapshot_ = true;
    last = reads[i].seq - 1;
    reads.resize(i);
    break;
  }
  if (last < from) return false;  // the first entry needs a newer snapshot
  for (size_t i = 0; i < reads.size(); ++i) {
    if (!rows[i].has_value()) continue;
    ChangeEntry* e = out->add_entries();
    RowEntry(reads[i].entry.table(), reads[i].entry.key(), &*rows[i], e);
    if (reads[i].entry.origin_seq() != 0) {
      e->set_origin_seq(reads[i].entry.origin_seq());
      e->set_origin_log_id(reads[i].entry.origin_log_id());
    }
  }
  holds_.Commit(db, last);
  out->set_database(db);
  out->set_last_seq(last);
  out->set_head_seq(committed);
  out->set_origin_gap(origin_gap);
  // R11: this route leaves tables of `db` out for the peer; it never counts on this node as
  // their origin (or every batch with a write of them would be a gap).
  out->set_origin_excludes(exclusions_.AnyIn(db));
  state->sent_seq = last;
  if (holds_.advertised()) {
    const uint64_t cursor = holds_.CursorFor(db, last);  // never decreases (OriginHolds (2))
    *silent = out->entries_size() == 0 && !origin_gap && cursor == state->reported_cursor;
    state->reported_cursor = cursor;
    out->set_cursor_seq(cursor);
  }
  return true;
}

absl::StatusOr<bool> LogSender::NextRefetch(const catalog::CatalogSnapshot& snap,
                                            peer::v1::ChangeBatch* out) {
  TableCopy& r = refetch_.front();
  out->set_database(r.db);
  out->mutable_refetch()->set_database(r.db);
  out->mutable_refetch()->set_table(r.table);
  auto def = snap.FindTable(r.db, r.table);
  bool exhausted = true;
  if (def.ok() && (*def)->replicate() && !Excluded(r.db, r.table)) {
    size_t bytes = 0;
    CAIRN_ASSIGN_OR_RETURN(exhausted, CopyRows(**def, &r.after_key, out, &bytes));
  }
  out->set_head_seq(node_->log->CommittedSeq(r.db));
  if (exhausted) {
    out->set_refetch_done(true);
    refetch_.pop_front();
  }
  return true;
}

absl::StatusOr<bool> LogSender::Next(const catalog::CatalogSnapshot& snap,
                                     peer::v1::ChangeBatch* out) {
  if (!subscribed_ || stale_snapshot_) return false;
  holds_.Expire();
  // Databases the peer has not heard of get a full copy (R7): every database this node
  // describes (SchemaDatabases) and every one it has logged. A database gets its first log
  // entry only after a table of it was created, so a new one comes with a new snapshot.
  if (snap.version != dbs_version_) {
    dbs_version_ = snap.version;
    for (const std::string& db : SchemaDatabases(snap)) {
      if (db != catalog::kSystemDatabase) dbs_.try_emplace(db);  // no table, no log (U6)
    }
    for (const std::string& db : node_->log->Databases()) dbs_.try_emplace(db);
  }
  // R17: refetches get every kRefetchShare-th batch while databases have work, so that
  // steady writes anywhere do not starve them.
  if (!refetch_.empty() && ++refetch_turn_ % kRefetchShare == 0) return NextRefetch(snap, out);
  // Round robin, starting after the database served last.
  auto start = dbs_.upper_bound(last_db_);
  for (size_t n = 0; n < dbs_.size(); ++n, ++start) {
    if (start == dbs_.end()) start = dbs_.begin();
    const std::string& db = start->first;
    Db& state = start->second;
    bool produced = false;
    if (!state.started && !StartCopy(snap, db, &state)) continue;
    if (state.copy.has_value()) {
      CAIRN_ASSIGN_OR_RETURN(produced, NextCopy(snap, db, &state, out));
    } else {
      CAIRN_ASSIGN_OR_RETURN(produced, NextLog(snap, db, &state, out));
    }
    if (produced) {
      last_db_ = db;
      return true;
    }
  }
  if (!refetch_.empty()) return NextRefetch(snap, out);
  return false;
}

// ---------------------------------------------------------------------------------------------
// ReceiverState

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
        p.copy_started = absl::Now();
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
    if (p.head > p.cursor) s.lag_entries += p.head - p.cursor;
    s.newest_applied_ms = std::max<int64_t>(
        s.newest_applied_ms, static_cast<int64_t>(HybridClock::PhysicalMs(p.newest_version)));
    if (p.copy.has_value()) {
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
