#include "catalog/internal/record_batch.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/container/btree_map.h"
#include "absl/strings/str_cat.h"
#include "catalog/internal/record_codec.h"
#include "common/fault_points.h"
#include "common/status.h"
#include "storage/keys.h"
#include "storage/rocksdb_status.h"

namespace cairn::catalog::internal {

using nlohmann::json;
using storage::Cf;
using storage::ToSlice;
using storage::v1::ChangeEntry;
using storage::v1::StoredRecord;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json ParseStored(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() ? j : json::object();
}

int CompareVersions(Hlc va, absl::string_view oa, Hlc vb, absl::string_view ob) {
  if (va != vb) return va < vb ? -1 : 1;
  return oa < ob ? -1 : (oa == ob ? 0 : 1);
}

absl::Status IteratorStatus(const rocksdb::Iterator& it) { return storage::FromRocks(it.status()); }

absl::Status NotDropping(const TableDef& def) {
  if (!def.state()->dropping()) return absl::OkStatus();
  return Error(ErrorCode::kTableDropping,
               absl::StrCat("table '", def.QualifiedName(), "' is being dropped"));
}

absl::Status ScanCheckpoint::Visit() {
  CAIRN_RETURN_IF_ERROR(CAIRN_FAULT(faults_, fault_points::kScanRow));
  CAIRN_RETURN_IF_ERROR(NotDropping(def_));
  if (deadline_ != nullptr) return deadline_->Check();
  return absl::OkStatus();
}

void MergeShadows(const std::vector<StoredRecord>& replaced, const StoredRecord& current,
                  storage::v1::ShadowedRows* shadows) {
  std::vector<StoredRecord> all(shadows->rows().begin(), shadows->rows().end());
  all.insert(all.end(), replaced.begin(), replaced.end());
  auto beats = [](const StoredRecord& a, const StoredRecord& b) {
    return a.row_generation() >= b.row_generation() &&
           CompareVersions(a.version(), a.origin(), b.version(), b.origin()) > 0;
  };
  shadows->clear_rows();
  for (size_t i = 0; i < all.size(); ++i) {
    bool beaten = beats(current, all[i]);
    for (size_t j = 0; j < all.size() && !beaten; ++j) {
      // Equal rows (the same write twice) keep the first.
      beaten = j != i && (beats(all[j], all[i]) || (j < i && all[j].version() == all[i].version() &&
                                                    all[j].origin() == all[i].origin()));
    }
    if (!beaten) *shadows->add_rows() = all[i];
  }
}

absl::Status LoadShadows(storage::Engine* engine, uint64_t generation, absl::string_view encoded_pk,
                         storage::v1::ShadowedRows* shadows) {
  shadows->Clear();
  std::string value;
  bool found = false;
  CAIRN_RETURN_IF_ERROR(
      engine->Get(Cf::kMeta, storage::ShadowKey(generation, encoded_pk), &value, &found));
  if (found && !shadows->ParseFromString(value)) {
    return absl::DataLossError("unreadable shadow rows");
  }
  return absl::OkStatus();
}

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

absl::StatusOr<storage::ChangeLog::Reservation> EmitSlots(storage::Engine* engine,
                                                          storage::ChangeLog* log,
                                                          absl::string_view db,
                                                          const std::vector<Slot>& slots,
                                                          rocksdb::WriteBatch* batch) {
  std::vector<ChangeEntry> entries;
  absl::btree_map<uint64_t, int64_t> count_deltas;
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
  // The reservation stamps the entries' logged_ms; a tombstone carries the same, so its age
  // and its log entry's are one clock (D5).
  CAIRN_ASSIGN_OR_RETURN(storage::ChangeLog::Reservation seqs, log->Reserve(db, ordered.size()));
  const uint64_t logged_ms = seqs.logged_ms();
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
    if (s.next.deleted()) {
      storage::v1::StoredRecord tombstone = s.next;
      tombstone.set_logged_ms(logged_ms);
      batch->Put(engine->cf(Cf::kRecords), ToSlice(s.key), tombstone.SerializeAsString())
          .PermitUncheckedError();
    } else {
      batch->Put(engine->cf(Cf::kRecords), ToSlice(s.key), s.next.SerializeAsString())
          .PermitUncheckedError();
    }
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
    if (s.origin_seq != 0) {
      e.set_origin_seq(s.origin_seq);
      e.set_origin_log_id(s.origin_log_id);
    }
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
  for (size_t i = 0; i < entries.size(); ++i) log->Append(batch, db, seqs.first() + i, entries[i]);
  return seqs;
}

}  // namespace cairn::catalog::internal
