// DB_SCHEMA (SPEC R3, R4): what a node tells a peer about one database, and how it applies
// what a peer told it. Pure functions of a catalog snapshot / a record store; no network.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cairn/peer/v1/peer.pb.h"
#include "catalog/catalog.h"
#include "catalog/record_store.h"
#include "catalog/schema.h"

namespace cairn::replication {

// R11: tables of each database a route neither sends nor accepts. Empty: nothing excluded.
class Exclusions {
 public:
  void Add(const std::string& db, const std::string& table) { tables_[db].insert(table); }
  bool Excludes(absl::string_view db, absl::string_view table) const {
    auto it = tables_.find(std::string(db));
    return it != tables_.end() && it->second.count(std::string(table)) != 0;
  }
  bool AnyIn(absl::string_view db) const { return tables_.count(std::string(db)) != 0; }
  // The excluded tables of `db`, sorted.
  std::vector<std::string> TablesIn(absl::string_view db) const {
    auto it = tables_.find(std::string(db));
    return it == tables_.end() ? std::vector<std::string>()
                               : std::vector<std::string>(it->second.begin(), it->second.end());
  }
  bool empty() const { return tables_.empty(); }
  // "db.table", sorted.
  std::vector<std::string> List() const;

 private:
  absl::btree_map<std::string, absl::btree_set<std::string>> tables_;
};

// Every database a snapshot knows of: live ones and those that only have drop markers or
// attribute markers left, and the system database when it holds users, roles or a key (U6).
std::vector<std::string> SchemaDatabases(const catalog::CatalogSnapshot& snap);

// What a DbSchema for one peer holds.
struct SchemaOptions {
  Exclusions exclusions;  // tables and their markers left out (R11, the sender's side)
  // C15's attribute markers and attribute stamps: only to a peer that advertised
  // "schema.attribute_markers.v1" (R1).
  bool attribute_markers = true;
  // The system database's users, roles, markers and key (SPEC U6): only to a peer that
  // advertised "schema.users.v1" (R1); to another, no DbSchema of it at all.
  bool users = true;
  // The database's placement and database marker (design 0013, P1): only to a peer that
  // advertised "placement.v1"; the digest covers them only then.
  bool placement = true;
  // A delta (DbSchema.delta, R3 incremental): the definition, marker and attribute markers
  // of these names only ("" names the database itself: nothing but the digest). Null: the
  // whole database.
  const absl::btree_set<std::string>* only = nullptr;
};

// Whether a peer with these options is sent DbSchemas of `db` (R1: the system database only
// to a peer that advertised users).
inline bool SendsDatabase(const SchemaOptions& options, absl::string_view db) {
  return options.users || db != catalog::kSystemDatabase;
}

// R3: the live replicating tables of `db` (node-local ones, C11, are left out), every timed
// drop marker of `db` and its attribute markers (C15), with the digest of that view. For the
// system database: its users, roles, markers and key (user_sync.h).
peer::v1::DbSchema BuildDbSchema(const catalog::CatalogSnapshot& snap, absl::string_view db,
                                 const SchemaOptions& options = {});

// R3, incremental: what a peer needs after the catalog changes `changes` (Catalog::
// ChangesSince its last round): a whole DbSchema of each database in `full` (the peer asked
// for it, or a refetch needs its definitions again), and a delta of each other database a
// change names, holding the current state of every name changed. Each carries the digest.
std::vector<peer::v1::DbSchema> BuildDeltas(const catalog::CatalogSnapshot& snap,
                                            const std::vector<catalog::SchemaChange>& changes,
                                            const absl::btree_set<std::string>& full,
                                            const SchemaOptions& options);

// R3, incremental, no echo: per name a DbSchema carries anything of (a definition, a marker,
// attribute markers), a fingerprint of all of it (FNV-1a; the same on every node and build).
// Two equal fingerprints mean the same state of the name, as a DbSchema spells it.
using NameStates = absl::flat_hash_map<std::string, uint64_t>;
NameStates StatesOf(const peer::v1::DbSchema& schema);

// The names of a delta whose state in it (`ours`, StatesOf the delta) is the one in `told`
// (what the peer last sent of that name, StatesOf its DbSchemas): the peer holds them already,
// so sending them back would be an echo.
absl::flat_hash_set<std::string> NamesThePeerHolds(const NameStates& told, const NameStates& ours);
// Takes those names out of a delta. A whole DbSchema is left as it is.
void DropNames(const absl::flat_hash_set<std::string>& names, peer::v1::DbSchema* delta);

// A stable 64-bit digest (FNV-1a; the same on every node and build) of the live replicating
// tables of `db` — names and attribute names, as the sum of their TableDef::names_digest the
// catalog keeps, so no walk of the tables — its markers and its attribute markers
// (C15). Two nodes with equal digests
// for every database hold the same tables and attributes (cluster_status schema_in_sync).
// Generation stamps are left out: two nodes that created a name concurrently keep their own
// generations (C4) and are still in sync. A node-local table (C11) that shadows a peer's name
// keeps the digests apart: the nodes really do differ there.
// `exclusions` leave their tables out, as BuildDbSchema does.
// `placement`: the database's placement and marker count too (P1; a peer with "placement.v1").
uint64_t SchemaDigest(const catalog::CatalogSnapshot& snap, absl::string_view db,
                      const Exclusions& exclusions = {}, bool placement = true);

struct SchemaApplyStats {
  uint64_t markers_applied = 0;            // retired a generation or recorded a newer marker
  uint64_t attribute_markers_applied = 0;  // newer than the one held (C15)
  uint64_t tables_applied = 0;  // definitions accepted (new generation or attributes added)
  uint64_t tables_refused = 0;  // dead generations (C6): expected, not an error
  uint64_t excluded = 0;        // tables and markers the route excludes (R11), dropped
  uint64_t skipped = 0;         // could not be applied now (a drop draining, a bad name)
  uint64_t users_applied = 0;   // users, roles, their markers or the key that changed (U6)
  uint64_t users_restored = 0;  // super users the U7 repair gave back
};

// R4: markers first (C8, purging rows they retire; then C15's attribute markers, stripping
// the values they drop), then definitions (C4, C5, C6). Applying
// the same snapshot twice changes nothing. A table or marker this node cannot apply now (a
// drop draining, a name it refuses) is skipped and counted; an error means the node could
// not write, and what was applied before it stays applied (each step is its own catalog
// batch, and each is idempotent).
// What `exclusions` names is dropped on arrival (R11, the receiver's side).
absl::Status ApplyDbSchema(catalog::Catalog* catalog, catalog::RecordStore* records,
                           const peer::v1::DbSchema& schema, SchemaApplyStats* stats,
                           const Exclusions& exclusions = {});

}  // namespace cairn::replication
