// Catalog: a removed member lets go of a database's rows (design 0013, P8). The placement that
// removes this node records the release (storage::ReleaseKey, in the placement's batch,
// MergePlacement); replication's Releaser confirms with the remaining members that they hold
// every row, then ReleaseRows removes them here in one batch. The definitions stay (P12): a
// release is C9's step 3 without the definition and the marker. The rest of Catalog:
// catalog.cc.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "catalog/catalog.h"
#include "catalog/internal/catalog_rows.h"
#include "catalog/placement.h"
#include "common/status.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"
#include "storage/rocksdb_status.h"

namespace cairn::catalog {

using storage::Cf;
using storage::ToSlice;

namespace {

// [prefix, prefix with its last byte + 1): every key that starts with `prefix`, which ends in
// a separator byte below 0xff.
void DeletePrefix(storage::Engine* engine, Cf cf, std::string prefix, rocksdb::WriteBatch* batch) {
  std::string end = prefix;
  end.back() = static_cast<char>(end.back() + 1);
  // why ignored: WriteBatch fails only beyond 4 GiB.
  batch->DeleteRange(engine->cf(cf), ToSlice(prefix), ToSlice(end)).PermitUncheckedError();
}

// Every peer with parked entries ("parked/<peer>\0..."), one seek per peer.
absl::StatusOr<std::vector<std::string>> PeersWithParked(storage::Engine* engine) {
  std::vector<std::string> peers;
  const std::string prefix(storage::kParkedPrefix);
  auto it = engine->NewIterator(Cf::kMeta, nullptr, storage::PrefixSuccessor(prefix));
  it->Seek(ToSlice(prefix));
  while (it->Valid()) {
    absl::string_view key(it->key().data(), it->key().size());
    key.remove_prefix(prefix.size());
    const size_t nul = key.find('\0');
    if (nul == absl::string_view::npos) {
      it->Next();  // not a parked entry's key
      continue;
    }
    peers.emplace_back(key.substr(0, nul));
    std::string next = storage::ParkedPrefix(peers.back());
    next.back() = '\1';
    it->Seek(ToSlice(next));
  }
  CAIRN_RETURN_IF_ERROR(storage::FromRocks(it->status()));
  return peers;
}

// The rows of one table generation and what is kept beside them, as FinishDrop removes
// them, but for the definition (attributes, table row, strips) and the marker.
void DeleteRowsOf(storage::Engine* engine, const TableDef& def, rocksdb::WriteBatch* batch) {
  const uint64_t g = def.generation_id();
  const std::string begin = storage::GenerationPrefix(g);
  const std::string end = storage::GenerationPrefix(g + 1);
  // why ignored (all): WriteBatch fails only beyond 4 GiB.
  batch->DeleteRange(engine->cf(Cf::kRecords), ToSlice(begin), ToSlice(end)).PermitUncheckedError();
  batch->DeleteRange(engine->cf(Cf::kIndexes), ToSlice(begin), ToSlice(end)).PermitUncheckedError();
  batch->Delete(engine->cf(Cf::kMeta), ToSlice(storage::CountKey(g))).PermitUncheckedError();
  batch->Delete(engine->cf(Cf::kMeta), ToSlice(storage::PurgeKey(g))).PermitUncheckedError();
  batch
      ->DeleteRange(engine->cf(Cf::kMeta), ToSlice(storage::RowGenPrefix(g)),
                    ToSlice(storage::RowGenPrefix(g + 1)))
      .PermitUncheckedError();
  batch
      ->DeleteRange(engine->cf(Cf::kMeta), ToSlice(storage::ShadowKey(g, "")),
                    ToSlice(storage::ShadowKey(g + 1, "")))
      .PermitUncheckedError();
  // R14: "refetch/<db>/<table>\0<peer>", every peer's.
  std::string refetch = storage::RefetchKey(def.database(), def.name(), "");
  DeletePrefix(engine, Cf::kMeta, std::move(refetch), batch);
}

}  // namespace

bool Catalog::OperationsInFlight(const DatabaseDef& d) {
  for (const auto& [name, def] : d.tables) {
    if (def->replicate() && def->state()->gate().in_flight() > 0) return true;
  }
  return false;
}

absl::StatusOr<std::vector<Catalog::PendingRelease>> Catalog::PendingReleases() const {
  std::vector<PendingRelease> out;
  const std::string prefix(storage::kReleasePrefix);
  auto it = engine_->NewIterator(Cf::kMeta, nullptr, storage::PrefixSuccessor(prefix));
  for (it->Seek(ToSlice(prefix)); it->Valid(); it->Next()) {
    absl::string_view key(it->key().data(), it->key().size());
    PendingRelease r;
    r.database = std::string(key.substr(prefix.size()));
    if (it->value().size() == 8)
      r.removed_by = storage::GetBigEndian64(storage::ToView(it->value()));
    out.push_back(std::move(r));
  }
  CAIRN_RETURN_IF_ERROR(storage::FromRocks(it->status()));
  return out;
}

absl::StatusOr<Catalog::ReleaseOutcome> Catalog::ReleaseRows(absl::string_view db,
                                                             Hlc confirmed_stamp) {
  DatabaseLock lock(this, db);  // a placement that makes this node a member waits for it
  {
    std::string value;
    bool pending = false;
    CAIRN_RETURN_IF_ERROR(engine_->Get(Cf::kMeta, storage::ReleaseKey(db), &value, &pending));
    if (!pending) return ReleaseOutcome::kCancelled;  // released or cancelled meanwhile
  }
  const SnapshotRef snap = Snapshot();
  const DatabaseDef* d = snap->FindDatabase(db);
  rocksdb::WriteBatch batch;
  // why ignored: WriteBatch fails only beyond 4 GiB.
  batch.Delete(engine_->cf(Cf::kMeta), ToSlice(storage::ReleaseKey(db))).PermitUncheckedError();
  if (d == nullptr || IsMember(d->placement, options_.node_name)) {
    // A member again (its join normally removed the key already), or the database went with
    // a drop, which removed its rows.
    CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
    return ReleaseOutcome::kCancelled;
  }
  if (d->placement.stamp() != confirmed_stamp) return ReleaseOutcome::kPlacementChanged;
  // Every operation on rows checks membership once admitted (RecordStore::ResolveRows after
  // Admit), so none admitted from here on writes; those admitted before must be done.
  if (OperationsInFlight(*d)) return ReleaseOutcome::kBusy;
  size_t tables = 0;
  for (const auto& [name, def] : d->tables) {
    if (!def->replicate()) continue;  // C11: node-local tables are not placed
    DeleteRowsOf(engine_, *def, &batch);
    ++tables;
  }
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> cursors,
                         internal::PeersWithCursorIn(engine_, db));
  for (const std::string& peer : cursors) {
    batch.Delete(engine_->cf(Cf::kMeta), ToSlice(storage::CursorKey(peer, db)))
        .PermitUncheckedError();
  }
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> parked, PeersWithParked(engine_));
  for (const std::string& peer : parked) {
    DeletePrefix(engine_, Cf::kMeta,
                 absl::StrCat(storage::ParkedPrefix(peer), db, std::string(1, '\0')), &batch);
  }
  CAIRN_RETURN_IF_ERROR(engine_->Write(&batch));
  spdlog::info(
      "[{}] released the rows of {} table(s) of database {}: its members {} hold them (P8)",
      options_.node_name, tables, std::string(db), DescribeMembers(d->placement));
  return ReleaseOutcome::kReleased;
}

}  // namespace cairn::catalog
