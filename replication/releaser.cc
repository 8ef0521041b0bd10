// Releaser (releaser.h): a removed member's release of a database's rows (design 0013, P8).
#include "replication/releaser.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/strings/str_cat.h"
#include "catalog/placement.h"
#include "replication/anti_entropy.h"
#include "replication/cluster.h"
#include "spdlog/spdlog.h"

namespace cairn::replication {

namespace {

// What one table's release comparison leaves unconfirmed; empty when the member holds every
// row of it this node holds.
std::string TableUnconfirmed(const catalog::DatabaseDef& d, const TableVerify& t) {
  if (!t.skipped.empty()) {
    auto def = d.tables.find(t.table);
    if (def != d.tables.end() && !def->second->replicate()) return "";  // C11: not placed
    return absl::StrCat("table ", t.table, " was not compared (", t.skipped, ")");
  }
  if (t.repaired_there > 0) {
    // Sent now; the next pass confirms it holds them.
    return absl::StrCat("table ", t.table, " lacked ", t.repaired_there, " row(s), sent now");
  }
  if (t.unsettled > 0 || t.unrepaired > 0) {
    return absl::StrCat("table ", t.table, " has ", t.unsettled + t.unrepaired,
                        " row(s) not settled yet");
  }
  return "";
}

}  // namespace

Releaser::Releaser(catalog::LocalNode* node, Cluster* cluster, absl::Duration interval)
    : node_(node), cluster_(cluster), interval_(interval) {}

Releaser::~Releaser() { Stop(); }

void Releaser::Start() {
  absl::MutexLock lock(&mu_);
  if (loop_.joinable() || stopping_) return;
  loop_ = std::thread([this] { Loop(); });
}

void Releaser::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (loop_.joinable()) loop_.join();
}

void Releaser::Loop() {
  for (;;) {
    RunOnce();
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), interval_)) return;
  }
}

absl::btree_map<std::string, std::string> Releaser::RunOnce() {
  absl::btree_map<std::string, std::string> waiting;
  absl::StatusOr<std::vector<catalog::Catalog::PendingRelease>> pending =
      node_->catalog->PendingReleases();
  if (!pending.ok()) {
    spdlog::warn("[{}] reading the pending releases: {}", node_->catalog->options().node_name,
                 pending.status().ToString());
    return Waiting();
  }
  for (const catalog::Catalog::PendingRelease& r : *pending) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) break;
    }
    if (std::string why = Step(r); !why.empty()) waiting[r.database] = std::move(why);
  }
  absl::MutexLock lock(&mu_);
  waiting_ = waiting;
  return waiting;
}

absl::btree_map<std::string, std::string> Releaser::Waiting() const {
  absl::MutexLock lock(&mu_);
  return waiting_;
}

std::string Releaser::Step(const catalog::Catalog::PendingRelease& release) {
  const std::string& db = release.database;
  const std::string& me = node_->catalog->options().node_name;
  const catalog::SnapshotRef snap = node_->catalog->Snapshot();
  const catalog::DatabaseDef* d = snap->FindDatabase(db);
  Hlc confirmed_stamp = 0;  // ReleaseRows cancels when d is gone or names this node again
  if (d != nullptr && !catalog::IsMember(d->placement, me)) {
    // 1. Drain.
    if (catalog::Catalog::OperationsInFlight(*d)) {
      return "operations admitted before the removal to finish";
    }
    const uint64_t through = node_->log->ReservedSeq(db);
    // 2, 3.
    if (std::string why = Unconfirmed(*d, through); !why.empty()) return why;
    // Nothing writes the database here once drained (AdmitRows, and a purge checks too):
    // an entry logged since would be one the members did not confirm.
    if (node_->log->ReservedSeq(db) != through) return "new entries were logged: confirming again";
    confirmed_stamp = d->placement.stamp();
  }
  // 4.
  absl::StatusOr<catalog::Catalog::ReleaseOutcome> outcome =
      node_->catalog->ReleaseRows(db, confirmed_stamp);
  if (!outcome.ok()) return absl::StrCat("the release failed: ", outcome.status().ToString());
  switch (*outcome) {
    case catalog::Catalog::ReleaseOutcome::kCancelled:
      return "";
    case catalog::Catalog::ReleaseOutcome::kPlacementChanged:
      return "the placement changed: confirming again";
    case catalog::Catalog::ReleaseOutcome::kBusy:
      return "operations admitted before the removal to finish";
    case catalog::Catalog::ReleaseOutcome::kReleased:
      break;
  }
  // Nothing reads or needs this log any more: every ready member has it (step 2).
  for (;;) {
    absl::StatusOr<uint64_t> trimmed = node_->log->Trim(db, 0, UINT64_MAX);
    if (!trimmed.ok()) {
      spdlog::warn("[{}] trimming the change log of released database '{}': {}", me, db,
                   trimmed.status().ToString());  // retention trims it later (R12)
      break;
    }
    if (*trimmed == 0) break;
  }
  return "";
}

// Step 3 per table: every ready member that can hold a table's rows must hold every row of
// it this node holds. A member whose table of the name is node-local (C11) never can, so it
// is not asked for that table; but some member must hold it, or the rows would go nowhere.
std::string Releaser::Unconfirmed(const catalog::DatabaseDef& d, uint64_t through) {
  const std::vector<std::string> members = catalog::ReadyMembers(d.placement);
  for (const std::string& m : members) {
    const std::optional<uint64_t> acked = cluster_->AckedCursor(m, d.name);
    if (!acked.has_value() || *acked < through) {
      return absl::StrCat(m, " to acknowledge this node's log of the database through ", through,
                          acked.has_value() ? absl::StrCat(" (acknowledged through ", *acked, ")")
                                            : std::string(" (no acknowledgement on a live link)"));
    }
  }
  absl::btree_set<std::string> held;  // tables some member confirmed it holds
  for (const std::string& m : members) {
    PeerVerify v = cluster_->anti_entropy()->Verify(m, d.name, std::nullopt, VerifyMode::kRelease);
    if (!v.status.ok()) {
      return absl::StrCat("a digest comparison with ", m, ": ", v.status.message());
    }
    for (const TableVerify& t : v.tables) {
      if (t.peer_node_local) continue;  // C11 there: another member holds the rows
      if (std::string why = TableUnconfirmed(d, t); !why.empty()) {
        return absl::StrCat(m, " to hold every row: ", why);
      }
      held.insert(t.table);
    }
  }
  for (const auto& [name, def] : d.tables) {
    if (def->replicate() && held.count(name) == 0) {
      return absl::StrCat("a member to hold table ", name,
                          ": every ready member holds a node-local table of the name (C11)");
    }
  }
  return "";
}

}  // namespace cairn::replication
