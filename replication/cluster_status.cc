// Cluster, what cluster_status reports per peer (SPEC §5, R16, R17, R18): its link, the
// records received from it, its parked entries (counted from storage, linked or not), its
// clock offset, the last verify, and whether its schema digests match this node's.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "catalog/placement.h"
#include "replication/cluster.h"
#include "replication/link_session.h"

namespace cairn::replication {

namespace {

// R17: entries parked for longer than kParkedReportAfter are reported, not left to wait
// silently; `p->last_error` says so when nothing else is wrong with the link.
void ReportParked(const ParkedRetrier::Counts& parked, absl::Time now, PeerStatus* p) {
  p->parked_entries = parked.entries;
  p->oldest_parked_ms = parked.entries > 0 ? parked.oldest_ms : 0;
  const absl::Duration parked_for = now - absl::FromUnixMillis(parked.oldest_ms);
  if (parked.entries > 0 && parked_for > kParkedReportAfter && p->last_error.empty()) {
    p->last_error = absl::StrCat(parked.entries, " entr", parked.entries == 1 ? "y" : "ies",
                                 " parked for over ", absl::FormatDuration(kParkedReportAfter),
                                 ", the oldest of ", parked.oldest_table,
                                 ": its table is not defined here, or its drop is stuck (R17)");
  }
}

// `now` is the node's clock: lag is measured against the peer's stamps (R16 bounds their offset).
// Lag counts the databases this node holds rows of (design 0013, P3): it has no use for any
// other's entries. A peer removed from a database still streams its entries until its
// release (P8), and those count while they are owed; a full copy from it does not (its
// copy's target can run ahead of what it holds once it lets go, and this node's readiness,
// P7, comes from the other members).
void ReportReceived(const ReceiveStats& r, const catalog::CatalogSnapshot& snap,
                    const std::string& self, absl::Time now, PeerStatus* p) {
  p->lag_entries = 0;
  for (const auto& [db, lag] : r.lag_by_db) {
    if (catalog::HoldsRowsOf(snap, db, self) &&
        (catalog::HoldsRowsOf(snap, db, p->name) || !r.copying.contains(db))) {
      p->lag_entries += lag;
    }
  }
  p->lag_ms = p->lag_entries == 0 ? 0 : r.LagMs(now);
  p->full_copy_active = r.copy_active;
  p->full_copy_percent = r.copy_percent;
  p->full_copy_rows_per_s = r.copy_rows_per_s;
  p->entries_received = r.entries_received;
  p->cursors = r.cursors;
}

// In sync when, for every database either side knows, the peer's last digest equals ours
// now. A database the peer never described counts as empty there; a peer that does not take
// users (R1) is never sent the system database, so it is not counted.
bool SchemaInSync(const catalog::CatalogSnapshot& snap, const PeerStatus& p,
                  const Exclusions& exclusions) {
  static const catalog::CatalogSnapshot empty;
  absl::btree_map<std::string, uint64_t> theirs = p.digests;
  const bool users = std::find(p.capabilities.begin(), p.capabilities.end(), kUsersCapability) !=
                     p.capabilities.end();
  for (const std::string& db : SchemaDatabases(snap)) {
    if (users || db != catalog::kSystemDatabase) theirs.try_emplace(db, SchemaDigest(empty, db));
  }
  if (!users) theirs.erase(std::string(catalog::kSystemDatabase));
  const bool placement = std::find(p.capabilities.begin(), p.capabilities.end(),
                                   kPlacementCapability) != p.capabilities.end();
  return std::all_of(theirs.begin(), theirs.end(), [&](const auto& entry) {
    return entry.second == SchemaDigest(snap, entry.first, exclusions, placement);
  });
}

}  // namespace

std::vector<std::string> Cluster::KnownNodes() const {
  std::vector<std::string> out{options_.node_name};
  absl::MutexLock lock(&mu_);
  for (const auto& [name, state] : peers_) out.push_back(name);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> Cluster::PeersWithoutPlacement() const {
  std::vector<std::string> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [name, state] : peers_) {
    if (state.links > 0 && !state.Speaks(kPlacementCapability)) {
      out.push_back(name);
    }
  }
  return out;
}

std::vector<std::string> Cluster::LinkedPeers() const {
  std::vector<std::string> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [name, state] : peers_) {
    if (state.links > 0 && !cut_.contains(name)) out.push_back(name);
  }
  return out;  // peers_ is ordered by name
}

std::vector<PeerStatus> Cluster::Status() const {
  catalog::SnapshotRef snap = node_->catalog->Snapshot();
  const auto verified = anti_entropy_->Records();
  absl::MutexLock lock(&mu_);
  std::vector<PeerStatus> out;
  for (const auto& [name, state] : peers_) {
    PeerStatus p;
    p.name = name;
    p.address = state.address;
    p.connected = state.links > 0;
    p.authenticated = p.connected && (!options_.secret.empty() || tls());
    p.last_error = state.last_error;
    p.capabilities = state.capabilities;
    p.digests = state.digests;
    p.clock_offset_ms = state.clock_offset_ms;
    for (auto it = verified.lower_bound({name, ""});
         it != verified.end() && it->first.first == name; ++it) {
      p.verified[it->first.second] = it->second;
    }
    for (const auto& session : sessions_) {
      if (state.receiver != nullptr && session.get() == state.receiver) {
        ReportReceived(session->receive_stats(), *snap, options_.node_name, node_->hlc->WallNow(),
                       &p);
      }
    }
    // R17: counted from storage, linked or not (ParkedRetrier); aged by the clock Parking
    // stamped parked_ms with.
    ReportParked(parked_.CountsOf(name), node_->hlc->WallNow(), &p);
    if (p.connected) {
      Exclusions exclusions;
      for (const PeerRoute& r : routes_) {
        if (r.name == name) exclusions = r.exclude;
      }
      p.schema_in_sync = SchemaInSync(*snap, p, exclusions);
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace cairn::replication
