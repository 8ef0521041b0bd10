// Catalog::Load: open and restart recovery (SPEC C10). Every catalog row is read into the
// first snapshot; then what the reads found to repair is written in one batch, the snapshot
// is published, and interrupted drops are finished. Reads come first, so a load never reads
// what it has just written. The rest of Catalog is in catalog.cc.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "catalog/catalog.h"
#include "catalog/internal/catalog_rows.h"
#include "catalog/user_catalog.h"
#include "common/status.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"
#include "storage/rocksdb_status.h"

namespace cairn::catalog {

using internal::BigEndian;
using internal::FromRow;
using internal::MarkerId;
using internal::Qualified;
using storage::Cf;
using storage::ToSlice;

namespace {

absl::Status Corrupt(absl::string_view what, absl::string_view key) {
  return absl::DataLossError(
      absl::StrCat("catalog: unreadable ", what, " row at key '", absl::CHexEscape(key), "'"));
}

// Hands every row of the catalog family under `prefix` to `fn(key, value)`, in key order.
template <typename Fn>
absl::Status ScanCatalog(storage::Engine* engine, absl::string_view prefix, Fn&& fn) {
  auto it = engine->NewIterator(Cf::kCatalog, nullptr, storage::PrefixSuccessor(prefix));
  for (it->Seek(ToSlice(prefix)); it->Valid(); it->Next()) {
    CAIRN_RETURN_IF_ERROR(fn(storage::ToView(it->key()), storage::ToView(it->value())));
  }
  return it->status().ok() ? absl::OkStatus() : absl::DataLossError(it->status().ToString());
}

// Invariant (3): the next generation id resumes above every id handed out, by the high-water
// keys or (written before them) the next-id key. Each create wrote its own high-water key:
// the removal of all but the highest goes to `repairs`.
absl::StatusOr<uint64_t> NextGeneration(storage::Engine* engine, rocksdb::WriteBatch* repairs) {
  uint64_t next_generation = 1;
  std::string value;
  bool found = false;
  CAIRN_RETURN_IF_ERROR(engine->Get(Cf::kMeta, storage::kNextGenerationKey, &value, &found));
  if (found && value.size() == 8) next_generation = storage::GetBigEndian64(value);
  const std::string prefix(storage::kGenerationHighWaterPrefix);
  auto it = engine->NewIterator(Cf::kMeta, nullptr, storage::PrefixSuccessor(prefix));
  it->SeekToLast();
  if (it->Valid()) {
    const absl::string_view key = storage::ToView(it->key());
    if (key.size() == prefix.size() + 8 && absl::StartsWith(key, prefix)) {
      const uint64_t highest = storage::GetBigEndian64(key.substr(prefix.size()));
      next_generation = std::max(next_generation, highest + 1);
      repairs
          ->DeleteRange(engine->cf(Cf::kMeta), ToSlice(storage::GenerationHighWaterKey(0)),
                        ToSlice(storage::GenerationHighWaterKey(highest)))
          .PermitUncheckedError();
    }
  }
  CAIRN_RETURN_IF_ERROR(storage::FromRocks(it->status()));
  return next_generation;
}

absl::Status LoadDatabases(storage::Engine* engine, CatalogSnapshot* snap) {
  return ScanCatalog(engine, storage::kDatabasePrefix,
                     [&](absl::string_view key, absl::string_view value) {
                       v1::DatabaseRow row;
                       if (!row.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
                         return Corrupt("database", key);
                       }
                       auto d = std::make_shared<DatabaseDef>();
                       d->name = row.name();
                       d->created_time = row.created_time();
                       d->placement = row.placement();  // P1; unset: every node, stamp 0
                       snap->databases[row.name()] = std::move(d);
                       return absl::OkStatus();
                     });
}

// Database markers (P1); the clock observes each.
absl::Status LoadDatabaseMarkers(storage::Engine* engine, HybridClock* hlc, CatalogSnapshot* snap) {
  return ScanCatalog(engine, storage::kDatabaseMarkerPrefix,
                     [&](absl::string_view key, absl::string_view value) {
                       v1::DatabaseMarker marker;
                       if (!marker.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
                         return Corrupt("database marker", key);
                       }
                       const std::string db(key.substr(storage::kDatabaseMarkerPrefix.size()));
                       snap->database_markers[db] = marker.dropped_time();
                       hlc->Observe(marker.dropped_time());
                       return absl::OkStatus();
                     });
}

// Drop markers, and attribute markers (C15); the clock observes each.
absl::Status LoadMarkers(storage::Engine* engine, HybridClock* hlc, CatalogSnapshot* snap) {
  CAIRN_RETURN_IF_ERROR(ScanCatalog(
      engine, storage::kMarkerPrefix, [&](absl::string_view key, absl::string_view value) {
        v1::DropMarker marker;
        std::vector<std::string> parts = absl::StrSplit(key.substr(2), '/');
        if (parts.size() != 2 ||
            !marker.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
          return Corrupt("drop marker", key);
        }
        snap->markers[MarkerId(parts[0], parts[1])] = marker.dropped_time();
        hlc->Observe(marker.dropped_time());
        return absl::OkStatus();
      }));
  return ScanCatalog(
      engine, storage::kAttributeMarkerPrefix, [&](absl::string_view key, absl::string_view value) {
        v1::AttributeMarker marker;
        // Attribute names may hold '/' nowhere (C13), so the key splits into exactly three.
        std::vector<std::string> parts = absl::StrSplit(key.substr(2), '/');
        if (parts.size() != 3 ||
            !marker.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
          return Corrupt("attribute marker", key);
        }
        snap->attribute_markers[MarkerId(parts[0], parts[1])][parts[2]] = marker.dropped_time();
        hlc->Observe(marker.dropped_time());
        return absl::OkStatus();
      });
}

// Every table generation's row, live or tombstoned, and the highest generation id of them.
absl::Status LoadTableRows(storage::Engine* engine, HybridClock* hlc,
                           std::vector<v1::TableRow>* live, std::vector<v1::TableRow>* tombstoned,
                           uint64_t* max_generation) {
  return ScanCatalog(engine, storage::kTablePrefix,
                     [&](absl::string_view key, absl::string_view value) {
                       v1::TableRow row;
                       if (!row.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
                         return Corrupt("table", key);
                       }
                       *max_generation = std::max(*max_generation, row.generation_id());
                       hlc->Observe(row.created_time());
                       (row.has_tombstone() ? tombstoned : live)->push_back(std::move(row));
                       return absl::OkStatus();
                     });
}

// A generation's attributes in creation order, as before the restart: the primary key (id 0)
// first.
absl::StatusOr<std::vector<AttributeDef>> LoadAttributes(storage::Engine* engine, HybridClock* hlc,
                                                         uint64_t generation) {
  std::vector<AttributeDef> attributes;
  CAIRN_RETURN_IF_ERROR(
      ScanCatalog(engine, storage::AttributePrefix(generation),
                  [&](absl::string_view key, absl::string_view value) {
                    v1::AttributeRow a;
                    if (!a.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
                      return Corrupt("attribute", key);
                    }
                    attributes.push_back(FromRow(a));
                    // C15: a drop is stamped after it.
                    hlc->Observe(a.created_time());
                    return absl::OkStatus();
                  }));
  std::sort(attributes.begin(), attributes.end(),
            [](const AttributeDef& a, const AttributeDef& b) { return a.id < b.id; });
  return attributes;
}

// Strips of a generation's dropped attributes not finished before the restart (decision 4).
absl::StatusOr<AttributeStamps> LoadStrips(storage::Engine* engine, uint64_t generation) {
  AttributeStamps stripping;
  const std::string prefix = storage::StripKey(generation, "");
  auto it = engine->NewIterator(Cf::kMeta, nullptr, storage::PrefixSuccessor(prefix));
  for (it->Seek(ToSlice(prefix)); it->Valid(); it->Next()) {
    const absl::string_view value = storage::ToView(it->value());
    // An empty value was written before drops were stamped: every value of the name is
    // taken for the dropped attribute's (decision 57).
    const Hlc stamp = value.size() == 8 ? storage::GetBigEndian64(value) : kMaxHlc;
    stripping[std::string(storage::ToView(it->key()).substr(prefix.size()))] = stamp;
  }
  CAIRN_RETURN_IF_ERROR(storage::FromRocks(it->status()));
  return stripping;
}

// The definition of live generation `row`, its database's entry in `snap` made if missing.
absl::StatusOr<TableRef> LoadTable(storage::Engine* engine, HybridClock* hlc,
                                   absl::string_view node_name, const v1::TableRow& row,
                                   CatalogSnapshot* snap) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<AttributeDef> attributes,
                         LoadAttributes(engine, hlc, row.generation_id()));
  CAIRN_ASSIGN_OR_RETURN(AttributeStamps stripping, LoadStrips(engine, row.generation_id()));
  auto& db = snap->databases[row.database()];
  if (db == nullptr) {
    // Cannot happen (a table's database row is in its create batch); serve it anyway.
    spdlog::error("[{}] table {} has no database row; recreating it in memory",
                  std::string(node_name), Qualified(row.database(), row.name()));
    auto d = std::make_shared<DatabaseDef>();
    d->name = row.database();
    db = std::move(d);
  }
  if (db->tables.count(row.name()) != 0) {
    return absl::DataLossError(absl::StrCat("catalog holds two live generations of ",
                                            Qualified(row.database(), row.name())));
  }
  auto state = std::make_shared<GenerationState>();
  {
    absl::MutexLock schema_lock(&state->schema_mu());
    state->set_schema_version(1);
  }
  AttributeStamps markers;
  if (row.replicate()) markers = snap->AttributeMarkersFor(row.database(), row.name());
  return std::make_shared<TableDef>(row, std::move(attributes), std::move(state), 1,
                                    std::move(stripping), std::move(markers));
}

// A pending drop's time counts as a marker from now on (it is in the tombstone).
void MarkPendingDrops(const std::vector<v1::TableRow>& tombstoned, HybridClock* hlc,
                      CatalogSnapshot* snap) {
  for (const v1::TableRow& row : tombstoned) {
    if (!row.tombstone().timed()) continue;
    Hlc& m = snap->markers[MarkerId(row.database(), row.name())];
    m = std::max(m, row.tombstone().dropped_time());
    hlc->Observe(row.tombstone().dropped_time());
  }
}

// Attribute markers their name's table marker subsumes (internal::SubsumedAttributeMarkers),
// kept by a binary before issue 41 or by a drop that stopped before its final batch: gone
// from the snapshot, and their removal from storage in `repairs`, as a marker recorded now
// would have removed them.
void DropSubsumedMarkers(storage::Engine* engine, CatalogSnapshot* snap,
                         rocksdb::WriteBatch* repairs) {
  for (const auto& [id, time] : snap->markers) {
    const std::vector<std::string> subsumed =
        internal::SubsumedAttributeMarkers(*snap, id.first, id.second, time);
    internal::DeleteAttributeMarkers(engine, id.first, id.second, subsumed, repairs);
    internal::EraseAttributeMarkers(snap, id.first, id.second, subsumed);
  }
}

// The schema digest's share of every name's markers (CatalogSnapshot::marker_digests).
void DigestMarkers(CatalogSnapshot* snap) {
  absl::btree_set<std::pair<std::string, std::string>> marked;
  for (const auto& [id, time] : snap->markers) marked.insert(id);
  for (const auto& [id, stamps] : snap->attribute_markers) marked.insert(id);
  for (const auto& [db, table] : marked) {
    snap->marker_digests[db] += NameMarkersDigest(*snap, db, table);
  }
}

}  // namespace

absl::Status Catalog::Load() {
  auto snap = std::make_shared<CatalogSnapshot>();
  HybridClock* hlc = options_.hlc;
  rocksdb::WriteBatch repairs;  // what the reads found to tidy: written after them

  // 1. Read: ids, databases, markers, tables, users and roles. Tombstoned generations are
  //    never loaded (C10); they are completed in step 3.
  CAIRN_ASSIGN_OR_RETURN(uint64_t next_generation, NextGeneration(engine_, &repairs));
  CAIRN_RETURN_IF_ERROR(LoadDatabases(engine_, snap.get()));
  CAIRN_RETURN_IF_ERROR(LoadMarkers(engine_, hlc, snap.get()));
  CAIRN_RETURN_IF_ERROR(LoadDatabaseMarkers(engine_, hlc, snap.get()));
  for (const auto& [name, d] : snap->databases) hlc->Observe(d->placement.stamp());
  std::vector<v1::TableRow> live;
  std::vector<v1::TableRow> tombstoned;
  uint64_t max_generation = 0;
  CAIRN_RETURN_IF_ERROR(LoadTableRows(engine_, hlc, &live, &tombstoned, &max_generation));
  next_generation = std::max(next_generation, max_generation + 1);
  for (const v1::TableRow& row : live) {
    CAIRN_ASSIGN_OR_RETURN(TableRef def,
                           LoadTable(engine_, hlc, options_.node_name, row, snap.get()));
    PutTable(snap.get(), row.database(), row.name(), std::move(def));
  }
  MarkPendingDrops(tombstoned, hlc, snap.get());
  DropSubsumedMarkers(engine_, snap.get(), &repairs);
  DigestMarkers(snap.get());
  CAIRN_ASSIGN_OR_RETURN(snap->principals, UserCatalog::Load(engine_, hlc));

  // 2. Write the repairs, and publish.
  if (repairs.Count() > 0) CAIRN_RETURN_IF_ERROR(engine_->Write(&repairs));
  {
    absl::MutexLock lock(&mu_);
    next_generation_id_ = next_generation;
    journal_from_ = PublishLocked(std::move(snap))->version;  // no listener yet; (4)
  }

  // 3. C10: every tombstone was written by an earlier incarnation (this one has written
  //    none), so nothing of that process can still be writing: finish step 3 of its drop.
  for (const v1::TableRow& row : tombstoned) {
    spdlog::info("[{}] completing the interrupted drop of {} (generation {})", options_.node_name,
                 Qualified(row.database(), row.name()), row.generation_id());
    DatabaseLock lock(this, row.database());
    CAIRN_RETURN_IF_ERROR(FinishDrop(lock, row, row.tombstone()));
  }

  // 4. This incarnation, once recovery is done.
  rocksdb::WriteBatch batch;
  batch
      .Put(engine_->cf(Cf::kMeta), ToSlice(storage::kIncarnationKey),
           ToSlice(BigEndian(options_.incarnation)))
      .PermitUncheckedError();
  return engine_->Write(&batch);
}

}  // namespace cairn::catalog
