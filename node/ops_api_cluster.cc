// The operations API: cluster membership, status, verify, backups and test hooks (SPEC §5, §6).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "catalog/placement.h"
#include "common/clock.h"
#include "common/status.h"
#include "node/backup.h"
#include "node/config.h"
#include "node/internal/ops_api_fields.h"
#include "node/internal/placement_json.h"
#include "node/ops_api.h"
#include "replication/link_session.h"
#include "spdlog/spdlog.h"

namespace cairn::node {

using internal::BadRequest;
using internal::JsonReply;
using internal::Message;

namespace {

json VerifiedJson(const absl::btree_map<std::string, replication::VerifyRecord>& records) {
  json out = json::object();
  for (const auto& [db, r] : records) {
    json one{
        {"verified_at", absl::FormatTime(absl::RFC3339_sec, r.verified_at, absl::UTCTimeZone())},
        {"rows_compared", r.rows_compared},
        {"rows_repaired", r.rows_repaired},
        {"in_sync", r.in_sync}};
    if (!r.error.empty()) one["error"] = r.error;
    out[db] = std::move(one);
  }
  return out;
}

}  // namespace

absl::StatusOr<Reply> OpsApi::ClusterStatus(const Fields& f) const {
  json connections = json::array();
  if (options_.cluster != nullptr) {
    for (const replication::PeerStatus& p : options_.cluster->Status()) {
      connections.push_back(
          {{"name", p.name},
           {"url", p.address},
           {"connected", p.connected},
           {"authenticated", p.authenticated},
           {"schema_in_sync", p.schema_in_sync},
           {"capabilities", p.capabilities},
           // C15 needs both ends: false means the peer (as of its last Hello) neither sends
           // nor applies attribute markers, so it keeps attributes dropped elsewhere.
           {"attribute_markers",
            std::find(p.capabilities.begin(), p.capabilities.end(),
                      replication::kAttributeMarkersCapability) != p.capabilities.end()},
           // How far this node is behind the peer's change log (R12): entries and ms.
           {"lag_entries", p.lag_entries},
           {"lag_ms", p.lag_ms},
           {"cursors", p.cursors},
           {"last_error", p.last_error},
           // R16: the peer's clock minus this node's at its last Hello (ms).
           {"clock_offset_ms", p.clock_offset_ms},
           // R17: entries from the peer parked until their table is defined here.
           {"parked_entries", p.parked_entries},
           // R18: the last verify of each database with the peer.
           {"verified", VerifiedJson(p.verified)},
           {"full_copy",
            {{"active", p.full_copy_active},
             {"percent", std::round(p.full_copy_percent * 10) / 10},
             {"rows_per_s", std::round(p.full_copy_rows_per_s)}}}});
    }
  }
  json body{{"node_name", options_.node_name},
            {"is_enabled", !connections.empty()},
            {"connections", std::move(connections)}};
  // P11: each database this caller may see, where it lives and whether this node holds it.
  json databases = json::array();
  catalog::SnapshotRef snap = node_->catalog->Snapshot();
  // P8: the databases this node was removed from and still holds rows of.
  absl::btree_map<std::string, std::string> releasing;
  if (options_.cluster != nullptr) releasing = options_.cluster->releaser()->Waiting();
  for (const auto& [db, d] : snap->databases) {
    if (!f.access().SeesDatabase(db)) continue;
    json entry{{"database", db},
               {"placement", internal::PlacementJson(d->placement)},
               {"member", catalog::IsMember(d->placement, options_.node_name)},
               {"ready", catalog::IsReady(d->placement, options_.node_name)}};
    if (entry["member"] && !entry["ready"]) {
      // P7: what this node still waits for before it serves the database.
      absl::StatusOr<std::string> blocker = node_->catalog->CatchUpBlocker(*d);
      entry["waiting_for"] = blocker.ok() ? *blocker : blocker.status().ToString();
    }
    auto r = releasing.find(db);
    entry["releasing"] = r != releasing.end();
    if (r != releasing.end()) entry["waiting_for"] = r->second;
    databases.push_back(std::move(entry));
  }
  body["databases"] = std::move(databases);
  if (options_.cluster != nullptr) {
    // R16: links, snapshots, batches and forwarded drops refused for a clock or stamp ahead.
    body["clock_offset_refusals"] = options_.cluster->clock_bound().refusals();
    // P3, P11: peers' entries of databases this node is not a member of, dropped.
    body["entries_not_member"] = options_.cluster->entries_not_member();
  }
  return JsonReply(body);
}

// {"operation": "create_backup", "name"?}: a consistent copy of the whole node under
// --backup-dir (node/backup.h); restore by starting cairnd on it.
absl::StatusOr<Reply> OpsApi::CreateBackup(const Fields& f) const {
  std::string name = DefaultBackupName(absl::Now());
  if (f.Find("name") != nullptr) {
    CAIRN_ASSIGN_OR_RETURN(name, f.String("name"));
  }
  if (options_.backup_dir.empty()) return BadRequest("this node has no backup directory");
  const absl::Time start = absl::Now();
  CAIRN_ASSIGN_OR_RETURN(BackupInfo info,
                         node::CreateBackup(node_, options_.node_name, options_.backup_dir, name));
  spdlog::info("backup '{}' taken in {}: {}", info.name, absl::FormatDuration(absl::Now() - start),
               info.path);
  return JsonReply(
      json{{"message", absl::StrCat("backup '", info.name, "' taken")},
           {"name", info.name},
           {"path", info.path},
           {"node", info.node},
           {"created", absl::FormatTime(absl::RFC3339_sec, info.created, absl::UTCTimeZone())}});
}

absl::StatusOr<Reply> OpsApi::AddNode(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.String("name", "node_name"));
  CAIRN_ASSIGN_OR_RETURN(std::string url, f.String("url", "hostname"));
  CAIRN_ASSIGN_OR_RETURN(HostPort address, ParseHostPort(url, "'url'"));
  if (address.port == 0) return BadRequest("'url' needs the peer's port");
  replication::PeerRoute route{name, address.ToString(), {}};
  // R11: {"exclude_tables": {"db": ["table", ...]}}
  if (const json* exclude = f.Find("exclude_tables"); exclude != nullptr) {
    const char* shape = "'exclude_tables' must be an object of database: [table, ...]";
    if (!exclude->is_object()) return BadRequest(shape);
    for (const auto& [db, tables] : exclude->items()) {
      if (!tables.is_array()) return BadRequest(shape);
      CAIRN_RETURN_IF_ERROR(catalog::ValidateDatabaseName(db));
      for (const json& t : tables) {
        if (!t.is_string()) return BadRequest(shape);
        CAIRN_RETURN_IF_ERROR(catalog::ValidateTableName(t.get<std::string>()));
        route.exclude.Add(db, t.get<std::string>());
      }
    }
  }
  if (options_.cluster == nullptr) return Error(ErrorCode::kInternal, "no cluster");
  CAIRN_RETURN_IF_ERROR(options_.cluster->AddPeer(route, /*persist=*/true));
  return JsonReply(Message(absl::StrCat("Successfully added '", name, "' to cluster")));
}

// {"operation": "verify", "database", "table"?, "node"?}: anti-entropy now (R18), against
// `node` or every peer it can verify with; answers per peer and table.
absl::StatusOr<Reply> OpsApi::Verify(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database(/*required=*/true));
  std::optional<std::string> table;
  if (f.Find("table") != nullptr) {
    CAIRN_ASSIGN_OR_RETURN(table, f.Table());
  }
  if (options_.cluster == nullptr) return Error(ErrorCode::kInternal, "no cluster");
  const catalog::SnapshotRef snap = node_->catalog->Snapshot();
  const catalog::DatabaseDef* database = snap->FindDatabase(db);
  if (database == nullptr) {
    return Error(ErrorCode::kDatabaseNotFound, absl::StrCat("database '", db, "' not found"));
  }
  if (table.has_value()) CAIRN_RETURN_IF_ERROR(snap->FindTable(db, *table).status());
  // P3: only members hold a placed database's rows, so only members compare them: a member
  // verifies with the other members, and a non-member's NOT_A_MEMBER forwards the verify to
  // a member (P4), whose answer is the answer.
  if (!catalog::HoldsRowsOf(*snap, db, options_.node_name)) {
    return Error(ErrorCode::kNotAMember, absl::StrCat("database '", db, "' is placed on ",
                                                      catalog::DescribeMembers(database->placement),
                                                      ": this node holds none of its rows"));
  }
  std::vector<std::string> peers = options_.cluster->VerifyPeers();
  if (f.Find("node") != nullptr) {
    CAIRN_ASSIGN_OR_RETURN(std::string node, f.String("node"));
    if (std::find(peers.begin(), peers.end(), node) == peers.end()) {
      return Error(ErrorCode::kNodeNotFound,
                   absl::StrCat("'", node,
                                "' is not a connected peer this node has a route to and can "
                                "verify with (verify.v1)"));
    }
    peers = {node};
  } else {
    peers.erase(
        std::remove_if(peers.begin(), peers.end(),
                       [&](const std::string& p) { return !catalog::HoldsRowsOf(*snap, db, p); }),
        peers.end());
  }
  json answers = json::array();
  uint64_t compared = 0, repaired = 0;
  bool in_sync = true;
  if (f.Find("node") == nullptr) {
    // Routes from here to peers it cannot verify with now: not "in sync", and said why.
    for (const replication::PeerStatus& p : options_.cluster->Status()) {
      if (p.address.empty() || std::find(peers.begin(), peers.end(), p.name) != peers.end() ||
          !catalog::HoldsRowsOf(*snap, db, p.name)) {
        continue;  // no route from here (it verifies from its side), verified below, or P3
      }
      answers.push_back({{"node", p.name},
                         {"tables", json::array()},
                         {"error", p.connected ? "it does not speak verify.v1"
                                               : "not connected; verify again once it is"}});
      in_sync = false;
    }
  }
  for (const std::string& peer : peers) {
    replication::PeerVerify r = options_.cluster->anti_entropy()->Verify(peer, db, table);
    json tables = json::array();
    for (const replication::TableVerify& t : r.tables) {
      json one{{"table", t.table},
               {"rows_compared", t.rows_compared},
               {"rows_repaired", t.rows_repaired()},
               {"repaired_here", t.repaired_here},
               {"repaired_there", t.repaired_there},
               {"unsettled", t.unsettled},
               {"conflicts", t.conflicts},
               {"in_sync", t.skipped.empty() ? json(t.in_sync()) : json(nullptr)},
               {"bytes_sent", t.bytes_sent},
               {"bytes_received", t.bytes_received},
               {"duration_ms", absl::ToInt64Milliseconds(t.duration)}};
      if (!t.skipped.empty()) one["skipped"] = t.skipped;
      compared += t.rows_compared;
      repaired += t.rows_repaired();
      if (t.skipped.empty() && !t.in_sync()) in_sync = false;
      tables.push_back(std::move(one));
    }
    json answer{{"node", peer}, {"tables", std::move(tables)}};
    if (!r.status.ok()) {
      answer["error"] = std::string(r.status.message());
      in_sync = false;
    }
    answers.push_back(std::move(answer));
  }
  return JsonReply(json{{"database", db},
                        {"peers", std::move(answers)},
                        {"rows_compared", compared},
                        {"rows_repaired", repaired},
                        {"in_sync", in_sync}});
}

absl::StatusOr<Reply> OpsApi::RemoveNode(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.String("name", "node_name"));
  if (options_.cluster == nullptr) return Error(ErrorCode::kInternal, "no cluster");
  CAIRN_RETURN_IF_ERROR(options_.cluster->RemovePeer(name));
  return JsonReply(Message(absl::StrCat("Successfully removed '", name, "' from cluster")));
}

absl::StatusOr<Reply> OpsApi::SetFault(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string spec, f.String("fault"));
  if (options_.faults == nullptr) return Error(ErrorCode::kInternal, "no fault registry");
  CAIRN_RETURN_IF_ERROR(options_.faults->SetFromSpec(spec));
  spdlog::warn("[{}] fault armed: {}", options_.node_name, spec);
  return JsonReply(Message(absl::StrCat("fault '", spec, "' armed")));
}

absl::StatusOr<Reply> OpsApi::ClearFault(const Fields& f) const {
  if (options_.faults == nullptr) return Error(ErrorCode::kInternal, "no fault registry");
  if (f.Find("name") == nullptr) {
    options_.faults->ClearAll();
    return JsonReply(Message("every fault cleared"));
  }
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.String("name"));
  options_.faults->Clear(name);  // releases threads blocked there
  return JsonReply(Message(absl::StrCat("fault '", name, "' cleared")));
}

absl::StatusOr<Reply> OpsApi::FaultHits(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.String("name"));
  if (options_.faults == nullptr) return Error(ErrorCode::kInternal, "no fault registry");
  return JsonReply(json{{"name", name}, {"hits", options_.faults->HitCount(name)}});
}

// Clock faults (issue 19): the node's wall clock runs `offset` from the machine's from now on
// (a jump forward or back, within --max-clock-offset or beyond it). The HLC never goes back
// (HybridClock (1)); a restart sets the offset to 0 again.
absl::StatusOr<Reply> OpsApi::SetClock(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string text, f.String("offset"));
  absl::Duration offset;
  if (!absl::ParseDuration(text, &offset) || offset < -absl::Hours(24) ||
      offset > absl::Hours(24)) {
    return Error(ErrorCode::kBadRequest,
                 absl::StrCat("'offset' must be a duration within a day, such as 250ms or -2s; "
                              "got '",
                              text, "'"));
  }
  if (options_.clock == nullptr) return Error(ErrorCode::kInternal, "no adjustable clock");
  options_.clock->set_offset(offset);
  spdlog::warn("[{}] wall clock offset set to {} (test hook)", options_.node_name,
               absl::FormatDuration(offset));
  return JsonReply(json{{"offset_ms", absl::ToInt64Milliseconds(offset)}});
}

// What every fault point did in this process (buggify's "code probes"): a point that never
// fired across a run is a window the run did not open.
absl::StatusOr<Reply> OpsApi::FaultProbes(const Fields&) const {
  if (options_.faults == nullptr) return Error(ErrorCode::kInternal, "no fault registry");
  json probes = json::array();
  for (const FaultProbe& p : options_.faults->Probes()) {
    probes.push_back({{"name", p.point},
                      {"active", p.active},
                      {"hits", p.hits},
                      {"fired", p.fired},
                      {"errors", p.errors},
                      {"delays", p.delays}});
  }
  return JsonReply(json{{"buggify", options_.faults->buggify()}, {"probes", std::move(probes)}});
}

// Every stored row of a table with its stamps, tombstones included (D4, D5, D7), and the
// name's drop marker (also when the name has no live table): what the cluster checker's model
// compares (SPEC §7). Unbounded: for test clusters.
absl::StatusOr<Reply> OpsApi::ReadRows(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database());
  CAIRN_ASSIGN_OR_RETURN(std::string table, f.Table());
  json rows = json::array();
  const Hlc marker = node_->catalog->Snapshot()->MarkerFor(db, table);
  absl::StatusOr<catalog::TableRef> def = node_->records->ScanStored(
      db, table, [&](const json& key, const storage::v1::StoredRecord& row, const json& record) {
        rows.push_back({{"key", key},
                        {"version", row.version()},
                        {"origin", row.origin()},
                        {"row_generation", row.row_generation()},
                        {"deleted", row.deleted()},
                        {"record", record}});
      });
  if (!def.ok()) {
    // No live table: what a model still needs is the name's marker.
    const ErrorCode code = GetErrorCode(def.status());
    if (code != ErrorCode::kTableNotFound && code != ErrorCode::kDatabaseNotFound &&
        code != ErrorCode::kTableDropping) {
      return def.status();
    }
    return JsonReply(json{{"live", false},
                          {"dropping", code == ErrorCode::kTableDropping},
                          {"dropped_time", marker},
                          {"rows", json::array()}});
  }
  return JsonReply(json{{"live", true},
                        {"replicate", (*def)->replicate()},
                        {"created_time", (*def)->created_time()},
                        {"dropped_time", marker},
                        {"rows", std::move(rows)}});
}

// SPEC §6: a link can be cut and restored per peer. The peer need not be known: a cut made
// before add_node holds once the route exists.
absl::StatusOr<Reply> OpsApi::CutLink(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.String("name", "node_name"));
  if (options_.cluster == nullptr) return Error(ErrorCode::kInternal, "no cluster");
  options_.cluster->CutLink(name);
  return JsonReply(Message(absl::StrCat("link with '", name, "' cut")));
}

absl::StatusOr<Reply> OpsApi::RestoreLink(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.String("name", "node_name"));
  if (options_.cluster == nullptr) return Error(ErrorCode::kInternal, "no cluster");
  options_.cluster->RestoreLink(name);
  return JsonReply(Message(absl::StrCat("link with '", name, "' restored")));
}

}  // namespace cairn::node
