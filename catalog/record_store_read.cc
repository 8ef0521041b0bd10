// RecordStore reads: searches by id and by value, record counts (SPEC D3, D6, C9 cancellation).
#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "catalog/internal/record_batch.h"
#include "catalog/internal/record_codec.h"
#include "catalog/internal/search_emitter.h"
#include "catalog/record_store.h"
#include "common/status.h"
#include "storage/keys.h"
#include "storage/value_codec.h"

namespace cairn::catalog {

using internal::Emitter;
using internal::IteratorStatus;
using internal::kChunk;
using internal::LoadSlots;
using internal::ParseStored;
using internal::Slot;
using nlohmann::json;
using storage::Cf;
using storage::ToSlice;
using storage::v1::StoredRecord;

// ---------------------------------------------------------------------------------------------
// Reads.

absl::Status RecordStore::ProjectInto(const TableDef& def, const SearchOptions& options,
                                      std::vector<std::string>* fields) const {
  fields->clear();
  absl::flat_hash_set<absl::string_view> named;  // a name given twice keeps its first place
  for (const std::string& a : options.get_attributes) {
    if (a == "*") {
      fields->clear();
      return absl::OkStatus();
    }
    if (def.FindAttribute(a) == nullptr) {
      return Error(ErrorCode::kUnknownAttribute, absl::StrCat("unknown attribute '", a, "'"));
    }
    if (named.insert(a).second) fields->push_back(a);
  }
  return absl::OkStatus();
}

absl::Status RecordStore::SearchById(absl::string_view db, absl::string_view table, const json& ids,
                                     const SearchOptions& options, const Visitor& visit) {
  if (!ids.is_array()) return Error(ErrorCode::kBadRequest, "'ids' must be an array");
  CAIRN_ASSIGN_OR_RETURN(TableRef def, ResolveRows(db, table));
  std::vector<std::string> fields;
  CAIRN_RETURN_IF_ERROR(ProjectInto(*def, options, &fields));
  if (options.validate_only) {
    std::string pk;
    for (size_t i = 0; i < ids.size(); ++i) {
      pk.clear();
      absl::Status st = storage::AppendPrimaryKey(ids[i], &pk);
      if (!st.ok()) return Annotate(st, absl::StrCat("ids[", i, "]"));
    }
    return absl::OkStatus();
  }
  CAIRN_ASSIGN_OR_RETURN(Gate::Token token, AdmitRows(def));
  Emitter emit(*def, options, std::move(fields), visit, options_.faults);
  storage::ScopedSnapshot snapshot(engine_);
  // In chunks, so a huge id list is never resident as records.
  for (size_t start = 0; start < ids.size(); start += kChunk) {
    std::vector<Slot> slots;
    for (size_t i = start; i < std::min(ids.size(), start + kChunk); ++i) {
      Slot s;
      s.def = def.get();
      absl::Status st = storage::AppendPrimaryKey(ids[i], &s.encoded_pk);
      if (!st.ok()) return Annotate(st, absl::StrCat("ids[", i, "]"));
      s.key = storage::RecordKey(def->generation_id(), s.encoded_pk);
      slots.push_back(std::move(s));
    }
    CAIRN_RETURN_IF_ERROR(LoadSlots(engine_, &slots, snapshot.get()));
    CAIRN_ASSIGN_OR_RETURN(bool more, emit.Rows(&slots));
    if (!more) return absl::OkStatus();
  }
  return absl::OkStatus();
}

absl::Status RecordStore::SearchByValue(absl::string_view db, absl::string_view table,
                                        absl::string_view attribute, const json& value,
                                        const SearchOptions& options, const Visitor& visit) {
  CAIRN_ASSIGN_OR_RETURN(TableRef def, ResolveRows(db, table));
  if (def->FindAttribute(attribute) == nullptr) {
    return Error(ErrorCode::kUnknownAttribute, absl::StrCat("unknown attribute '", attribute, "'"));
  }
  if (value.is_array() || value.is_object()) {
    return Error(ErrorCode::kBadRequest, "'value' must be a string, number, boolean or null");
  }
  // One condition (decision 7): "*" every row; Harper's wildcards a prefix, a suffix or a
  // substring; anything else equality.
  ConditionSearch search;
  const bool all = value.is_string() && value.get_ref<const std::string&>() == "*";
  if (!all) {
    Condition leaf;
    leaf.attribute = std::string(attribute);
    leaf.value = value;
    if (value.is_string()) {
      if (auto pattern = internal::Wildcard::Parse(value.get_ref<const std::string&>())) {
        leaf.comparator =
            pattern->kind() == internal::Wildcard::Kind::kPrefix
                ? Comparator::kStartsWith
                : (pattern->kind() == internal::Wildcard::Kind::kSuffix ? Comparator::kEndsWith
                                                                        : Comparator::kContains);
        leaf.value = pattern->text();
      }
    }
    search.root.children.push_back(std::move(leaf));
  }
  return SearchByConditions(db, table, std::move(search), options, visit);
}

absl::StatusOr<TableRef> RecordStore::ScanStored(absl::string_view db, absl::string_view table,
                                                 const StoredVisitor& visit) {
  CAIRN_ASSIGN_OR_RETURN(TableRef def, Resolve(db, table));
  // Whatever this node's membership: the test hook shows what storage holds (P3, P8).
  CAIRN_ASSIGN_OR_RETURN(Gate::Token token, def->state()->Admit(def->QualifiedName()));
  internal::ScanCheckpoint checkpoint(*def, options_.faults);
  storage::ScopedSnapshot snapshot(engine_);
  const std::string generation = storage::GenerationPrefix(def->generation_id());
  auto it = engine_->NewIterator(Cf::kRecords, snapshot.get(),
                                 storage::GenerationPrefix(def->generation_id() + 1));
  for (it->Seek(ToSlice(generation)); it->Valid(); it->Next()) {
    CAIRN_RETURN_IF_ERROR(checkpoint.Visit());
    StoredRecord rec;
    json key;
    if (!rec.ParseFromArray(it->value().data(), static_cast<int>(it->value().size())) ||
        !storage::DecodePrimaryKey(storage::ToView(it->key()).substr(generation.size()), &key)) {
      return absl::DataLossError(absl::StrCat("unreadable record in ", def->QualifiedName()));
    }
    // As stored: a value a strip has still to remove shows (the model checks that none is
    // left once the cluster settled, C15). Null for a tombstone.
    json record;
    if (!rec.deleted()) record = ParseStored(rec.json());
    visit(key, rec, record);
  }
  CAIRN_RETURN_IF_ERROR(IteratorStatus(*it));
  return def;
}

absl::StatusOr<uint64_t> RecordStore::RecordCount(absl::string_view db, absl::string_view table) {
  CAIRN_ASSIGN_OR_RETURN(TableRef def, Resolve(db, table));
  return RecordCount(*def);
}

absl::StatusOr<uint64_t> RecordStore::RecordCount(const TableDef& def) {
  std::string value;
  bool found = false;
  CAIRN_RETURN_IF_ERROR(
      engine_->Get(Cf::kMeta, storage::CountKey(def.generation_id()), &value, &found));
  if (!found) return 0;
  int64_t n = storage::DecodeCount(value);
  return n < 0 ? 0 : static_cast<uint64_t>(n);
}

}  // namespace cairn::catalog
