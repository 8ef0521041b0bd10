// LinkSession, its schema concerns (R3, R4): the DbSchemas of a round out (whole, or deltas
// without what the peer holds), applying the peer's, and watching whether the two nodes'
// digests agree (DigestWatch, SchemaRequest). The rest of the session is link_session.cc.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/fault.h"
#include "common/fault_points.h"
#include "common/status.h"
#include "replication/cluster.h"
#include "replication/link_session.h"
#include "replication/schema_sync.h"
#include "replication/user_sync.h"
#include "spdlog/spdlog.h"

namespace cairn::replication {

std::vector<peer::v1::DbSchema> LinkSession::SchemaRound(const catalog::CatalogSnapshot& snap,
                                                         uint64_t schema_version, bool deltas,
                                                         const absl::btree_set<std::string>& full,
                                                         const SchemaOptions& options) {
  std::vector<catalog::SchemaChange> changes;
  if (schema_version != 0 && deltas &&
      cluster_->node()->catalog->ChangesSince(schema_version, snap.version, &changes)) {
    std::vector<peer::v1::DbSchema> out = BuildDeltas(snap, changes, full, options);
    // No echo: the states are computed outside mu_ (CatalogChanged, on publishes, needs it);
    // under it only the lookups.
    std::vector<NameStates> ours(out.size());
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].delta()) ours[i] = StatesOf(out[i]);
    }
    std::vector<absl::flat_hash_set<std::string>> held(out.size());
    {
      absl::MutexLock lock(&mu_);
      for (size_t i = 0; i < out.size(); ++i) {
        // Only while the peer's last digest agreed with ours: a database apart (or with a
        // skip to retry) may hold what a remembered state no longer describes.
        if (schema_in_.apart.contains(out[i].database())) continue;
        auto told = schema_in_.told.find(out[i].database());
        if (told != schema_in_.told.end()) held[i] = NamesThePeerHolds(told->second, ours[i]);
      }
    }
    for (size_t i = 0; i < out.size(); ++i) DropNames(held[i], &out[i]);
    return out;
  }
  std::vector<peer::v1::DbSchema> out;
  for (const std::string& db : SchemaDatabases(snap)) {
    if (SendsDatabase(options, db)) out.push_back(BuildDbSchema(snap, db, options));
  }
  return out;
}

absl::Status LinkSession::ApplySchema(const peer::v1::DbSchema& schema) {
  catalog::LocalNode* node = cluster_->node();
  const Exclusions exclusions = cluster_->ExclusionsFor(peer_);  // R11, receiver's side
  SchemaApplyStats stats;
  {
    // Recorded before the apply publishes: a round built right after the publish must find it
    // (a round built before the apply finds this node's state different and sends it).
    NameStates states = StatesOf(schema);
    absl::MutexLock lock(&mu_);
    NameStates& told = schema_in_.told[schema.database()];
    if (!schema.delta()) {
      told = std::move(states);
    } else {
      for (auto& [name, state] : states) told[name] = state;
    }
  }
  // An injected error applies nothing of it and counts as a skip: the watch below asks for
  // the database whole.
  if (CAIRN_FAULT(node->catalog->options().faults, fault_points::kReplSchemaReceive).ok()) {
    if (schema.database() == catalog::kSystemDatabase) {
      CAIRN_RETURN_IF_ERROR(ApplyUsersSchema(node->users.get(), schema, &stats));  // U6
    } else {
      CAIRN_RETURN_IF_ERROR(
          ApplyDbSchema(node->catalog.get(), node->records.get(), schema, &stats, exclusions));
    }
  } else {
    ++stats.skipped;
  }
  cluster_->OnSchema(peer_, schema.database(), schema.digest());
  catalog::SnapshotRef snap = node->catalog->Snapshot();
  const absl::Time now = node->hlc->WallNow();
  absl::MutexLock lock(&mu_);
  const uint64_t ours = SchemaDigest(*snap, schema.database(), exclusions, hello_.placement);
  auto& apart = schema_in_.apart;
  auto it = apart.find(schema.database());
  // Something the peer sent is not here: retried until a whole DbSchema applies cleanly (the
  // digest covers names only, so equal digests do not prove a type or a stamp arrived).
  const bool retry = stats.skipped > 0 || (schema.delta() && it != apart.end() && it->second.retry);
  if (ours == schema.digest() && !retry) {
    if (it != apart.end()) apart.erase(it);
    return absl::OkStatus();
  }
  // Apart: what the peer told of names may no longer be what it holds (a local-only drop
  // there sends a name with nothing in it). Forgotten; rebuilt from what it sends next.
  schema_in_.told.erase(schema.database());
  if (it == apart.end()) {
    it = apart.try_emplace(schema.database()).first;
    it->second.since = it->second.next_request = now;
  }
  DigestWatch& w = it->second;
  w.theirs = schema.digest();
  w.retry = retry;
  if (!schema.delta() && !retry) {
    const std::pair<uint64_t, uint64_t> pair(schema.digest(), ours);
    // A whole DbSchema applied cleanly and the digests are still apart: this node holds
    // something the peer lacks, or the two really differ. Our whole database goes to the peer
    // once per such pair, and it takes what it lacks; when it too finds the difference real,
    // the exchange stops there.
    if (w.settled != pair) {
      schema_out_.whole.insert(schema.database());
      schema_out_.round_due = true;
    }
    w.settled = pair;
  }
  w.asked_at_version = snap->version;
  return absl::OkStatus();
}

std::vector<std::string> LinkSession::DueSchemaRequests(const catalog::CatalogSnapshot& snap,
                                                        const Exclusions& exclusions,
                                                        absl::Time now) {
  std::vector<std::string> due;
  mu_.AssertHeld();
  if (!hello_.schema_delta || schema_in_.apart.empty()) return due;
  for (auto& [db, w] : schema_in_.apart) {
    w.ClampTo(now);
    if (now - w.since < kSchemaResyncAfter) continue;
    // A retry goes again early once this node changed the database (a drop that held a
    // skipped table back may have finished), else after the backoff.
    const bool changed_here = w.retry && now - w.asked_at >= kSchemaResyncAfter &&
                              DatabaseChangedSince(db, w.asked_at_version);
    if (now < w.next_request && !changed_here) continue;
    const uint64_t ours = SchemaDigest(snap, db, exclusions, hello_.placement);
    if (ours == w.theirs && !w.retry) continue;  // caught up meanwhile
    if (!w.retry && w.settled == std::make_pair(w.theirs, ours)) continue;
    spdlog::info("[{}] asking {} for its whole schema of '{}': {} since {}",
                 cluster_->options().node_name, peer_, db,
                 w.retry ? "its last one could not be applied whole" : "our digests differ",
                 absl::FormatTime(w.since));
    due.push_back(db);
    w.asked_at = now;
    w.asked_at_version = snap.version;
    w.next_request = now + w.backoff;
    w.backoff = std::min(w.backoff * 2, kSchemaResyncMaxBackoff);
  }
  return due;
}

bool LinkSession::DatabaseChangedSince(const std::string& db, uint64_t version) const {
  std::vector<catalog::SchemaChange> changes;
  if (!cluster_->node()->catalog->ChangesSince(version, UINT64_MAX, &changes)) return true;
  for (const catalog::SchemaChange& c : changes) {
    if (c.database == db) return true;
  }
  return false;
}

}  // namespace cairn::replication
