// Catalog: peer definitions (SPEC C4, C5, C6, C11, C15). The rest of Catalog: catalog.cc.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "catalog/catalog.h"
#include "catalog/internal/catalog_rows.h"
#include "catalog/names.h"
#include "common/status.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"

namespace cairn::catalog {

using internal::BuildAttributes;
using internal::PutProto;
using internal::Qualified;
using internal::ToRow;
using storage::Cf;

// ---------------------------------------------------------------------------------------------
// Peer definitions (C4, C5, C6, C11).

namespace {

// Whether applying `peer` to `snap` would leave the catalog as it is and log nothing: a live
// replicating table of the name holds every attribute the peer lists (or leaves it out as
// the peer's primary key or one dropped here, C15), each with as new a stamp, none a guess
// the peer declares (decision 103) and none of another type or index (C4 logs those), and
// the same key and kind. Conservative: "false" only means the locked path decides.
bool ChangesNothing(const CatalogSnapshot& snap, const PeerTableDef& peer) {
  if (IsDeadGeneration(peer.created_time, snap.MarkerFor(peer.database, peer.table))) return false;
  auto live = snap.FindTable(peer.database, peer.table);
  if (!live.ok()) return false;
  const TableDef& def = **live;
  if (!def.replicate() || def.primary_key() != peer.primary_key ||
      def.schema_defined() != peer.schema_defined) {
    return false;
  }
  const AttributeStamps& markers = snap.AttributeMarkersFor(peer.database, peer.table);
  for (const AttributeSpec& a : peer.attributes) {
    const AttributeDef* local = def.FindAttribute(a.name);
    if (local == nullptr) {
      if (a.name == peer.primary_key) continue;
      auto m = markers.find(a.name);
      if (m != markers.end() && a.created_time.value_or(0) < m->second) continue;
      return false;
    }
    if (local->is_primary_key) continue;
    if (a.created_time.value_or(0) > local->created_time) return false;
    if (local->origin == v1::PEER_RECORD && !a.provisional) return false;
    if (!a.provisional && (local->type != a.type || local->indexed != a.indexed)) return false;
  }
  return true;
}

absl::Status ValidatePeerTable(const PeerTableDef& peer) {
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
  return absl::OkStatus();
}

// C15: C4 never (re-)adds an attribute older than a marker of its name held here (`markers`);
// a peer that has not applied the marker yet still lists it.
bool DroppedHere(const PeerTableDef& peer, const AttributeStamps& markers, const AttributeSpec& a) {
  if (a.name == peer.primary_key) return false;
  auto m = markers.find(a.name);
  return m != markers.end() && a.created_time.value_or(0) < m->second;
}

}  // namespace

bool Catalog::FirstDiscard(std::string key) {
  absl::MutexLock lock(&mu_);
  return logged_discards_.insert(std::move(key)).second;
}

void Catalog::LogDiscardOnce(const TableRef& def, absl::string_view attribute,
                             absl::string_view field, absl::string_view local,
                             absl::string_view peer) {
  if (!FirstDiscard(absl::StrCat(def->generation_id(), "/", attribute, "/", field))) return;
  spdlog::warn(
      "[{}] ignoring a peer's redefinition of {}.{} ({}: local {}, peer {}); the local "
      "schema is authoritative (C4)",
      options_.node_name, def->QualifiedName(), std::string(attribute), std::string(field),
      std::string(local), std::string(peer));
}

absl::Status Catalog::ApplyPeerTable(const PeerTableDef& peer) {
  CAIRN_RETURN_IF_ERROR(ValidatePeerTable(peer));
  options_.hlc->Observe(peer.created_time);
  // C15: a drop here must be stamped after every attribute it may remove, whatever clock
  // created it (an attribute marker older than its attribute leaves it alone).
  for (const AttributeSpec& a : peer.attributes) options_.hlc->Observe(a.created_time.value_or(0));
  // R3: most definitions a peer sends are already here; they take no lock (C12) at all.
  if (ChangesNothing(*Snapshot(), peer)) return absl::OkStatus();

  DatabaseLock lock(this, peer.database);
  const SnapshotRef base = Snapshot();  // invariant (1)
  // C6, under the same lock as the create it guards.
  const Hlc marker = base->MarkerFor(peer.database, peer.table);
  if (IsDeadGeneration(peer.created_time, marker)) {
    if (FirstDiscard(
            absl::StrCat("dead/", peer.database, "/", peer.table, "/", peer.created_time))) {
      spdlog::warn("[{}] refusing a peer definition of {} created at {}: dropped at {} (C6)",
                   options_.node_name, Qualified(peer.database, peer.table), peer.created_time,
                   marker);
    }
    return Error(
        ErrorCode::kTableGenerationDropped,
        absl::StrCat("table '", Qualified(peer.database, peer.table), "' generation created at ",
                     peer.created_time, " was dropped at ", marker));
  }
  const AttributeStamps& markers = base->AttributeMarkersFor(peer.database, peer.table);
  auto live = base->FindTable(peer.database, peer.table);
  if (!live.ok()) return CreatePeerTable(lock, peer, markers);
  if (!(*live)->replicate()) {
    // C11: a node-local table owns its name here; the peer's table is a different one.
    LogDiscardOnce(*live, "*", "replicate", "false (node-local)", "true");
    return absl::OkStatus();
  }
  return MergePeerTable(lock, *live, peer, markers);
}

absl::Status Catalog::CreatePeerTable(const DatabaseLock& lock, const PeerTableDef& peer,
                                      const AttributeStamps& markers) {
  // C5: a new generation with the peer's stamp (0 if it sent none).
  std::vector<AttributeSpec> specs;
  for (const AttributeSpec& a : peer.attributes) {
    if (!DroppedHere(peer, markers, a)) specs.push_back(a);
  }
  CAIRN_ASSIGN_OR_RETURN(std::vector<AttributeDef> attributes,
                         BuildAttributes(peer.primary_key, specs, v1::CLUSTER));
  attributes[0].created_time = peer.created_time;  // the primary key: as old as the table
  v1::TableRow row;
  row.set_database(peer.database);
  row.set_name(peer.table);
  row.set_created_time(peer.created_time);
  row.set_primary_key(peer.primary_key);
  row.set_schema_defined(peer.schema_defined);
  row.set_sealed(peer.schema_defined && peer.sealed);
  row.set_replicate(true);
  row.set_origin(v1::CLUSTER);
  return CreateGeneration(lock, std::move(row), std::move(attributes)).status();
}

absl::Status Catalog::MergePeerTable(const DatabaseLock& lock, const TableRef& def,
                                     const PeerTableDef& peer, const AttributeStamps& markers) {
  // C4: additive only. Differences are logged once and discarded.
  if (def->primary_key() != peer.primary_key) {
    LogDiscardOnce(def, "*", "primary_key", def->primary_key(), peer.primary_key);
  }
  if (def->schema_defined() != peer.schema_defined) {
    LogDiscardOnce(def, "*", "schema_defined", def->schema_defined() ? "true" : "false",
                   peer.schema_defined ? "true" : "false");
  }
  std::vector<AttributeSpec> added;
  // Attributes rewritten in place (same id, same values). C15 (decision 102): an attribute's
  // stamp is the newest any node gave it, so that a marker removes it on every node or on
  // none. A peer that created it after a marker keeps it; so must this node, or its rows
  // bring it back as another attribute (decision 5) of another type. Decision 103: an
  // attribute made here for a field of a peer's record takes the type and index of the
  // first declared definition of it, so that no node keeps decision 5's guess while its
  // peers hold the declared one. Declared attributes are never redefined (C4).
  std::vector<AttributeDef> attributes = def->attributes();
  rocksdb::WriteBatch batch;
  bool rewritten = false;
  for (const AttributeSpec& a : peer.attributes) {
    const AttributeDef* local = def->FindAttribute(a.name);
    if (local == nullptr) {
      if (a.name != peer.primary_key && !DroppedHere(peer, markers, a)) added.push_back(a);
      continue;
    }
    if (local->is_primary_key) continue;
    AttributeDef next = *local;
    next.created_time = std::max(next.created_time, a.created_time.value_or(0));
    // Declared by the peer: not a guess, not the peer's primary key (a table created
    // concurrently with another key, C4), and not an attribute a marker held here dropped
    // (a peer that has not applied the marker yet still lists it).
    if (local->origin == v1::PEER_RECORD && !a.provisional && a.name != peer.primary_key &&
        !DroppedHere(peer, markers, a)) {
      next.type = a.type;
      next.indexed = a.indexed;
      next.origin = v1::CLUSTER;
      if (local->indexed && !a.indexed) DeleteIndexOf(def->generation_id(), *local, &batch);
      spdlog::info(
          "[{}] {}.{} is {}{} as a peer declared it (it was made for a field of a "
          "record; decisions 103, 105)",
          options_.node_name, def->QualifiedName(), a.name, std::string(AttributeTypeName(a.type)),
          a.indexed ? ", indexed" : "");
    } else if (!a.provisional) {  // a peer's guess is no redefinition
      if (local->type != a.type) {
        LogDiscardOnce(def, a.name, "type", AttributeTypeName(local->type),
                       AttributeTypeName(a.type));
      }
      if (local->indexed != a.indexed) {
        LogDiscardOnce(def, a.name, "indexed", local->indexed ? "true" : "false",
                       a.indexed ? "true" : "false");
      }
    }
    if (next.created_time == local->created_time && next.origin == local->origin) continue;
    for (AttributeDef& x : attributes) {
      if (x.name == next.name) x = next;
    }
    PutProto(engine_, &batch, Cf::kCatalog, storage::AttributeKey(def->generation_id(), next.name),
             ToRow(next));
    rewritten = true;
  }
  TableRef current = def;
  if (rewritten) {
    CAIRN_ASSIGN_OR_RETURN(
        current, ReplaceDefinition(lock, def, def->row(), std::move(attributes), &batch, nullptr));
  }
  if (added.empty()) return absl::OkStatus();
  return AddAttributes(lock, current, added, v1::CLUSTER).status();
}

}  // namespace cairn::catalog
