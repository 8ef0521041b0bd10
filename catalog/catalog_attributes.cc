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
  return ReplaceDefinition(lock, live, std::move(row), std::move(attributes), &batch, nullptr);
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
  if (fenced) CAIRN_RETURN_IF_ERROR(fenced(batch, &stripping));
  CAIRN_RETURN_IF_ERROR(engine_->Write(batch));
  // Under the DatabaseLock `live` is the generation's newest definition (invariant (1)).
  const uint64_t version = live->schema_version() + 1;
  live->state()->set_schema_version(version);
  auto def = std::make_shared<TableDef>(std::move(row), std::move(attributes), live->shared_state(),
                                        version, std::move(stripping));
  Publish(lock, [&](CatalogSnapshot* next) {
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
  if (live->FindAttribute(spec.name) != nullptr) {
    return Error(ErrorCode::kAttributeExists, absl::StrCat("attribute '", Qualified(db, table), ".",
                                                           spec.name, "' already exists"));
  }
  return AddAttributes(lock, live, {spec}, v1::LOCAL);
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
  const uint64_t generation = live->generation_id();
  rocksdb::WriteBatch batch;
  batch.Delete(engine_->cf(Cf::kCatalog), ToSlice(storage::AttributeKey(generation, attribute)))
      .PermitUncheckedError();
  // The attribute's index entries: one range. Its id is never reused (next_attribute_id).
  const std::string begin = storage::IndexAttributePrefix(generation, a->id);
  const std::string end = storage::IndexAttributePrefix(generation, a->id + 1);
  batch.DeleteRange(engine_->cf(Cf::kIndexes), ToSlice(begin), ToSlice(end)).PermitUncheckedError();
  std::vector<AttributeDef> attributes;
  for (const AttributeDef& x : live->attributes()) {
    if (x.name != attribute) attributes.push_back(x);
  }
  // The drop's stamp, taken behind the fence: every write that had the attribute has
  // committed, at a version this clock issued or observed, so below the stamp. Rows are
  // stripped by it, not by whether the name exists again (a re-created attribute starts
  // empty, decision 4). Until RecordStore has stripped the values, a restart resumes the
  // strip (ResumePendingStrips) with the stamp stored here.
  const std::string name(attribute);
  auto stamp_drop = [&](rocksdb::WriteBatch* b, AttributeStamps* stripping) -> absl::Status {
    CAIRN_ASSIGN_OR_RETURN(Hlc stamp, options_.hlc->Now());
    // One pending strip per name: the later stamp covers an earlier drop's rows too.
    auto earlier = stripping->find(name);
    if (earlier != stripping->end()) stamp = std::max(stamp, earlier->second);
    b->Put(engine_->cf(Cf::kMeta), ToSlice(storage::StripKey(generation, name)),
           ToSlice(BigEndian(stamp)))
        .PermitUncheckedError();
    (*stripping)[name] = stamp;
    return absl::OkStatus();
  };
  return ReplaceDefinition(lock, live, live->row(), std::move(attributes), &batch, nullptr,
                           stamp_drop);
}

absl::Status Catalog::FinishStrip(const TableDef& def, absl::string_view attribute, Hlc stamp) {
  DatabaseLock lock(this, def.database());
  auto live = Snapshot()->FindTable(def.database(), def.name());
  if (!live.ok() || (*live)->generation_id() != def.generation_id()) {
    return absl::OkStatus();  // dropped: the drop removes the pending strip with the rest
  }
  auto it = (*live)->stripping().find(attribute);
  if (it == (*live)->stripping().end() || it->second != stamp) return absl::OkStatus();
  rocksdb::WriteBatch batch;
  batch.Delete(engine_->cf(Cf::kMeta), ToSlice(storage::StripKey(def.generation_id(), attribute)))
      .PermitUncheckedError();
  const std::string name(attribute);
  return ReplaceDefinition(lock, *live, (*live)->row(), (*live)->attributes(), &batch, nullptr,
                           [&](rocksdb::WriteBatch*, AttributeStamps* stripping) {
                             stripping->erase(name);
                             return absl::OkStatus();
                           })
      .status();
}

}  // namespace cairn::catalog
