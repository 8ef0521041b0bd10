// RecordStore reads: searches by id and by value, record counts (SPEC D3, D6, C9 cancellation).
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "catalog/internal/record_batch.h"
#include "catalog/internal/record_codec.h"
#include "catalog/record_store.h"
#include "common/fault_points.h"
#include "common/status.h"
#include "storage/keys.h"
#include "storage/value_codec.h"

namespace cairn::catalog {

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
  for (const std::string& a : options.get_attributes) {
    if (a == "*") {
      fields->clear();
      return absl::OkStatus();
    }
    if (def.FindAttribute(a) == nullptr) {
      return Error(ErrorCode::kUnknownAttribute, absl::StrCat("unknown attribute '", a, "'"));
    }
    fields->push_back(a);
  }
  return absl::OkStatus();
}

namespace {

// Applies offset, limit, projection and cancellation to a stream of stored rows.
class Emitter {
 public:
  Emitter(const TableDef& def, const SearchOptions& options, std::vector<std::string> fields,
          const RecordStore::Visitor& visit, FaultRegistry* faults)
      : def_(def),
        options_(options),
        fields_(std::move(fields)),
        visit_(visit),
        checkpoint_(def, faults) {}

  // At every row or key a search reads, before deciding whether it matches (C9).
  absl::Status Visit() { return checkpoint_.Visit(); }

  // A row that matches. False: stop (limit reached or the visitor said so).
  absl::StatusOr<bool> Row(const StoredRecord& rec, json* parsed = nullptr) {
    if (rec.deleted()) return true;
    if (skipped_ < options_.offset) {
      ++skipped_;
      return true;
    }
    json record = parsed != nullptr ? std::move(*parsed) : ParseStored(rec.json());
    internal::DropStripped(def_, rec.version(), &record);
    if (!fields_.empty()) {
      json projected = json::object();
      for (const std::string& f : fields_) {
        auto it = record.find(f);
        if (it != record.end()) projected[f] = std::move(*it);
      }
      record = std::move(projected);
    }
    if (!visit_(record)) return false;
    ++emitted_;
    return options_.limit == 0 || emitted_ < options_.limit;
  }

 private:
  const TableDef& def_;
  const SearchOptions& options_;
  const std::vector<std::string> fields_;
  const RecordStore::Visitor& visit_;
  internal::ScanCheckpoint checkpoint_;
  uint64_t skipped_ = 0;
  uint64_t emitted_ = 0;
};

}  // namespace

absl::Status RecordStore::SearchById(absl::string_view db, absl::string_view table, const json& ids,
                                     const SearchOptions& options, const Visitor& visit) {
  if (!ids.is_array()) return Error(ErrorCode::kBadRequest, "'ids' must be an array");
  CAIRN_ASSIGN_OR_RETURN(TableRef def, Resolve(db, table));
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
  CAIRN_ASSIGN_OR_RETURN(Gate::Token token, def->state()->Admit(def->QualifiedName()));
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
    for (Slot& s : slots) {
      CAIRN_RETURN_IF_ERROR(emit.Visit());
      if (!s.stored) continue;
      CAIRN_ASSIGN_OR_RETURN(bool more,
                             emit.Row(s.original, s.original_live ? &s.original_json : nullptr));
      if (!more) return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

absl::Status RecordStore::SearchByValue(absl::string_view db, absl::string_view table,
                                        absl::string_view attribute, const json& value,
                                        const SearchOptions& options, const Visitor& visit) {
  CAIRN_ASSIGN_OR_RETURN(TableRef def, Resolve(db, table));
  const AttributeDef* attr = def->FindAttribute(attribute);
  if (attr == nullptr) {
    return Error(ErrorCode::kUnknownAttribute, absl::StrCat("unknown attribute '", attribute, "'"));
  }
  if (value.is_array() || value.is_object()) {
    return Error(ErrorCode::kBadRequest, "'value' must be a string, number, boolean or null");
  }
  std::vector<std::string> fields;
  CAIRN_RETURN_IF_ERROR(ProjectInto(*def, options, &fields));
  if (options.validate_only) return absl::OkStatus();
  CAIRN_ASSIGN_OR_RETURN(Gate::Token token, def->state()->Admit(def->QualifiedName()));
  Emitter emit(*def, options, std::move(fields), visit, options_.faults);
  storage::ScopedSnapshot snapshot(engine_);

  const bool all = value.is_string() && value.get_ref<const std::string&>() == "*";
  // Decision 7: Harper's wildcards (a leading and/or trailing `*`). A prefix narrows the key
  // or index range; a suffix or substring is matched on each string value of the attribute.
  std::optional<internal::Wildcard> pattern;
  if (!all && value.is_string()) {
    pattern = internal::Wildcard::Parse(value.get_ref<const std::string&>());
  }
  const internal::Wildcard* wildcard = pattern ? &*pattern : nullptr;
  const json target = internal::CoerceSearchValue(*attr, value);
  const std::string generation = storage::GenerationPrefix(def->generation_id());
  const std::string generation_end = storage::GenerationPrefix(def->generation_id() + 1);

  // Scans records in [start, upper), keeping those whose attribute matches when `filter`.
  auto scan_records = [&](const std::string& start, const std::string& upper,
                          bool filter) -> absl::Status {
    auto it = engine_->NewIterator(Cf::kRecords, snapshot.get(), upper);
    for (it->Seek(ToSlice(start)); it->Valid(); it->Next()) {
      CAIRN_RETURN_IF_ERROR(emit.Visit());
      StoredRecord rec;
      if (!rec.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
        return absl::DataLossError(absl::StrCat("unreadable record in ", def->QualifiedName()));
      }
      json parsed;
      json* hand_over = nullptr;
      if (filter && !rec.deleted()) {
        parsed = ParseStored(rec.json());
        internal::DropStripped(*def, rec.version(), &parsed);
        auto f = parsed.find(attr->name);
        if (f == parsed.end() || !internal::FieldMatches(*f, target, wildcard)) {
          continue;
        }
        hand_over = &parsed;
      }
      CAIRN_ASSIGN_OR_RETURN(bool more, emit.Row(rec, hand_over));
      if (!more) return absl::OkStatus();
    }
    return IteratorStatus(*it);
  };

  if (all) return scan_records(generation, generation_end, /*filter=*/false);

  if (attr->is_primary_key) {
    if (pattern) {
      std::string start = generation;
      storage::AppendStringPrefix(pattern->prefix(), &start);
      std::string upper = start;
      upper.push_back('\xFF');  // escaped bodies never contain a bare 0xFF after the prefix
      return scan_records(start, upper, /*filter=*/true);
    }
    std::string pk;
    if (!storage::AppendPrimaryKey(target, &pk).ok()) return absl::OkStatus();  // no such key
    std::vector<Slot> slots(1);
    slots[0].def = def.get();
    slots[0].key = storage::RecordKey(def->generation_id(), pk);
    CAIRN_RETURN_IF_ERROR(emit.Visit());
    CAIRN_RETURN_IF_ERROR(LoadSlots(engine_, &slots, snapshot.get()));
    if (slots[0].stored) {
      CAIRN_RETURN_IF_ERROR(emit.Row(slots[0].original).status());
    }
    return absl::OkStatus();
  }

  if (!attr->indexed) return scan_records(generation, generation_end, /*filter=*/true);

  // Indexed: walk the index entries, then fetch each record from the same snapshot (D3: the
  // record and its entries were committed together).
  const std::string attr_prefix = storage::IndexAttributePrefix(def->generation_id(), attr->id);
  std::string start = attr_prefix;
  if (pattern) {
    storage::AppendStringPrefix(pattern->prefix(), &start);
  } else if (!storage::AppendScalar(target, &start).ok()) {
    return absl::OkStatus();
  }
  // Every continuation of `start` (a primary key tag, or more of an escaped UTF-8 string)
  // begins with a byte below 0xFF.
  const std::string upper = start + '\xFF';
  auto it = engine_->NewIterator(Cf::kIndexes, snapshot.get(), upper);
  for (it->Seek(ToSlice(start)); it->Valid(); it->Next()) {
    CAIRN_RETURN_IF_ERROR(emit.Visit());
    absl::string_view rest(it->key().data(), it->key().size());
    rest.remove_prefix(attr_prefix.size());
    json indexed_value;
    if (!storage::ConsumeScalar(&rest, &indexed_value)) {
      return absl::DataLossError(absl::StrCat("unreadable index entry in ", def->QualifiedName()));
    }
    // A suffix or substring decides on the indexed value, before the record is read.
    if (pattern && !pattern->prefix_only() &&
        !internal::FieldMatches(indexed_value, target, wildcard)) {
      continue;
    }
    std::vector<Slot> slots(1);
    slots[0].def = def.get();
    slots[0].key = storage::RecordKey(def->generation_id(), rest);
    CAIRN_RETURN_IF_ERROR(LoadSlots(engine_, &slots, snapshot.get()));
    if (!slots[0].stored) continue;
    // An entry of a value the strip of a dropped attribute has yet to remove.
    if (def->IsStripped(attr->name, slots[0].original.version())) continue;
    CAIRN_ASSIGN_OR_RETURN(
        bool more,
        emit.Row(slots[0].original, slots[0].original_live ? &slots[0].original_json : nullptr));
    if (!more) return absl::OkStatus();
  }
  return IteratorStatus(*it);
}

absl::StatusOr<TableRef> RecordStore::ScanStored(absl::string_view db, absl::string_view table,
                                                 const StoredVisitor& visit) {
  CAIRN_ASSIGN_OR_RETURN(TableRef def, Resolve(db, table));
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
