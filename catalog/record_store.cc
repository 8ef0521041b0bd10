#include "catalog/record_store.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <utility>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "catalog/internal/record_codec.h"
#include "catalog/names.h"
#include "common/fault_points.h"
#include "common/status.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"
#include "storage/rocksdb_status.h"
#include "storage/value_codec.h"

namespace cairn::catalog {
namespace {

using nlohmann::json;
using storage::Cf;
using storage::v1::ChangeEntry;
using storage::v1::StoredRecord;

constexpr int kMaxSchemaRetries = 64;
constexpr size_t kChunk = 256;  // keys per batch of a maintenance scan

using storage::ToSlice;
using storage::ToView;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// A stored or received record body. Anything but a JSON object reads as an empty object, so
// no later merge or erase can throw on it.
json ParseStored(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() ? j : json::object();
}

// (version, origin) ordering of SPEC D5.
int CompareVersions(Hlc va, absl::string_view oa, Hlc vb, absl::string_view ob) {
  if (va != vb) return va < vb ? -1 : 1;
  return oa < ob ? -1 : (oa == ob ? 0 : 1);
}

// The state of one record key while a batch is built: what is stored, and what the batch
// will leave.
struct Slot {
  const TableDef* def = nullptr;
  std::string key;  // record key
  std::string encoded_pk;
  // Stored before the batch.
  bool stored = false;  // a row (live or tombstone) exists
  StoredRecord original;
  bool original_live = false;
  json original_json;  // parsed only when live
  // After the batch so far. next_json points at next_owned, or at a request's own record
  // when the write needs no merge (no copy on the common insert path).
  bool changed = false;
  StoredRecord next;
  json next_owned;
  const json* next_json = nullptr;
  bool live() const { return changed ? !next.deleted() : original_live; }
  const json& current_json() const { return changed ? *next_json : original_json; }
  const StoredRecord* current() const { return changed ? &next : (stored ? &original : nullptr); }
  void SetNext(json j) {
    next_owned = std::move(j);
    next_json = &next_owned;
  }
};

// Reads the stored rows of `slots` in one MultiGet.
absl::Status LoadSlots(storage::Engine* engine, std::vector<Slot>* slots,
                       const rocksdb::Snapshot* snapshot = nullptr);

}  // namespace

RecordStore::RecordStore(storage::Engine* engine, storage::ChangeLog* log, Catalog* catalog,
                         RecordStoreOptions options)
    : engine_(engine),
      log_(log),
      catalog_(catalog),
      options_(std::move(options)),
      latches_(options_.latch_stripes) {
  CAIRN_CHECK(options_.hlc != nullptr) << "RecordStoreOptions::hlc is required";
}

absl::StatusOr<TableRef> RecordStore::Resolve(absl::string_view db, absl::string_view table) const {
  return catalog_->Snapshot()->FindTable(db, table);
}

absl::StatusOr<TableRef> RecordStore::Refresh(const TableRef& def) const {
  auto live = catalog_->Snapshot()->FindTable(def->database(), def->name());
  if (!live.ok() || (*live)->generation_id() != def->generation_id()) {
    return Error(ErrorCode::kTableDropping,
                 absl::StrCat("table '", def->QualifiedName(), "' was dropped"));
  }
  return live;
}

namespace {

absl::Status LoadSlots(storage::Engine* engine, std::vector<Slot>* slots,
                       const rocksdb::Snapshot* snapshot) {
  if (slots->empty()) return absl::OkStatus();
  std::vector<rocksdb::Slice> keys;
  keys.reserve(slots->size());
  for (const auto& s : *slots) keys.push_back(ToSlice(s.key));
  std::vector<rocksdb::PinnableSlice> values(slots->size());
  std::vector<rocksdb::Status> statuses(slots->size());
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  engine->db()->MultiGet(ro, engine->cf(Cf::kRecords), keys.size(), keys.data(), values.data(),
                         statuses.data());
  for (size_t i = 0; i < slots->size(); ++i) {
    auto& s = (*slots)[i];
    if (statuses[i].IsNotFound()) continue;
    if (!statuses[i].ok()) return storage::FromRocks(statuses[i]);
    if (!s.original.ParseFromArray(values[i].data(), static_cast<int>(values[i].size()))) {
      return absl::DataLossError(absl::StrCat("unreadable record in ", s.def->QualifiedName()));
    }
    s.stored = true;
    s.original_live = !s.original.deleted();
    if (s.original_live) s.original_json = ParseStored(s.original.json());
  }
  return absl::OkStatus();
}

// Adds the changed slots to `batch`: record rows, index differences, record counts, and one
// change-log entry each (D3, D4), under sequence numbers reserved in `db`'s log. The returned
// reservation must live until the batch has committed (or failed): it holds the watermark.
storage::ChangeLog::Reservation EmitSlots(storage::Engine* engine, storage::ChangeLog* log,
                                          absl::string_view db, const std::vector<Slot>& slots,
                                          rocksdb::WriteBatch* batch) {
  std::vector<ChangeEntry> entries;
  absl::btree_map<uint64_t, int64_t> count_deltas;
  const uint64_t logged_ms = static_cast<uint64_t>(absl::ToUnixMillis(absl::Now()));
  // Keys go into the batch in key order per family: with memtable_insert_hint_per_batch,
  // RocksDB then resumes each insert from the previous one's position in the memtable
  // instead of searching from the top (index keys arrive in no particular order otherwise).
  // Safe to reorder: no two operations of one batch touch the same key.
  std::vector<std::pair<std::string, bool>> index_ops;  // key, put (else delete)
  std::vector<const Slot*> ordered;
  for (const Slot& s : slots) {
    if (s.changed) ordered.push_back(&s);
  }
  std::sort(ordered.begin(), ordered.end(),
            [](const Slot* a, const Slot* b) { return a->key < b->key; });
  for (const Slot* slot : ordered) {
    const Slot& s = *slot;
    const TableDef& def = *s.def;
    std::vector<std::string> before, after;
    if (s.original_live) before = internal::IndexKeys(def, s.original_json, s.encoded_pk);
    if (!s.next.deleted()) after = internal::IndexKeys(def, *s.next_json, s.encoded_pk);
    std::vector<std::string> gone, added;
    std::set_difference(before.begin(), before.end(), after.begin(), after.end(),
                        std::back_inserter(gone));
    std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                        std::back_inserter(added));
    for (std::string& k : gone) index_ops.emplace_back(std::move(k), false);
    for (std::string& k : added) index_ops.emplace_back(std::move(k), true);
    // why ignored (all Put/Delete/Merge below): WriteBatch fails only beyond 4 GiB.
    batch->Put(engine->cf(Cf::kRecords), ToSlice(s.key), s.next.SerializeAsString())
        .PermitUncheckedError();
    const int64_t delta = (s.next.deleted() ? 0 : 1) - (s.original_live ? 1 : 0);
    if (delta != 0) count_deltas[def.generation_id()] += delta;

    ChangeEntry e;
    e.set_table(def.name());
    e.set_op(s.next.deleted() ? storage::v1::DELETE : storage::v1::PUT);
    e.set_key(s.encoded_pk);
    e.set_version(s.next.version());
    e.set_origin(s.next.origin());
    e.set_row_generation(s.next.row_generation());
    e.set_logged_ms(logged_ms);
    // No record body: it is in the records family (see ChangeEntry in records.proto).
    entries.push_back(std::move(e));
  }
  std::sort(index_ops.begin(), index_ops.end());
  for (const auto& [key, put] : index_ops) {
    if (put) {
      batch->Put(engine->cf(Cf::kIndexes), ToSlice(key), rocksdb::Slice()).PermitUncheckedError();
    } else {
      batch->Delete(engine->cf(Cf::kIndexes), ToSlice(key)).PermitUncheckedError();
    }
  }
  for (const auto& [generation, delta] : count_deltas) {
    batch
        ->Merge(engine->cf(Cf::kMeta), ToSlice(storage::CountKey(generation)),
                storage::EncodeCountDelta(delta))
        .PermitUncheckedError();
  }
  storage::ChangeLog::Reservation seqs = log->Reserve(db, entries.size());
  for (size_t i = 0; i < entries.size(); ++i) log->Append(batch, db, seqs.first() + i, entries[i]);
  return seqs;
}

// For a caller holding d's schema_mu shared through a lock the analysis cannot follow (one
// lock per table of a peer batch, held in a vector).
bool SchemaIsCurrentUnderDynamicLock(const TableDef& d) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  return d.state()->schema_version() == d.schema_version();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Local writes.

absl::StatusOr<WriteResult> RecordStore::Write(absl::string_view db, absl::string_view table,
                                               const json& records, WriteMode mode) {
  if (!records.is_array()) {
    return Error(ErrorCode::kBadRequest, "'records' must be an array of objects");
  }
  CAIRN_ASSIGN_OR_RETURN(TableRef def, Resolve(db, table));
  CAIRN_ASSIGN_OR_RETURN(Gate::Token token, def->state()->Admit(def->QualifiedName()));

  // 1. Primary keys (D1): every record must have a usable one before anything is written.
  struct Input {
    const json* record;  // the caller's, or `owned` when a primary key was generated
    json owned;
    json pk;
    std::string encoded_pk;
  };
  std::vector<Input> inputs;
  inputs.reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    const json& r = records[i];
    if (!r.is_object()) {
      return Error(ErrorCode::kBadRequest, absl::StrCat("records[", i, "] is not an object"));
    }
    if (internal::NestedDeeperThan(r, internal::kMaxRecordDepth)) {
      return Error(ErrorCode::kBadRequest, absl::StrCat("records[", i, "] nests deeper than ",
                                                        internal::kMaxRecordDepth, " levels"));
    }
    Input in;
    in.record = &r;
    auto pk = r.find(def->primary_key());
    if (pk == r.end() || pk->is_null()) {
      if (mode == WriteMode::kUpdate) {
        return Error(ErrorCode::kBadRequest, absl::StrCat("records[", i, "] has no primary key '",
                                                          def->primary_key(), "'"));
      }
      in.owned = r;
      in.owned[def->primary_key()] = internal::NewUuid();
      pk = in.owned.find(def->primary_key());
    }
    in.pk = *pk;
    absl::Status s = storage::AppendPrimaryKey(in.pk, &in.encoded_pk);
    if (!s.ok()) return Annotate(s, absl::StrCat("records[", i, "].", def->primary_key()));
    inputs.push_back(std::move(in));
    if (inputs.back().owned.is_object()) inputs.back().record = &inputs.back().owned;
  }

  WriteResult result;
  for (int attempt = 0; attempt < kMaxSchemaRetries; ++attempt) {
    // 2. Validate against the definition (D2). A dynamic table gains the new attributes
    //    first, in their own catalog batch (C1), so the record never has a field that is not
    //    an attribute.
    std::vector<AttributeSpec> added;
    absl::flat_hash_map<std::string, bool> seen_new;
    for (size_t i = 0; i < inputs.size(); ++i) {
      for (const auto& [name, value] : inputs[i].record->items()) {
        const AttributeDef* a = def->FindAttribute(name);
        if (a == nullptr) {
          if (def->schema_defined()) {
            return Error(ErrorCode::kUnknownAttribute,
                         absl::StrCat("records[", i, "]: unknown attribute '", name, "' (",
                                      def->QualifiedName(), " is schema-defined)"));
          }
          if (seen_new.emplace(name, true).second) added.push_back({name, v1::ANY, true});
          continue;
        }
        absl::Status s = internal::CheckType(*a, value);
        if (!s.ok()) return Annotate(s, absl::StrCat("records[", i, "]"));
      }
    }
    if (!added.empty()) {
      CAIRN_ASSIGN_OR_RETURN(def, catalog_->EnsureAttributes(def, added, v1::LOCAL));
      for (const auto& a : added) {
        if (def->FindAttribute(a.name) != nullptr &&
            std::find(result.new_attributes.begin(), result.new_attributes.end(), a.name) ==
                result.new_attributes.end()) {
          result.new_attributes.push_back(a.name);
        }
      }
      // Validate again against what the catalog now holds: a concurrent create_attribute may
      // have given one of these names a type.
      continue;
    }

    // 3. Lock the keys and check that `def` is still the definition (GenerationState (1)).
    std::vector<Slot> slots;
    absl::flat_hash_map<std::string, size_t> slot_of;
    std::vector<size_t> slot_index(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::string key = storage::RecordKey(def->generation_id(), inputs[i].encoded_pk);
      auto [it, inserted] = slot_of.emplace(key, slots.size());
      if (inserted) {
        Slot s;
        s.def = def.get();
        s.key = std::move(key);
        s.encoded_pk = inputs[i].encoded_pk;
        slots.push_back(std::move(s));
      }
      slot_index[i] = it->second;
    }
    std::vector<std::string> keys;
    keys.reserve(slots.size());
    for (const Slot& s : slots) keys.push_back(s.key);
    auto guard = latches_.Lock(keys);
    absl::ReaderMutexLock schema(&def->state()->schema_mu());
    if (def->state()->schema_version() != def->schema_version()) {
      CAIRN_ASSIGN_OR_RETURN(def, Refresh(def));
      continue;
    }

    // 4. Read what is stored and decide per record, in request order.
    CAIRN_RETURN_IF_ERROR(LoadSlots(engine_, &slots));
    // D5: the new version must beat what is stored, even a row from a peer with a faster
    // clock that this process has not heard of since it started.
    for (const Slot& s : slots) {
      if (s.stored) options_.hlc->Observe(s.original.version());
    }
    const Hlc version = options_.hlc->Now();
    const int64_t now_ms = static_cast<int64_t>(HybridClock::PhysicalMs(version));
    for (size_t i = 0; i < inputs.size(); ++i) {
      Slot& s = slots[slot_index[i]];
      const bool exists = s.live();
      if ((mode == WriteMode::kInsert && exists) || (mode == WriteMode::kUpdate && !exists)) {
        result.skipped.push_back(inputs[i].pk);
        continue;
      }
      const json& given = *inputs[i].record;
      const bool merge = exists && mode != WriteMode::kInsert;
      if (!merge && def->schema_defined()) {
        s.next_json = &given;  // the record as given is the new row
      } else {
        json next = json::object();
        if (merge) {
          // Keep only what is still an attribute: a value of a dropped attribute that the
          // strip has not reached yet must not be written back.
          for (const auto& [name, value] : s.current_json().items()) {
            if (def->FindAttribute(name) != nullptr) next[name] = value;
          }
        }
        for (const auto& [name, value] : given.items()) next[name] = value;
        if (!def->schema_defined()) {
          const json& cur = s.current_json();
          auto created = exists ? cur.find(kCreatedTimeAttribute) : cur.end();
          next[std::string(kCreatedTimeAttribute)] =
              (exists && created != cur.end()) ? *created : json(now_ms);
          next[std::string(kUpdatedTimeAttribute)] = now_ms;
        }
        s.SetNext(std::move(next));
      }
      s.changed = true;
      s.next.set_version(version);
      s.next.set_origin(options_.node_name);
      s.next.set_row_generation(def->created_time());
      s.next.set_deleted(false);
      s.next.set_json(Dump(*s.next_json));
      result.written.push_back(inputs[i].pk);
    }
    result.version = version;

    // 5. One batch: records, index entries, counts, change-log entries (D3, D4).
    rocksdb::WriteBatch batch;
    storage::ChangeLog::Reservation seqs = EmitSlots(engine_, log_, def->database(), slots, &batch);
    if (seqs.count() == 0) return result;
    CAIRN_RETURN_IF_ERROR(CommitLocal(&batch));
    return result;
  }
  return absl::AbortedError(absl::StrCat("the schema of ", def->QualifiedName(),
                                         " kept changing during the write; retry"));
}

absl::StatusOr<WriteResult> RecordStore::Delete(absl::string_view db, absl::string_view table,
                                                const json& ids) {
  if (!ids.is_array()) return Error(ErrorCode::kBadRequest, "'ids' must be an array");
  CAIRN_ASSIGN_OR_RETURN(TableRef def, Resolve(db, table));
  CAIRN_ASSIGN_OR_RETURN(Gate::Token token, def->state()->Admit(def->QualifiedName()));
  std::vector<Slot> slots;
  absl::flat_hash_map<std::string, size_t> slot_of;
  std::vector<size_t> slot_index;
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string pk;
    absl::Status s = storage::AppendPrimaryKey(ids[i], &pk);
    if (!s.ok()) return Annotate(s, absl::StrCat("ids[", i, "]"));
    std::string key = storage::RecordKey(def->generation_id(), pk);
    auto [it, inserted] = slot_of.emplace(key, slots.size());
    if (inserted) {
      Slot slot;
      slot.def = def.get();
      slot.key = std::move(key);
      slot.encoded_pk = std::move(pk);
      slots.push_back(std::move(slot));
    }
    slot_index.push_back(it->second);
  }
  std::vector<std::string> keys;
  for (const Slot& s : slots) keys.push_back(s.key);
  auto guard = latches_.Lock(keys);
  // A delete changes no attribute, so any definition of the generation will do; the shared
  // schema lock still orders it against drop_attribute's reconcile.
  absl::ReaderMutexLock schema(&def->state()->schema_mu());
  CAIRN_RETURN_IF_ERROR(LoadSlots(engine_, &slots));
  for (const Slot& s : slots) {
    if (s.stored) options_.hlc->Observe(s.original.version());  // D5, as in Write
  }
  const Hlc version = options_.hlc->Now();
  WriteResult result;
  result.version = version;
  for (size_t i = 0; i < ids.size(); ++i) {
    Slot& s = slots[slot_index[i]];
    if (!s.live()) {
      result.skipped.push_back(ids[i]);
      continue;
    }
    s.changed = true;
    s.next.set_version(version);
    s.next.set_origin(options_.node_name);
    s.next.set_row_generation(def->created_time());
    s.next.set_deleted(true);
    s.next.clear_json();
    s.SetNext(json());
    result.written.push_back(ids[i]);
  }
  rocksdb::WriteBatch batch;
  storage::ChangeLog::Reservation seqs = EmitSlots(engine_, log_, def->database(), slots, &batch);
  if (seqs.count() == 0) return result;
  CAIRN_RETURN_IF_ERROR(CommitLocal(&batch));
  return result;
}

absl::Status RecordStore::CommitLocal(rocksdb::WriteBatch* batch) {
  CAIRN_RETURN_IF_ERROR(CAIRN_FAULT(options_.faults, fault_points::kWriteBeforeCommit));
  CAIRN_RETURN_IF_ERROR(engine_->Write(batch));
  // why ignored: the write is durable; only crash, delay and block matter here.
  CAIRN_FAULT(options_.faults, fault_points::kWriteAfterCommit).IgnoreError();
  return absl::OkStatus();
}

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
      : def_(def), options_(options), fields_(std::move(fields)), visit_(visit), faults_(faults) {}

  // False: stop (limit reached or the visitor said so). Errors: the table is being dropped.
  absl::StatusOr<bool> Row(const StoredRecord& rec, json* parsed = nullptr) {
    if (def_.state()->dropping()) {
      return Error(ErrorCode::kTableDropping,
                   absl::StrCat("table '", def_.QualifiedName(), "' is being dropped"));
    }
    CAIRN_RETURN_IF_ERROR(CAIRN_FAULT(faults_, fault_points::kScanRow));
    if (rec.deleted()) return true;
    if (skipped_ < options_.offset) {
      ++skipped_;
      return true;
    }
    json record = parsed != nullptr ? std::move(*parsed) : ParseStored(rec.json());
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
  FaultRegistry* const faults_;
  uint64_t skipped_ = 0;
  uint64_t emitted_ = 0;
};

absl::Status IteratorStatus(const rocksdb::Iterator& it) { return storage::FromRocks(it.status()); }

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
  std::optional<std::string> prefix;
  if (!all && value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    if (s.size() > 1 && s.back() == '*') prefix = s.substr(0, s.size() - 1);
  }
  const json target = internal::CoerceSearchValue(*attr, value);
  const std::string generation = storage::GenerationPrefix(def->generation_id());
  const std::string generation_end = storage::GenerationPrefix(def->generation_id() + 1);

  // Scans records in [start, upper), keeping those whose attribute matches when `filter`.
  auto scan_records = [&](const std::string& start, const std::string& upper,
                          bool filter) -> absl::Status {
    auto it = engine_->NewIterator(Cf::kRecords, snapshot.get(), upper);
    for (it->Seek(ToSlice(start)); it->Valid(); it->Next()) {
      StoredRecord rec;
      if (!rec.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
        return absl::DataLossError(absl::StrCat("unreadable record in ", def->QualifiedName()));
      }
      json parsed;
      json* hand_over = nullptr;
      if (filter && !rec.deleted()) {
        parsed = ParseStored(rec.json());
        auto f = parsed.find(attr->name);
        if (f == parsed.end() || !internal::FieldMatches(*f, target, prefix ? &*prefix : nullptr)) {
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
    if (prefix) {
      std::string start = generation;
      storage::AppendStringPrefix(*prefix, &start);
      std::string upper = start;
      upper.push_back('\xFF');  // escaped bodies never contain a bare 0xFF after the prefix
      return scan_records(start, upper, /*filter=*/true);
    }
    std::string pk;
    if (!storage::AppendPrimaryKey(target, &pk).ok()) return absl::OkStatus();  // no such key
    std::vector<Slot> slots(1);
    slots[0].def = def.get();
    slots[0].key = storage::RecordKey(def->generation_id(), pk);
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
  if (prefix) {
    storage::AppendStringPrefix(*prefix, &start);
  } else if (!storage::AppendScalar(target, &start).ok()) {
    return absl::OkStatus();
  }
  // Every continuation of `start` (a primary key tag, or more of an escaped UTF-8 string)
  // begins with a byte below 0xFF.
  const std::string upper = start + '\xFF';
  auto it = engine_->NewIterator(Cf::kIndexes, snapshot.get(), upper);
  for (it->Seek(ToSlice(start)); it->Valid(); it->Next()) {
    absl::string_view rest(it->key().data(), it->key().size());
    rest.remove_prefix(attr_prefix.size());
    json indexed_value;
    if (!storage::ConsumeScalar(&rest, &indexed_value)) {
      return absl::DataLossError(absl::StrCat("unreadable index entry in ", def->QualifiedName()));
    }
    std::vector<Slot> slots(1);
    slots[0].def = def.get();
    slots[0].key = storage::RecordKey(def->generation_id(), rest);
    CAIRN_RETURN_IF_ERROR(LoadSlots(engine_, &slots, snapshot.get()));
    if (!slots[0].stored) continue;
    CAIRN_ASSIGN_OR_RETURN(
        bool more,
        emit.Row(slots[0].original, slots[0].original_live ? &slots[0].original_json : nullptr));
    if (!more) return absl::OkStatus();
  }
  return IteratorStatus(*it);
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

// ---------------------------------------------------------------------------------------------
// Maintenance scans: drop_attribute and the C8 purge. Both walk the generation in chunks,
// lock each chunk's keys, re-read them, and rewrite what still needs it.

absl::Status RecordStore::DropAttribute(absl::string_view db, absl::string_view table,
                                        absl::string_view attribute) {
  CAIRN_ASSIGN_OR_RETURN(TableRef def, catalog_->RemoveAttribute(db, table, attribute));
  CAIRN_RETURN_IF_ERROR(CAIRN_FAULT(options_.faults, fault_points::kStripAfterCatalog));
  return StripAttribute(def, attribute);
}

absl::Status RecordStore::ResumePendingStrips() {
  std::vector<std::pair<uint64_t, std::string>> pending;
  {
    const std::string prefix(storage::kStripPrefix);
    auto it = engine_->NewIterator(Cf::kMeta, nullptr, storage::PrefixSuccessor(prefix));
    for (it->Seek(ToSlice(prefix)); it->Valid(); it->Next()) {
      absl::string_view key(it->key().data(), it->key().size());
      if (key.size() < prefix.size() + 8) continue;
      key.remove_prefix(prefix.size());
      pending.emplace_back(storage::GetBigEndian64(key), std::string(key.substr(8)));
    }
    CAIRN_RETURN_IF_ERROR(IteratorStatus(*it));
  }
  SnapshotRef snap = catalog_->Snapshot();
  for (const auto& [generation, attribute] : pending) {
    TableRef def = snap->FindGeneration(generation);
    if (def == nullptr) {
      // The generation was dropped: its drop removed the values already.
      rocksdb::WriteBatch batch;
      batch.Delete(engine_->cf(Cf::kMeta), storage::StripKey(generation, attribute))
          .PermitUncheckedError();
      CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
      continue;
    }
    spdlog::info("[{}] resuming the strip of dropped attribute {}.{}", options_.node_name,
                 def->QualifiedName(), attribute);
    CAIRN_RETURN_IF_ERROR(StripAttribute(def, attribute));
  }
  return absl::OkStatus();
}

absl::Status RecordStore::StripAttribute(const TableRef& def, absl::string_view attribute) {
  CAIRN_ASSIGN_OR_RETURN(Gate::Token token, def->state()->Admit(def->QualifiedName()));
  // Every write validated against a definition that still had the attribute has committed
  // (GenerationState (1)), so this scan sees every value the attribute had.
  const std::string name(attribute);
  const std::string begin = storage::GenerationPrefix(def->generation_id());
  const std::string end = storage::GenerationPrefix(def->generation_id() + 1);
  auto it = engine_->NewIterator(Cf::kRecords, nullptr, end);
  it->Seek(ToSlice(begin));
  while (it->Valid()) {
    std::vector<Slot> slots;
    for (; it->Valid() && slots.size() < kChunk; it->Next()) {
      StoredRecord rec;
      if (!rec.ParseFromArray(it->value().data(), static_cast<int>(it->value().size())) ||
          rec.deleted() || ParseStored(rec.json()).count(name) == 0) {
        continue;
      }
      Slot s;
      s.key = it->key().ToString();
      s.encoded_pk = s.key.substr(8);
      slots.push_back(std::move(s));
    }
    CAIRN_RETURN_IF_ERROR(IteratorStatus(*it));
    if (slots.empty()) continue;
    std::vector<std::string> keys;
    for (const Slot& s : slots) keys.push_back(s.key);
    auto guard = latches_.Lock(keys);
    CAIRN_ASSIGN_OR_RETURN(TableRef current, Refresh(def));
    absl::ReaderMutexLock schema(&current->state()->schema_mu());
    for (Slot& s : slots) s.def = current.get();
    CAIRN_RETURN_IF_ERROR(LoadSlots(engine_, &slots));
    rocksdb::WriteBatch batch;
    for (Slot& s : slots) {
      if (!s.original_live) continue;
      if (current->FindAttribute(name) == nullptr) {
        // Strip the value. Not a record write: version, origin and log are unchanged.
        s.original_json.erase(name);
        StoredRecord rec = s.original;
        rec.set_json(Dump(s.original_json));
        batch.Put(engine_->cf(Cf::kRecords), ToSlice(s.key), rec.SerializeAsString())
            .PermitUncheckedError();
      } else {
        // Re-created meanwhile (a dynamic write brought it back): keep the value and make
        // sure it is indexed under the new attribute.
        for (const std::string& k : internal::IndexKeys(*current, s.original_json, s.encoded_pk)) {
          batch.Put(engine_->cf(Cf::kIndexes), ToSlice(k), rocksdb::Slice()).PermitUncheckedError();
        }
      }
    }
    CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
  }
  CAIRN_RETURN_IF_ERROR(IteratorStatus(*it));
  rocksdb::WriteBatch done;
  done.Delete(engine_->cf(Cf::kMeta), storage::StripKey(def->generation_id(), name))
      .PermitUncheckedError();
  return engine_->Write(&done);
}

absl::StatusOr<uint64_t> RecordStore::PurgeRowsBefore(const TableRef& def, Hlc marker) {
  CAIRN_ASSIGN_OR_RETURN(Gate::Token token, def->state()->Admit(def->QualifiedName()));
  const std::string begin = storage::GenerationPrefix(def->generation_id());
  const std::string end = storage::GenerationPrefix(def->generation_id() + 1);
  uint64_t purged = 0;
  auto it = engine_->NewIterator(Cf::kRecords, nullptr, end);
  it->Seek(ToSlice(begin));
  while (it->Valid()) {
    std::vector<Slot> slots;
    for (; it->Valid() && slots.size() < kChunk; it->Next()) {
      StoredRecord rec;
      if (!rec.ParseFromArray(it->value().data(), static_cast<int>(it->value().size())) ||
          !IsDeadGeneration(rec.row_generation(), marker)) {
        continue;
      }
      Slot s;
      s.def = def.get();
      s.key = it->key().ToString();
      s.encoded_pk = s.key.substr(8);
      slots.push_back(std::move(s));
    }
    CAIRN_RETURN_IF_ERROR(IteratorStatus(*it));
    if (slots.empty()) continue;
    std::vector<std::string> keys;
    for (const Slot& s : slots) keys.push_back(s.key);
    auto guard = latches_.Lock(keys);
    absl::ReaderMutexLock schema(&def->state()->schema_mu());
    CAIRN_RETURN_IF_ERROR(LoadSlots(engine_, &slots));
    rocksdb::WriteBatch batch;
    int64_t live_removed = 0;
    for (Slot& s : slots) {
      if (!s.stored || !IsDeadGeneration(s.original.row_generation(), marker)) continue;
      // The row died with its generation (C8, D7): remove it outright. A relayed copy that
      // arrives later is refused by the same rule.
      if (s.original_live) {
        for (const std::string& k : internal::IndexKeys(*def, s.original_json, s.encoded_pk)) {
          batch.Delete(engine_->cf(Cf::kIndexes), ToSlice(k)).PermitUncheckedError();
        }
        ++live_removed;
      }
      batch.Delete(engine_->cf(Cf::kRecords), ToSlice(s.key)).PermitUncheckedError();
      ++purged;
    }
    if (live_removed > 0) {
      batch
          .Merge(engine_->cf(Cf::kMeta), ToSlice(storage::CountKey(def->generation_id())),
                 storage::EncodeCountDelta(-live_removed))
          .PermitUncheckedError();
    }
    CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
  }
  CAIRN_RETURN_IF_ERROR(IteratorStatus(*it));
  {
    // Done: the pending purge and the row generations it removed are forgotten together.
    rocksdb::WriteBatch batch;
    batch.Delete(engine_->cf(Cf::kMeta), ToSlice(storage::PurgeKey(def->generation_id())))
        .PermitUncheckedError();
    batch
        .DeleteRange(engine_->cf(Cf::kMeta), ToSlice(storage::RowGenKey(def->generation_id(), 0)),
                     ToSlice(storage::RowGenKey(def->generation_id(), marker)))
        .PermitUncheckedError();
    CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
  }
  if (purged > 0) {
    catalog_->CountRetiredRows(purged);
    spdlog::warn("[{}] purged {} row(s) of {} older than its drop at {} (C8)", options_.node_name,
                 purged, def->QualifiedName(), marker);
  }
  return purged;
}

absl::Status RecordStore::ResumePendingPurges() {
  std::vector<std::pair<uint64_t, Hlc>> pending;
  {
    const std::string prefix(storage::kPurgePrefix);
    auto it = engine_->NewIterator(Cf::kMeta, nullptr, storage::PrefixSuccessor(prefix));
    for (it->Seek(ToSlice(prefix)); it->Valid(); it->Next()) {
      absl::string_view key(it->key().data(), it->key().size());
      if (key.size() != prefix.size() + 8 || it->value().size() != 8) continue;
      pending.emplace_back(storage::GetBigEndian64(key.substr(prefix.size())),
                           storage::GetBigEndian64(ToView(it->value())));
    }
    CAIRN_RETURN_IF_ERROR(IteratorStatus(*it));
  }
  if (pending.empty()) return absl::OkStatus();
  SnapshotRef snap = catalog_->Snapshot();
  for (const auto& [generation, marker] : pending) {
    TableRef def = snap->FindGeneration(generation);
    if (def == nullptr) {
      // The generation was dropped since: its drop removed every row.
      rocksdb::WriteBatch batch;
      batch.Delete(engine_->cf(Cf::kMeta), ToSlice(storage::PurgeKey(generation)))
          .PermitUncheckedError();
      CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
      continue;
    }
    CAIRN_RETURN_IF_ERROR(PurgeRowsBefore(def, marker).status());
  }
  return absl::OkStatus();
}

absl::StatusOr<PeerDropResult> RecordStore::ApplyPeerDrop(absl::string_view db,
                                                          absl::string_view table,
                                                          Hlc dropped_time) {
  CAIRN_ASSIGN_OR_RETURN(PeerDropResult r, catalog_->ApplyPeerDrop(db, table, dropped_time));
  // A kept generation that holds rows of older row generations got a pending purge in the
  // marker's batch (Catalog::ApplyPeerDrop): run it now (a crash leaves it for the restart).
  if (r == PeerDropResult::kKept) CAIRN_RETURN_IF_ERROR(ResumePendingPurges());
  return r;
}

// ---------------------------------------------------------------------------------------------
// Peer apply (D5, R5, R6, R8).

absl::StatusOr<ApplyStats> RecordStore::ApplyPeerEntries(
    absl::string_view db, const std::vector<ChangeEntry>& entries,
    const std::function<void(rocksdb::WriteBatch*)>& extra) {
  for (int attempt = 0; attempt < kMaxSchemaRetries; ++attempt) {
    ApplyStats stats;
    SnapshotRef snap = catalog_->Snapshot();
    // 1. Resolve each entry's table. Skip, with the cursor still advancing: entries of a
    //    node-local table here (C11), of a retired generation (C6, D7), or malformed. An
    //    entry whose table is not live here and not provably dead refuses the whole batch:
    //    its schema has not arrived yet (or its drop is completing), and skipping it would
    //    lose it for good. Peer-only fields become attributes first.
    struct Target {
      TableRef def;
      Gate::Token token;
    };
    // node_hash_map: target_of holds pointers into it across inserts.
    absl::node_hash_map<std::string, std::optional<Target>> targets;
    absl::flat_hash_map<std::string, bool> node_local;
    std::vector<std::string> unknown;
    std::vector<const Target*> target_of(entries.size(), nullptr);
    std::vector<json> parsed(entries.size());
    absl::flat_hash_map<std::string, std::vector<AttributeSpec>> missing;
    for (size_t i = 0; i < entries.size(); ++i) {
      const ChangeEntry& e = entries[i];
      if (e.op() != storage::v1::PUT && e.op() != storage::v1::DELETE) {
        ++stats.malformed;  // R1: what we do not understand is counted and ignored
        continue;
      }
      if (IsDeadGeneration(e.row_generation(), snap->MarkerFor(db, e.table()))) {
        ++stats.dead_generation;
        continue;
      }
      auto [it, inserted] = targets.try_emplace(e.table());
      if (inserted) {
        auto def = snap->FindTable(db, e.table());
        if (def.ok() && !(*def)->replicate()) {
          node_local[e.table()] = true;
        } else if (def.ok()) {
          auto token = (*def)->state()->Admit((*def)->QualifiedName());
          if (token.ok()) it->second = Target{*def, std::move(*token)};
        }
        if (!it->second.has_value() && node_local.count(e.table()) == 0) {
          unknown.push_back(e.table());
        }
      }
      if (!it->second.has_value()) {
        if (node_local.count(e.table()) != 0) ++stats.node_local;
        continue;
      }
      if (e.op() == storage::v1::PUT) {
        json body = json::parse(e.json(), nullptr, /*allow_exceptions=*/false);
        bool ok = body.is_object() && !internal::NestedDeeperThan(body, internal::kMaxRecordDepth);
        for (auto f = body.begin(); ok && f != body.end(); ++f) {
          ok = ValidateAttributeName(f.key()).ok();
        }
        if (!ok) {
          ++stats.malformed;
          continue;
        }
        parsed[i] = std::move(body);
        for (const auto& field : parsed[i].items()) {
          const std::string& name = field.key();
          if (it->second->def->FindAttribute(name) == nullptr) {
            auto& m = missing[e.table()];
            if (std::none_of(m.begin(), m.end(),
                             [&](const AttributeSpec& a) { return a.name == name; })) {
              m.push_back({name, v1::ANY, true});
            }
          }
        }
      }
      options_.hlc->Observe(e.version());
      target_of[i] = &*it->second;
    }
    if (!unknown.empty()) {
      return Error(ErrorCode::kTableNotFound,
                   absl::StrCat("peer entries for ", absl::StrJoin(unknown, ", "), " in '", db,
                                "', which has no live replicating table of that name here; "
                                "apply the peer's schema, then retry"));
    }
    if (stats.malformed > 0) {
      spdlog::warn("[{}] skipping {} malformed peer entr{} for '{}'", options_.node_name,
                   stats.malformed, stats.malformed == 1 ? "y" : "ies", std::string(db));
    }
    for (auto& [table, specs] : missing) {
      Target& t = *targets[table];
      CAIRN_ASSIGN_OR_RETURN(t.def, catalog_->EnsureAttributes(t.def, specs, v1::CLUSTER));
    }

    CAIRN_RETURN_IF_ERROR(CAIRN_FAULT(options_.faults, fault_points::kApplyBeforeLock));

    // 2. Lock every key, then every generation's schema (shared, by generation id), and check
    //    that each definition is current.
    std::vector<Slot> slots;
    absl::flat_hash_map<std::string, size_t> slot_of;
    std::vector<size_t> slot_index(entries.size(), SIZE_MAX);
    for (size_t i = 0; i < entries.size(); ++i) {
      if (target_of[i] == nullptr) continue;
      std::string key = storage::RecordKey(target_of[i]->def->generation_id(), entries[i].key());
      auto [it, inserted] = slot_of.emplace(key, slots.size());
      if (inserted) {
        Slot s;
        s.def = target_of[i]->def.get();
        s.key = std::move(key);
        s.encoded_pk = entries[i].key();
        slots.push_back(std::move(s));
      }
      slot_index[i] = it->second;
    }
    std::vector<std::string> keys;
    for (const Slot& s : slots) keys.push_back(s.key);
    auto guard = latches_.Lock(keys);
    std::vector<const TableDef*> defs;
    for (const auto& [table, t] : targets) {
      if (t.has_value()) defs.push_back(t->def.get());
    }
    std::sort(defs.begin(), defs.end(), [](const TableDef* a, const TableDef* b) {
      return a->generation_id() < b->generation_id();
    });
    std::vector<std::unique_ptr<absl::ReaderMutexLock>> schema_locks;
    bool stale = false;
    for (const TableDef* d : defs) {
      schema_locks.push_back(std::make_unique<absl::ReaderMutexLock>(&d->state()->schema_mu()));
      if (!SchemaIsCurrentUnderDynamicLock(*d)) stale = true;
    }
    if (stale) continue;

    // 3. Last-writer-wins per entry, in stream order (D5).
    CAIRN_RETURN_IF_ERROR(LoadSlots(engine_, &slots));
    for (size_t i = 0; i < entries.size(); ++i) {
      if (slot_index[i] == SIZE_MAX) continue;
      const ChangeEntry& e = entries[i];
      Slot& s = slots[slot_index[i]];
      if (const StoredRecord* cur = s.current()) {
        int cmp = CompareVersions(e.version(), e.origin(), cur->version(), cur->origin());
        if (cmp == 0) {
          ++stats.duplicates;
          continue;
        }
        if (cmp < 0) {
          ++stats.older;
          continue;
        }
      }
      s.changed = true;
      s.next.set_version(e.version());
      s.next.set_origin(e.origin());
      s.next.set_row_generation(e.row_generation());
      s.next.set_deleted(e.op() == storage::v1::DELETE);
      if (e.op() == storage::v1::DELETE) {
        s.next.clear_json();
        s.SetNext(json());
      } else {
        s.next.set_json(e.json());
        s.SetNext(std::move(parsed[i]));
      }
      ++stats.applied;
    }

    // 4. One batch: the applied rows, their log entries (for relay, R8) and `extra` (R6).
    //    A row of another generation than the local one is noted by its row generation
    //    (storage::RowGenKey): a later marker then knows, without a scan, whether it must
    //    purge older rows (C8) or re-fetch newer ones the retired generation held (R14).
    rocksdb::WriteBatch batch;
    absl::flat_hash_set<std::pair<uint64_t, uint64_t>> row_generations;
    for (const Slot& s : slots) {
      if (s.changed && s.next.row_generation() != s.def->created_time()) {
        row_generations.emplace(s.def->generation_id(), s.next.row_generation());
      }
    }
    for (const auto& [generation, row_generation] : row_generations) {
      batch
          .Put(engine_->cf(Cf::kMeta), ToSlice(storage::RowGenKey(generation, row_generation)),
               rocksdb::Slice())
          .PermitUncheckedError();
    }
    storage::ChangeLog::Reservation seqs = EmitSlots(engine_, log_, db, slots, &batch);
    if (extra) extra(&batch);
    if (batch.Count() == 0) return stats;
    CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
    return stats;
  }
  return absl::AbortedError("schema kept changing while applying peer entries; retry");
}

}  // namespace cairn::catalog
