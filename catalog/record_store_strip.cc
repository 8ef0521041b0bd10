// RecordStore: strips of dropped attributes' values — a local drop_attribute (decisions 4, 57)
// and a peer's attribute marker (SPEC C15) — resumable after a crash, cancelled by a drop (C9).
#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "catalog/internal/record_batch.h"
#include "catalog/internal/record_codec.h"
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
using storage::Cf;
using storage::ToSlice;
using storage::v1::StoredRecord;

// Strips walk the generation in chunks, lock each chunk's keys, re-read them, and rewrite what
// still needs it.

absl::StatusOr<Hlc> RecordStore::DropAttribute(absl::string_view db, absl::string_view table,
                                               absl::string_view attribute, bool in_background) {
  CAIRN_ASSIGN_OR_RETURN(TableRef live, Resolve(db, table));
  // The drop's stamp must be newer than every row of the generation, and this clock has not
  // necessarily seen them all: after a restart it knows nothing of rows from a peer whose
  // clock ran ahead. So it first observes the newest stored version. A row this read misses
  // (committed after it began, in this generation or in one created since) got its version
  // from this clock, or had it observed, before the stamp is taken (decision 57).
  CAIRN_ASSIGN_OR_RETURN(const Hlc newest, NewestVersion(live));
  options_.hlc->Observe(newest);
  CAIRN_ASSIGN_OR_RETURN(TableRef def, catalog_->RemoveAttribute(db, table, attribute));
  const Hlc stamp = def->stripping().at(std::string(attribute));
  if (in_background) {
    KickStrips();
    return stamp;
  }
  absl::Status stripped = CAIRN_FAULT(options_.faults, fault_points::kStripAfterCatalog);
  if (stripped.ok()) stripped = StripAttribute(def, attribute);
  if (!stripped.ok()) {
    KickStrips();  // the strip stays pending: the worker retries it
    return stripped;
  }
  return stamp;
}

absl::Status RecordStore::ApplyPeerAttributeDrop(absl::string_view db, absl::string_view table,
                                                 absl::string_view attribute, Hlc dropped_time) {
  // The strip it leaves pending runs on the strip worker (the catalog tells KickStrips): a
  // peer's snapshot is never held up by a scan of the table.
  return catalog_->ApplyPeerAttributeMarker(db, table, attribute, dropped_time).status();
}

absl::StatusOr<Hlc> RecordStore::NewestVersion(const TableRef& def) {
  CAIRN_ASSIGN_OR_RETURN(Gate::Token token, def->state()->Admit(def->QualifiedName()));
  internal::ScanCheckpoint checkpoint(*def, options_.faults);  // C9
  Hlc newest = 0;
  auto it = engine_->NewIterator(Cf::kRecords, nullptr,
                                 storage::GenerationPrefix(def->generation_id() + 1));
  for (it->Seek(ToSlice(storage::GenerationPrefix(def->generation_id()))); it->Valid();
       it->Next()) {
    CAIRN_RETURN_IF_ERROR(checkpoint.Visit());
    StoredRecord rec;
    if (rec.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      newest = std::max<Hlc>(newest, rec.version());
    }
  }
  CAIRN_RETURN_IF_ERROR(IteratorStatus(*it));
  return newest;
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
  absl::Status first_error;
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
    spdlog::info("[{}] stripping the values of dropped attribute {}.{}", options_.node_name,
                 def->QualifiedName(), attribute);
    absl::Status stripped = CAIRN_FAULT(options_.faults, fault_points::kStripAfterCatalog);
    if (stripped.ok()) stripped = StripAttribute(def, attribute);  // its stamp: def->stripping()
    // A drop of the generation cancels its strip (C9) and removes the pending strip with
    // every other key of the generation: nothing is left to do. Another failure leaves this
    // strip pending and the others still run; the first error is returned.
    if (GetErrorCode(stripped) == ErrorCode::kTableDropping) continue;
    if (absl::IsCancelled(stripped)) return stripped;  // shutting down
    if (!stripped.ok() && first_error.ok()) first_error = stripped;
  }
  return first_error;
}

absl::Status RecordStore::StripAttribute(const TableRef& def, absl::string_view attribute) {
  auto pending = def->stripping().find(attribute);
  if (pending == def->stripping().end()) return absl::OkStatus();  // finished meanwhile
  const Hlc stamp = pending->second;
  CAIRN_ASSIGN_OR_RETURN(Gate::Token token, def->state()->Admit(def->QualifiedName()));
  // Every write validated against a definition that still had the attribute has committed
  // (GenerationState (1)) at a version below the stamp, so this scan sees every value the
  // attribute had. Rows are stripped by the stamp, whether or not the name is an attribute
  // again by now: a value written after the drop is newer than the stamp and stays; one
  // written before it belongs to the dropped attribute and goes (decision 4).
  // A value newer than the stamp is indexed under the name's attribute, if it has one: it was
  // written under an attribute that a peer's marker then removed with its index (C15), and
  // the name is an attribute again. Index entries are idempotent puts.
  const std::string name(attribute);
  // Bodies are stored as internal::Dump writes them: a field appears as its JSON-escaped
  // name, a colon and no space. A body without that text has no such field; one with it
  // (maybe inside a value) is parsed to make sure.
  const std::string field_text = nlohmann::json(name).dump() + ":";
  CAIRN_ASSIGN_OR_RETURN(TableRef at_start, Refresh(def));
  const AttributeDef* attribute_at_start = at_start->FindAttribute(name);
  const int64_t id_at_start =
      attribute_at_start == nullptr ? -1 : static_cast<int64_t>(attribute_at_start->id);
  const std::string begin = storage::GenerationPrefix(def->generation_id());
  const std::string end = storage::GenerationPrefix(def->generation_id() + 1);
  internal::ScanCheckpoint checkpoint(*def, options_.faults);  // C9: a drop cancels the scan
  auto it = engine_->NewIterator(Cf::kRecords, nullptr, end);
  it->Seek(ToSlice(begin));
  while (it->Valid()) {
    std::vector<Slot> slots;
    size_t read = 0;
    for (; it->Valid() && slots.size() < kChunk && read < kChunk * 16; it->Next()) {
      CAIRN_RETURN_IF_ERROR(checkpoint.Visit());
      if (stop_strips_.load(std::memory_order_relaxed)) {
        return absl::CancelledError(
            "the node is shutting down; the strip resumes at the next start");
      }
      ++read;
      StoredRecord rec;
      if (!rec.ParseFromArray(it->value().data(), static_cast<int>(it->value().size())) ||
          rec.deleted() || rec.json().find(field_text) == std::string::npos ||
          ParseStored(rec.json()).count(name) == 0) {
        continue;
      }
      Slot s;
      s.key = it->key().ToString();
      s.encoded_pk = s.key.substr(8);
      slots.push_back(std::move(s));
    }
    CAIRN_RETURN_IF_ERROR(IteratorStatus(*it));
    CAIRN_RETURN_IF_ERROR(PaceStrip(*def, read));
    if (slots.empty()) continue;
    std::vector<std::string> keys;
    for (const Slot& s : slots) keys.push_back(s.key);
    auto guard = latches_.Lock(keys);
    // The definition of now, held: a schema change since the scan (the name declared not
    // indexed, decision 103; removed by a marker) must not find index entries put after it.
    CAIRN_ASSIGN_OR_RETURN(LockedDef locked, LockCurrent(def));
    const TableRef& current = locked.def;
    const AttributeDef* now = current->FindAttribute(name);
    const bool reindex = now != nullptr && now->indexed && !now->is_primary_key;
    const std::string own_index =
        reindex ? storage::IndexAttributePrefix(current->generation_id(), now->id) : std::string();
    for (Slot& s : slots) s.def = current.get();
    CAIRN_RETURN_IF_ERROR(LoadSlots(engine_, &slots));
    rocksdb::WriteBatch batch;
    uint64_t stripped = 0;
    for (Slot& s : slots) {
      // Re-read under the latch: a write since the scan may have replaced the row.
      if (!s.original_live || !s.original_json.contains(name)) continue;
      if (s.original.version() >= stamp) {
        if (!reindex) continue;
        for (const std::string& k : internal::IndexKeys(*current, s.original_json, s.encoded_pk)) {
          if (absl::StartsWith(k, own_index)) {
            batch.Put(engine_->cf(Cf::kIndexes), ToSlice(k), rocksdb::Slice())
                .PermitUncheckedError();
          }
        }
        continue;
      }
      // Strip the value. Not a record write: version, origin and log are unchanged. If the
      // name is an indexed attribute again and the old value got indexed under it (a peer's
      // row re-added it), that entry goes too; otherwise the drop removed its index range.
      if (reindex) {
        for (const std::string& k : internal::IndexKeys(*current, s.original_json, s.encoded_pk)) {
          if (absl::StartsWith(k, own_index)) {
            batch.Delete(engine_->cf(Cf::kIndexes), ToSlice(k)).PermitUncheckedError();
          }
        }
      }
      s.original_json.erase(name);
      StoredRecord rec = s.original;
      rec.set_json(Dump(s.original_json));
      batch.Put(engine_->cf(Cf::kRecords), ToSlice(s.key), rec.SerializeAsString())
          .PermitUncheckedError();
      ++stripped;
    }
    if (batch.Count() == 0) continue;
    CAIRN_RETURN_IF_ERROR(CAIRN_FAULT(options_.faults, fault_points::kStripChunk));
    CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
    values_stripped_.fetch_add(stripped, std::memory_order_relaxed);
  }
  CAIRN_RETURN_IF_ERROR(IteratorStatus(*it));
  return catalog_->FinishStrip(*def, name, stamp, id_at_start);
}

absl::Status RecordStore::PaceStrip(const TableDef& def, size_t rows) {
  return strip_pace_.Wait(rows, [&]() -> absl::Status {
    if (stop_strips_.load(std::memory_order_relaxed)) {
      return absl::CancelledError("the node is shutting down; the strip resumes at the next start");
    }
    // The strip holds an admission token: a drop of the table must not wait for the pace.
    return internal::NotDropping(def);
  });
}

void RecordStore::KickStrips() {
  absl::MutexLock lock(&strip_mu_);
  if (stop_strips_.load(std::memory_order_relaxed)) return;
  strips_due_ = true;
  if (!strip_worker_.joinable()) strip_worker_ = std::thread([this] { StripWorker(); });
}

void RecordStore::StopStrips() {
  {
    absl::MutexLock lock(&strip_mu_);
    stop_strips_.store(true, std::memory_order_relaxed);
  }
  if (strip_worker_.joinable()) strip_worker_.join();
}

void RecordStore::StripWorker() {
  for (;;) {
    {
      absl::MutexLock lock(&strip_mu_);
      auto due = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(strip_mu_) {
        return strips_due_ || stop_strips_.load(std::memory_order_relaxed);
      };
      strip_mu_.Await(absl::Condition(&due));
      if (stop_strips_.load(std::memory_order_relaxed)) return;
      strips_due_ = false;
    }
    absl::Status s = ResumePendingStrips();
    if (s.ok() || stop_strips_.load(std::memory_order_relaxed)) continue;
    // A failed strip stays pending (its strip/ key): try again in a while; its values are
    // hidden from readers meanwhile (TableDef::IsStripped).
    spdlog::warn("[{}] a strip of dropped attribute values failed, retrying in 1s: {}",
                 options_.node_name, s.ToString());
    absl::MutexLock lock(&strip_mu_);
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(strip_mu_) {
      return stop_strips_.load(std::memory_order_relaxed);
    };
    strip_mu_.AwaitWithTimeout(absl::Condition(&stopping), absl::Seconds(1));
    strips_due_ = true;
  }
}

}  // namespace cairn::catalog
