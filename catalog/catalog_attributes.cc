// Catalog: attributes of a live generation — adds (D2, C4), drops and their strips (decisions
// 4, 18, 57), attribute markers (SPEC C15) — and ReplaceDefinition, the fenced publish every
// one of them goes through. See catalog.cc for the rest.
#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "catalog/catalog.h"
#include "catalog/internal/catalog_rows.h"
#include "catalog/names.h"
#include "common/fault_points.h"
#include "common/status.h"
#include "storage/keys.h"

namespace cairn::catalog {

using internal::BigEndian;
using internal::MarkerId;
using internal::PutProto;
using internal::Qualified;
using internal::ToRow;
using storage::Cf;
using storage::ToSlice;

absl::Status Catalog::CheckAttributeCount(absl::string_view table, size_t count) const {
  if (count <= options_.max_attributes_per_table) return absl::OkStatus();
  return Error(ErrorCode::kBadRequest,
               absl::StrCat("table '", table, "' would have ", count, " attributes; the limit is ",
                            options_.max_attributes_per_table, " (--max-attributes-per-table)"));
}

absl::StatusOr<Hlc> Catalog::FreshAttributeStamp(const CatalogSnapshot& base, absl::string_view db,
                                                 absl::string_view table,
                                                 absl::string_view attribute) {
  CAIRN_ASSIGN_OR_RETURN(const Hlc now, options_.hlc->Now());
  const Hlc marker = base.AttributeMarkerFor(db, table, attribute);
  if (marker == 0) return now;
  CAIRN_ASSIGN_OR_RETURN(const Hlc after,
                         HlcAfter(marker, absl::StrCat("a new attribute '", attribute, "' of ",
                                                       Qualified(db, table), " after its drop")));
  return std::max(now, after);
}

absl::StatusOr<TableRef> Catalog::AddAttributes(const DatabaseLock& lock, const TableRef& live,
                                                const std::vector<AttributeSpec>& specs,
                                                Origin origin) {
  lock.AssertCovers(live->database());
  std::vector<AttributeDef> attributes = live->attributes();
  uint32_t next_id = live->next_attribute_id();
  const uint64_t generation = live->generation_id();
  rocksdb::WriteBatch batch;
  bool added = false;
  // Linear in the attributes added (a dynamic write may bring thousands): one lookup each in
  // the live definition's index and in the names added so far.
  absl::flat_hash_set<absl::string_view> new_names;
  size_t fresh = 0;
  for (const AttributeSpec& s : specs) {
    if (live->FindAttribute(s.name) == nullptr && new_names.insert(s.name).second) ++fresh;
  }
  if (origin == v1::LOCAL && fresh > 0) {
    CAIRN_RETURN_IF_ERROR(CheckAttributeCount(live->QualifiedName(), attributes.size() + fresh));
  }
  new_names.clear();
  for (const AttributeSpec& s : specs) {
    if (live->FindAttribute(s.name) != nullptr || !new_names.insert(s.name).second) continue;
    AttributeDef a;
    a.name = s.name;
    a.type = s.type;
    a.indexed = s.indexed;
    a.id = next_id++;
    a.origin = s.provisional ? v1::PEER_RECORD : origin;
    if (origin == v1::CLUSTER && s.created_time.has_value()) {
      a.created_time = *s.created_time;  // a peer definition's stamp (C15)
    } else {
      CAIRN_ASSIGN_OR_RETURN(
          a.created_time, FreshAttributeStamp(*Snapshot(), live->database(), live->name(), a.name));
    }
    PutProto(engine_, &batch, Cf::kCatalog, storage::AttributeKey(generation, a.name), ToRow(a));
    attributes.push_back(std::move(a));
    added = true;
  }
  if (!added) return live;
  v1::TableRow row = live->row();
  row.set_next_attribute_id(next_id);
  PutProto(engine_, &batch, Cf::kCatalog, storage::TableKey(row.database(), row.name(), generation),
           row);
  // C15: a re-created attribute of a name with a marker. Its values older than the marker
  // are dropped ones (a strip removes any left); newer ones may sit in rows already (written
  // here under the old attribute while the marker was on its way, which then removed the
  // attribute and its index): the same scan indexes those under the new attribute.
  std::vector<std::pair<std::string, Hlc>> restrips;  // new attribute -> its name's marker
  for (size_t i = live->attributes().size(); i < attributes.size(); ++i) {
    auto m = live->attribute_markers().find(attributes[i].name);
    if (m != live->attribute_markers().end()) restrips.emplace_back(m->first, m->second);
  }
  auto restrip = [&](rocksdb::WriteBatch* b, AttributeStamps* stripping,
                     AttributeStamps*) -> absl::Status {
    for (const auto& [name, marker] : restrips) AddPendingStrip(*live, name, marker, b, stripping);
    return absl::OkStatus();
  };
  const bool strip = !restrips.empty();
  CAIRN_ASSIGN_OR_RETURN(
      TableRef def, ReplaceDefinition(lock, live, std::move(row), std::move(attributes), &batch,
                                      nullptr, restrip));
  if (strip) StripsPending();
  return def;
}

void Catalog::SetStripListener(std::function<void()> listener) {
  absl::MutexLock l(&strip_listener_mu_);
  strip_listener_ = std::move(listener);
}

void Catalog::StripsPending() {
  absl::MutexLock l(&strip_listener_mu_);
  if (strip_listener_) strip_listener_();
}

absl::StatusOr<TableRef> Catalog::ReplaceDefinition(
    const DatabaseLock& lock, const TableRef& live, v1::TableRow row,
    std::vector<AttributeDef> attributes, rocksdb::WriteBatch* batch,
    const std::function<void(CatalogSnapshot*)>& also, const Fenced& fenced) {
  lock.AssertCovers(live->database());
  CAIRN_RETURN_IF_ERROR(CAIRN_FAULT(options_.faults, fault_points::kSchemaBeforeFence));
  // GenerationState invariant (1): from before the write until the new definition is
  // published, no writer validated against `live` can commit.
  absl::MutexLock schema_lock(&live->state()->schema_mu());
  AttributeStamps stripping = live->stripping();
  AttributeStamps markers = live->attribute_markers();
  if (fenced) CAIRN_RETURN_IF_ERROR(fenced(batch, &stripping, &markers));
  CAIRN_RETURN_IF_ERROR(engine_->Write(batch));
  // Under the DatabaseLock `live` is the generation's newest definition (invariant (1)).
  const uint64_t version = live->schema_version() + 1;
  live->state()->set_schema_version(version);
  auto def = std::make_shared<TableDef>(std::move(row), std::move(attributes), live->shared_state(),
                                        version, std::move(stripping), std::move(markers));
  Publish(lock, def->name(), [&](CatalogSnapshot* next) {
    PutTable(next, def->database(), def->name(), def);
    if (also) also(next);
  });
  return TableRef(def);
}

absl::StatusOr<TableRef> Catalog::CreateAttribute(absl::string_view db, absl::string_view table,
                                                  const AttributeSpec& spec) {
  CAIRN_RETURN_IF_ERROR(ValidateAttributeName(spec.name));
  DatabaseLock lock(this, db);
  CAIRN_ASSIGN_OR_RETURN(TableRef live, Snapshot()->FindTable(db, table));
  const AttributeDef* existing = live->FindAttribute(spec.name);
  if (existing == nullptr) return AddAttributes(lock, live, {spec}, v1::LOCAL);
  if (existing->origin != v1::PEER_RECORD) {
    // Harper's words, which its clients look for.
    return Error(
        ErrorCode::kAttributeExists,
        absl::StrCat("attribute '", spec.name, "' already exists in ", Qualified(db, table)));
  }
  // Decisions 103 and 105: an attribute a record made is a guess; this declares it, in place
  // (same id, same values), as a peer's declaration would. Its index goes in the same fenced
  // batch if the declaration is not indexed, so no write of the guess's definition adds one
  // after it.
  AttributeDef next = *existing;
  next.type = spec.type;
  next.indexed = spec.indexed;
  next.origin = v1::LOCAL;
  rocksdb::WriteBatch batch;
  if (existing->indexed && !next.indexed) DeleteIndexOf(live->generation_id(), *existing, &batch);
  std::vector<AttributeDef> attributes = live->attributes();
  for (AttributeDef& a : attributes) {
    if (a.name == next.name) a = next;
  }
  PutProto(engine_, &batch, Cf::kCatalog, storage::AttributeKey(live->generation_id(), next.name),
           ToRow(next));
  return ReplaceDefinition(lock, live, live->row(), std::move(attributes), &batch, nullptr);
}

absl::StatusOr<TableRef> Catalog::EnsureAttributes(
    const TableRef& def, const std::vector<AttributeSpec>& attributes, Origin origin,
    const std::function<absl::Status(const TableDef& live)>& check) {
  for (const AttributeSpec& a : attributes) CAIRN_RETURN_IF_ERROR(ValidateAttributeName(a.name));
  DatabaseLock lock(this, def->database());
  auto live = Snapshot()->FindTable(def->database(), def->name());
  if (!live.ok() || (*live)->generation_id() != def->generation_id()) {
    return Error(ErrorCode::kTableDropping,
                 absl::StrCat("table '", def->QualifiedName(), "' was dropped"));
  }
  if (check) CAIRN_RETURN_IF_ERROR(check(**live));
  return AddAttributes(lock, *live, attributes, origin);
}

absl::StatusOr<TableRef> Catalog::RemoveAttribute(absl::string_view db, absl::string_view table,
                                                  absl::string_view attribute) {
  DatabaseLock lock(this, db);
  CAIRN_ASSIGN_OR_RETURN(TableRef live, Snapshot()->FindTable(db, table));
  const AttributeDef* a = live->FindAttribute(attribute);
  if (a == nullptr) {
    return Error(ErrorCode::kUnknownAttribute, absl::StrCat("attribute '", Qualified(db, table),
                                                            ".", attribute, "' does not exist"));
  }
  if (a->is_primary_key) {
    return Error(ErrorCode::kBadRequest, absl::StrCat("cannot drop the primary key '", attribute,
                                                      "' of ", Qualified(db, table)));
  }
  rocksdb::WriteBatch batch;
  std::vector<AttributeDef> attributes = WithoutAttribute(*live, *a, &batch);
  // The drop's stamp, taken behind the fence: every write that had the attribute has
  // committed, at a version this clock issued or observed, so below the stamp. Rows are
  // stripped by it, not by whether the name exists again (a re-created attribute starts
  // empty, decision 4). Until RecordStore has stripped the values, a restart resumes the
  // strip (ResumePendingStrips) with the stamp stored here. A replicating table's drop is
  // also its attribute marker (C15), in the same batch; a node-local one's leaves none
  // (C11: no peer row ever reaches it).
  const std::string name(attribute);
  // C15: the marker must be newer than the attribute it drops, or the peers keep theirs
  // (created at or after a marker survives it). The clock observed the attribute's stamp;
  // this holds if it was stored before that rule.
  CAIRN_ASSIGN_OR_RETURN(
      const Hlc after_creation,
      HlcAfter(a->created_time,
               absl::StrCat("the drop of ", Qualified(db, table), ".", attribute)));
  Hlc stamp = 0;
  auto stamp_drop = [&](rocksdb::WriteBatch* b, AttributeStamps* stripping,
                        AttributeStamps* markers) -> absl::Status {
    CAIRN_ASSIGN_OR_RETURN(stamp, options_.hlc->Now());
    stamp = std::max(stamp, after_creation);
    if (live->replicate()) {
      Hlc& marker = (*markers)[name];
      stamp = std::max(stamp, marker);
      marker = stamp;
      v1::AttributeMarker row;
      row.set_dropped_time(stamp);
      PutProto(engine_, b, Cf::kCatalog, storage::AttributeMarkerKey(db, table, name), row);
    }
    AddPendingStrip(*live, name, stamp, b, stripping);
    return absl::OkStatus();
  };
  auto record_marker = [&](CatalogSnapshot* next) {
    if (live->replicate()) next->attribute_markers[MarkerId(db, table)][name] = stamp;
  };
  return ReplaceDefinition(lock, live, live->row(), std::move(attributes), &batch, record_marker,
                           stamp_drop);
}

absl::StatusOr<TableRef> Catalog::ApplyPeerAttributeMarker(absl::string_view db,
                                                           absl::string_view table,
                                                           absl::string_view attribute,
                                                           Hlc dropped_time) {
  // A peer's values are input to check (names it could never have created are refused).
  CAIRN_RETURN_IF_ERROR(ValidateDatabaseName(db));
  CAIRN_RETURN_IF_ERROR(ValidateTableName(table));
  CAIRN_RETURN_IF_ERROR(ValidateAttributeName(attribute));
  if (dropped_time == 0) {
    return Error(ErrorCode::kBadRequest, absl::StrCat("attribute marker of ", Qualified(db, table),
                                                      ".", attribute, " has no stamp"));
  }
  options_.hlc->Observe(dropped_time);
  DatabaseLock lock(this, db);
  const SnapshotRef base = Snapshot();  // invariant (1)
  if (base->AttributeMarkerFor(db, table, attribute) >= dropped_time) return TableRef();
  // Subsumed by the name's table marker: nothing it would remove or strip can live here.
  if (dropped_time <= base->MarkerFor(db, table)) return TableRef();
  const std::string name(attribute);
  rocksdb::WriteBatch batch;
  v1::AttributeMarker marker;
  marker.set_dropped_time(dropped_time);
  PutProto(engine_, &batch, Cf::kCatalog, storage::AttributeMarkerKey(db, table, name), marker);
  auto record_marker = [&](CatalogSnapshot* next) {
    next->attribute_markers[MarkerId(db, table)][name] = dropped_time;
  };
  auto live = base->FindTable(db, table);
  if (!live.ok() || !(*live)->replicate()) {
    // No replicating table of the name here: the marker waits for one. A peer's definition
    // then leaves the attribute out (C4) and its rows are stripped on apply; a node-local
    // table keeps everything (C11).
    CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
    Publish(lock, table, record_marker);
    return TableRef();
  }
  const TableRef& def = *live;
  const AttributeDef* a = def->FindAttribute(name);
  // The local attribute goes unless created at or after the marker (C15, as C6 for tables:
  // equal survives). Its values in rows older than the marker go either way.
  std::vector<AttributeDef> attributes = def->attributes();
  if (a != nullptr && !a->is_primary_key && a->created_time < dropped_time) {
    attributes = WithoutAttribute(*def, *a, &batch);
  }
  // Always a strip, even when the name is not an attribute here: a marker that removed it
  // earlier left its newer values in the rows, and this newer marker may cover them.
  const bool strip = a == nullptr || !a->is_primary_key;
  auto apply = [&](rocksdb::WriteBatch* b, AttributeStamps* stripping,
                   AttributeStamps* markers) -> absl::Status {
    (*markers)[name] = dropped_time;
    if (strip) AddPendingStrip(*def, name, dropped_time, b, stripping);
    return absl::OkStatus();
  };
  CAIRN_ASSIGN_OR_RETURN(TableRef next,
                         ReplaceDefinition(lock, def, def->row(), std::move(attributes), &batch,
                                           record_marker, apply));
  if (!strip) return TableRef();
  StripsPending();
  return next;
}

std::vector<AttributeDef> Catalog::WithoutAttribute(const TableDef& live, const AttributeDef& a,
                                                    rocksdb::WriteBatch* batch) {
  const uint64_t generation = live.generation_id();
  batch->Delete(engine_->cf(Cf::kCatalog), ToSlice(storage::AttributeKey(generation, a.name)))
      .PermitUncheckedError();
  DeleteIndexOf(generation, a, batch);
  std::vector<AttributeDef> attributes;
  for (const AttributeDef& x : live.attributes()) {
    if (x.name != a.name) attributes.push_back(x);
  }
  return attributes;
}

void Catalog::DeleteIndexOf(uint64_t generation, const AttributeDef& a,
                            rocksdb::WriteBatch* batch) {
  // One range. An attribute id is never reused (next_attribute_id).
  const std::string begin = storage::IndexAttributePrefix(generation, a.id);
  const std::string end = storage::IndexAttributePrefix(generation, a.id + 1);
  batch->DeleteRange(engine_->cf(Cf::kIndexes), ToSlice(begin), ToSlice(end))
      .PermitUncheckedError();
}

void Catalog::AddPendingStrip(const TableDef& live, const std::string& name, Hlc stamp,
                              rocksdb::WriteBatch* batch, AttributeStamps* stripping) {
  // One pending strip per name: the later stamp covers an earlier drop's rows too.
  Hlc& pending = (*stripping)[name];
  pending = std::max(pending, stamp);
  batch
      ->Put(engine_->cf(Cf::kMeta), ToSlice(storage::StripKey(live.generation_id(), name)),
            ToSlice(BigEndian(pending)))
      .PermitUncheckedError();
}

absl::Status Catalog::FinishStrip(const TableDef& def, absl::string_view attribute, Hlc stamp,
                                  int64_t attribute_id_at_start) {
  DatabaseLock lock(this, def.database());
  auto live = Snapshot()->FindTable(def.database(), def.name());
  if (!live.ok() || (*live)->generation_id() != def.generation_id()) {
    return absl::OkStatus();  // dropped: the drop removes the pending strip with the rest
  }
  auto it = (*live)->stripping().find(attribute);
  if (it == (*live)->stripping().end() || it->second != stamp) return absl::OkStatus();
  const AttributeDef* now = (*live)->FindAttribute(attribute);
  if ((now == nullptr ? -1 : static_cast<int64_t>(now->id)) != attribute_id_at_start) {
    StripsPending();  // re-created during the strip: once more (C15)
    return absl::OkStatus();
  }
  rocksdb::WriteBatch batch;
  batch.Delete(engine_->cf(Cf::kMeta), ToSlice(storage::StripKey(def.generation_id(), attribute)))
      .PermitUncheckedError();
  const std::string name(attribute);
  return ReplaceDefinition(lock, *live, (*live)->row(), (*live)->attributes(), &batch, nullptr,
                           [&](rocksdb::WriteBatch*, AttributeStamps* stripping, AttributeStamps*) {
                             stripping->erase(name);
                             return absl::OkStatus();
                           })
      .status();
}

}  // namespace cairn::catalog
