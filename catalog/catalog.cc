// Catalog: publishing snapshots and creates (SPEC C1, C2, C3). Open and restart recovery are in
// catalog_load.cc, attributes in catalog_attributes.cc, drops in catalog_drop.cc, peer
// definitions in catalog_peer.cc.
#include "catalog/catalog.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "catalog/internal/catalog_rows.h"
#include "catalog/names.h"
#include "common/fault_points.h"
#include "common/status.h"
#include "storage/keys.h"

namespace cairn::catalog {

using internal::BuildAttributes;
using internal::PutProto;
using internal::Qualified;
using internal::ToRow;
using storage::Cf;
using storage::ToSlice;

namespace {

uint64_t FreshIncarnation() {
  absl::BitGen gen;
  uint64_t v = 0;
  while (v == 0) v = absl::Uniform<uint64_t>(gen);
  return v;
}

}  // namespace

Catalog::Catalog(storage::Engine* engine, CatalogOptions options)
    : engine_(engine), options_(std::move(options)) {
  if (options_.incarnation == 0) options_.incarnation = FreshIncarnation();
}

Catalog::~Catalog() = default;

absl::StatusOr<std::unique_ptr<Catalog>> Catalog::Open(storage::Engine* engine,
                                                       CatalogOptions options) {
  CAIRN_CHECK(options.hlc != nullptr) << "CatalogOptions::hlc is required";
  std::unique_ptr<Catalog> catalog(new Catalog(engine, std::move(options)));
  CAIRN_RETURN_IF_ERROR(catalog->Load());
  return catalog;
}

void Catalog::SetListener(std::function<void(const SnapshotRef&)> listener) {
  listener_ = std::move(listener);
}

SnapshotRef Catalog::Snapshot() const {
  absl::ReaderMutexLock lock(&snapshot_mu_);
  return snapshot_;
}

// Load and restart recovery (C10): catalog_load.cc.

// ---------------------------------------------------------------------------------------------
// Publishing.

Catalog::DatabaseLock::DatabaseLock(Catalog* catalog, absl::string_view db)
    : catalog_(catalog), db_(db) {
  {
    absl::MutexLock lock(&catalog_->locks_mu_);
    std::unique_ptr<DatabaseMutex>& m = catalog_->db_locks_[db_];
    if (m == nullptr) m = std::make_unique<DatabaseMutex>();
    ++m->users;
    mutex_ = m.get();
  }
  mutex_->mu.Lock();
}

Catalog::DatabaseLock::~DatabaseLock() {
  mutex_->mu.Unlock();
  {
    absl::MutexLock lock(&catalog_->locks_mu_);
    if (--mutex_->users == 0) catalog_->db_locks_.erase(db_);
  }
  if (catalog_->listener_) {
    for (const SnapshotRef& s : published_) catalog_->listener_(s);
  }
}

void Catalog::DatabaseLock::AssertCovers(absl::string_view db) const {
  CAIRN_CHECK(db == db_) << "catalog mutation of database '" << db << "' under the lock of '" << db_
                         << "'";
}

void Catalog::PutTable(CatalogSnapshot* snap, absl::string_view db, absl::string_view table,
                       TableRef def) {
  auto it = snap->databases.find(db);
  std::shared_ptr<DatabaseDef> d;
  if (it == snap->databases.end()) {
    d = std::make_shared<DatabaseDef>();
    d->name = std::string(db);
  } else {
    d = std::make_shared<DatabaseDef>(*it->second);
  }
  if (auto old = d->tables.find(table); old != d->tables.end() && old->second->replicate()) {
    d->replicated_digest -= old->second->names_digest();
  }
  if (def != nullptr) {
    if (def->replicate()) d->replicated_digest += def->names_digest();
    d->tables[std::string(table)] = std::move(def);
  } else {
    d->tables.erase(std::string(table));
  }
  snap->databases[std::string(db)] = std::move(d);
}

void Catalog::Publish(const DatabaseLock& lock, const std::vector<std::string>& names,
                      const std::function<void(CatalogSnapshot*)>& edit) {
  absl::MutexLock publish_lock(&mu_);
  auto next = std::make_shared<CatalogSnapshot>(*current_);
  const std::string& db = lock.database();
  std::vector<uint64_t> markers_before;
  for (const std::string& name : names) {
    markers_before.push_back(name.empty() ? 0 : NameMarkersDigest(*current_, db, name));
  }
  edit(next.get());
  // Only the names' markers changed (the caller's promise): keep the database's sum.
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty()) continue;
    const uint64_t markers_after = NameMarkersDigest(*next, db, names[i]);
    // A database with a marker always has an entry (replication's SchemaDatabases lists them).
    if (markers_after != 0) next->marker_digests.try_emplace(db, 0);
    if (markers_after != markers_before[i]) {
      next->marker_digests[db] += markers_after - markers_before[i];
    }
  }
  SnapshotRef published = PublishLocked(std::move(next));
  for (const std::string& name : names) journal_.push_back({published->version, db, name});  // (4)
  while (journal_.size() > kJournalEntries) {
    journal_from_ = journal_.front().version;
    journal_.pop_front();
  }
  lock.published_.push_back(std::move(published));
}

bool Catalog::ChangesSince(uint64_t after, uint64_t upto, std::vector<SchemaChange>* out) const {
  absl::MutexLock lock(&mu_);
  if (after < journal_from_) return false;
  // Entries are in version order (invariant (4)), several to a version for some publishes.
  auto it = std::upper_bound(journal_.begin(), journal_.end(), after,
                             [](uint64_t v, const SchemaChange& c) { return v < c.version; });
  for (; it != journal_.end() && it->version <= upto; ++it) out->push_back(*it);
  return true;
}

SnapshotRef Catalog::PublishLocked(std::shared_ptr<CatalogSnapshot> next) {
  mu_.AssertHeld();
  next->version = (current_ == nullptr ? 0 : current_->version) + 1;
  current_ = next;
  {
    absl::MutexLock lock(&snapshot_mu_);
    snapshot_ = next;
  }
  return next;
}

// ---------------------------------------------------------------------------------------------
// Creates (C1, C2, C3, C5, C14); CreateDatabase is in catalog_placement.cc.

absl::StatusOr<TableRef> Catalog::CreateTable(const TableSpec& spec) {
  CAIRN_RETURN_IF_ERROR(ValidateDatabaseName(spec.database));
  CAIRN_RETURN_IF_ERROR(ValidateTableName(spec.table));
  if (spec.primary_key.empty()) {
    return Error(ErrorCode::kBadRequest, "'primary_key' is required");
  }
  CAIRN_RETURN_IF_ERROR(ValidateAttributeName(spec.primary_key));
  if (spec.sealed && !spec.attributes.has_value()) {
    return Error(ErrorCode::kBadRequest,
                 "'sealed' needs 'attributes': a table without an attribute list is dynamic (D2)");
  }
  std::vector<AttributeSpec> specs;
  if (spec.attributes.has_value()) {
    specs = *spec.attributes;
  } else {
    // Dynamic table (D2): the time attributes exist from the start, indexed.
    specs.push_back({std::string(kCreatedTimeAttribute), v1::DATE, true});
    specs.push_back({std::string(kUpdatedTimeAttribute), v1::DATE, true});
  }
  CAIRN_ASSIGN_OR_RETURN(std::vector<AttributeDef> attributes,
                         BuildAttributes(spec.primary_key, specs, v1::LOCAL));
  CAIRN_RETURN_IF_ERROR(
      CheckAttributeCount(Qualified(spec.database, spec.table), attributes.size()));

  DatabaseLock lock(this, spec.database);
  const SnapshotRef base = Snapshot();  // invariant (1)
  if (base->FindTable(spec.database, spec.table).ok()) {
    return Error(ErrorCode::kTableExists,
                 absl::StrCat("table '", Qualified(spec.database, spec.table), "' already exists"));
  }
  // C3: a local generation is newer than every drop of its name this node knows, including
  // drops still completing (their time is in the snapshot's markers).
  const Hlc marker = base->MarkerFor(spec.database, spec.table);
  v1::TableRow row;
  row.set_database(spec.database);
  row.set_name(spec.table);
  CAIRN_ASSIGN_OR_RETURN(const Hlc now, options_.hlc->Now());
  CAIRN_ASSIGN_OR_RETURN(
      const Hlc after_marker,
      HlcAfter(marker, absl::StrCat("a new generation of ", Qualified(spec.database, spec.table),
                                    " after its drop")));
  row.set_created_time(std::max(now, after_marker));
  // C15: the attributes of a create are as old as the generation. Attribute markers of the
  // name are older (this clock observed them), so a new table starts with every attribute.
  for (AttributeDef& a : attributes) a.created_time = row.created_time();
  row.set_primary_key(spec.primary_key);
  row.set_schema_defined(spec.attributes.has_value());
  row.set_sealed(spec.sealed);
  row.set_replicate(spec.replicate);
  row.set_origin(v1::LOCAL);
  return CreateGeneration(lock, std::move(row), std::move(attributes));
}

absl::StatusOr<TableRef> Catalog::CreateGeneration(const DatabaseLock& lock, v1::TableRow row,
                                                   std::vector<AttributeDef> attributes) {
  lock.AssertCovers(row.database());
  uint64_t generation = 0;
  {
    absl::MutexLock id_lock(&mu_);
    generation = next_generation_id_++;  // invariant (3); a failed create leaves a gap
  }
  uint32_t next_attribute_id = 1;
  for (const AttributeDef& a : attributes)
    next_attribute_id = std::max(next_attribute_id, a.id + 1);
  row.set_generation_id(generation);
  row.set_next_attribute_id(next_attribute_id);

  // C1, C2: the whole definition is one batch; nothing outside the generation's own keys.
  rocksdb::WriteBatch batch;
  const SnapshotRef base = Snapshot();  // invariant (1)
  const bool new_database = base->FindDatabase(row.database()) == nullptr;
  v1::DatabaseRow db_row;
  if (new_database) {
    // C14: created with its first table, on every node (P1). A local create places it as a
    // create_database would; a peer's table (the peer's placement, which the same DbSchema
    // carries, came first unless the peer predates placement) as of the database marker.
    CAIRN_ASSIGN_OR_RETURN(
        db_row, NewDatabaseRow(*base, row.database(), PlacementSpec{}, row.origin() == v1::LOCAL));
    PutProto(engine_, &batch, Cf::kCatalog, storage::DatabaseKey(row.database()), db_row);
  }
  PutProto(engine_, &batch, Cf::kCatalog, storage::TableKey(row.database(), row.name(), generation),
           row);
  for (const AttributeDef& a : attributes) {
    PutProto(engine_, &batch, Cf::kCatalog, storage::AttributeKey(generation, a.name), ToRow(a));
  }
  // Invariant (3): this id's high-water key. Those below it are removed at the next Open: a
  // range delete per create would cost every later read of the family (storage::
  // kRangeDeletesBeforeFlush).
  batch.Put(engine_->cf(Cf::kMeta), ToSlice(storage::GenerationHighWaterKey(generation)), "")
      .PermitUncheckedError();
  batch.Delete(engine_->cf(Cf::kMeta), ToSlice(storage::kNextGenerationKey)).PermitUncheckedError();

  CAIRN_RETURN_IF_ERROR(CAIRN_FAULT(options_.faults, fault_points::kCreateBeforeCommit));
  CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
  // why ignored: the create is durable; only crash, delay and block matter at this point.
  CAIRN_FAULT(options_.faults, fault_points::kCreateAfterCommit).IgnoreError();

  // Publish (C1): only now can any reader see the table.
  auto state = std::make_shared<GenerationState>();
  {
    absl::MutexLock schema_lock(&state->schema_mu());
    state->set_schema_version(1);
  }
  const std::string db = row.database(), table = row.name();
  AttributeStamps markers;  // C15; a node-local table has none (C11)
  if (row.replicate()) markers = base->AttributeMarkersFor(db, table);
  auto def =
      std::make_shared<TableDef>(std::move(row), std::move(attributes), std::move(state),
                                 /*schema_version=*/1, AttributeStamps(), std::move(markers));
  Publish(lock, table, [&](CatalogSnapshot* next) {
    if (new_database) next->databases[db] = DatabaseDefOf(db_row);
    PutTable(next, db, table, def);
  });
  return TableRef(def);
}

}  // namespace cairn::catalog
