#include "catalog/record_store.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "catalog/internal/record_batch.h"
#include "catalog/internal/record_codec.h"
#include "catalog/names.h"
#include "catalog/placement.h"
#include "common/fault_points.h"
#include "common/status.h"
#include "storage/keys.h"
#include "storage/value_codec.h"

namespace cairn::catalog {

using internal::Dump;
using internal::EmitSlots;
using internal::LoadSlots;
using internal::Slot;
using nlohmann::json;

namespace {

constexpr int kMaxSchemaRetries = 64;

// One record of a write request.
struct Input {
  const json* record = nullptr;  // the caller's, or `owned` when a primary key was generated
  json owned;
  json pk;
  std::string encoded_pk;
};

// D2, D3: every field of every record is an attribute of `def` of the right type. Fields that
// are not, in a dynamic table, go to `added` (each name once) to become attributes.
absl::Status ValidateRecords(const TableDef& def, const std::vector<Input>& inputs,
                             std::vector<AttributeSpec>* added) {
  absl::flat_hash_set<std::string> seen_new;
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (const auto& [name, value] : inputs[i].record->items()) {
      // A dynamic table's timestamps are the node's: whatever a client sends for them is
      // replaced, so it is not checked either (as Harper).
      if (!def.schema_defined() &&
          (name == kCreatedTimeAttribute || name == kUpdatedTimeAttribute)) {
        continue;
      }
      const AttributeDef* a = def.FindAttribute(name);
      if (a == nullptr) {
        if (def.sealed()) {
          return Error(ErrorCode::kUnknownAttribute,
                       absl::StrCat("records[", i, "]: unknown attribute '", name, "' (",
                                    def.QualifiedName(), " is sealed)"));
        }
        // D8 and C13's length, in Harper's words: its clients compare with them.
        if (name.find_first_of("/`") != std::string::npos) {
          return Error(ErrorCode::kInvalidName,
                       "Attribute names cannot include backticks or forward slashes");
        }
        if (name.size() > kMaxAttributeNameBytes) {
          return Error(ErrorCode::kInvalidName,
                       absl::StrCat("transaction aborted due to attribute name ", name,
                                    " being too long. Attribute names cannot be longer than ",
                                    kMaxAttributeNameBytes, " bytes."));
        }
        // D2: added as in a dynamic table, provisional (decision 105): a declaration of it,
        // here or on a peer, gives it its type and index.
        if (seen_new.insert(name).second) {
          AttributeSpec spec(name, v1::ANY, /*indexed=*/true);
          spec.provisional = true;
          added->push_back(std::move(spec));
        }
        continue;
      }
      absl::Status s = internal::CheckType(*a, value);
      if (!s.ok()) return Annotate(s, absl::StrCat("records[", i, "]"));
    }
  }
  return absl::OkStatus();
}

// Step 1 of a write: records[i] as an Input with a usable primary key (D1, D8), generated when
// it has none (not for an update); its body canonical for a float key that is an integer.
absl::Status InputOf(const TableDef& def, const json& r, size_t i, WriteMode mode, Input* in) {
  if (!r.is_object()) {
    return Error(ErrorCode::kBadRequest, absl::StrCat("records[", i, "] is not an object"));
  }
  if (internal::NestedDeeperThan(r, internal::kMaxRecordDepth)) {
    return Error(ErrorCode::kBadRequest, absl::StrCat("records[", i, "] nests deeper than ",
                                                      internal::kMaxRecordDepth, " levels"));
  }
  in->record = &r;
  auto pk = r.find(def.primary_key());
  const bool no_key = pk == r.end() || pk->is_null();
  if (mode == WriteMode::kUpdate &&
      (no_key || (pk->is_string() && pk->get_ref<const std::string&>().empty()))) {
    // Harper's words, which its clients compare with.
    return Error(ErrorCode::kBadRequest,
                 "a valid hash attribute must be provided with update record, check log for "
                 "more info");
  }
  if (no_key) {
    in->owned = r;
    in->owned[def.primary_key()] = internal::NewUuid();
    pk = in->owned.find(def.primary_key());
  }
  in->pk = *pk;
  if (int64_t exact = 0; in->pk.is_number_float() && storage::ExactInt64(in->pk, &exact)) {
    // 1.0 and -0.0 are the key 1 and 0: the body says so too (its canonical form).
    if (!in->owned.is_object()) in->owned = r;
    in->owned[def.primary_key()] = exact;
    in->pk = exact;
  }
  if (in->pk.is_string() && in->pk.get_ref<const std::string&>().empty()) {  // D8
    return Error(ErrorCode::kBadRequest,
                 absl::StrCat("records[", i, "]: the primary key '", def.primary_key(),
                              "' must not be an empty string"));
  }
  absl::Status s = storage::AppendPrimaryKey(in->pk, &in->encoded_pk);
  if (!s.ok()) return Annotate(s, absl::StrCat("records[", i, "].", def.primary_key()));
  return absl::OkStatus();
}

// Step 3 of a write: one slot per distinct record key of `def`'s generation, and for each
// input the index of its slot.
std::vector<size_t> SlotsOf(const TableDef& def, const std::vector<Input>& inputs,
                            std::vector<Slot>* slots) {
  absl::flat_hash_map<std::string, size_t> slot_of;
  std::vector<size_t> slot_index(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string key = storage::RecordKey(def.generation_id(), inputs[i].encoded_pk);
    auto [it, inserted] = slot_of.emplace(key, slots->size());
    if (inserted) {
      Slot s;
      s.def = &def;
      s.key = std::move(key);
      s.encoded_pk = inputs[i].encoded_pk;
      slots->push_back(std::move(s));
    }
    slot_index[i] = it->second;
  }
  return slot_index;
}

// The body `given` makes of slot `s` at `version`: merged over the stored row when `merge`,
// with a dynamic table's timestamps (now_ms).
json MergedBody(const TableDef& def, const Slot& s, const json& given, bool exists, bool merge,
                Hlc version, int64_t now_ms) {
  json next = json::object();
  if (merge) {
    // Keep only what is still an attribute, and of it only what the attribute holds:
    // a value of a dropped attribute that the strip has not reached yet must not be
    // written back, not even under a re-created attribute of that name (decision 4).
    const Hlc stored_version = s.changed ? version : s.original.version();
    for (const auto& [name, value] : s.current_json().items()) {
      if (def.FindAttribute(name) != nullptr && !def.IsStripped(name, stored_version)) {
        next[name] = value;
      }
    }
  }
  for (const auto& [name, value] : given.items()) next[name] = value;
  if (!def.schema_defined()) {
    const json& cur = s.current_json();
    auto created = exists ? cur.find(kCreatedTimeAttribute) : cur.end();
    next[std::string(kCreatedTimeAttribute)] =
        (exists && created != cur.end()) ? *created : json(now_ms);
    next[std::string(kUpdatedTimeAttribute)] = now_ms;
  }
  return next;
}

// Step 4 of a write: each input in request order decided against what its slot holds
// (insert skips a live row, update a missing one), its new version set in the slot.
void DecideRows(const TableDef& def, const std::vector<Input>& inputs, WriteMode mode,
                const std::vector<size_t>& slot_index, Hlc version, const std::string& origin,
                std::vector<Slot>* slots, WriteResult* result) {
  const int64_t now_ms = static_cast<int64_t>(HybridClock::PhysicalMs(version));
  for (size_t i = 0; i < inputs.size(); ++i) {
    Slot& s = (*slots)[slot_index[i]];
    const bool exists = s.live();
    if ((mode == WriteMode::kInsert && exists) || (mode == WriteMode::kUpdate && !exists)) {
      result->skipped.push_back(inputs[i].pk);
      continue;
    }
    const json& given = *inputs[i].record;
    const bool merge = exists && mode != WriteMode::kInsert;
    if (!merge && def.schema_defined()) {
      s.next_json = &given;  // the record as given is the new row
    } else {
      s.SetNext(MergedBody(def, s, given, exists, merge, version, now_ms));
    }
    s.changed = true;
    s.next.set_version(version);
    s.next.set_origin(origin);
    s.next.set_row_generation(def.created_time());
    s.next.set_deleted(false);
    s.next.set_json(Dump(*s.next_json));
    result->written.push_back(inputs[i].pk);
  }
  result->version = version;
  result->row_generation = def.created_time();
  result->replicate = def.replicate();
}

BackgroundPaceOptions StripPace(const RecordStoreOptions& options) {
  BackgroundPaceOptions o;
  o.rate = options.strip_rate;
  o.busy_share = options.busy_share;
  o.activity = options.activity;
  return o;
}

}  // namespace

RecordStore::RecordStore(storage::Engine* engine, storage::ChangeLog* log, Catalog* catalog,
                         RecordStoreOptions options)
    : engine_(engine),
      log_(log),
      catalog_(catalog),
      options_(std::move(options)),
      latches_(options_.latch_stripes),
      strip_pace_(StripPace(options_)) {
  CAIRN_CHECK(options_.hlc != nullptr) << "RecordStoreOptions::hlc is required";
  catalog_->SetStripListener([this] { KickStrips(); });
}

RecordStore::~RecordStore() {
  catalog_->SetStripListener(nullptr);
  StopStrips();
}

absl::StatusOr<TableRef> RecordStore::Resolve(absl::string_view db, absl::string_view table) const {
  return catalog_->Snapshot()->FindTable(db, table);
}

absl::StatusOr<TableRef> RecordStore::ResolveRows(absl::string_view db,
                                                  absl::string_view table) const {
  const SnapshotRef snap = catalog_->Snapshot();
  CAIRN_ASSIGN_OR_RETURN(TableRef def, snap->FindTable(db, table));
  const DatabaseDef* d = snap->FindDatabase(db);
  if (!def->replicate() || d == nullptr || IsReady(d->placement, options_.node_name)) {
    return def;
  }
  if (!IsMember(d->placement, options_.node_name)) {
    return Error(ErrorCode::kNotAMember,
                 absl::StrCat("this node (", options_.node_name,
                              ") does not hold the rows of "
                              "database '",
                              db, "'; its members are ", DescribeMembers(d->placement),
                              ": send the request to one of them"));
  }
  // P7: a member still catching up holds only part of the rows; it is answered as a
  // non-member, so a client's request is forwarded to a ready member (P4).
  return Error(
      ErrorCode::kNotAMember,
      absl::StrCat("this node (", options_.node_name, ") is catching up on database '", db,
                   "'; its ready members are ", absl::StrJoin(ReadyMembers(d->placement), ","),
                   ": send the request to one of them"));
}

absl::StatusOr<Gate::Token> RecordStore::AdmitRows(const TableRef& def) const {
  CAIRN_ASSIGN_OR_RETURN(Gate::Token token, def->state()->Admit(def->QualifiedName()));
  // P8: a release waits for the operations in flight at the gates, then removes the rows.
  // One that resolved the table while this node was a member, and is admitted only after
  // that wait, sees it is not one any more.
  CAIRN_RETURN_IF_ERROR(ResolveRows(def->database(), def->name()).status());
  return token;
}

absl::StatusOr<TableRef> RecordStore::Refresh(const TableRef& def) const {
  auto live = catalog_->Snapshot()->FindTable(def->database(), def->name());
  if (!live.ok() || (*live)->generation_id() != def->generation_id()) {
    return Error(ErrorCode::kTableDropping,
                 absl::StrCat("table '", def->QualifiedName(), "' was dropped"));
  }
  return live;
}

absl::StatusOr<RecordStore::LockedDef> RecordStore::LockCurrent(const TableRef& def) const {
  for (int attempt = 0; attempt < kMaxSchemaRetries; ++attempt) {
    CAIRN_ASSIGN_OR_RETURN(TableRef current, Refresh(def));
    CAIRN_RETURN_IF_ERROR(CAIRN_FAULT(options_.faults, fault_points::kRefreshBeforeLock));
    auto schema = std::make_unique<absl::ReaderMutexLock>(&current->state()->schema_mu());
    if (internal::SchemaIsCurrentUnderDynamicLock(*current)) {
      return LockedDef{std::move(current), std::move(schema)};
    }
  }
  return absl::AbortedError(absl::StrCat("the schema of ", def->QualifiedName(),
                                         " kept changing during a maintenance scan; retry"));
}

// ---------------------------------------------------------------------------------------------
// Local writes.

absl::StatusOr<WriteResult> RecordStore::Write(absl::string_view db, absl::string_view table,
                                               const json& records, WriteMode mode) {
  if (!records.is_array()) {
    return Error(ErrorCode::kBadRequest, "'records' must be an array of objects");
  }
  CAIRN_ASSIGN_OR_RETURN(TableRef def, ResolveRows(db, table));
  CAIRN_ASSIGN_OR_RETURN(Gate::Token token, AdmitRows(def));

  // 1. Primary keys (D1): every record must have a usable one before anything is written.
  std::vector<Input> inputs(records.size());  // not resized after: `record` may point into it
  for (size_t i = 0; i < records.size(); ++i) {
    CAIRN_RETURN_IF_ERROR(InputOf(*def, records[i], i, mode, &inputs[i]));
    if (inputs[i].owned.is_object()) inputs[i].record = &inputs[i].owned;
  }

  WriteResult result;
  for (int attempt = 0; attempt < kMaxSchemaRetries; ++attempt) {
    // 2. Validate against the definition (D2). A dynamic table gains the new attributes
    //    first, in their own catalog batch (C1), so the record never has a field that is not
    //    an attribute.
    std::vector<AttributeSpec> added;
    CAIRN_RETURN_IF_ERROR(ValidateRecords(*def, inputs, &added));
    if (!added.empty()) {
      CAIRN_RETURN_IF_ERROR(CAIRN_FAULT(options_.faults, fault_points::kWriteBeforeAttributes));
      // The catalog re-validates the whole batch against its live definition, in the critical
      // section that adds the attributes: a write that a racing schema change makes invalid is
      // refused before it adds anything (all or nothing, D2).
      auto still_valid = [&](const TableDef& live) {
        std::vector<AttributeSpec> unused;
        return ValidateRecords(live, inputs, &unused);
      };
      CAIRN_ASSIGN_OR_RETURN(def, catalog_->EnsureAttributes(def, added, v1::LOCAL, still_valid));
      // `added` names each attribute once (ValidateRecords); an attempt after a retry may
      // list one again.
      absl::flat_hash_set<std::string> reported(result.new_attributes.begin(),
                                                result.new_attributes.end());
      for (const auto& a : added) {
        if (def->FindAttribute(a.name) != nullptr && reported.insert(a.name).second) {
          result.new_attributes.push_back(a.name);
        }
      }
      // Validate again against what the catalog now holds: a concurrent create_attribute may
      // have given one of these names a type.
      continue;
    }

    // 3. Lock the keys and check that `def` is still the definition (GenerationState (1)).
    std::vector<Slot> slots;
    const std::vector<size_t> slot_index = SlotsOf(*def, inputs, &slots);
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
    CAIRN_ASSIGN_OR_RETURN(const Hlc version, options_.hlc->Now());
    DecideRows(*def, inputs, mode, slot_index, version, options_.node_name, &slots, &result);

    // 5. One batch: records, index entries, counts, change-log entries (D3, D4).
    rocksdb::WriteBatch batch;
    CAIRN_ASSIGN_OR_RETURN(storage::ChangeLog::Reservation seqs,
                           EmitSlots(engine_, log_, def->database(), slots, &batch));
    if (seqs.count() == 0) return result;
    result.log_seq = seqs.first() + seqs.count() - 1;
    CAIRN_RETURN_IF_ERROR(CommitLocal(&batch));
    return result;
  }
  return absl::AbortedError(absl::StrCat("the schema of ", def->QualifiedName(),
                                         " kept changing during the write; retry"));
}

absl::StatusOr<WriteResult> RecordStore::Delete(absl::string_view db, absl::string_view table,
                                                const json& ids) {
  if (!ids.is_array()) return Error(ErrorCode::kBadRequest, "'ids' must be an array");
  CAIRN_ASSIGN_OR_RETURN(TableRef def, ResolveRows(db, table));
  CAIRN_ASSIGN_OR_RETURN(Gate::Token token, AdmitRows(def));
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
  CAIRN_ASSIGN_OR_RETURN(const Hlc version, options_.hlc->Now());
  WriteResult result;
  result.version = version;
  result.row_generation = def->created_time();
  result.replicate = def->replicate();
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
  CAIRN_ASSIGN_OR_RETURN(storage::ChangeLog::Reservation seqs,
                         EmitSlots(engine_, log_, def->database(), slots, &batch));
  if (seqs.count() == 0) return result;
  result.log_seq = seqs.first() + seqs.count() - 1;
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

}  // namespace cairn::catalog
