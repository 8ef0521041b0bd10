// Catalog drops (SPEC C7-C11, C14): the local drop protocol, forwarded peer drops and markers.
// The rest of Catalog is in catalog.cc (publish, creates), catalog_load.cc (open, restart
// recovery), catalog_attributes.cc (attributes) and catalog_peer.cc (peer definitions).
#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "catalog/catalog.h"
#include "catalog/internal/catalog_rows.h"
#include "catalog/names.h"
#include "common/fault_points.h"
#include "common/status.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"
#include "storage/rocksdb_status.h"

namespace cairn::catalog {

using internal::DeleteAttributeMarkers;
using internal::EraseAttributeMarkers;
using internal::MarkerId;
using internal::PeersWithCursorIn;
using internal::PutProto;
using internal::Qualified;
using internal::SubsumedAttributeMarkers;
using storage::Cf;
using storage::ToSlice;

namespace {

// Whether `generation` holds peer rows with a row generation in [lo, hi) (storage::RowGenKey).
absl::StatusOr<bool> HoldsRowGenerations(storage::Engine* engine, uint64_t generation, Hlc lo,
                                         std::optional<Hlc> hi) {
  const std::string end =
      hi.has_value() ? storage::RowGenKey(generation, *hi) : storage::RowGenPrefix(generation + 1);
  auto it = engine->NewIterator(Cf::kMeta, nullptr, end);
  it->Seek(ToSlice(storage::RowGenKey(generation, lo)));
  if (it->Valid()) return true;
  CAIRN_RETURN_IF_ERROR(storage::FromRocks(it->status()));
  return false;
}

// What a local-only drop (or a node-local table's drop) records for the table's return.
// Decision 44: it leaves no marker, so a peer's table of the name may come back here with
// the peer's next snapshot (C5). The rows this node applied from that peer before (or skipped
// while its own node-local table held the name) must come back with it: every peer with a
// cursor in the database is asked again for the table once it is live here again (refetch
// value 0: "after a local drop"). Decision 86: a write of this node still on its way to a
// peer when its copy went lands in that peer's log with this node's origin, after the
// refetch copied the peer's rows; log streams send such writes back here from now on.
absl::Status PutLocalDropFollowUps(storage::Engine* engine, absl::string_view db,
                                   absl::string_view table, bool replicate,
                                   rocksdb::WriteBatch* batch) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> peers, PeersWithCursorIn(engine, db));
  const std::string zero(8, '\0');
  for (const std::string& peer : peers) {
    batch->Put(engine->cf(Cf::kMeta), ToSlice(storage::RefetchKey(db, table, peer)), zero)
        .PermitUncheckedError();
  }
  if (replicate) {
    batch->Put(engine->cf(Cf::kMeta), ToSlice(storage::EchoKey(db, table)), "")
        .PermitUncheckedError();
  }
  return absl::OkStatus();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Drops (C7, C8, C9, C11, C14).

absl::Status Catalog::Tombstone(const DatabaseLock& lock, const TableRef& def, bool timed,
                                Hlc dropped_time) {
  lock.AssertCovers(def->database());
  v1::Tombstone tombstone;
  {
    absl::MutexLock id_lock(&mu_);
    tombstone.set_drop_id(next_drop_id_++);
  }
  tombstone.set_incarnation(options_.incarnation);
  tombstone.set_timed(timed);
  if (timed) tombstone.set_dropped_time(dropped_time);
  v1::TableRow row = def->row();
  *row.mutable_tombstone() = tombstone;
  rocksdb::WriteBatch batch;
  PutProto(engine_, &batch, Cf::kCatalog,
           storage::TableKey(def->database(), def->name(), def->generation_id()), row);
  // The tombstone's time is the name's marker from here on (it is as durable): the attribute
  // markers it subsumes go in its batch (C15 with C6).
  const std::vector<std::string> subsumed =
      timed ? SubsumedAttributeMarkers(*Snapshot(), def->database(), def->name(), dropped_time)
            : std::vector<std::string>();
  DeleteAttributeMarkers(engine_, def->database(), def->name(), subsumed, &batch);
  if (!timed) {
    // Recorded in the tombstone's batch: the name is free for a peer's table from this step
    // on, whether or not steps 2 and 3 complete (a drain that times out, a failure before
    // the final batch), so no later failure may lose them.
    CAIRN_RETURN_IF_ERROR(
        PutLocalDropFollowUps(engine_, def->database(), def->name(), def->replicate(), &batch));
  }
  CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));

  {
    absl::MutexLock pending_lock(&mu_);
    pending_drops_[def->generation_id()] = PendingDrop{def, tombstone};
  }
  Publish(lock, def->name(), [&](CatalogSnapshot* next) {
    PutTable(next, def->database(), def->name(), nullptr);
    next->dropping.insert(MarkerId(def->database(), def->name()));
    if (timed) {
      Hlc& m = next->markers[MarkerId(def->database(), def->name())];
      m = std::max(m, dropped_time);
    }
    EraseAttributeMarkers(next, def->database(), def->name(), subsumed);
  });
  return absl::OkStatus();
}

std::vector<uint64_t> Catalog::PendingDropsOf(const DatabaseLock& lock, absl::string_view db,
                                              absl::string_view table, bool stalled_only) const {
  lock.AssertCovers(db);
  std::vector<uint64_t> out;
  absl::MutexLock pending_lock(&mu_);
  for (const auto& [generation, pending] : pending_drops_) {
    if (pending.def->database() == db && pending.def->name() == table &&
        (!stalled_only || pending.drainers == 0)) {
      out.push_back(generation);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

DropStats Catalog::drop_stats() const {
  DropStats stats;
  {
    absl::MutexLock lock(&mu_);
    stats.in_progress = pending_drops_.size();
  }
  stats.drains = drains_.load(std::memory_order_relaxed);
  stats.drain_timeouts = drain_timeouts_.load(std::memory_order_relaxed);
  stats.drain_time_total = absl::Microseconds(drain_micros_total_.load(std::memory_order_relaxed));
  stats.rows_retired = rows_retired_.load(std::memory_order_relaxed);
  return stats;
}

absl::Status Catalog::DrainAndFinish(const std::vector<uint64_t>& generations) {
  CAIRN_RETURN_IF_ERROR(CAIRN_FAULT(options_.faults, fault_points::kDropAfterTombstone));
  for (uint64_t generation : generations) {
    PendingDrop pending;
    {
      absl::MutexLock lock(&mu_);
      auto it = pending_drops_.find(generation);
      if (it == pending_drops_.end()) continue;  // a concurrent drop finished it
      pending = it->second;
      ++it->second.drainers;
    }
    // Until step 3 erases the entry, this thread counts as draining it.
    auto done_draining = absl::MakeCleanup([this, generation] {
      absl::MutexLock lock(&mu_);
      auto it = pending_drops_.find(generation);
      if (it != pending_drops_.end()) --it->second.drainers;
    });
    // Step 2, outside every catalog lock: refuse new work, cancel scans, wait for in-flight
    // operations of this generation only.
    const absl::Time drain_start = absl::Now();
    absl::Status drained =
        pending.def->state()->gate().Close(drain_start + options_.drop_drain_timeout);
    drain_micros_total_.fetch_add(absl::ToInt64Microseconds(absl::Now() - drain_start),
                                  std::memory_order_relaxed);
    (drained.ok() ? drains_ : drain_timeouts_).fetch_add(1, std::memory_order_relaxed);
    if (!drained.ok()) {
      spdlog::warn(
          "[{}] drop of {} did not drain: {}; the table stays unavailable until a "
          "retry of the drop completes it",
          options_.node_name, pending.def->QualifiedName(), drained.ToString());
      return Error(ErrorCode::kTableDropping,
                   absl::StrCat("drop of '", pending.def->QualifiedName(),
                                "' timed out waiting for in-flight operations (", drained.message(),
                                "); retry the drop to complete it"));
    }
    CAIRN_RETURN_IF_ERROR(CAIRN_FAULT(options_.faults, fault_points::kDropAfterDrain));
    const TableRef& def = pending.def;
    DatabaseLock lock(this, def->database());
    {
      // A concurrent drop of the name may have finished it meanwhile (under this lock).
      absl::MutexLock pending_lock(&mu_);
      if (!pending_drops_.contains(generation)) continue;
    }
    // Step 3.
    CAIRN_RETURN_IF_ERROR(FinishDrop(lock, def->row(), pending.tombstone));
    {
      absl::MutexLock pending_lock(&mu_);
      pending_drops_.erase(generation);
    }
    if (PendingDropsOf(lock, def->database(), def->name()).empty()) {
      // Nothing a peer is sent changes: journaled as a change of the database only.
      Publish(lock, "", [&](CatalogSnapshot* next) {
        next->dropping.erase(MarkerId(def->database(), def->name()));
      });
    }
  }
  return absl::OkStatus();
}

absl::Status Catalog::FinishDrop(const DatabaseLock& lock, const v1::TableRow& row,
                                 const v1::Tombstone& tombstone) {
  lock.AssertCovers(row.database());
  const uint64_t generation = row.generation_id();
  const std::string begin = storage::GenerationPrefix(generation);
  const std::string end = storage::GenerationPrefix(generation + 1);
  const std::string attrs_begin = storage::AttributePrefix(generation);
  const std::string attrs_end = storage::AttributePrefix(generation + 1);

  rocksdb::WriteBatch batch;
  batch.DeleteRange(engine_->cf(Cf::kRecords), ToSlice(begin), ToSlice(end)).PermitUncheckedError();
  batch.DeleteRange(engine_->cf(Cf::kIndexes), ToSlice(begin), ToSlice(end)).PermitUncheckedError();
  batch.DeleteRange(engine_->cf(Cf::kCatalog), ToSlice(attrs_begin), ToSlice(attrs_end))
      .PermitUncheckedError();
  batch
      .Delete(engine_->cf(Cf::kCatalog),
              ToSlice(storage::TableKey(row.database(), row.name(), generation)))
      .PermitUncheckedError();
  batch.Delete(engine_->cf(Cf::kMeta), ToSlice(storage::CountKey(generation)))
      .PermitUncheckedError();
  const std::string strips = storage::StripKey(generation, "");
  const std::string strips_end = storage::StripKey(generation + 1, "");
  batch.DeleteRange(engine_->cf(Cf::kMeta), ToSlice(strips), ToSlice(strips_end))
      .PermitUncheckedError();
  batch.Delete(engine_->cf(Cf::kMeta), ToSlice(storage::PurgeKey(generation)))
      .PermitUncheckedError();
  batch
      .DeleteRange(engine_->cf(Cf::kMeta), ToSlice(storage::RowGenPrefix(generation)),
                   ToSlice(storage::RowGenPrefix(generation + 1)))
      .PermitUncheckedError();
  batch
      .DeleteRange(engine_->cf(Cf::kMeta), ToSlice(storage::ShadowKey(generation, "")),
                   ToSlice(storage::ShadowKey(generation + 1, "")))
      .PermitUncheckedError();
  if (tombstone.timed()) {
    // R14: rows of a generation newer than the drop, relayed into this one, must not die
    // with it. Every peer this node has applied rows from is asked again for the table
    // (replication reads the refetch row); recorded in the drop's own batch.
    CAIRN_ASSIGN_OR_RETURN(
        bool newer_rows,
        HoldsRowGenerations(engine_, generation, tombstone.dropped_time(), std::nullopt));
    if (newer_rows) {
      CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> peers,
                             PeersWithCursorIn(engine_, row.database()));
      std::string when;
      storage::PutBigEndian64(tombstone.dropped_time(), &when);
      for (const std::string& peer : peers) {
        batch
            .Put(engine_->cf(Cf::kMeta),
                 ToSlice(storage::RefetchKey(row.database(), row.name(), peer)), when)
            .PermitUncheckedError();
      }
      spdlog::warn(
          "[{}] {}.{}: the retired generation held rows of a newer generation; "
          "asking {} peer(s) for them again (R14)",
          options_.node_name, row.database(), row.name(), peers.size());
    }
  }
  if (tombstone.timed()) {
    // The generations this node wrote before a local-only drop are dead now (C8).
    batch.Delete(engine_->cf(Cf::kMeta), ToSlice(storage::EchoKey(row.database(), row.name())))
        .PermitUncheckedError();
  } else {
    // Written with the tombstone already; again here for a tombstone of a binary that did
    // not (C10 completes it). A refetch already served then runs once more: ties under D5.
    CAIRN_RETURN_IF_ERROR(
        PutLocalDropFollowUps(engine_, row.database(), row.name(), row.replicate(), &batch));
  }
  if (tombstone.timed()) {
    // The marker only moves forward.
    const std::string key = storage::MarkerKey(row.database(), row.name());
    std::string value;
    bool found = false;
    CAIRN_RETURN_IF_ERROR(engine_->Get(Cf::kCatalog, key, &value, &found));
    v1::DropMarker held;
    if (found) held.ParseFromString(value);
    if (!found || held.dropped_time() < tombstone.dropped_time()) {
      v1::DropMarker marker;
      marker.set_dropped_time(tombstone.dropped_time());
      PutProto(engine_, &batch, Cf::kCatalog, key, marker);
    }
  }
  CAIRN_RETURN_IF_ERROR(CAIRN_FAULT(options_.faults, fault_points::kDropBeforeFinalCommit));
  CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
  // why ignored: the drop is complete; only crash, delay and block matter here.
  CAIRN_FAULT(options_.faults, fault_points::kDropAfterFinalCommit).IgnoreError();
  return absl::OkStatus();
}

absl::StatusOr<DropResult> Catalog::DropTable(absl::string_view db, absl::string_view table,
                                              bool timed) {
  std::vector<uint64_t> generations;
  DropResult result;
  {
    DatabaseLock lock(this, db);
    auto live = Snapshot()->FindTable(db, table);
    generations = PendingDropsOf(lock, db, table);
    if (!live.ok()) {
      // A retry of a drop whose drain timed out completes it.
      if (generations.empty()) return live.status();
      absl::MutexLock pending_lock(&mu_);
      // Present: entries of `db` are erased only under its lock, held here.
      const v1::Tombstone& t = pending_drops_.at(generations.back()).tombstone;
      result.timed = t.timed();
      result.dropped_time = t.dropped_time();
    } else {
      const TableRef& def = *live;
      result.timed = timed && def->replicate();  // C11: a node-local drop is never timed
      if (result.timed) {
        // C7, saturating (C16): a drop that cannot be stamped after its generation is refused.
        CAIRN_ASSIGN_OR_RETURN(const Hlc now, options_.hlc->Now());
        CAIRN_ASSIGN_OR_RETURN(
            const Hlc after_create,
            HlcAfter(def->created_time(), absl::StrCat("the drop of ", def->QualifiedName())));
        result.dropped_time = std::max(now, after_create);
      }
      CAIRN_RETURN_IF_ERROR(Tombstone(lock, def, result.timed, result.dropped_time));
      generations.push_back(def->generation_id());
    }
  }
  CAIRN_RETURN_IF_ERROR(DrainAndFinish(generations));
  return result;
}

absl::StatusOr<DropResult> Catalog::DropDatabase(absl::string_view db, bool timed) {
  std::vector<std::string> tables;
  {
    DatabaseLock lock(this, db);
    const SnapshotRef base = Snapshot();
    tables = DropNamesOf(lock, *base, db);
    if (base->FindDatabase(db) == nullptr && tables.empty()) {
      return Error(ErrorCode::kDatabaseNotFound,
                   absl::StrCat("database '", db, "' does not exist"));
    }
  }
  // Every table, even after one fails to drain: each drop stands on its own, and a retry of
  // the drop_database (or of the table's drop) completes the ones left pending (C9).
  DropResult result;
  absl::Status first_error;
  for (const std::string& t : tables) {
    auto dropped = DropTable(db, t, timed);
    if (!dropped.ok()) {
      if (GetErrorCode(dropped.status()) == ErrorCode::kTableNotFound) continue;  // raced
      if (first_error.ok()) first_error = dropped.status();
      continue;
    }
    if (dropped->timed) {
      // Each table keeps its own stamp (C7): one stamp for all, the latest, would retire on
      // peers a table created here while the drop went on, which this node keeps.
      result.dropped_time = result.timed ? std::min(result.dropped_time, dropped->dropped_time)
                                         : dropped->dropped_time;
      result.timed = true;
      result.tables.emplace_back(t, dropped->dropped_time);
    }
  }
  CAIRN_RETURN_IF_ERROR(first_error);
  if (timed) {
    // P1: the database marker, after every table's stamp, retires this incarnation's
    // placement everywhere: a lagging peer's copy of it never brings the database back.
    Hlc after_tables = 0;
    for (const auto& [t, stamp] : result.tables) after_tables = std::max(after_tables, stamp);
    CAIRN_ASSIGN_OR_RETURN(const Hlc now, options_.hlc->Now());
    CAIRN_ASSIGN_OR_RETURN(const Hlc after,
                           HlcAfter(after_tables, absl::StrCat("the drop of database '", db, "'")));
    result.database_marker = std::max(now, after);
    DatabaseLock lock(this, db);
    CAIRN_RETURN_IF_ERROR(MergePlacement(lock, db, nullptr, result.database_marker));
  }
  CAIRN_RETURN_IF_ERROR(RemoveDatabaseIfEmpty(db));
  return result;
}

absl::Status Catalog::RemoveDatabaseIfEmpty(absl::string_view db) {
  DatabaseLock lock(this, db);
  const SnapshotRef base = Snapshot();
  const DatabaseDef* d = base->FindDatabase(db);
  if (d == nullptr) return absl::OkStatus();
  // A drop of one of its names still pending (a concurrent drop that timed out): the
  // database stays until a retry completes it (C9).
  if (DropNamesOf(lock, *base, db).size() != d->tables.size()) return absl::OkStatus();
  if (!d->tables.empty()) {
    // A table was created in it meanwhile, or a peer's newer or a node-local table survived
    // (C14): it lives, and so does its database.
    spdlog::info("[{}] database {} keeps {} table(s) that survived its drop", options_.node_name,
                 std::string(db), d->tables.size());
    return absl::OkStatus();
  }
  rocksdb::WriteBatch batch;
  batch.Delete(engine_->cf(Cf::kCatalog), ToSlice(storage::DatabaseKey(db))).PermitUncheckedError();
  CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
  Publish(lock, "", [&](CatalogSnapshot* next) { next->databases.erase(std::string(db)); });
  return absl::OkStatus();
}

std::vector<std::string> Catalog::DropNamesOf(const DatabaseLock& lock, const CatalogSnapshot& base,
                                              absl::string_view db) const {
  lock.AssertCovers(db);
  std::set<std::string> names;
  if (const DatabaseDef* d = base.FindDatabase(db)) {
    for (const auto& [name, def] : d->tables) names.insert(name);
  }
  absl::MutexLock pending_lock(&mu_);
  for (const auto& [generation, pending] : pending_drops_) {
    if (pending.def->database() == db) names.insert(pending.def->name());
  }
  return {names.begin(), names.end()};
}

absl::StatusOr<bool> Catalog::RecordMarker(const DatabaseLock& lock, const CatalogSnapshot& base,
                                           absl::string_view db, absl::string_view table,
                                           Hlc dropped_time) {
  lock.AssertCovers(db);
  if (dropped_time <= base.MarkerFor(db, table)) return false;
  v1::DropMarker marker;
  marker.set_dropped_time(dropped_time);
  rocksdb::WriteBatch batch;
  PutProto(engine_, &batch, Cf::kCatalog, storage::MarkerKey(db, table), marker);
  DeleteAttributeMarkers(engine_, db, table,
                         SubsumedAttributeMarkers(base, db, table, dropped_time), &batch);
  CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
  return true;
}

absl::StatusOr<PeerDropResult> Catalog::ApplyPeerDrop(absl::string_view db, absl::string_view table,
                                                      Hlc dropped_time) {
  CAIRN_RETURN_IF_ERROR(ValidateDatabaseName(db));
  CAIRN_RETURN_IF_ERROR(ValidateTableName(table));
  options_.hlc->Observe(dropped_time);
  uint64_t generation = 0;  // the generation this drop retires, if any
  // Drops of the name left pending by an earlier drain timeout: this drop completes them too
  // (C9, whichever drop retries), outside the lock.
  std::vector<uint64_t> pending;
  PeerDropResult result = PeerDropResult::kDropped;
  {
    // The decision and the tombstone are one critical section (C8 "re-checked under the
    // catalog lock"): a recreate cannot slip in between.
    DatabaseLock lock(this, db);
    const SnapshotRef base = Snapshot();
    // Only stalled ones: a drain in progress in another thread (the same drop arriving as a
    // snapshot marker and as a forwarded drop) finishes or times out on its own; waiting for
    // it here would only delay this answer.
    pending = PendingDropsOf(lock, db, table, /*stalled_only=*/true);
    auto live = base->FindTable(db, table);
    if (!live.ok() || !(*live)->replicate() ||
        !IsDeadGeneration((*live)->created_time(), dropped_time)) {
      // Absent, node-local (C11) or newer: kept. The marker is recorded either way so it
      // reaches nodes that still hold older copies.
      if (live.ok() && (*live)->replicate() && dropped_time > base->MarkerFor(db, table)) {
        // A kept replicating generation: the marker is published with a new definition, so
        // a peer apply that checked row generations against the old marker re-checks them
        // (GenerationState (1)); the caller's purge then sees every row it must remove.
        rocksdb::WriteBatch batch;
        v1::DropMarker marker;
        marker.set_dropped_time(dropped_time);
        PutProto(engine_, &batch, Cf::kCatalog, storage::MarkerKey(db, table), marker);
        const std::vector<std::string> subsumed =
            SubsumedAttributeMarkers(*base, db, table, dropped_time);
        DeleteAttributeMarkers(engine_, db, table, subsumed, &batch);
        // Rows of older generations relayed into this one die with the marker (C8). The
        // purge is recorded in the marker's batch, so a crash before it runs cannot skip it
        // (the marker, once held, is never applied again); RecordStore runs it. Whether
        // there is anything to purge is decided behind the fence: a peer apply that resolved
        // against the old marker may hold its keys with such a row not yet committed, and
        // only the exclusive schema lock waits for it (decisions 17, 56).
        const uint64_t generation_id = (*live)->generation_id();
        auto decide_purge = [&](rocksdb::WriteBatch* b, AttributeStamps*,
                                AttributeStamps* markers) -> absl::Status {
          for (const std::string& name : subsumed) markers->erase(name);
          CAIRN_ASSIGN_OR_RETURN(bool older_rows,
                                 HoldsRowGenerations(engine_, generation_id, 0, dropped_time));
          if (older_rows) {
            std::string value;
            storage::PutBigEndian64(dropped_time, &value);
            b->Put(engine_->cf(Cf::kMeta), ToSlice(storage::PurgeKey(generation_id)), value)
                .PermitUncheckedError();
          }
          return absl::OkStatus();
        };
        const std::pair<std::string, std::string> id = MarkerId(db, table);
        CAIRN_RETURN_IF_ERROR(ReplaceDefinition(
                                  lock, *live, (*live)->row(), (*live)->attributes(), &batch,
                                  [&](CatalogSnapshot* next) {
                                    next->markers[id] = dropped_time;
                                    EraseAttributeMarkers(next, db, table, subsumed);
                                  },
                                  decide_purge)
                                  .status());
      } else {
        CAIRN_ASSIGN_OR_RETURN(bool recorded, RecordMarker(lock, *base, db, table, dropped_time));
        if (recorded) {
          Publish(lock, table, [&](CatalogSnapshot* next) {
            next->markers[MarkerId(db, table)] = dropped_time;
            EraseAttributeMarkers(next, db, table,
                                  SubsumedAttributeMarkers(*base, db, table, dropped_time));
          });
        }
      }
      // Absent with a drop pending: the name is dropped once that drop completes below.
      result = live.ok()         ? PeerDropResult::kKept
               : pending.empty() ? PeerDropResult::kAbsent
                                 : PeerDropResult::kDropped;
    } else {
      CAIRN_RETURN_IF_ERROR(Tombstone(lock, *live, /*timed=*/true, dropped_time));
      generation = (*live)->generation_id();
      pending.push_back(generation);
    }
  }
  if (pending.empty()) return result;
  // The rows die with their generation (the drop is the older fact, SPEC §5): never silently.
  uint64_t rows = 0;
  if (generation != 0) {
    std::string value;
    bool found = false;
    CAIRN_RETURN_IF_ERROR(engine_->Get(Cf::kMeta, storage::CountKey(generation), &value, &found));
    if (found) rows = static_cast<uint64_t>(std::max<int64_t>(0, storage::DecodeCount(value)));
  }
  CAIRN_RETURN_IF_ERROR(DrainAndFinish(pending));
  if (rows > 0) {
    CountRetiredRows(rows);
    spdlog::warn("[{}] {} row(s) of {} died with their generation, retired by a peer's drop at {}",
                 options_.node_name, rows, Qualified(db, table), dropped_time);
  }
  return result;
}

absl::StatusOr<std::vector<std::pair<std::string, PeerDropResult>>> Catalog::ApplyPeerDropDatabase(
    absl::string_view db, Hlc dropped_time) {
  return ApplyPeerDropDatabase(db, [dropped_time](const std::string&) { return dropped_time; });
}

absl::StatusOr<std::vector<std::pair<std::string, PeerDropResult>>> Catalog::ApplyPeerDropDatabase(
    absl::string_view db, const TableStampFn& stamp_of) {
  CAIRN_RETURN_IF_ERROR(ValidateDatabaseName(db));
  std::vector<std::string> tables;
  {
    DatabaseLock lock(this, db);
    tables = DropNamesOf(lock, *Snapshot(), db);  // live tables and names with a drop pending (C9)
  }
  // Every table, even after one fails to drain (as DropDatabase).
  std::vector<std::pair<std::string, PeerDropResult>> results;
  absl::Status first_error;
  for (const std::string& t : tables) {
    const std::optional<Hlc> stamp = stamp_of(t);
    if (!stamp.has_value()) continue;  // kept (R11): the database stays with it
    absl::StatusOr<PeerDropResult> r = ApplyPeerDrop(db, t, *stamp);
    if (!r.ok()) {
      if (first_error.ok()) first_error = r.status();
      continue;
    }
    results.emplace_back(t, *r);
  }
  CAIRN_RETURN_IF_ERROR(first_error);
  CAIRN_RETURN_IF_ERROR(RemoveDatabaseIfEmpty(db));
  return results;
}

}  // namespace cairn::catalog
