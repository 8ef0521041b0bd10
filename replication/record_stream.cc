// LogSender (record_stream.h): what this node sends a subscriber, from its change log, a full
// copy or a refetch. The subscriber's side, ReceiverState, is record_stream_receive.cc.
#include "replication/record_stream.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "catalog/names.h"
#include "catalog/placement.h"
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
  if (committed == state->sent_seq) return CursorOnly(db, committed, state, out);
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
  LogScan scan;
  scan.last = from - 1;
  CAIRN_RETURN_IF_ERROR(ScanLog(snap, db, from, committed, &scan));
  if (from <= node_->log->TrimmedThrough(db)) {
    // Trimmed while we read: what we read may have holes. Start over as a full copy.
    return CopyInstead(snap, db, state, out);
  }
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::optional<StoredRecord>> rows, ReadRows(scan.reads));
  CutAtNewerTable(db, rows, &scan);
  if (scan.last < from) return false;  // the first entry needs a newer snapshot
  for (size_t i = 0; i < scan.reads.size(); ++i) {
    if (!rows[i].has_value()) continue;
    const ChangeEntry& read = scan.reads[i].entry;
    ChangeEntry* e = out->add_entries();
    RowEntry(read.table(), read.key(), &*rows[i], e);
    if (read.origin_seq() != 0) {
      e->set_origin_seq(read.origin_seq());
      e->set_origin_log_id(read.origin_log_id());
    }
  }
  holds_.Commit(db, scan.last);
  out->set_database(db);
  out->set_last_seq(scan.last);
  out->set_head_seq(committed);
  out->set_origin_gap(scan.origin_gap);
  // R11: this route leaves tables of `db` out for the peer; it never counts on this node as
  // their origin (or every batch with a write of them would be a gap).
  out->set_origin_excludes(exclusions_.AnyIn(db));
  state->sent_seq = scan.last;
  if (holds_.advertised()) {
    const uint64_t cursor = holds_.CursorFor(db, scan.last);  // never decreases (OriginHolds (2))
    *silent = out->entries_size() == 0 && !scan.origin_gap && cursor == state->reported_cursor;
    state->reported_cursor = cursor;
    out->set_cursor_seq(cursor);
  }
  return true;
}

bool LogSender::CursorOnly(const std::string& db, uint64_t committed, Db* state,
                           peer::v1::ChangeBatch* out) {
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

absl::Status LogSender::ScanLog(const catalog::CatalogSnapshot& snap, const std::string& db,
                                uint64_t from, uint64_t committed, LogScan* scan) {
  auto it = node_->engine->NewIterator(Cf::kChangeLog, nullptr, storage::LogKey(db, committed + 1));
  size_t scanned = 0;  // bounds the work of a batch whose entries are mostly skipped
  size_t keyed = 0;    // reads with a row to look up
  for (it->Seek(ToSlice(storage::LogKey(db, from)));
       it->Valid() && keyed < limits_.max_entries && scanned < 8 * limits_.max_entries;
       it->Next(), ++scanned) {
    const uint64_t seq = storage::GetBigEndian64(ToView(it->key()).substr(db.size() + 1));
    scan->last = seq;
    ChangeEntry e;
    if (!e.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) continue;
    // Excluded (R11) or the peer's own writes, which it holds (peer_): relaying them back
    // doubled every link's traffic. Not for this peer, whatever the catalog says. Except in
    // a table the peer dropped locally (decision 86).
    const bool own = e.origin() == self_;
    if (Excluded(db, e.table())) {
      scan->origin_gap |= own;
      continue;
    }
    if (e.origin() == peer_ && !echo_.contains(std::make_pair(db, e.table()))) continue;
    // Design 0004: the peer gets it from its origin (or it was sent before a replay).
    if (holds_.Classify(db, seq, e.origin(), own, e.origin_seq(), e.origin_log_id()) !=
        OriginHolds::Verdict::kSend) {
      continue;
    }
    if (own) {  // where it sits in this node's log, for the peer's adverts
      e.set_origin_seq(seq);
      e.set_origin_log_id(node_->log->log_id());
    }
    auto def = snap.FindTable(db, e.table());
    const uint64_t generation = def.ok() && (*def)->replicate() ? (*def)->generation_id() : 0;
    if (generation != 0) ++keyed;
    scan->reads.push_back(LogRead{seq, std::move(e), generation});
  }
  CAIRN_RETURN_IF_ERROR(storage::FromRocks(it->status()));
  if (!it->Valid()) scan->last = committed;  // the rest up to the watermark are gaps (R5)
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::optional<StoredRecord>>> LogSender::ReadRows(
    const std::vector<LogRead>& reads) {
  std::vector<std::string> keys;
  std::vector<size_t> keyed;  // index into reads of each key
  for (size_t i = 0; i < reads.size(); ++i) {
    if (reads[i].generation == 0) continue;
    keys.push_back(storage::RecordKey(reads[i].generation, reads[i].entry.key()));
    keyed.push_back(i);
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
  return rows;
}

void LogSender::CutAtNewerTable(const std::string& db,
                                const std::vector<std::optional<StoredRecord>>& rows,
                                LogScan* scan) {
  // An entry with no row to send is skipped only when that is provably right (R15): its
  // table's generation in `snap` is still the live one (then the row was superseded, or the
  // table is node-local), or the table is gone. A table created, or dropped and created again,
  // after `snap` was taken is not in it: the batch ends before that entry, and the next round
  // sends a newer DB_SCHEMA first.
  catalog::SnapshotRef live;  // taken after the reads: newer than every entry read
  std::vector<LogRead>& reads = scan->reads;
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
        scan->origin_gap |= !def.ok() || (*def)->replicate() ||
                            reads[i].entry.row_generation() != (*def)->created_time();
      }
      continue;
    }
    if (reads[i].generation == now) continue;  // superseded by a later entry of the key
    stale_snapshot_ = true;
    scan->last = reads[i].seq - 1;
    reads.resize(i);
    return;
  }
}

absl::StatusOr<bool> LogSender::NextRefetch(const catalog::CatalogSnapshot& snap,
                                            peer::v1::ChangeBatch* out) {
  TableCopy& r = refetch_.front();
  out->set_database(r.db);
  out->mutable_refetch()->set_database(r.db);
  out->mutable_refetch()->set_table(r.table);
  auto def = snap.FindTable(r.db, r.table);
  bool exhausted = true;
  if (def.ok() && (*def)->replicate() && !Excluded(r.db, r.table) &&
      catalog::HoldsRowsOf(snap, r.db, peer_)) {  // P3: rows only to members
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

void LogSender::ForgetNonMembers(const catalog::CatalogSnapshot& snap) {
  for (auto& [db, state] : dbs_) {
    if (!state.started || catalog::HoldsRowsOf(snap, db, peer_)) continue;
    state = Db{};
    holds_.ResetDatabase(db);
  }
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
    ForgetNonMembers(snap);
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
    if (!catalog::HoldsRowsOf(snap, db, peer_)) continue;  // P3 (ForgetNonMembers)
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

}  // namespace cairn::replication
