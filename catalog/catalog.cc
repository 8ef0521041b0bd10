#include "catalog/catalog.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "catalog/names.h"
#include "common/fault_points.h"
#include "common/status.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"
#include "storage/rocksdb_status.h"

namespace cairn::catalog {
namespace {

using storage::Cf;

std::string Qualified(absl::string_view db, absl::string_view table) {
  return absl::StrCat(db, ".", table);
}

std::pair<std::string, std::string> MarkerId(absl::string_view db, absl::string_view table) {
  return {std::string(db), std::string(table)};
}

using storage::ToSlice;

// R14: the peers this node applied rows of `db` from (those with a cursor in it).
absl::StatusOr<std::vector<std::string>> PeersWithCursorIn(storage::Engine* engine,
                                                           absl::string_view db) {
  std::vector<std::string> peers;
  const std::string prefix(storage::kCursorPrefix);
  auto it = engine->NewIterator(Cf::kMeta, nullptr, storage::PrefixSuccessor(prefix));
  for (it->Seek(ToSlice(prefix)); it->Valid(); it->Next()) {
    absl::string_view key(it->key().data(), it->key().size());
    key.remove_prefix(prefix.size());
    const size_t nul = key.find('\0');
    if (nul != absl::string_view::npos && key.substr(nul + 1) == db) {
      peers.emplace_back(key.substr(0, nul));
    }
  }
  CAIRN_RETURN_IF_ERROR(storage::FromRocks(it->status()));
  return peers;
}

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

void PutProto(storage::Engine* engine, rocksdb::WriteBatch* batch, Cf cf, absl::string_view key,
              const google::protobuf::MessageLite& msg) {
  // why ignored: WriteBatch::Put fails only for values over 4 GiB.
  batch->Put(engine->cf(cf), ToSlice(key), msg.SerializeAsString()).PermitUncheckedError();
}

std::string BigEndian(uint64_t v) {
  std::string s;
  storage::PutBigEndian64(v, &s);
  return s;
}

AttributeDef FromRow(const v1::AttributeRow& row) {
  AttributeDef a;
  a.name = row.name();
  a.type = row.type() == v1::ATTRIBUTE_TYPE_UNSPECIFIED ? v1::ANY : row.type();
  a.indexed = row.indexed();
  a.id = row.attribute_id();
  a.is_primary_key = row.is_primary_key();
  a.origin = row.origin();
  return a;
}

v1::AttributeRow ToRow(const AttributeDef& a) {
  v1::AttributeRow row;
  row.set_name(a.name);
  row.set_type(a.type);
  row.set_indexed(a.indexed);
  row.set_attribute_id(a.id);
  row.set_is_primary_key(a.is_primary_key);
  row.set_origin(a.origin);
  return row;
}

// The attribute list of a new generation: the primary key first (id 0, the record key itself,
// never in the index family), then the others with ids from 1.
absl::StatusOr<std::vector<AttributeDef>> BuildAttributes(absl::string_view primary_key,
                                                          const std::vector<AttributeSpec>& specs,
                                                          Origin origin) {
  std::vector<AttributeDef> out;
  AttributeDef pk;
  pk.name = std::string(primary_key);
  pk.type = v1::ID;
  pk.indexed = true;
  pk.is_primary_key = true;
  pk.origin = origin;
  out.push_back(pk);
  uint32_t next_id = 1;
  for (const AttributeSpec& s : specs) {
    CAIRN_RETURN_IF_ERROR(ValidateAttributeName(s.name));
    if (s.name == primary_key) {
      // D1: a primary key is a string or an integer.
      if (s.type != v1::ANY && s.type != v1::ID && s.type != v1::STRING && s.type != v1::INT) {
        return Error(ErrorCode::kBadRequest, absl::StrCat("primary key '", primary_key,
                                                          "' must be of type ID, String or "
                                                          "Int, not ",
                                                          AttributeTypeName(s.type)));
      }
      if (s.type != v1::ANY) out[0].type = s.type;
      continue;
    }
    auto dup = std::find_if(out.begin(), out.end(),
                            [&](const AttributeDef& a) { return a.name == s.name; });
    if (dup != out.end()) {
      return Error(ErrorCode::kBadRequest,
                   absl::StrCat("attribute '", s.name, "' is listed more than once"));
    }
    AttributeDef a;
    a.name = s.name;
    a.type = s.type;
    a.indexed = s.indexed;
    a.id = next_id++;
    a.origin = origin;
    out.push_back(std::move(a));
  }
  return out;
}

uint64_t FreshIncarnation() {
  absl::BitGen gen;
  uint64_t v = 0;
  while (v == 0) v = absl::Uniform<uint64_t>(gen);
  return v;
}

}  // namespace

absl::string_view PeerDropResultName(PeerDropResult r) {
  switch (r) {
    case PeerDropResult::kDropped:
      return "dropped";
    case PeerDropResult::kKept:
      return "kept";
    case PeerDropResult::kAbsent:
      return "absent";
  }
  return "absent";
}

// Holds Catalog::mu_; after unlocking, tells the listener about every snapshot published
// meanwhile. Listener calls therefore never run under a catalog lock.
class ABSL_SCOPED_LOCKABLE Catalog::WriteLock {
 public:
  explicit WriteLock(Catalog* c) ABSL_EXCLUSIVE_LOCK_FUNCTION(c->mu_) : c_(c) { c_->mu_.Lock(); }
  ~WriteLock() ABSL_UNLOCK_FUNCTION() {
    std::vector<SnapshotRef> published = std::move(c_->to_notify_);
    c_->to_notify_.clear();
    c_->mu_.Unlock();
    if (c_->listener_) {
      for (const SnapshotRef& s : published) c_->listener_(s);
    }
  }

 private:
  Catalog* const c_;
};

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

// ---------------------------------------------------------------------------------------------
// Load and restart recovery (C10).

absl::Status Catalog::Load() {
  WriteLock lock(this);
  auto snap = std::make_shared<CatalogSnapshot>();
  HybridClock* hlc = options_.hlc;

  {
    std::string value;
    bool found = false;
    CAIRN_RETURN_IF_ERROR(engine_->Get(Cf::kMeta, storage::kNextGenerationKey, &value, &found));
    if (found && value.size() == 8) next_generation_id_ = storage::GetBigEndian64(value);
  }

  auto scan = [&](absl::string_view prefix, auto&& fn) -> absl::Status {
    auto it = engine_->NewIterator(Cf::kCatalog, nullptr, storage::PrefixSuccessor(prefix));
    for (it->Seek(ToSlice(prefix)); it->Valid(); it->Next()) {
      CAIRN_RETURN_IF_ERROR(fn(absl::string_view(it->key().data(), it->key().size()),
                               absl::string_view(it->value().data(), it->value().size())));
    }
    return it->status().ok() ? absl::OkStatus() : absl::DataLossError(it->status().ToString());
  };
  auto corrupt = [](absl::string_view what, absl::string_view key) {
    return absl::DataLossError(
        absl::StrCat("catalog: unreadable ", what, " row at key '", absl::CHexEscape(key), "'"));
  };

  // Databases.
  CAIRN_RETURN_IF_ERROR(
      scan(storage::kDatabasePrefix, [&](absl::string_view key, absl::string_view value) {
        v1::DatabaseRow row;
        if (!row.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
          return corrupt("database", key);
        }
        auto d = std::make_shared<DatabaseDef>();
        d->name = row.name();
        d->created_time = row.created_time();
        snap->databases[row.name()] = std::move(d);
        return absl::OkStatus();
      }));

  // Drop markers.
  CAIRN_RETURN_IF_ERROR(scan(storage::kMarkerPrefix, [&](absl::string_view key,
                                                         absl::string_view value) {
    v1::DropMarker marker;
    std::vector<std::string> parts = absl::StrSplit(key.substr(2), '/');
    if (parts.size() != 2 || !marker.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      return corrupt("drop marker", key);
    }
    snap->markers[MarkerId(parts[0], parts[1])] = marker.dropped_time();
    hlc->Observe(marker.dropped_time());
    return absl::OkStatus();
  }));

  // Table generations. Tombstoned ones are never loaded (C10); they are completed below.
  std::vector<v1::TableRow> tombstoned;
  std::vector<v1::TableRow> live;
  uint64_t max_generation = 0;
  CAIRN_RETURN_IF_ERROR(
      scan(storage::kTablePrefix, [&](absl::string_view key, absl::string_view value) {
        v1::TableRow row;
        if (!row.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
          return corrupt("table", key);
        }
        max_generation = std::max(max_generation, row.generation_id());
        hlc->Observe(row.created_time());
        (row.has_tombstone() ? tombstoned : live).push_back(std::move(row));
        return absl::OkStatus();
      }));

  next_generation_id_ = std::max(next_generation_id_, max_generation + 1);
  for (v1::TableRow& row : live) {
    std::vector<AttributeDef> attributes;
    CAIRN_RETURN_IF_ERROR(
        scan(storage::AttributePrefix(row.generation_id()),
             [&](absl::string_view key, absl::string_view value) {
               v1::AttributeRow a;
               if (!a.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
                 return corrupt("attribute", key);
               }
               attributes.push_back(FromRow(a));
               return absl::OkStatus();
             }));
    // Creation order, as before the restart: the primary key (id 0) first.
    std::sort(attributes.begin(), attributes.end(),
              [](const AttributeDef& a, const AttributeDef& b) { return a.id < b.id; });
    auto& db = snap->databases[row.database()];
    if (db == nullptr) {
      // Cannot happen (a table's database row is in its create batch); serve it anyway.
      spdlog::error("[{}] table {} has no database row; recreating it in memory",
                    options_.node_name, Qualified(row.database(), row.name()));
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
    auto def = std::make_shared<TableDef>(row, std::move(attributes), std::move(state), 1);
    PutTable(snap.get(), row.database(), row.name(), std::move(def));
  }

  // A pending drop's time counts as a marker from now on (it is in the tombstone).
  for (const v1::TableRow& row : tombstoned) {
    if (!row.tombstone().timed()) continue;
    Hlc& m = snap->markers[MarkerId(row.database(), row.name())];
    m = std::max(m, row.tombstone().dropped_time());
    hlc->Observe(row.tombstone().dropped_time());
  }
  current_ = snap;
  PublishLocked(std::make_shared<CatalogSnapshot>(*snap));

  // C10: every tombstone was written by an earlier incarnation (this one has written none),
  // so nothing of that process can still be writing: finish step 3.
  for (const v1::TableRow& row : tombstoned) {
    spdlog::info("[{}] completing the interrupted drop of {} (generation {})", options_.node_name,
                 Qualified(row.database(), row.name()), row.generation_id());
    CAIRN_RETURN_IF_ERROR(FinishDropLocked(row, row.tombstone()));
  }

  rocksdb::WriteBatch batch;
  batch
      .Put(engine_->cf(Cf::kMeta), ToSlice(storage::kIncarnationKey),
           ToSlice(BigEndian(options_.incarnation)))
      .PermitUncheckedError();
  return engine_->Write(&batch);
}

// ---------------------------------------------------------------------------------------------
// Publishing.

std::shared_ptr<CatalogSnapshot> Catalog::CopyLocked() const {
  mu_.AssertHeld();
  return std::make_shared<CatalogSnapshot>(*current_);
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
  if (def != nullptr) {
    d->tables[std::string(table)] = std::move(def);
  } else {
    d->tables.erase(std::string(table));
  }
  snap->databases[std::string(db)] = std::move(d);
}

void Catalog::PublishLocked(std::shared_ptr<CatalogSnapshot> next) {
  mu_.AssertHeld();
  next->version = (current_ == nullptr ? 0 : current_->version) + 1;
  current_ = next;
  {
    absl::MutexLock lock(&snapshot_mu_);
    snapshot_ = next;
  }
  to_notify_.push_back(std::move(next));
}

// ---------------------------------------------------------------------------------------------
// Creates (C1, C2, C3, C5, C14).

absl::Status Catalog::CreateDatabase(absl::string_view db) {
  CAIRN_RETURN_IF_ERROR(ValidateDatabaseName(db));
  WriteLock lock(this);
  if (current_->FindDatabase(db) != nullptr) {
    return Error(ErrorCode::kDatabaseExists, absl::StrCat("database '", db, "' already exists"));
  }
  v1::DatabaseRow row;
  row.set_name(std::string(db));
  row.set_created_time(options_.hlc->Now());
  rocksdb::WriteBatch batch;
  PutProto(engine_, &batch, Cf::kCatalog, storage::DatabaseKey(db), row);
  CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
  auto next = CopyLocked();
  auto d = std::make_shared<DatabaseDef>();
  d->name = row.name();
  d->created_time = row.created_time();
  next->databases[row.name()] = std::move(d);
  PublishLocked(std::move(next));
  return absl::OkStatus();
}

absl::StatusOr<TableRef> Catalog::CreateTable(const TableSpec& spec) {
  CAIRN_RETURN_IF_ERROR(ValidateDatabaseName(spec.database));
  CAIRN_RETURN_IF_ERROR(ValidateTableName(spec.table));
  if (spec.primary_key.empty()) {
    return Error(ErrorCode::kBadRequest, "'primary_key' is required");
  }
  CAIRN_RETURN_IF_ERROR(ValidateAttributeName(spec.primary_key));
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

  WriteLock lock(this);
  if (current_->FindTable(spec.database, spec.table).ok()) {
    return Error(ErrorCode::kTableExists,
                 absl::StrCat("table '", Qualified(spec.database, spec.table), "' already exists"));
  }
  // C3: a local generation is newer than every drop of its name this node knows, including
  // drops still completing (their time is in current_->markers).
  const Hlc marker = current_->MarkerFor(spec.database, spec.table);
  v1::TableRow row;
  row.set_database(spec.database);
  row.set_name(spec.table);
  row.set_created_time(std::max(options_.hlc->Now(), marker + 1));
  row.set_primary_key(spec.primary_key);
  row.set_schema_defined(spec.attributes.has_value());
  row.set_replicate(spec.replicate);
  row.set_origin(v1::LOCAL);
  return CreateGenerationLocked(std::move(row), std::move(attributes));
}

absl::StatusOr<TableRef> Catalog::CreateGenerationLocked(v1::TableRow row,
                                                         std::vector<AttributeDef> attributes) {
  mu_.AssertHeld();
  const uint64_t generation = next_generation_id_;
  uint32_t next_attribute_id = 1;
  for (const AttributeDef& a : attributes)
    next_attribute_id = std::max(next_attribute_id, a.id + 1);
  row.set_generation_id(generation);
  row.set_next_attribute_id(next_attribute_id);

  // C1, C2: the whole definition is one batch; nothing outside the generation's own keys.
  rocksdb::WriteBatch batch;
  const bool new_database = current_->FindDatabase(row.database()) == nullptr;
  Hlc db_created_time = 0;
  if (new_database) {
    v1::DatabaseRow db_row;
    db_row.set_name(row.database());
    db_created_time = options_.hlc->Now();
    db_row.set_created_time(db_created_time);
    PutProto(engine_, &batch, Cf::kCatalog, storage::DatabaseKey(row.database()), db_row);
  }
  PutProto(engine_, &batch, Cf::kCatalog, storage::TableKey(row.database(), row.name(), generation),
           row);
  for (const AttributeDef& a : attributes) {
    PutProto(engine_, &batch, Cf::kCatalog, storage::AttributeKey(generation, a.name), ToRow(a));
  }
  batch
      .Put(engine_->cf(Cf::kMeta), ToSlice(storage::kNextGenerationKey),
           ToSlice(BigEndian(generation + 1)))
      .PermitUncheckedError();

  CAIRN_RETURN_IF_ERROR(CAIRN_FAULT(options_.faults, fault_points::kCreateBeforeCommit));
  CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
  next_generation_id_ = generation + 1;
  // why ignored: the create is durable; only crash, delay and block matter at this point.
  CAIRN_FAULT(options_.faults, fault_points::kCreateAfterCommit).IgnoreError();

  // Publish (C1): only now can any reader see the table.
  auto next = CopyLocked();
  if (new_database) {
    auto d = std::make_shared<DatabaseDef>();
    d->name = row.database();
    d->created_time = db_created_time;
    next->databases[row.database()] = std::move(d);
  }
  const uint64_t version = current_->version + 1;
  auto state = std::make_shared<GenerationState>();
  {
    absl::MutexLock schema_lock(&state->schema_mu());
    state->set_schema_version(version);
  }
  const std::string db = row.database(), table = row.name();
  auto def =
      std::make_shared<TableDef>(std::move(row), std::move(attributes), std::move(state), version);
  PutTable(next.get(), db, table, def);
  PublishLocked(std::move(next));
  return TableRef(def);
}

// ---------------------------------------------------------------------------------------------
// Attributes.

absl::StatusOr<TableRef> Catalog::AddAttributesLocked(const TableRef& live,
                                                      const std::vector<AttributeSpec>& specs,
                                                      Origin origin) {
  mu_.AssertHeld();
  std::vector<AttributeDef> attributes = live->attributes();
  uint32_t next_id = live->next_attribute_id();
  const uint64_t generation = live->generation_id();
  rocksdb::WriteBatch batch;
  bool added = false;
  for (const AttributeSpec& s : specs) {
    auto same = [&](const AttributeDef& a) { return a.name == s.name; };
    if (std::find_if(attributes.begin(), attributes.end(), same) != attributes.end()) continue;
    AttributeDef a;
    a.name = s.name;
    a.type = s.type;
    a.indexed = s.indexed;
    a.id = next_id++;
    a.origin = origin;
    PutProto(engine_, &batch, Cf::kCatalog, storage::AttributeKey(generation, a.name), ToRow(a));
    attributes.push_back(std::move(a));
    added = true;
  }
  if (!added) return live;
  v1::TableRow row = live->row();
  row.set_next_attribute_id(next_id);
  PutProto(engine_, &batch, Cf::kCatalog, storage::TableKey(row.database(), row.name(), generation),
           row);
  return ReplaceDefinitionLocked(live, std::move(row), std::move(attributes), &batch, nullptr);
}

absl::StatusOr<TableRef> Catalog::ReplaceDefinitionLocked(
    const TableRef& live, v1::TableRow row, std::vector<AttributeDef> attributes,
    rocksdb::WriteBatch* batch, const std::function<void(CatalogSnapshot*)>& also) {
  mu_.AssertHeld();
  // GenerationState invariant (1): from before the write until the new definition is
  // published, no writer validated against `live` can commit.
  absl::MutexLock schema_lock(&live->state()->schema_mu());
  CAIRN_RETURN_IF_ERROR(engine_->Write(batch));
  const uint64_t version = current_->version + 1;
  live->state()->set_schema_version(version);
  auto def = std::make_shared<TableDef>(std::move(row), std::move(attributes), live->shared_state(),
                                        version);
  auto next = CopyLocked();
  PutTable(next.get(), def->database(), def->name(), def);
  if (also) also(next.get());
  PublishLocked(std::move(next));
  return TableRef(def);
}

absl::StatusOr<TableRef> Catalog::CreateAttribute(absl::string_view db, absl::string_view table,
                                                  const AttributeSpec& spec) {
  CAIRN_RETURN_IF_ERROR(ValidateAttributeName(spec.name));
  WriteLock lock(this);
  CAIRN_ASSIGN_OR_RETURN(TableRef live, current_->FindTable(db, table));
  if (live->FindAttribute(spec.name) != nullptr) {
    return Error(ErrorCode::kAttributeExists, absl::StrCat("attribute '", Qualified(db, table), ".",
                                                           spec.name, "' already exists"));
  }
  return AddAttributesLocked(live, {spec}, v1::LOCAL);
}

absl::StatusOr<TableRef> Catalog::EnsureAttributes(const TableRef& def,
                                                   const std::vector<AttributeSpec>& attributes,
                                                   Origin origin) {
  for (const AttributeSpec& a : attributes) CAIRN_RETURN_IF_ERROR(ValidateAttributeName(a.name));
  WriteLock lock(this);
  auto live = current_->FindTable(def->database(), def->name());
  if (!live.ok() || (*live)->generation_id() != def->generation_id()) {
    return Error(ErrorCode::kTableDropping,
                 absl::StrCat("table '", def->QualifiedName(), "' was dropped"));
  }
  return AddAttributesLocked(*live, attributes, origin);
}

absl::StatusOr<TableRef> Catalog::RemoveAttribute(absl::string_view db, absl::string_view table,
                                                  absl::string_view attribute) {
  WriteLock lock(this);
  CAIRN_ASSIGN_OR_RETURN(TableRef live, current_->FindTable(db, table));
  const AttributeDef* a = live->FindAttribute(attribute);
  if (a == nullptr) {
    return Error(ErrorCode::kUnknownAttribute, absl::StrCat("attribute '", Qualified(db, table),
                                                            ".", attribute, "' does not exist"));
  }
  if (a->is_primary_key) {
    return Error(ErrorCode::kBadRequest, absl::StrCat("cannot drop the primary key '", attribute,
                                                      "' of ", Qualified(db, table)));
  }
  const uint64_t generation = live->generation_id();
  rocksdb::WriteBatch batch;
  batch.Delete(engine_->cf(Cf::kCatalog), ToSlice(storage::AttributeKey(generation, attribute)))
      .PermitUncheckedError();
  // The attribute's index entries: one range. Its id is never reused (next_attribute_id).
  const std::string begin = storage::IndexAttributePrefix(generation, a->id);
  const std::string end = storage::IndexAttributePrefix(generation, a->id + 1);
  batch.DeleteRange(engine_->cf(Cf::kIndexes), ToSlice(begin), ToSlice(end)).PermitUncheckedError();
  // Until RecordStore has stripped the values, a restart resumes the strip (PendingStrips).
  batch.Put(engine_->cf(Cf::kMeta), ToSlice(storage::StripKey(generation, attribute)), "")
      .PermitUncheckedError();
  std::vector<AttributeDef> attributes;
  for (const AttributeDef& x : live->attributes()) {
    if (x.name != attribute) attributes.push_back(x);
  }
  return ReplaceDefinitionLocked(live, live->row(), std::move(attributes), &batch, nullptr);
}

// ---------------------------------------------------------------------------------------------
// Drops (C7, C8, C9, C11, C14).

absl::Status Catalog::TombstoneLocked(const TableRef& def, bool timed, Hlc dropped_time) {
  mu_.AssertHeld();
  v1::Tombstone tombstone;
  tombstone.set_drop_id(next_drop_id_++);
  tombstone.set_incarnation(options_.incarnation);
  tombstone.set_timed(timed);
  if (timed) tombstone.set_dropped_time(dropped_time);
  v1::TableRow row = def->row();
  *row.mutable_tombstone() = tombstone;
  rocksdb::WriteBatch batch;
  PutProto(engine_, &batch, Cf::kCatalog,
           storage::TableKey(def->database(), def->name(), def->generation_id()), row);
  CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));

  pending_drops_[def->generation_id()] = PendingDrop{def, tombstone};
  auto next = CopyLocked();
  PutTable(next.get(), def->database(), def->name(), nullptr);
  next->dropping.insert(MarkerId(def->database(), def->name()));
  if (timed) {
    Hlc& m = next->markers[MarkerId(def->database(), def->name())];
    m = std::max(m, dropped_time);
  }
  PublishLocked(std::move(next));
  return absl::OkStatus();
}

std::vector<uint64_t> Catalog::PendingDropsOfLocked(absl::string_view db,
                                                    absl::string_view table) const {
  mu_.AssertHeld();
  std::vector<uint64_t> out;
  for (const auto& [generation, pending] : pending_drops_) {
    if (pending.def->database() == db && pending.def->name() == table) out.push_back(generation);
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
    }
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
    WriteLock lock(this);
    auto it = pending_drops_.find(generation);
    if (it == pending_drops_.end()) continue;
    // Step 3.
    const TableRef def = it->second.def;
    CAIRN_RETURN_IF_ERROR(FinishDropLocked(def->row(), it->second.tombstone));
    pending_drops_.erase(it);
    if (PendingDropsOfLocked(def->database(), def->name()).empty()) {
      auto next = CopyLocked();
      next->dropping.erase(MarkerId(def->database(), def->name()));
      PublishLocked(std::move(next));
    }
  }
  return absl::OkStatus();
}

absl::Status Catalog::FinishDropLocked(const v1::TableRow& row, const v1::Tombstone& tombstone) {
  mu_.AssertHeld();
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
  if (!tombstone.timed()) {
    // Decision 44: a local-only drop (or a node-local table's drop) leaves no marker, so a
    // peer's table of the name may come back here with its next snapshot (C5). The rows this
    // node applied from that peer before (or skipped while its own node-local table held the
    // name) must come back with it: every peer with a cursor in the database is asked again
    // for the table once it is live here again (value 0: "after a local drop").
    CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> peers,
                           PeersWithCursorIn(engine_, row.database()));
    const std::string zero(8, '\0');
    for (const std::string& peer : peers) {
      batch
          .Put(engine_->cf(Cf::kMeta),
               ToSlice(storage::RefetchKey(row.database(), row.name(), peer)), zero)
          .PermitUncheckedError();
    }
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
    WriteLock lock(this);
    auto live = current_->FindTable(db, table);
    generations = PendingDropsOfLocked(db, table);
    if (!live.ok()) {
      // A retry of a drop whose drain timed out completes it.
      if (generations.empty()) return live.status();
      const v1::Tombstone& t = pending_drops_[generations.back()].tombstone;
      result.timed = t.timed();
      result.dropped_time = t.dropped_time();
    } else {
      const TableRef& def = *live;
      result.timed = timed && def->replicate();  // C11: a node-local drop is never timed
      if (result.timed) {
        result.dropped_time = std::max(options_.hlc->Now(), def->created_time() + 1);  // C7
      }
      CAIRN_RETURN_IF_ERROR(TombstoneLocked(def, result.timed, result.dropped_time));
      generations.push_back(def->generation_id());
    }
  }
  CAIRN_RETURN_IF_ERROR(DrainAndFinish(generations));
  return result;
}

absl::StatusOr<DropResult> Catalog::DropDatabase(absl::string_view db, bool timed) {
  std::vector<std::string> tables;
  DropResult result;
  {
    WriteLock lock(this);
    const DatabaseDef* d = current_->FindDatabase(db);
    if (d == nullptr) {
      return Error(ErrorCode::kDatabaseNotFound,
                   absl::StrCat("database '", db, "' does not exist"));
    }
    for (const auto& [name, def] : d->tables) tables.push_back(name);
  }
  for (const std::string& t : tables) {
    auto dropped = DropTable(db, t, timed);
    if (!dropped.ok()) {
      if (GetErrorCode(dropped.status()) == ErrorCode::kTableNotFound) continue;  // raced
      return dropped.status();
    }
    if (dropped->timed) {
      result.timed = true;
      result.dropped_time = std::max(result.dropped_time, dropped->dropped_time);
    }
  }
  WriteLock lock(this);
  const DatabaseDef* d = current_->FindDatabase(db);
  if (d == nullptr) return result;
  if (!d->tables.empty()) {
    // A table was created in it meanwhile: it lives, and so does its database.
    spdlog::info("[{}] database {} keeps {} table(s) created during its drop", options_.node_name,
                 std::string(db), d->tables.size());
    return result;
  }
  rocksdb::WriteBatch batch;
  batch.Delete(engine_->cf(Cf::kCatalog), ToSlice(storage::DatabaseKey(db))).PermitUncheckedError();
  CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
  auto next = CopyLocked();
  next->databases.erase(std::string(db));
  PublishLocked(std::move(next));
  return result;
}

absl::StatusOr<bool> Catalog::RecordMarkerLocked(absl::string_view db, absl::string_view table,
                                                 Hlc dropped_time, CatalogSnapshot* snap) {
  mu_.AssertHeld();
  if (dropped_time <= current_->MarkerFor(db, table)) return false;
  v1::DropMarker marker;
  marker.set_dropped_time(dropped_time);
  rocksdb::WriteBatch batch;
  PutProto(engine_, &batch, Cf::kCatalog, storage::MarkerKey(db, table), marker);
  CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
  snap->markers[MarkerId(db, table)] = dropped_time;
  return true;
}

absl::StatusOr<PeerDropResult> Catalog::ApplyPeerDrop(absl::string_view db, absl::string_view table,
                                                      Hlc dropped_time) {
  CAIRN_RETURN_IF_ERROR(ValidateDatabaseName(db));
  CAIRN_RETURN_IF_ERROR(ValidateTableName(table));
  options_.hlc->Observe(dropped_time);
  uint64_t generation = 0;
  {
    // The decision and the tombstone are one critical section (C8 "re-checked under the
    // catalog lock"): a recreate cannot slip in between.
    WriteLock lock(this);
    auto live = current_->FindTable(db, table);
    if (!live.ok() || !(*live)->replicate() ||
        !IsDeadGeneration((*live)->created_time(), dropped_time)) {
      // Absent, node-local (C11) or newer: kept. The marker is recorded either way so it
      // reaches nodes that still hold older copies.
      if (live.ok() && (*live)->replicate() && dropped_time > current_->MarkerFor(db, table)) {
        // A kept replicating generation: the marker is published with a new definition, so
        // a peer apply that checked row generations against the old marker re-checks them
        // (GenerationState (1)); the caller's purge then sees every row it must remove.
        rocksdb::WriteBatch batch;
        v1::DropMarker marker;
        marker.set_dropped_time(dropped_time);
        PutProto(engine_, &batch, Cf::kCatalog, storage::MarkerKey(db, table), marker);
        // Rows of older generations relayed into this one die with the marker (C8). The
        // purge is recorded in the marker's batch, so a crash before it runs cannot skip it
        // (the marker, once held, is never applied again); RecordStore runs it.
        CAIRN_ASSIGN_OR_RETURN(
            bool older_rows,
            HoldsRowGenerations(engine_, (*live)->generation_id(), 0, dropped_time));
        if (older_rows) {
          std::string value;
          storage::PutBigEndian64(dropped_time, &value);
          batch
              .Put(engine_->cf(Cf::kMeta), ToSlice(storage::PurgeKey((*live)->generation_id())),
                   value)
              .PermitUncheckedError();
        }
        const std::pair<std::string, std::string> id = MarkerId(db, table);
        CAIRN_RETURN_IF_ERROR(ReplaceDefinitionLocked(
                                  *live, (*live)->row(), (*live)->attributes(), &batch,
                                  [&](CatalogSnapshot* next) { next->markers[id] = dropped_time; })
                                  .status());
        return PeerDropResult::kKept;
      }
      auto next = CopyLocked();
      CAIRN_ASSIGN_OR_RETURN(bool recorded,
                             RecordMarkerLocked(db, table, dropped_time, next.get()));
      if (recorded) PublishLocked(std::move(next));
      return live.ok() ? PeerDropResult::kKept : PeerDropResult::kAbsent;
    }
    CAIRN_RETURN_IF_ERROR(TombstoneLocked(*live, /*timed=*/true, dropped_time));
    generation = (*live)->generation_id();
  }
  // The rows die with their generation (the drop is the older fact, SPEC §5): never silently.
  uint64_t rows = 0;
  {
    std::string value;
    bool found = false;
    CAIRN_RETURN_IF_ERROR(engine_->Get(Cf::kMeta, storage::CountKey(generation), &value, &found));
    if (found) rows = static_cast<uint64_t>(std::max<int64_t>(0, storage::DecodeCount(value)));
  }
  CAIRN_RETURN_IF_ERROR(DrainAndFinish({generation}));
  if (rows > 0) {
    CountRetiredRows(rows);
    spdlog::warn("[{}] {} row(s) of {} died with their generation, retired by a peer's drop at {}",
                 options_.node_name, rows, Qualified(db, table), dropped_time);
  }
  return PeerDropResult::kDropped;
}

absl::StatusOr<std::vector<std::pair<std::string, PeerDropResult>>> Catalog::ApplyPeerDropDatabase(
    absl::string_view db, Hlc dropped_time) {
  CAIRN_RETURN_IF_ERROR(ValidateDatabaseName(db));
  std::vector<std::string> tables;
  {
    WriteLock lock(this);
    if (const DatabaseDef* d = current_->FindDatabase(db)) {
      for (const auto& [name, def] : d->tables) tables.push_back(name);
    }
  }
  std::vector<std::pair<std::string, PeerDropResult>> results;
  for (const std::string& t : tables) {
    CAIRN_ASSIGN_OR_RETURN(PeerDropResult r, ApplyPeerDrop(db, t, dropped_time));
    results.emplace_back(t, r);
  }
  WriteLock lock(this);
  const DatabaseDef* d = current_->FindDatabase(db);
  if (d != nullptr && d->tables.empty()) {
    rocksdb::WriteBatch batch;
    batch.Delete(engine_->cf(Cf::kCatalog), ToSlice(storage::DatabaseKey(db)))
        .PermitUncheckedError();
    CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
    auto next = CopyLocked();
    next->databases.erase(std::string(db));
    PublishLocked(std::move(next));
  }
  return results;
}

// ---------------------------------------------------------------------------------------------
// Peer definitions (C4, C5, C6, C11).

void Catalog::LogDiscardOnceLocked(const TableRef& def, absl::string_view attribute,
                                   absl::string_view field, absl::string_view local,
                                   absl::string_view peer) {
  mu_.AssertHeld();
  std::string key = absl::StrCat(def->generation_id(), "/", attribute, "/", field);
  if (!logged_discards_.insert(std::move(key)).second) return;
  spdlog::warn(
      "[{}] ignoring a peer's redefinition of {}.{} ({}: local {}, peer {}); the local "
      "schema is authoritative (C4)",
      options_.node_name, def->QualifiedName(), std::string(attribute), std::string(field),
      std::string(local), std::string(peer));
}

absl::Status Catalog::ApplyPeerTable(const PeerTableDef& peer) {
  CAIRN_RETURN_IF_ERROR(ValidateDatabaseName(peer.database));
  CAIRN_RETURN_IF_ERROR(ValidateTableName(peer.table));
  if (peer.primary_key.empty()) {
    return Error(ErrorCode::kBadRequest,
                 absl::StrCat("peer definition of ", Qualified(peer.database, peer.table),
                              " has no primary key"));
  }
  CAIRN_RETURN_IF_ERROR(ValidateAttributeName(peer.primary_key));
  for (const AttributeSpec& a : peer.attributes)
    CAIRN_RETURN_IF_ERROR(ValidateAttributeName(a.name));
  options_.hlc->Observe(peer.created_time);

  WriteLock lock(this);
  // C6, under the same lock as the create it guards.
  const Hlc marker = current_->MarkerFor(peer.database, peer.table);
  if (IsDeadGeneration(peer.created_time, marker)) {
    if (logged_discards_
            .insert(absl::StrCat("dead/", peer.database, "/", peer.table, "/", peer.created_time))
            .second) {
      spdlog::warn("[{}] refusing a peer definition of {} created at {}: dropped at {} (C6)",
                   options_.node_name, Qualified(peer.database, peer.table), peer.created_time,
                   marker);
    }
    return Error(
        ErrorCode::kTableGenerationDropped,
        absl::StrCat("table '", Qualified(peer.database, peer.table), "' generation created at ",
                     peer.created_time, " was dropped at ", marker));
  }
  auto live = current_->FindTable(peer.database, peer.table);
  if (!live.ok()) {
    // C5: a new generation with the peer's stamp (0 if it sent none).
    CAIRN_ASSIGN_OR_RETURN(std::vector<AttributeDef> attributes,
                           BuildAttributes(peer.primary_key, peer.attributes, v1::CLUSTER));
    v1::TableRow row;
    row.set_database(peer.database);
    row.set_name(peer.table);
    row.set_created_time(peer.created_time);
    row.set_primary_key(peer.primary_key);
    row.set_schema_defined(peer.schema_defined);
    row.set_replicate(true);
    row.set_origin(v1::CLUSTER);
    return CreateGenerationLocked(std::move(row), std::move(attributes)).status();
  }
  const TableRef& def = *live;
  if (!def->replicate()) {
    // C11: a node-local table owns its name here; the peer's table is a different one.
    LogDiscardOnceLocked(def, "*", "replicate", "false (node-local)", "true");
    return absl::OkStatus();
  }
  // C4: additive only. Differences are logged once and discarded.
  if (def->primary_key() != peer.primary_key) {
    LogDiscardOnceLocked(def, "*", "primary_key", def->primary_key(), peer.primary_key);
  }
  if (def->schema_defined() != peer.schema_defined) {
    LogDiscardOnceLocked(def, "*", "schema_defined", def->schema_defined() ? "true" : "false",
                         peer.schema_defined ? "true" : "false");
  }
  std::vector<AttributeSpec> added;
  for (const AttributeSpec& a : peer.attributes) {
    const AttributeDef* local = def->FindAttribute(a.name);
    if (local == nullptr) {
      if (a.name != peer.primary_key) added.push_back(a);
      continue;
    }
    if (local->is_primary_key) continue;
    if (local->type != a.type) {
      LogDiscardOnceLocked(def, a.name, "type", AttributeTypeName(local->type),
                           AttributeTypeName(a.type));
    }
    if (local->indexed != a.indexed) {
      LogDiscardOnceLocked(def, a.name, "indexed", local->indexed ? "true" : "false",
                           a.indexed ? "true" : "false");
    }
  }
  if (added.empty()) return absl::OkStatus();
  return AddAttributesLocked(def, added, v1::CLUSTER).status();
}

}  // namespace cairn::catalog
