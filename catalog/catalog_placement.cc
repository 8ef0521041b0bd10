// Catalog: databases and their placements (SPEC C14; design 0013, P1, P2, P6). A placement is
// a stamped definition of its database, merged last-writer-wins; a timed drop_database leaves
// a database marker that retires every placement stamped before it. The rest of Catalog:
// catalog.cc.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "catalog/catalog.h"
#include "catalog/internal/catalog_rows.h"
#include "catalog/names.h"
#include "catalog/placement.h"
#include "common/status.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"

namespace cairn::catalog {

using internal::PutProto;
using storage::Cf;
using storage::ToSlice;

namespace {

// Design 0013, P3 (3): this node becomes a member of `d`. A peer that streamed the database
// to it while this node held it was not (their placements disagreed) had its entries dropped
// here, behind the cursor it moved; each such peer (one with a cursor in the database) is
// asked again for every replicated table (R14: a merging copy), in the placement's batch. A
// peer that held back instead sends a full copy of its own accord (LogSender::Next).
// P7: the same batch deletes those cursors. One written before the join proves nothing of
// what this node holds now (it may date from an earlier membership), and a peer that does not
// count this node as a member yet answers its refetch with nothing; so readiness waits for a
// cursor written after the join, by a streaming peer's next batch or a full copy.
absl::Status PutJoinRefetches(storage::Engine* engine, const DatabaseDef& d, Hlc stamp,
                              rocksdb::WriteBatch* batch) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> peers,
                         internal::PeersWithCursorIn(engine, d.name));
  std::string when;
  storage::PutBigEndian64(stamp, &when);
  // why ignored (both): WriteBatch fails only beyond 4 GiB.
  for (const std::string& peer : peers) {
    batch
        ->Delete(engine->cf(storage::Cf::kMeta), storage::ToSlice(storage::CursorKey(peer, d.name)))
        .PermitUncheckedError();
    for (const auto& [name, def] : d.tables) {
      if (!def->replicate()) continue;
      batch
          ->Put(engine->cf(storage::Cf::kMeta),
                storage::ToSlice(storage::RefetchKey(d.name, name, peer)), when)
          .PermitUncheckedError();
    }
  }
  return absl::OkStatus();
}

// P7 after a placement change that is written whatever it says: a failed check is logged,
// and the next batch or change checks again.
void CheckReadiness(Catalog* catalog, absl::string_view db) {
  const absl::Status s = catalog->MarkReadyIfCaughtUp(db);
  if (!s.ok()) {
    spdlog::warn("[{}] readiness of database '{}' not checked: {}", catalog->options().node_name,
                 std::string(db), s.ToString());
  }
}

// `previous`: the placement it replaces (P7: its members that were not ready are catching
// up); none for a new database, whose members hold everything there is.
v1::Placement MakePlacement(const PlacementSpec& spec, Hlc stamp, absl::string_view origin,
                            const v1::Placement* previous = nullptr) {
  v1::Placement p;
  for (const std::string& m : spec.members) p.add_members(m);
  if (previous != nullptr) {
    for (std::string& m : CatchingUpAfter(*previous, spec.members)) {
      p.add_catching_up(std::move(m));
    }
  }
  p.set_count(spec.members.empty() ? 0 : spec.count);
  p.set_stamp(stamp);
  p.set_origin(std::string(origin));
  return p;
}

}  // namespace

DatabaseRef Catalog::DatabaseDefOf(const v1::DatabaseRow& row) {
  auto d = std::make_shared<DatabaseDef>();
  d->name = row.name();
  d->created_time = row.created_time();
  d->placement = row.placement();
  return d;
}

absl::StatusOr<v1::DatabaseRow> Catalog::NewDatabaseRow(const CatalogSnapshot& base,
                                                        absl::string_view db,
                                                        const PlacementSpec& spec, bool local) {
  const Hlc marker = base.DatabaseMarkerFor(db);
  v1::DatabaseRow row;
  row.set_name(std::string(db));
  if (local) {
    // As C3 for a table: a new database is newer than every drop of its name held here.
    CAIRN_ASSIGN_OR_RETURN(const Hlc now, options_.hlc->Now());
    CAIRN_ASSIGN_OR_RETURN(
        const Hlc after_marker,
        HlcAfter(marker, absl::StrCat("a new database '", db, "' after its drop")));
    row.set_created_time(std::max(now, after_marker));
    *row.mutable_placement() = MakePlacement(spec, row.created_time(), options_.node_name);
  } else {
    CAIRN_ASSIGN_OR_RETURN(const Hlc now, options_.hlc->Now());
    row.set_created_time(now);
    *row.mutable_placement() = MakePlacement(spec, marker, "");
  }
  return row;
}

absl::Status Catalog::CreateDatabase(absl::string_view db, const PlacementSpec& placement) {
  CAIRN_RETURN_IF_ERROR(ValidateDatabaseName(db));
  DatabaseLock lock(this, db);
  const SnapshotRef base = Snapshot();  // invariant (1)
  if (base->FindDatabase(db) != nullptr) {
    return Error(ErrorCode::kDatabaseExists, absl::StrCat("database '", db, "' already exists"));
  }
  CAIRN_ASSIGN_OR_RETURN(const v1::DatabaseRow row,
                         NewDatabaseRow(*base, db, placement, /*local=*/true));
  rocksdb::WriteBatch batch;
  PutProto(engine_, &batch, Cf::kCatalog, storage::DatabaseKey(db), row);
  CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
  Publish(lock, "",
          [&](CatalogSnapshot* next) { next->databases[row.name()] = DatabaseDefOf(row); });
  return absl::OkStatus();
}

absl::StatusOr<v1::Placement> Catalog::AlterPlacement(absl::string_view db,
                                                      const PlacementSpec& spec) {
  CAIRN_RETURN_IF_ERROR(ValidateDatabaseName(db));
  v1::Placement placement;
  {
    DatabaseLock lock(this, db);
    const SnapshotRef base = Snapshot();  // invariant (1)
    const DatabaseDef* d = base->FindDatabase(db);
    if (d == nullptr) {
      return Error(ErrorCode::kDatabaseNotFound,
                   absl::StrCat("database '", db, "' does not exist"));
    }
    // P6: a new stamp, after the placement it replaces (whatever clock made that one).
    CAIRN_ASSIGN_OR_RETURN(const Hlc now, options_.hlc->Now());
    CAIRN_ASSIGN_OR_RETURN(
        const Hlc after,
        HlcAfter(d->placement.stamp(), absl::StrCat("a new placement of database '", db, "'")));
    placement = MakePlacement(spec, std::max(now, after), options_.node_name, &d->placement);
    if (!IsEveryNode(placement) && placement.catching_up_size() == placement.members_size()) {
      // P7, P8: nobody would hold every row, and nobody could serve the database.
      return Error(ErrorCode::kBadRequest,
                   absl::StrCat("database '", db,
                                "' would have no ready member: keep at least one of its ready "
                                "members (",
                                absl::StrJoin(ReadyMembers(d->placement), ", "),
                                ") in 'replicas' until the new ones have caught up"));
    }
    CAIRN_RETURN_IF_ERROR(MergePlacement(lock, db, &placement, /*marker=*/0));
  }
  // P7: a placement may ask less of this node (a ready member it waited on is gone).
  CheckReadiness(this, db);
  return placement;
}

absl::Status Catalog::ApplyPeerPlacement(absl::string_view db, const v1::Placement* placement,
                                         Hlc database_marker) {
  CAIRN_RETURN_IF_ERROR(ValidateDatabaseName(db));
  if (placement != nullptr) {
    CAIRN_RETURN_IF_ERROR(ValidatePeerPlacement(*placement));
    options_.hlc->Observe(placement->stamp());
  }
  options_.hlc->Observe(database_marker);
  // Most DbSchemas repeat what is held: no lock then (C12).
  {
    const SnapshotRef snap = Snapshot();
    const DatabaseDef* d = snap->FindDatabase(db);
    const Hlc marker = snap->DatabaseMarkerFor(db);
    const bool marker_held = database_marker <= marker;
    v1::Placement held;
    if (d != nullptr) held = d->placement;
    const bool placement_held =
        placement == nullptr || placement->stamp() < std::max(marker, database_marker) ||
        (d != nullptr && !PlacementNewer(*placement, held) && !MergeReadiness(*placement, &held));
    if (marker_held && placement_held) return absl::OkStatus();
  }
  {
    DatabaseLock lock(this, db);
    CAIRN_RETURN_IF_ERROR(MergePlacement(lock, db, placement, database_marker));
  }
  // P7: a placement may ask less of this node (a ready member it waited on is gone).
  CheckReadiness(this, db);
  return absl::OkStatus();
}

absl::Status Catalog::MergePlacement(const DatabaseLock& lock, absl::string_view db,
                                     const v1::Placement* placement, Hlc marker) {
  lock.AssertCovers(db);
  const SnapshotRef base = Snapshot();  // invariant (1)
  const std::string name(db);
  const Hlc held_marker = base->DatabaseMarkerFor(db);
  const Hlc newest_marker = std::max(held_marker, marker);
  const DatabaseDef* d = base->FindDatabase(db);
  rocksdb::WriteBatch batch;
  if (marker > held_marker) {
    v1::DatabaseMarker m;
    m.set_dropped_time(marker);
    PutProto(engine_, &batch, Cf::kCatalog, storage::DatabaseMarkerKey(db), m);
  }
  // What the database becomes: absent (nullopt) or its row.
  std::optional<v1::DatabaseRow> row;
  if (d != nullptr) {
    row.emplace();
    row->set_name(name);
    row->set_created_time(d->created_time);
    *row->mutable_placement() = d->placement;
    if (d->placement.stamp() < newest_marker) {
      // Retired by a drop_database: the database goes with it, unless a table outlived the
      // drop (C14: a newer or node-local table, or a drop still pending, C9), which keeps it
      // placed on every node as of the marker, the same on every node.
      if (DropNamesOf(lock, *base, db).empty()) {
        row.reset();
      } else {
        *row->mutable_placement() = MakePlacement(PlacementSpec{}, newest_marker, "");
      }
    }
  }
  if (placement != nullptr && placement->stamp() >= newest_marker) {
    if (!row.has_value()) {
      // A placement newer than every drop of the name: the database lives (P12: every node
      // holds every database's definitions).
      row.emplace();
      row->set_name(name);
      CAIRN_ASSIGN_OR_RETURN(const Hlc now, options_.hlc->Now());
      row->set_created_time(now);
      *row->mutable_placement() = *placement;
    } else if (PlacementNewer(*placement, row->placement())) {
      *row->mutable_placement() = *placement;
    } else {
      MergeReadiness(*placement, row->mutable_placement());  // P7
    }
  }
  const bool database_changed =
      (d == nullptr) != !row.has_value() ||
      (d != nullptr && row.has_value() &&
       (d->placement.SerializeAsString() != row->placement().SerializeAsString()));
  if (!database_changed && marker <= held_marker) return absl::OkStatus();
  if (d != nullptr && row.has_value()) {
    const bool was = IsMember(d->placement, options_.node_name);
    const bool is = IsMember(row->placement(), options_.node_name);
    // why ignored (both): WriteBatch fails only beyond 4 GiB.
    if (!was && is) {
      CAIRN_RETURN_IF_ERROR(PutJoinRefetches(engine_, *d, row->placement().stamp(), &batch));
      // P8: a member again before it let go: the release is cancelled, the rows stay.
      batch.Delete(engine_->cf(Cf::kMeta), ToSlice(storage::ReleaseKey(db))).PermitUncheckedError();
    } else if (was && !is) {
      // P8: removed. The rows stay until the remaining members confirm they hold them all
      // (replication's Releaser); this key says so across restarts.
      batch
          .Put(engine_->cf(Cf::kMeta), ToSlice(storage::ReleaseKey(db)),
               internal::BigEndian(row->placement().stamp()))
          .PermitUncheckedError();
    }
  }
  if (database_changed) {
    if (row.has_value()) {
      PutProto(engine_, &batch, Cf::kCatalog, storage::DatabaseKey(db), *row);
    } else {
      batch.Delete(engine_->cf(Cf::kCatalog), ToSlice(storage::DatabaseKey(db)))
          .PermitUncheckedError();
    }
  }
  CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
  Publish(lock, "", [&](CatalogSnapshot* next) {
    if (marker > held_marker) next->database_markers[name] = marker;
    if (!database_changed) return;
    if (!row.has_value()) {
      next->databases.erase(name);
    } else if (d == nullptr) {
      next->databases[name] = DatabaseDefOf(*row);
    } else {
      auto copy = std::make_shared<DatabaseDef>(*d);  // keeps its tables
      copy->placement = row->placement();
      next->databases[name] = std::move(copy);
    }
  });
  if (database_changed && row.has_value() && d != nullptr &&
      !SamePlacementChange(d->placement, row->placement())) {
    spdlog::info("[{}] database {} is placed on {} (stamp {}, from {})", options_.node_name, name,
                 DescribeMembers(row->placement()), row->placement().stamp(),
                 row->placement().origin().empty() ? "a drop" : row->placement().origin());
  }
  return absl::OkStatus();
}

}  // namespace cairn::catalog
