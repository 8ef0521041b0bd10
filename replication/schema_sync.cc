#include "replication/schema_sync.h"

#include <algorithm>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "catalog/placement.h"
#include "common/fault.h"
#include "common/fault_points.h"
#include "common/fnv1a.h"
#include "common/status.h"
#include "replication/user_sync.h"

namespace cairn::replication {
namespace {

// A table this node cannot take now (its drop is draining, C9) or at all (a name a newer peer
// allows): skipped, so one table never holds back the rest of the database; the next snapshot
// retries it (R3 incremental: the receiver asks for the database whole). Anything else
// (storage) ends the link.
bool Skippable(const absl::Status& s) {
  switch (GetErrorCode(s)) {
    case ErrorCode::kTableDropping:
    case ErrorCode::kInvalidName:
    case ErrorCode::kBadRequest:
    case ErrorCode::kTypeMismatch:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::vector<std::string> Exclusions::List() const {
  std::vector<std::string> out;
  for (const auto& [db, tables] : tables_) {
    for (const std::string& t : tables) out.push_back(absl::StrCat(db, ".", t));
  }
  return out;
}

std::vector<std::string> SchemaDatabases(const catalog::CatalogSnapshot& snap) {
  // marker_digests holds every database with a marker or an attribute marker (C8, C15): no
  // walk of the markers, which every sender's round would pay after each publish.
  absl::btree_set<std::string> names;
  for (const auto& [name, db] : snap.databases) names.insert(name);
  for (const auto& [name, sum] : snap.marker_digests) names.insert(name);
  for (const auto& [name, marker] : snap.database_markers) names.insert(name);  // P1
  if (HoldsPrincipals(*snap.principals)) names.insert(std::string(catalog::kSystemDatabase));
  return {names.begin(), names.end()};
}

namespace {

void AddTable(const catalog::TableDef& def, const SchemaOptions& options, peer::v1::DbSchema* out) {
  peer::v1::PeerTable* t = out->add_tables();
  t->set_name(def.name());
  t->set_created_time(def.created_time());
  t->set_primary_key(def.primary_key());
  t->set_schema_defined(def.schema_defined());
  t->set_sealed(def.sealed());
  for (const catalog::AttributeDef& a : def.attributes()) {
    peer::v1::PeerAttribute* pa = t->add_attributes();
    pa->set_name(a.name);
    pa->set_type(a.type);
    pa->set_indexed(a.indexed);
    if (options.attribute_markers) {
      pa->set_created_time(a.created_time);
      pa->set_provisional(a.origin == catalog::v1::PEER_RECORD);  // decision 103
    }
  }
}

void AddAttributeMarkers(const std::string& table, const catalog::AttributeStamps& stamps,
                         peer::v1::DbSchema* out) {
  for (const auto& [attribute, stamp] : stamps) {
    peer::v1::PeerAttributeMarker* m = out->add_attribute_markers();
    m->set_table(table);
    m->set_attribute(attribute);
    m->set_dropped_time(stamp);
  }
}

}  // namespace

peer::v1::DbSchema BuildDbSchema(const catalog::CatalogSnapshot& snap, absl::string_view db,
                                 const SchemaOptions& options) {
  if (db == catalog::kSystemDatabase) return BuildUsersSchema(snap, options.only);
  const Exclusions& exclusions = options.exclusions;
  peer::v1::DbSchema out;
  out.set_database(std::string(db));
  const std::string db_name(db);
  const catalog::DatabaseDef* d = snap.FindDatabase(db);
  if (options.placement) {
    // P1: in every DbSchema, whole or delta (a change of the database itself journals "").
    if (d != nullptr) *out.mutable_placement() = d->placement;
    out.set_database_marker(snap.DatabaseMarkerFor(db));
  }
  if (options.only != nullptr) {
    // A delta: the whole state of each name it lists, and nothing of the rest.
    out.set_delta(true);
    for (const std::string& name : *options.only) {
      if (name.empty() || exclusions.Excludes(db, name)) continue;  // "": the database only
      if (d != nullptr) {
        auto it = d->tables.find(name);
        if (it != d->tables.end() && it->second->replicate()) AddTable(*it->second, options, &out);
      }
      const Hlc marker = snap.MarkerFor(db, name);
      if (marker != 0) {
        peer::v1::PeerMarker* m = out.add_markers();
        m->set_table(name);
        m->set_dropped_time(marker);
      }
      if (options.attribute_markers) {
        AddAttributeMarkers(name, snap.AttributeMarkersFor(db, name), &out);
      }
    }
    out.set_digest(SchemaDigest(snap, db, exclusions, options.placement));
    return out;
  }
  if (d != nullptr) {
    for (const auto& [name, def] : d->tables) {
      if (!def->replicate()) continue;              // C11: node-local tables stay here
      if (exclusions.Excludes(db, name)) continue;  // R11
      AddTable(*def, options, &out);
    }
  }
  for (auto it = snap.markers.lower_bound({db_name, ""});
       it != snap.markers.end() && it->first.first == db_name; ++it) {
    if (exclusions.Excludes(db, it->first.second)) continue;
    peer::v1::PeerMarker* m = out.add_markers();
    m->set_table(it->first.second);
    m->set_dropped_time(it->second);
  }
  if (options.attribute_markers) {
    for (auto it = snap.attribute_markers.lower_bound({db_name, ""});
         it != snap.attribute_markers.end() && it->first.first == db_name; ++it) {
      if (exclusions.Excludes(db, it->first.second)) continue;
      AddAttributeMarkers(it->first.second, it->second, &out);
    }
  }
  out.set_digest(SchemaDigest(snap, db, exclusions, options.placement));
  return out;
}

std::vector<peer::v1::DbSchema> BuildDeltas(const catalog::CatalogSnapshot& snap,
                                            const std::vector<catalog::SchemaChange>& changes,
                                            const absl::btree_set<std::string>& full,
                                            const SchemaOptions& options) {
  absl::btree_map<std::string, absl::btree_set<std::string>> changed;
  for (const catalog::SchemaChange& c : changes) changed[c.database].insert(c.table);
  std::vector<peer::v1::DbSchema> out;
  for (const std::string& db : full) {
    if (SendsDatabase(options, db)) out.push_back(BuildDbSchema(snap, db, options));
  }
  for (const auto& [db, names] : changed) {
    if (full.contains(db) || !SendsDatabase(options, db)) continue;
    SchemaOptions delta = options;
    delta.only = &names;
    out.push_back(BuildDbSchema(snap, db, delta));
  }
  return out;
}

namespace {

// One part of a name's state: parts are summed, so their order in the message does not matter.
uint64_t PartHash(absl::string_view kind, absl::string_view a, uint64_t b) {
  Fnv1a h;
  h.Add(kind);
  h.Add(a);
  h.Add(b);
  return h.value();
}

}  // namespace

NameStates StatesOf(const peer::v1::DbSchema& schema) {
  NameStates out;
  std::string bytes;
  for (const peer::v1::PeerTable& t : schema.tables()) {
    // Attributes in name order: two nodes that made them in different orders hold the same.
    auto by_name = [](const peer::v1::PeerAttribute& a, const peer::v1::PeerAttribute& b) {
      return a.name() < b.name();
    };
    bytes.clear();
    if (std::is_sorted(t.attributes().begin(), t.attributes().end(), by_name)) {
      t.SerializeToString(&bytes);  // no map fields: the same bytes for the same definition
    } else {
      peer::v1::PeerTable sorted = t;
      std::sort(sorted.mutable_attributes()->begin(), sorted.mutable_attributes()->end(), by_name);
      sorted.SerializeToString(&bytes);
    }
    out[t.name()] += PartHash("table", bytes, 0);
  }
  for (const peer::v1::PeerMarker& m : schema.markers()) {
    out[m.table()] += PartHash("marker", "", m.dropped_time());
  }
  for (const peer::v1::PeerAttributeMarker& m : schema.attribute_markers()) {
    out[m.table()] += PartHash("attribute marker", m.attribute(), m.dropped_time());
  }
  AddUserStates(schema, &out);
  return out;
}

absl::flat_hash_set<std::string> NamesThePeerHolds(const NameStates& told, const NameStates& ours) {
  absl::flat_hash_set<std::string> held;
  for (const auto& [name, state] : ours) {
    auto it = told.find(name);
    if (it != told.end() && it->second == state) held.insert(name);
  }
  return held;
}

void DropNames(const absl::flat_hash_set<std::string>& names, peer::v1::DbSchema* delta) {
  if (!delta->delta() || names.empty()) return;
  auto drop = [&](auto* entries, auto name_of) {
    entries->erase(std::remove_if(entries->begin(), entries->end(),
                                  [&](const auto& e) { return names.contains(name_of(e)); }),
                   entries->end());
  };
  drop(delta->mutable_tables(), [](const peer::v1::PeerTable& t) { return t.name(); });
  drop(delta->mutable_markers(), [](const peer::v1::PeerMarker& m) { return m.table(); });
  drop(delta->mutable_attribute_markers(),
       [](const peer::v1::PeerAttributeMarker& m) { return m.table(); });
  DropUserNames(names, delta);
}

uint64_t SchemaDigest(const catalog::CatalogSnapshot& snap, absl::string_view db,
                      const Exclusions& exclusions, bool placement) {
  if (db == catalog::kSystemDatabase) return UsersDigest(*snap.principals);
  // The sums the catalog keeps, less what the route excludes (R11): no walk of the tables or
  // the markers. A database this node does not hold counts as one without tables.
  uint64_t tables = 0;
  const catalog::DatabaseDef* d = snap.FindDatabase(db);
  if (d != nullptr) tables = d->replicated_digest;
  uint64_t markers = 0;
  if (auto it = snap.marker_digests.find(db); it != snap.marker_digests.end()) markers = it->second;
  for (const std::string& name : exclusions.TablesIn(db)) {
    if (d != nullptr) {
      auto it = d->tables.find(name);
      if (it != d->tables.end() && it->second->replicate()) tables -= it->second->names_digest();
    }
    markers -= catalog::NameMarkersDigest(snap, db, name);
  }
  Fnv1a h;
  h.Add(db);
  h.Add(tables);
  h.Add("markers");
  h.Add(markers);
  if (placement) {
    // P1: 0 for a database on every node without a database marker, so such a digest is the
    // one a node that predates placement computes.
    const uint64_t p = catalog::PlacementDigest(
        d != nullptr ? d->placement : catalog::v1::Placement(), snap.DatabaseMarkerFor(db));
    if (p != 0) h.Add(p);
  }
  return h.value();
}

absl::Status ApplyDbSchema(catalog::Catalog* catalog, catalog::RecordStore* records,
                           const peer::v1::DbSchema& schema, SchemaApplyStats* stats,
                           const Exclusions& exclusions) {
  const std::string& db = schema.database();
  if (db == catalog::kSystemDatabase) {
    ++stats->skipped;  // users and roles: ApplyUsersSchema (no table lives there)
    return absl::OkStatus();
  }
  // R4, step 1: markers (C8). Each retires an older generation here, or is recorded for
  // later; rows of older row generations in a kept table are purged.
  for (const peer::v1::PeerMarker& m : schema.markers()) {
    if (exclusions.Excludes(db, m.table())) {
      ++stats->excluded;
      continue;
    }
    // Every snapshot repeats every marker: one this node holds already changes nothing (its
    // purge ran when it was first applied or, if that failed, stays pending in a purge/ key
    // and resumes at the next start), so skip the purge scan.
    if (catalog->Snapshot()->MarkerFor(db, m.table()) >= m.dropped_time()) continue;
    // why ignored: delays and crashes only (fault_points::kAll); a failed marker is retried
    // with the next snapshot anyway.
    CAIRN_FAULT(catalog->options().faults, fault_points::kReplSchemaBeforeMarker).IgnoreError();
    auto r = records->ApplyPeerDrop(db, m.table(), m.dropped_time());
    if (!r.ok()) {
      if (!Skippable(r.status())) {
        return Annotate(r.status(), absl::StrCat("marker of ", db, ".", m.table()));
      }
      ++stats->skipped;  // retried with the next snapshot
      continue;
    }
    if (*r != catalog::PeerDropResult::kAbsent) ++stats->markers_applied;
  }
  // Then attribute markers (C15): each removes an older attribute here and strips its values
  // from older rows, or is recorded for later. Every snapshot repeats them: one held already
  // changes nothing (its strip ran, or stays pending in a strip/ key for the next start).
  for (const peer::v1::PeerAttributeMarker& m : schema.attribute_markers()) {
    if (exclusions.Excludes(db, m.table())) {
      ++stats->excluded;
      continue;
    }
    if (catalog->Snapshot()->AttributeMarkerFor(db, m.table(), m.attribute()) >= m.dropped_time()) {
      continue;
    }
    // why ignored: delays and crashes only (fault_points::kAll).
    CAIRN_FAULT(catalog->options().faults, fault_points::kReplSchemaBeforeMarker).IgnoreError();
    absl::Status s =
        records->ApplyPeerAttributeDrop(db, m.table(), m.attribute(), m.dropped_time());
    if (!s.ok()) {
      if (!Skippable(s)) {
        return Annotate(
            s, absl::StrCat("attribute marker of ", db, ".", m.table(), ".", m.attribute()));
      }
      ++stats->skipped;
      continue;
    }
    ++stats->attribute_markers_applied;
  }
  // Then the database itself (P1): its marker, and its placement, before its tables, so a
  // database a peer's table creates here is already placed. A malformed one is skipped.
  if (schema.has_placement() || schema.database_marker() != 0) {
    absl::Status s = catalog->ApplyPeerPlacement(
        db, schema.has_placement() ? &schema.placement() : nullptr, schema.database_marker());
    if (!s.ok()) {
      if (!Skippable(s) && GetErrorCode(s) != ErrorCode::kInvalidName) {
        return Annotate(s, absl::StrCat("placement of ", db));
      }
      ++stats->skipped;
    }
  }
  // Step 2: definitions (C4 additive, C5 stamped, C6 dead generations refused).
  for (const peer::v1::PeerTable& t : schema.tables()) {
    if (exclusions.Excludes(db, t.name())) {
      ++stats->excluded;
      continue;
    }
    catalog::PeerTableDef def;
    def.database = db;
    def.table = t.name();
    def.created_time = t.created_time();
    def.primary_key = t.primary_key();
    def.schema_defined = t.schema_defined();
    def.sealed = t.sealed();
    for (const peer::v1::PeerAttribute& a : t.attributes()) {
      catalog::AttributeType type = a.type();
      if (type == catalog::v1::ATTRIBUTE_TYPE_UNSPECIFIED) type = catalog::v1::ANY;
      // C15: the peer's stamp, 0 when it sent none (older than every attribute marker).
      catalog::AttributeSpec spec(a.name(), type, a.indexed(), a.created_time());
      spec.provisional = a.provisional();  // decision 103
      def.attributes.push_back(std::move(spec));
    }
    absl::Status s = catalog->ApplyPeerTable(def);
    if (GetErrorCode(s) == ErrorCode::kTableGenerationDropped) {
      ++stats->tables_refused;
      continue;
    }
    if (!s.ok()) {
      if (!Skippable(s)) return Annotate(s, absl::StrCat("definition of ", db, ".", t.name()));
      ++stats->skipped;
      continue;
    }
    ++stats->tables_applied;
  }
  return absl::OkStatus();
}

}  // namespace cairn::replication
