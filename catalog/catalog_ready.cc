// Catalog: readiness of a new member (design 0013, P7). A member added to a placement is
// catching up until it has every row the ready members hold: a full copy (R7) or a merging
// copy (R14 refetch) from each of them, whichever its stream took. Then it announces itself
// ready under the same placement change, and only then serves the database (P4) and counts
// as holding every row (P8). The rest of Catalog: catalog.cc.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cairn/storage/v1/records.pb.h"
#include "catalog/catalog.h"
#include "catalog/placement.h"
#include "common/status.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"
#include "storage/rocksdb_status.h"

namespace cairn::catalog {

absl::StatusOr<std::string> Catalog::CatchUpBlocker(const DatabaseDef& d) const {
  bool another_ready = false;
  for (const std::string& m : ReadyMembers(d.placement)) {
    if (m == options_.node_name) continue;
    another_ready = true;
    std::string value;
    bool found = false;
    CAIRN_RETURN_IF_ERROR(
        engine_->Get(storage::Cf::kMeta, storage::CursorKey(m, d.name), &value, &found));
    storage::v1::ReplicaCursor cursor;
    // An unreadable cursor is none (the next Subscribe asks for a full copy, R7).
    if (!found || !cursor.ParseFromString(value)) {
      return absl::StrCat("waiting for ", m, " to stream the database");
    }
    if (cursor.has_copy()) return absl::StrCat("copying the database from ", m);
  }
  // Validated placements always have one (ValidatePeerPlacement, AlterPlacement).
  if (!another_ready) return std::string("no other member is ready to copy from");
  // R14: "refetch/<db>/<table>\0<peer>" keys of a ready member's tables asked for again.
  const std::string prefix = absl::StrCat(storage::kRefetchPrefix, d.name, "/");
  auto it = engine_->NewIterator(storage::Cf::kMeta, nullptr, storage::PrefixSuccessor(prefix));
  for (it->Seek(storage::ToSlice(prefix)); it->Valid(); it->Next()) {
    const absl::string_view key(it->key().data(), it->key().size());
    const size_t nul = key.find('\0');
    if (nul == absl::string_view::npos) continue;
    const absl::string_view peer = key.substr(nul + 1);
    const std::string table(key.substr(prefix.size(), nul - prefix.size()));
    // Only a live replicated table's refetch is served; one left by a local drop (value 0,
    // decision 44) waits for the table to live here again, perhaps for ever.
    auto t = d.tables.find(table);
    if (t == d.tables.end() || !t->second->replicate()) continue;
    if (peer != options_.node_name && IsReady(d.placement, peer)) {
      return absl::StrCat("copying table ", table, " again from ", peer);
    }
  }
  CAIRN_RETURN_IF_ERROR(storage::FromRocks(it->status()));
  return std::string();
}

absl::Status Catalog::MarkReadyIfCaughtUp(absl::string_view db) {
  v1::Placement ready;
  {
    const SnapshotRef snap = Snapshot();
    const DatabaseDef* d = snap->FindDatabase(db);
    if (d == nullptr || !IsMember(d->placement, options_.node_name) ||
        IsReady(d->placement, options_.node_name)) {
      return absl::OkStatus();
    }
    CAIRN_ASSIGN_OR_RETURN(const std::string blocker, CatchUpBlocker(*d));
    if (!blocker.empty()) return absl::OkStatus();
    ready = d->placement;
  }
  auto* catching_up = ready.mutable_catching_up();
  for (int i = 0; i < catching_up->size(); ++i) {
    if ((*catching_up)[i] == options_.node_name) {
      catching_up->erase(catching_up->begin() + i);
      break;
    }
  }
  {
    // A newer placement applied meanwhile leaves this one behind (MergePlacement merges only
    // copies of the same change); the next check is against that one.
    DatabaseLock lock(this, db);
    CAIRN_RETURN_IF_ERROR(MergePlacement(lock, db, &ready, /*marker=*/0));
  }
  const SnapshotRef after = Snapshot();
  const DatabaseDef* d = after->FindDatabase(db);
  if (d != nullptr && SamePlacementChange(d->placement, ready) &&
      IsReady(d->placement, options_.node_name)) {
    spdlog::info("[{}] caught up on database {}: ready (P7, placement stamp {})",
                 options_.node_name, std::string(db), ready.stamp());
  }
  return absl::OkStatus();
}

absl::Status Catalog::MarkReadyWhereCaughtUp() {
  const SnapshotRef snap = Snapshot();
  for (const auto& [name, d] : snap->databases) {
    // One database's failed check must not keep the node from starting: logged, and tried
    // again at the next batch or placement change.
    const absl::Status s = MarkReadyIfCaughtUp(name);
    if (!s.ok()) {
      spdlog::warn("[{}] readiness of database '{}' not checked: {}", options_.node_name, name,
                   s.ToString());
    }
  }
  return absl::OkStatus();
}

}  // namespace cairn::catalog
