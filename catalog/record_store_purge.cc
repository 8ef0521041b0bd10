// RecordStore: the C8 purge of rows of older row generations from a generation a peer's marker
// keeps, resumable after a crash.
#include <algorithm>
#include <iterator>
#include <optional>
#include <utility>
#include <vector>

#include "catalog/internal/record_batch.h"
#include "catalog/internal/record_codec.h"
#include "catalog/placement.h"
#include "catalog/record_store.h"
#include "common/fault_points.h"
#include "common/status.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"

namespace cairn::catalog {

using internal::Dump;
using internal::IteratorStatus;
using internal::kChunk;
using internal::LoadSlots;
using internal::ParseStored;
using internal::Slot;
using nlohmann::json;
using storage::Cf;
using storage::ToSlice;
using storage::ToView;
using storage::v1::StoredRecord;

// ---------------------------------------------------------------------------------------------
// The C8 purge. It walks the generation in chunks, locks each chunk's keys, re-reads them and
// removes what still needs it.

namespace {

// From `it` on, the keys of up to kChunk rows of a generation `marker` leaves dead, as
// stored when read (PurgeChunk reads them again under their latches).
absl::Status NextDeadKeys(rocksdb::Iterator* it, internal::ScanCheckpoint* checkpoint, Hlc marker,
                          std::vector<std::string>* keys) {
  for (; it->Valid() && keys->size() < kChunk; it->Next()) {
    CAIRN_RETURN_IF_ERROR(checkpoint->Visit());
    StoredRecord rec;
    if (!rec.ParseFromArray(it->value().data(), static_cast<int>(it->value().size())) ||
        !IsDeadGeneration(rec.row_generation(), marker)) {
      continue;
    }
    keys->push_back(it->key().ToString());
  }
  return IteratorStatus(*it);
}

// The newest of `shadows` whose row generation `marker` leaves alive; null if none.
const StoredRecord* NewestLiveShadow(const storage::v1::ShadowedRows& shadows, Hlc marker) {
  const StoredRecord* best = nullptr;
  for (const StoredRecord& r : shadows.rows()) {
    if (IsDeadGeneration(r.row_generation(), marker)) continue;
    if (best == nullptr ||
        internal::CompareVersions(r.version(), r.origin(), best->version(), best->origin()) > 0) {
      best = &r;
    }
  }
  return best;
}

// Dead row `s` of `def`'s generation replaced in `batch` by `best`, a shadow the marker leaves
// alive, which leaves the other live shadows; `s` moves into `restored` with `best` as its
// next version, stripped by `current`'s markers (C15).
void RestoreShadow(storage::Engine* engine, const TableDef& def, const TableDef& current,
                   Hlc marker, const storage::v1::ShadowedRows& shadows, const StoredRecord& best,
                   Slot* s, rocksdb::WriteBatch* batch, std::vector<Slot>* restored) {
  const std::string shadow_key = storage::ShadowKey(def.generation_id(), s->encoded_pk);
  storage::v1::ShadowedRows rest;
  for (const StoredRecord& r : shadows.rows()) {
    if (&r != &best && !IsDeadGeneration(r.row_generation(), marker)) *rest.add_rows() = r;
  }
  internal::MergeShadows({}, best, &rest);
  if (rest.rows_size() > 0) {
    batch->Put(engine->cf(Cf::kMeta), ToSlice(shadow_key), rest.SerializeAsString())
        .PermitUncheckedError();
  } else {
    batch->Delete(engine->cf(Cf::kMeta), ToSlice(shadow_key)).PermitUncheckedError();
  }
  if (best.row_generation() != def.created_time()) {
    // Noted like an applied row of another generation, for the next marker's purge.
    batch
        ->Put(engine->cf(Cf::kMeta),
              ToSlice(storage::RowGenKey(def.generation_id(), best.row_generation())),
              rocksdb::Slice())
        .PermitUncheckedError();
  }
  Slot& back = restored->emplace_back(std::move(*s));
  back.changed = true;
  back.next = best;
  // A shadow is kept as it was stored: strip it by the markers held now (C15), as
  // every node holding it as its row did.
  json body = best.deleted() ? json() : ParseStored(best.json());
  if (!best.deleted() && internal::DropStripped(current, best.version(), &body) > 0) {
    back.next.set_json(Dump(body));
  }
  back.SetNext(std::move(body));  // after the move
}

}  // namespace

absl::StatusOr<uint64_t> RecordStore::PurgeRowsBefore(const TableRef& def, Hlc marker) {
  CAIRN_ASSIGN_OR_RETURN(Gate::Token token, def->state()->Admit(def->QualifiedName()));
  if (!HoldsRowsOf(*catalog_->Snapshot(), def->database(), options_.node_name)) {
    // Design 0013, P8: a removed member's rows go by its release, which waits for the
    // operations in flight; a purge admitted after that wait must not put a row back. The
    // pending purge stays, for a member again (run at the next start or marker).
    return uint64_t{0};
  }
  const std::string begin = storage::GenerationPrefix(def->generation_id());
  const std::string end = storage::GenerationPrefix(def->generation_id() + 1);
  uint64_t purged = 0;
  internal::ScanCheckpoint checkpoint(*def, options_.faults);  // C9: a drop cancels the scan
  auto it = engine_->NewIterator(Cf::kRecords, nullptr, end);
  it->Seek(ToSlice(begin));
  while (it->Valid()) {
    std::vector<std::string> keys;
    CAIRN_RETURN_IF_ERROR(NextDeadKeys(it.get(), &checkpoint, marker, &keys));
    if (keys.empty()) continue;
    CAIRN_ASSIGN_OR_RETURN(uint64_t chunk, PurgeChunk(def, marker, std::move(keys)));
    purged += chunk;
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

absl::StatusOr<uint64_t> RecordStore::PurgeChunk(const TableRef& def, Hlc marker,
                                                 std::vector<std::string> keys) {
  auto guard = latches_.Lock(keys);
  // Index entries and strips by the definition of now, held until the batch commits: one
  // published since the purge began may index more, or fewer, attributes (decision 103) or
  // hold newer markers (C15).
  CAIRN_ASSIGN_OR_RETURN(LockedDef locked, LockCurrent(def));
  const TableDef& current = *locked.def;
  std::vector<Slot> slots;
  for (std::string& key : keys) {
    Slot s;
    s.def = &current;
    s.encoded_pk = key.substr(8);
    s.key = std::move(key);
    slots.push_back(std::move(s));
  }
  CAIRN_RETURN_IF_ERROR(LoadSlots(engine_, &slots));
  uint64_t purged = 0;
  rocksdb::WriteBatch batch;
  int64_t live_removed = 0;
  std::vector<Slot> restored;      // dead rows that a surviving shadow replaces
  restored.reserve(slots.size());  // never moved once filled: next_json points into each
  for (Slot& s : slots) {
    if (!s.stored || !IsDeadGeneration(s.original.row_generation(), marker)) continue;
    ++purged;
    // The row died with its generation (C8, D7). If it had replaced a row of a generation
    // the marker leaves alive (a shadow), the newest such row takes its place, logged
    // again for the peers; it may be the only copy of an acknowledged write.
    storage::v1::ShadowedRows shadows;
    CAIRN_RETURN_IF_ERROR(
        internal::LoadShadows(engine_, def->generation_id(), s.encoded_pk, &shadows));
    if (const StoredRecord* best = NewestLiveShadow(shadows, marker); best != nullptr) {
      RestoreShadow(engine_, *def, current, marker, shadows, *best, &s, &batch, &restored);
      continue;
    }
    if (shadows.rows_size() > 0) {
      batch
          .Delete(engine_->cf(Cf::kMeta),
                  ToSlice(storage::ShadowKey(def->generation_id(), s.encoded_pk)))
          .PermitUncheckedError();
    }
    // Nothing to put back: remove it outright. A relayed copy that arrives later is refused
    // by the same rule.
    if (s.original_live) {
      for (const std::string& k : internal::IndexKeys(current, s.original_json, s.encoded_pk)) {
        batch.Delete(engine_->cf(Cf::kIndexes), ToSlice(k)).PermitUncheckedError();
      }
      ++live_removed;
    }
    batch.Delete(engine_->cf(Cf::kRecords), ToSlice(s.key)).PermitUncheckedError();
  }
  if (live_removed > 0) {
    batch
        .Merge(engine_->cf(Cf::kMeta), ToSlice(storage::CountKey(def->generation_id())),
               storage::EncodeCountDelta(-live_removed))
        .PermitUncheckedError();
  }
  // Held until the batch commits (EmitSlots).
  std::optional<storage::ChangeLog::Reservation> seqs;
  if (!restored.empty()) {
    absl::StatusOr<storage::ChangeLog::Reservation> r =
        internal::EmitSlots(engine_, log_, def->database(), restored, &batch);
    if (!r.ok()) return r.status();
    seqs.emplace(std::move(*r));
  }
  CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
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
    absl::Status purged = PurgeRowsBefore(def, marker).status();
    // A drop of the generation cancels its purge (C9) and removes the pending record with
    // every other key of the generation; nothing is left to do.
    if (GetErrorCode(purged) == ErrorCode::kTableDropping) continue;
    CAIRN_RETURN_IF_ERROR(purged);
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

absl::StatusOr<std::vector<std::pair<std::string, PeerDropResult>>>
RecordStore::ApplyPeerDropDatabase(absl::string_view db, const Catalog::TableStampFn& stamp_of) {
  CAIRN_ASSIGN_OR_RETURN(auto results, catalog_->ApplyPeerDropDatabase(db, stamp_of));
  // As ApplyPeerDrop: each kept generation's purge was recorded in its marker's batch.
  const bool kept = std::any_of(results.begin(), results.end(),
                                [](const auto& r) { return r.second == PeerDropResult::kKept; });
  if (kept) CAIRN_RETURN_IF_ERROR(ResumePendingPurges());
  return results;
}

}  // namespace cairn::catalog
