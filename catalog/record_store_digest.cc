// RecordStore, anti-entropy side (SPEC R18): the scans behind digest trees, leaf stamps and
// the point reads of a repair. Each reads one RocksDB snapshot, holds an admission token of
// the generation (C9) and checks for a drop at every row, so a drop never waits for a scan.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "catalog/internal/record_batch.h"
#include "catalog/record_store.h"
#include "common/status.h"
#include "storage/keys.h"
#include "storage/rocksdb_status.h"

namespace cairn::catalog {

using internal::IteratorStatus;
using storage::Cf;
using storage::ToSlice;
using storage::v1::StoredRecord;

namespace {

// Calls options.pace every kPaceRows rows, with the generation's drop check (C9).
class Pacer {
 public:
  Pacer(const DigestScanOptions& options, const TableDef& def) : options_(options), def_(def) {}
  absl::Status Row() {
    return ++pending_ >= DigestScanOptions::kPaceRows ? Flush() : absl::OkStatus();
  }
  absl::Status Flush() {
    const uint64_t rows = std::exchange(pending_, 0);
    if (rows == 0 || !options_.pace) return absl::OkStatus();
    return options_.pace(rows, [this] { return internal::NotDropping(def_); });
  }

 private:
  const DigestScanOptions& options_;
  const TableDef& def_;
  uint64_t pending_ = 0;
};

// Visits every row of `def`'s generation after `after_key` in key order, at one snapshot, until
// `visit` returns false.
template <typename Visit>
absl::Status ScanGeneration(storage::Engine* engine, FaultRegistry* faults, const TableDef& def,
                            absl::string_view after_key, const DigestScanOptions& options,
                            Visit visit) {
  CAIRN_ASSIGN_OR_RETURN(Gate::Token token, def.state()->Admit(def.QualifiedName()));
  internal::ScanCheckpoint checkpoint(def, faults);
  Pacer pacer(options, def);
  storage::ScopedSnapshot snapshot(engine);
  const std::string prefix = storage::GenerationPrefix(def.generation_id());
  auto it = engine->NewIterator(Cf::kRecords, snapshot.get(),
                                storage::GenerationPrefix(def.generation_id() + 1));
  if (after_key.empty()) {
    it->Seek(ToSlice(prefix));
  } else {
    const std::string start = storage::RecordKey(def.generation_id(), after_key);
    it->Seek(ToSlice(start));
    if (it->Valid() && it->key() == ToSlice(start)) it->Next();
  }
  for (; it->Valid(); it->Next()) {
    CAIRN_RETURN_IF_ERROR(checkpoint.Visit());
    CAIRN_RETURN_IF_ERROR(pacer.Row());
    StoredRecord rec;
    if (!rec.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      return absl::DataLossError(absl::StrCat("unreadable record in ", def.QualifiedName()));
    }
    rec.clear_json();
    if (!visit(storage::ToView(it->key()).substr(prefix.size()), rec)) break;
  }
  CAIRN_RETURN_IF_ERROR(pacer.Flush());
  return IteratorStatus(*it);
}

}  // namespace

absl::StatusOr<DigestTree> RecordStore::Digest(const TableRef& def, int depth,
                                               const DigestScanOptions& options) {
  CAIRN_ASSIGN_OR_RETURN(TableRef live, Refresh(def));
  DigestTree tree(depth);
  CAIRN_RETURN_IF_ERROR(ScanGeneration(engine_, options_.faults, *live, {}, options,
                                       [&](absl::string_view key, const StoredRecord& rec) {
                                         RowStamp stamp = StampOf(key, rec);
                                         if (!Settled(stamp, options.settled_before)) {
                                           tree.Add(stamp);
                                         }
                                         return true;
                                       }));
  return tree;
}

absl::StatusOr<StampPage> RecordStore::LeafStamps(const TableRef& def, int depth,
                                                  const std::vector<uint32_t>& leaves,
                                                  absl::string_view after_key, size_t limit,
                                                  const DigestScanOptions& options) {
  CAIRN_ASSIGN_OR_RETURN(TableRef live, Refresh(def));
  depth = std::clamp(depth, 0, kMaxDigestDepth);
  std::vector<bool> wanted(size_t{1} << (kDigestFanoutBits * depth), false);
  for (uint32_t leaf : leaves) {
    if (leaf < wanted.size()) wanted[leaf] = true;
  }
  StampPage page;
  CAIRN_RETURN_IF_ERROR(ScanGeneration(engine_, options_.faults, *live, after_key, options,
                                       [&](absl::string_view key, const StoredRecord& rec) {
                                         ++page.rows_scanned;
                                         if (!wanted[LeafOf(key, depth)]) return true;
                                         if (page.stamps.size() >= limit) {
                                           page.more = true;
                                           return false;
                                         }
                                         page.stamps.push_back(StampOf(key, rec));
                                         return true;
                                       }));
  return page;
}

absl::StatusOr<std::vector<std::optional<StoredRecord>>> RecordStore::ReadStored(
    const TableRef& def, const std::vector<std::string>& keys) {
  CAIRN_ASSIGN_OR_RETURN(TableRef live, Refresh(def));
  CAIRN_ASSIGN_OR_RETURN(Gate::Token token, live->state()->Admit(live->QualifiedName()));
  std::vector<std::string> record_keys;
  std::vector<rocksdb::Slice> slices;
  record_keys.reserve(keys.size());
  for (const std::string& k : keys)
    record_keys.push_back(storage::RecordKey(live->generation_id(), k));
  for (const std::string& k : record_keys) slices.push_back(ToSlice(k));
  std::vector<rocksdb::PinnableSlice> values(keys.size());
  std::vector<rocksdb::Status> statuses(keys.size());
  engine_->db()->MultiGet(rocksdb::ReadOptions(), engine_->cf(Cf::kRecords), slices.size(),
                          slices.data(), values.data(), statuses.data());
  std::vector<std::optional<StoredRecord>> out(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (statuses[i].IsNotFound()) continue;
    if (!statuses[i].ok()) return storage::FromRocks(statuses[i]);
    StoredRecord rec;
    if (!rec.ParseFromArray(values[i].data(), static_cast<int>(values[i].size()))) {
      return absl::DataLossError(absl::StrCat("unreadable record in ", live->QualifiedName()));
    }
    out[i] = std::move(rec);
  }
  return out;
}

}  // namespace cairn::catalog
