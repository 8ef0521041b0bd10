#include "replication/parking.h"

#include <algorithm>
#include <utility>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"
#include "storage/rocksdb_status.h"

namespace cairn::replication {

using storage::Cf;
using storage::ToSlice;
using storage::ToView;
using storage::v1::ChangeEntry;
using storage::v1::ParkedEntry;

namespace {

// What tells parked entries of one table apart, and ends their storage key: key, version,
// origin.
std::string Identity(const ChangeEntry& e) {
  std::string id = e.key();
  id.push_back('\0');
  storage::PutBigEndian64(e.version(), &id);
  id.append(e.origin());
  return id;
}

}  // namespace

Parking::Parking(catalog::LocalNode* node, std::string peer)
    : node_(node), peer_(std::move(peer)) {}

void Parking::Park(const std::string& db, const std::vector<ChangeEntry>& entries,
                   rocksdb::WriteBatch* wb) {
  const uint64_t now_ms = static_cast<uint64_t>(absl::ToUnixMillis(node_->hlc->WallNow()));
  for (const ChangeEntry& e : entries) {
    // One key per version: parking reads nothing, so it cannot fail inside the batch's
    // commit. The same version again (a duplicate, D5) overwrites itself.
    const std::string key = storage::ParkedKey(peer_, db, e.table(), Identity(e));
    ParkedEntry parked;
    *parked.mutable_entry() = e;
    parked.set_parked_ms(now_ms);
    // why ignored: WriteBatch::Put only fails beyond 4 GiB.
    wb->Put(node_->engine->cf(Cf::kMeta), ToSlice(key), parked.SerializeAsString())
        .PermitUncheckedError();
  }
}

absl::Status Parking::Retry() {
  struct Group {
    std::vector<ChangeEntry> entries;
    std::vector<std::string> keys;
    std::vector<uint64_t> parked_ms;
  };
  absl::btree_map<std::pair<std::string, std::string>, Group> groups;  // (db, table)
  const std::string prefix = storage::ParkedPrefix(peer_);
  auto it = node_->engine->NewIterator(Cf::kMeta, nullptr, storage::PrefixSuccessor(prefix));
  for (it->Seek(ToSlice(prefix)); it->Valid(); it->Next()) {
    const absl::string_view rest = ToView(it->key()).substr(prefix.size());
    const size_t a = rest.find('\0');
    const size_t b = a == absl::string_view::npos ? a : rest.find('\0', a + 1);
    ParkedEntry parked;
    if (b == absl::string_view::npos ||
        !parked.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      continue;  // not ours to read; never written by this version
    }
    Group& g = groups[{std::string(rest.substr(0, a)), std::string(rest.substr(a + 1, b - a - 1))}];
    g.entries.push_back(std::move(*parked.mutable_entry()));
    g.keys.emplace_back(ToView(it->key()));
    g.parked_ms.push_back(parked.parked_ms());
  }
  CAIRN_RETURN_IF_ERROR(storage::FromRocks(it->status()));

  count_ = 0;
  oldest_ms_ = 0;
  oldest_table_.clear();
  const catalog::SnapshotRef snap = node_->catalog->Snapshot();
  for (auto& group : groups) {
    const std::string& db = group.first.first;
    const std::string& table = group.first.second;
    Group& g = group.second;  // named: a lambda below captures it (C++17: no bindings)
    std::vector<ChangeEntry> left;
    // Nothing can have changed for a name neither live nor marked here: skip the attempt.
    if (snap->FindTable(db, table).ok() || snap->MarkerFor(db, table) != 0) {
      // In chunks, each one apply and one batch: a whole table may be parked (a full copy
      // that came before its schema).
      for (size_t from = 0; from < g.entries.size(); from += kRetryChunk) {
        const size_t to = std::min(g.entries.size(), from + kRetryChunk);
        const std::vector<ChangeEntry> chunk(g.entries.begin() + from, g.entries.begin() + to);
        std::vector<ChangeEntry> chunk_left;
        auto extra = [&](rocksdb::WriteBatch* wb) {
          absl::flat_hash_set<std::string> still;
          for (const ChangeEntry& e : chunk_left) still.insert(Identity(e));
          for (size_t i = from; i < to; ++i) {
            // why ignored: WriteBatch::Delete only fails beyond 4 GiB.
            if (!still.contains(Identity(g.entries[i]))) {
              wb->Delete(node_->engine->cf(Cf::kMeta), ToSlice(g.keys[i])).PermitUncheckedError();
            }
          }
        };
        absl::StatusOr<catalog::ApplyStats> stats =
            node_->records->ApplyPeerEntries(db, chunk, extra, &chunk_left);
        if (!stats.ok()) {
          chunk_left = chunk;  // kept for the next try; an ABORTED (schema moved) passes
          if (stats.status().code() != absl::StatusCode::kAborted) return stats.status();
        }
        left.insert(left.end(), chunk_left.begin(), chunk_left.end());
      }
      if (left.size() < g.entries.size()) {
        spdlog::info("[{}] {}.{}: {} parked entr{} from {} applied or retired (R17)",
                     node_->records->node_name(), db, table, g.entries.size() - left.size(),
                     g.entries.size() - left.size() == 1 ? "y" : "ies", peer_);
      }
    } else {
      left = g.entries;
    }
    if (left.empty()) continue;
    count_ += left.size();
    absl::flat_hash_set<std::string> still;
    for (const ChangeEntry& e : left) still.insert(Identity(e));
    for (size_t i = 0; i < g.entries.size(); ++i) {
      const int64_t ms = static_cast<int64_t>(g.parked_ms[i]);
      if (still.contains(Identity(g.entries[i])) && (oldest_ms_ == 0 || ms < oldest_ms_)) {
        oldest_ms_ = ms;
        oldest_table_ = absl::StrCat(db, ".", table);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace cairn::replication
