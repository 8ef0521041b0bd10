// RecordStore, peer side: last-writer-wins apply of a peer's change entries (SPEC D5, R5, R6,
// R8), with the cursor in the same batch.
#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "catalog/internal/record_batch.h"
#include "catalog/internal/record_codec.h"
#include "catalog/names.h"
#include "catalog/placement.h"
#include "catalog/record_store.h"
#include "common/fault_points.h"
#include "common/status.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"
#include "storage/value_codec.h"

namespace cairn::catalog {

using internal::CompareVersions;
using internal::EmitSlots;
using internal::LoadSlots;
using internal::SchemaIsCurrentUnderDynamicLock;
using internal::Slot;
using nlohmann::json;
using storage::Cf;
using storage::ToSlice;
using storage::v1::ChangeEntry;
using storage::v1::StoredRecord;

namespace {

constexpr int kMaxSchemaRetries = 64;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Peer apply (D5, R5, R6, R8).

absl::StatusOr<ApplyStats> RecordStore::ApplyPeerEntries(
    absl::string_view db, const std::vector<ChangeEntry>& entries,
    const std::function<void(rocksdb::WriteBatch*)>& extra, std::vector<ChangeEntry>* unapplied) {
  std::vector<const ChangeEntry*> in_place;
  in_place.reserve(entries.size());
  for (const ChangeEntry& e : entries) in_place.push_back(&e);
  return ApplyPeerEntries(db, in_place, extra, unapplied);
}

struct RecordStore::PeerApply {
  struct Target {
    TableRef def;
    Gate::Token token;
  };
  explicit PeerApply(size_t n)
      : target_of(n, nullptr), parsed(n), restripped(n, false), slot_index(n, SIZE_MAX) {}

  ApplyStats stats;
  // Step 1. Per table name: its live generation, admitted (C9), or none (node-local, or
  // unknown here). node_hash_map: target_of holds pointers into it across inserts.
  absl::node_hash_map<std::string, std::optional<Target>> targets;
  absl::flat_hash_set<std::string> node_local;
  absl::flat_hash_map<std::string, bool> valid_table_names;
  std::vector<std::string> unknown;      // tables neither live nor provably dead here
  std::vector<const Target*> target_of;  // per entry; null: not applied
  std::vector<json> parsed;              // per PUT entry, its body
  std::vector<bool> restripped;          // parsed[i] lost values (C15)
  absl::flat_hash_map<std::string, std::vector<AttributeSpec>> missing;  // peer-only fields
  // Step 2. One slot per record key; held until the batch is written.
  std::vector<Slot> slots;
  std::vector<size_t> slot_index;  // per entry
  internal::KeyLatches::Guard guard;
  std::vector<std::unique_ptr<absl::ReaderMutexLock>> schema_locks;
  // Step 3. Per slot, the rows of an older row generation it replaced (shadows to keep).
  absl::flat_hash_map<size_t, std::vector<StoredRecord>> replaced;
};

absl::StatusOr<ApplyStats> RecordStore::ApplyPeerEntries(
    absl::string_view db, absl::Span<const ChangeEntry* const> entries,
    const std::function<void(rocksdb::WriteBatch*)>& extra, std::vector<ChangeEntry>* unapplied) {
  for (int attempt = 0; attempt < kMaxSchemaRetries; ++attempt) {
    PeerApply a(entries.size());
    if (unapplied != nullptr) unapplied->clear();
    SnapshotRef snap = catalog_->Snapshot();
    if (!HoldsRowsOf(*snap, db, options_.node_name)) {
      // P3: a non-member holds no row of the database, whichever path brought it (stream,
      // parked retry, refetch, Verify repair). A placement that adds this node later brings
      // the rows by copies (design 0013, "Who sends what").
      a.stats.not_member = entries.size();
      CAIRN_RETURN_IF_ERROR(WritePeerBatch(db, extra, &a));
      return a.stats;
    }
    CAIRN_RETURN_IF_ERROR(ResolvePeerEntries(db, *snap, entries, unapplied, &a));
    // P8: admitted now (the targets hold their gates' tokens); a release that waited for
    // the operations in flight may have removed the rows since `snap` said this node held
    // them. Then the next attempt drops the entries as a non-member's.
    if (!HoldsRowsOf(*catalog_->Snapshot(), db, options_.node_name)) continue;
    CAIRN_RETURN_IF_ERROR(CAIRN_FAULT(options_.faults, fault_points::kApplyBeforeAttributes));
    for (auto& [table, specs] : a.missing) {
      PeerApply::Target& t = *a.targets[table];
      CAIRN_ASSIGN_OR_RETURN(t.def, catalog_->EnsureAttributes(t.def, specs, v1::CLUSTER));
    }
    CAIRN_RETURN_IF_ERROR(CAIRN_FAULT(options_.faults, fault_points::kApplyBeforeLock));
    if (!LockPeerKeys(entries, &a)) continue;
    CAIRN_RETURN_IF_ERROR(CAIRN_FAULT(options_.faults, fault_points::kApplyLocked));
    CAIRN_RETURN_IF_ERROR(MergePeerEntries(entries, &a));
    CAIRN_RETURN_IF_ERROR(WritePeerBatch(db, extra, &a));
    return a.stats;
  }
  return absl::AbortedError("schema kept changing while applying peer entries; retry");
}

absl::Status RecordStore::ResolvePeerEntries(absl::string_view db, const CatalogSnapshot& snap,
                                             absl::Span<const ChangeEntry* const> entries,
                                             std::vector<ChangeEntry>* unapplied, PeerApply* a) {
  // Skip, with the cursor still advancing: entries of a node-local table here (C11), of a
  // retired generation (C6, D7), or malformed. An entry whose table is not live here and not
  // provably dead refuses the whole batch: its schema has not arrived yet (or its drop is
  // completing), and skipping it would lose it for good. Peer-only fields become attributes
  // first.
  ApplyStats& stats = a->stats;
  for (size_t i = 0; i < entries.size(); ++i) {
    const ChangeEntry& e = *entries[i];
    if (e.op() != storage::v1::PUT && e.op() != storage::v1::DELETE) {
      ++stats.malformed;  // R1: what we do not understand is counted and ignored
      continue;
    }
    // A peer's values are input to check: the key must be one a client could have written
    // (D1, D8), the table name a valid one (C13). Neither can ever become valid, so the
    // entry is skipped, not retried.
    json pk;
    if (!storage::DecodePrimaryKey(e.key(), &pk) ||
        (pk.is_string() && pk.get_ref<const std::string&>().empty())) {
      ++stats.malformed;
      continue;
    }
    auto valid_name = a->valid_table_names.try_emplace(e.table(), false);
    if (valid_name.second) valid_name.first->second = ValidateTableName(e.table()).ok();
    if (!valid_name.first->second) {
      ++stats.malformed;
      continue;
    }
    if (IsDeadGeneration(e.row_generation(), snap.MarkerFor(db, e.table()))) {
      ++stats.dead_generation;
      continue;
    }
    auto [it, inserted] = a->targets.try_emplace(e.table());
    if (inserted) {
      auto def = snap.FindTable(db, e.table());
      if (def.ok() && !(*def)->replicate()) {
        a->node_local.insert(e.table());
      } else if (def.ok()) {
        auto token = (*def)->state()->Admit((*def)->QualifiedName());
        if (token.ok()) it->second = PeerApply::Target{*def, std::move(*token)};
      }
      if (!it->second.has_value() && !a->node_local.contains(e.table())) {
        a->unknown.push_back(e.table());
      }
    }
    if (!it->second.has_value()) {
      if (a->node_local.contains(e.table())) {
        ++stats.node_local;
      } else if (unapplied != nullptr) {
        ++stats.parked;
        unapplied->push_back(e);
      }
      continue;
    }
    if (e.op() == storage::v1::PUT && !ParsePeerBody(e, *it->second->def, i, a)) {
      ++stats.malformed;
      continue;
    }
    options_.hlc->Observe(e.version());
    a->target_of[i] = &*it->second;
  }
  if (!a->unknown.empty() && unapplied == nullptr) {
    return Error(ErrorCode::kTableNotFound,
                 absl::StrCat("peer entries for ", absl::StrJoin(a->unknown, ", "), " in '", db,
                              "', which has no live replicating table of that name here; "
                              "apply the peer's schema, then retry"));
  }
  if (stats.malformed > 0) {
    spdlog::warn("[{}] skipping {} malformed peer entr{} for '{}'", options_.node_name,
                 stats.malformed, stats.malformed == 1 ? "y" : "ies", std::string(db));
  }
  return absl::OkStatus();
}

bool RecordStore::ParsePeerBody(const ChangeEntry& e, const TableDef& def, size_t i, PeerApply* a) {
  json body = json::parse(e.json(), nullptr, /*allow_exceptions=*/false);
  bool ok = body.is_object() && !internal::NestedDeeperThan(body, internal::kMaxRecordDepth);
  for (auto f = body.begin(); ok && f != body.end(); ++f) {
    ok = ValidateAttributeName(f.key()).ok();
  }
  if (!ok) return false;
  // C15: values older than an attribute marker (or a strip still pending) go before they can
  // become attributes; step 3 strips again by the definition step 2 checked.
  if (size_t n = internal::DropStripped(def, e.version(), &body); n > 0) {
    a->stats.values_stripped += n;
    a->restripped[i] = true;
  }
  a->parsed[i] = std::move(body);
  for (const auto& field : a->parsed[i].items()) {
    const std::string& name = field.key();
    if (def.FindAttribute(name) != nullptr) continue;
    auto& m = a->missing[e.table()];
    if (std::none_of(m.begin(), m.end(), [&](const AttributeSpec& s) { return s.name == name; })) {
      AttributeSpec spec(name, v1::ANY, /*indexed=*/true);
      spec.provisional = true;  // until a peer's definition says what it is (103)
      m.push_back(std::move(spec));
    }
  }
  return true;
}

bool RecordStore::LockPeerKeys(absl::Span<const ChangeEntry* const> entries, PeerApply* a) {
  absl::flat_hash_map<std::string, size_t> slot_of;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (a->target_of[i] == nullptr) continue;
    std::string key = storage::RecordKey(a->target_of[i]->def->generation_id(), entries[i]->key());
    auto [it, inserted] = slot_of.emplace(key, a->slots.size());
    if (inserted) {
      Slot s;
      s.def = a->target_of[i]->def.get();
      s.key = std::move(key);
      s.encoded_pk = entries[i]->key();
      a->slots.push_back(std::move(s));
    }
    a->slot_index[i] = it->second;
  }
  std::vector<std::string> keys;
  for (const Slot& s : a->slots) keys.push_back(s.key);
  a->guard = latches_.Lock(keys);
  std::vector<const TableDef*> defs;
  for (const auto& [table, t] : a->targets) {
    if (t.has_value()) defs.push_back(t->def.get());
  }
  std::sort(defs.begin(), defs.end(), [](const TableDef* x, const TableDef* y) {
    return x->generation_id() < y->generation_id();
  });
  bool current = true;
  for (const TableDef* d : defs) {
    a->schema_locks.push_back(std::make_unique<absl::ReaderMutexLock>(&d->state()->schema_mu()));
    if (!SchemaIsCurrentUnderDynamicLock(*d)) current = false;
  }
  return current;
}

absl::Status RecordStore::MergePeerEntries(absl::Span<const ChangeEntry* const> entries,
                                           PeerApply* a) {
  // A row replaced by one of an older row generation is kept aside (a shadow): a marker may
  // yet retire the older one, and its purge then puts the shadow back (C8, D7).
  CAIRN_RETURN_IF_ERROR(LoadSlots(engine_, &a->slots));
  ApplyStats& stats = a->stats;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (a->slot_index[i] == SIZE_MAX) continue;
    const ChangeEntry& e = *entries[i];
    Slot& s = a->slots[a->slot_index[i]];
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
      if (e.row_generation() < cur->row_generation()) {
        a->replaced[a->slot_index[i]].push_back(*cur);
      }
    }
    s.changed = true;
    s.origin_seq = e.origin_seq();
    s.origin_log_id = e.origin_log_id();
    s.next.set_version(e.version());
    s.next.set_origin(e.origin());
    s.next.set_row_generation(e.row_generation());
    s.next.set_deleted(e.op() == storage::v1::DELETE);
    if (e.op() == storage::v1::DELETE) {
      s.next.clear_json();
      s.SetNext(json());
    } else {
      // Stripped again by the definition step 2 found current: a marker published after
      // step 1 (whose strip only kept dropped values from becoming attributes) strips here.
      // The result is the body every node stores for this (version, origin) (C15).
      if (size_t n = internal::DropStripped(*s.def, e.version(), &a->parsed[i]); n > 0) {
        stats.values_stripped += n;
        a->restripped[i] = true;
      }
      s.next.set_json(a->restripped[i] ? internal::Dump(a->parsed[i]) : e.json());
      s.SetNext(std::move(a->parsed[i]));
    }
    ++stats.applied;
  }
  return absl::OkStatus();
}

absl::Status RecordStore::WritePeerBatch(absl::string_view db,
                                         const std::function<void(rocksdb::WriteBatch*)>& extra,
                                         PeerApply* a) {
  // The applied rows, their log entries (for relay, R8) and `extra` (R6). A row of another
  // generation than the local one is noted by its row generation (storage::RowGenKey): a
  // later marker then knows, without a scan, whether it must purge older rows (C8) or
  // re-fetch newer ones the retired generation held (R14).
  rocksdb::WriteBatch batch;
  absl::flat_hash_set<std::pair<uint64_t, uint64_t>> row_generations;
  for (const Slot& s : a->slots) {
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
  for (const auto& [index, rows] : a->replaced) {
    const Slot& s = a->slots[index];
    storage::v1::ShadowedRows shadows;
    CAIRN_RETURN_IF_ERROR(
        internal::LoadShadows(engine_, s.def->generation_id(), s.encoded_pk, &shadows));
    internal::MergeShadows(rows, s.next, &shadows);
    const std::string key = storage::ShadowKey(s.def->generation_id(), s.encoded_pk);
    if (shadows.rows_size() == 0) {
      batch.Delete(engine_->cf(Cf::kMeta), ToSlice(key)).PermitUncheckedError();
    } else {
      batch.Put(engine_->cf(Cf::kMeta), ToSlice(key), shadows.SerializeAsString())
          .PermitUncheckedError();
    }
  }
  CAIRN_ASSIGN_OR_RETURN(storage::ChangeLog::Reservation seqs,
                         EmitSlots(engine_, log_, db, a->slots, &batch));
  if (extra) extra(&batch);
  if (batch.Count() == 0) return absl::OkStatus();
  CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
  values_stripped_.fetch_add(a->stats.values_stripped, std::memory_order_relaxed);
  return absl::OkStatus();
}

}  // namespace cairn::catalog
