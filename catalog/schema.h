// The in-memory catalog model: immutable table definitions, databases, and the snapshot that
// readers see (SPEC C1). Everything here is immutable once published, except GenerationState,
// which is the shared runtime state of one table generation. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "cairn/catalog/v1/catalog.pb.h"
#include "catalog/principals.h"
#include "common/clock.h"
#include "common/gate.h"
#include "common/persistent_map.h"

namespace cairn::catalog {

using AttributeType = v1::AttributeType;
using Origin = v1::Origin;

// "String", "Int", ... (case-insensitive; SPEC D3). INVALID_ARGUMENT names the bad value.
absl::StatusOr<AttributeType> ParseAttributeType(absl::string_view name);
absl::string_view AttributeTypeName(AttributeType type);

// Reserved attributes of dynamic tables (SPEC D2).
inline constexpr absl::string_view kCreatedTimeAttribute = "__createdtime__";
inline constexpr absl::string_view kUpdatedTimeAttribute = "__updatedtime__";

struct AttributeDef {
  std::string name;
  AttributeType type = v1::ANY;
  bool indexed = false;
  uint32_t id = 0;  // index key space within the generation; never reused
  bool is_primary_key = false;
  Origin origin = v1::LOCAL;
  // When it was created (SPEC C15): an attribute marker at or before this stamp leaves it
  // alone. 0: unknown (older than every marker).
  Hlc created_time = 0;
};

// Runtime state of one generation, shared by every TableDef version of it.
//
// Invariants:
//  (1) schema_version() changes whenever a new definition of this generation is published,
//      under an exclusive hold of schema_mu(). A writer holds schema_mu() shared from the
//      moment it checks that its TableDef is current until its batch commits; if the check
//      fails it re-validates against the new definition. So once a schema change has bumped
//      the version, no write validated against the old definition can still commit.
class GenerationState {
 public:
  absl::Mutex& schema_mu() ABSL_LOCK_RETURNED(schema_mu_) { return schema_mu_; }

  Gate& gate() { return gate_; }
  // An admission token, or TABLE_DROPPING naming the table (SPEC C9 step 2).
  absl::StatusOr<Gate::Token> Admit(absl::string_view qualified_name);
  // True once the drop has begun: long scans poll this and stop (SPEC C9 "cancel its scans").
  bool dropping() const { return gate_.closing(); }

  uint64_t schema_version() const ABSL_SHARED_LOCKS_REQUIRED(schema_mu_) { return schema_version_; }
  void set_schema_version(uint64_t v) ABSL_EXCLUSIVE_LOCKS_REQUIRED(schema_mu_) {
    schema_version_ = v;
  }

 private:
  Gate gate_;
  absl::Mutex schema_mu_;
  uint64_t schema_version_ ABSL_GUARDED_BY(schema_mu_) = 0;  // see invariant (1)
};

// Attribute name -> the stamp of its drop: drop_attribute strips of a generation that have not
// finished (decision 4), or the attribute markers of a table name (SPEC C15). A stored value of
// that name in a row whose version is older than the stamp belongs to the dropped attribute,
// whatever the definition holds now: a re-created attribute of the name starts empty.
using AttributeStamps = absl::btree_map<std::string, Hlc, std::less<>>;

// One published definition of a table generation. Immutable.
class TableDef {
 public:
  // `markers`: the attribute markers of the name (C15); always empty for a node-local table,
  // whose rows no peer marker touches (C11).
  TableDef(v1::TableRow row, std::vector<AttributeDef> attributes,
           std::shared_ptr<GenerationState> state, uint64_t schema_version,
           AttributeStamps stripping = {}, AttributeStamps markers = {});
  // indexed_ points into attributes_: not copyable.
  TableDef(const TableDef&) = delete;
  TableDef& operator=(const TableDef&) = delete;

  const std::string& database() const { return row_.database(); }
  const std::string& name() const { return row_.name(); }
  std::string QualifiedName() const { return row_.database() + "." + row_.name(); }
  uint64_t generation_id() const { return row_.generation_id(); }
  Hlc created_time() const { return row_.created_time(); }
  const std::string& primary_key() const { return row_.primary_key(); }
  bool schema_defined() const { return row_.schema_defined(); }
  // D2: refuses attributes it does not declare (schema-defined tables only).
  bool sealed() const { return row_.sealed(); }
  bool replicate() const { return row_.replicate(); }
  Origin origin() const { return row_.origin(); }
  uint32_t next_attribute_id() const { return row_.next_attribute_id(); }
  const v1::TableRow& row() const { return row_; }

  const std::vector<AttributeDef>& attributes() const { return attributes_; }
  const AttributeDef* FindAttribute(absl::string_view name) const;
  // Indexed attributes other than the primary key.
  const std::vector<const AttributeDef*>& indexed() const { return indexed_; }

  // Dropped attributes whose values are still being stripped from stored rows, with the
  // stamps of their drops (AttributeStamps).
  const AttributeStamps& stripping() const { return stripping_; }
  // The attribute markers of the table's name held here (C15).
  const AttributeStamps& attribute_markers() const { return markers_; }
  // Both of the above, the later stamp of each name: a value of that name in a row older than
  // its stamp is a dropped value (internal::DropStripped removes them).
  const AttributeStamps& dropped() const { return dropped_; }
  // Whether `field` of a row written at `version` is a dropped value: one a strip has still
  // to remove, or one a peer's row brings after its marker (stripped on apply). Readers and
  // merges treat it as absent.
  bool IsStripped(absl::string_view field, Hlc version) const {
    if (dropped_.empty()) return false;
    auto it = dropped_.find(field);
    return it != dropped_.end() && version < it->second;
  }

  GenerationState* state() const { return state_.get(); }
  const std::shared_ptr<GenerationState>& shared_state() const { return state_; }
  uint64_t schema_version() const { return schema_version_; }
  // A stable hash (FNV-1a, the same on every node and build) of the table's name and its
  // attribute names in name order: its share of the schema digest (DatabaseDef::
  // replicated_digest, replication's SchemaDigest).
  uint64_t names_digest() const { return names_digest_; }

 private:
  const v1::TableRow row_;  // the primary row as stored, without tombstone
  const std::vector<AttributeDef> attributes_;
  absl::flat_hash_map<std::string, size_t> by_name_;
  std::vector<const AttributeDef*> indexed_;
  const std::shared_ptr<GenerationState> state_;
  const uint64_t schema_version_;
  const AttributeStamps stripping_;
  const AttributeStamps markers_;
  AttributeStamps dropped_;    // set in the constructor, then constant
  uint64_t names_digest_ = 0;  // set in the constructor, then constant
};
using TableRef = std::shared_ptr<const TableDef>;

struct DatabaseDef {
  std::string name;
  Hlc created_time = 0;
  // Design 0013, P1: the nodes that hold its rows (empty members: every node), stamped.
  v1::Placement placement;
  // Live tables only. Persistent: a publish that changes one table copies O(kMaxChunk) of it.
  PersistentMap<std::string, TableRef> tables;
  // The sum (mod 2^64) of names_digest() over the replicating tables in `tables`: kept by
  // every change of `tables` (Catalog::PutTable), so a schema digest costs no walk of them.
  uint64_t replicated_digest = 0;
};
using DatabaseRef = std::shared_ptr<const DatabaseDef>;

// What readers see (SPEC C1): a consistent, immutable view of every live table. A table is in
// a snapshot only after its whole definition committed; a dropped table leaves at step 1.
struct CatalogSnapshot {
  uint64_t version = 0;  // increases with every publish
  absl::btree_map<std::string, DatabaseRef> databases;
  // Newest drop time per (db, table): durable markers and drops still completing (a pending
  // drop's time is in its tombstone, so it is as durable as the marker).
  // Persistent maps (common/persistent_map.h), as DatabaseDef::tables: a publish copies the
  // chunk of the one name it changes, not every marker (issue 23).
  PersistentMap<std::pair<std::string, std::string>, Hlc> markers;
  // C15: the attribute markers of each (db, table) name, durable. They outlive the attribute
  // and its generation, until the name's table marker subsumes them
  // (internal::SubsumedAttributeMarkers).
  PersistentMap<std::pair<std::string, std::string>, AttributeStamps> attribute_markers;
  // Names with a drop between C9 step 1 and step 3 and no live generation: requests for them
  // answer TABLE_DROPPING rather than TABLE_NOT_FOUND.
  absl::btree_set<std::pair<std::string, std::string>> dropping;
  // Per database, the sum (mod 2^64) of NameMarkersDigest over the names with markers or
  // attribute markers in it: the schema digest's share of them, kept by every publish
  // (Catalog::Publish updates the one name it changed), so a digest walks no markers. Holds an
  // entry for every database with a marker or an attribute marker (table markers are never
  // removed, and an attribute marker goes only with its name's table marker), so it also
  // lists them without a walk (replication's SchemaDatabases).
  absl::btree_map<std::string, uint64_t, std::less<>> marker_digests;
  // Design 0013, P1: the newest timed drop_database of each name, durable. A placement stamped
  // before it is dead; a live database's placement is never older than it.
  absl::btree_map<std::string, Hlc, std::less<>> database_markers;
  // Users and roles (SPEC §7), the system database's objects. Never null once published.
  PrincipalsRef principals = std::make_shared<const Principals>();

  // DATABASE_NOT_FOUND / TABLE_NOT_FOUND name what is missing; TABLE_DROPPING for a name
  // whose drop is still completing.
  absl::StatusOr<TableRef> FindTable(absl::string_view db, absl::string_view table) const;
  const DatabaseDef* FindDatabase(absl::string_view db) const;
  // 0 when no database of the name was dropped with a timed drop_database (P1).
  Hlc DatabaseMarkerFor(absl::string_view db) const;
  // 0 when the name was never dropped with a timed drop.
  Hlc MarkerFor(absl::string_view db, absl::string_view table) const;
  // The attribute markers of a name (empty if none).
  const AttributeStamps& AttributeMarkersFor(absl::string_view db, absl::string_view table) const;
  // 0 when the attribute of that name was never dropped with a marker.
  Hlc AttributeMarkerFor(absl::string_view db, absl::string_view table,
                         absl::string_view attribute) const;
  // The live table with this generation id, or null (a linear scan: for recovery paths).
  TableRef FindGeneration(uint64_t generation_id) const;
};
using SnapshotRef = std::shared_ptr<const CatalogSnapshot>;

// The schema digest's share of one name's markers in `snap`: a stable hash (FNV-1a) of its
// marker (C8) and of each of its attribute markers (C15), summed; 0 when it has none.
uint64_t NameMarkersDigest(const CatalogSnapshot& snap, absl::string_view db,
                           absl::string_view table);

// SPEC C6: a generation is dead when created_time < dropped_time (equal survives).
inline bool IsDeadGeneration(Hlc created_time, Hlc dropped_time) {
  return created_time < dropped_time;
}

}  // namespace cairn::catalog
