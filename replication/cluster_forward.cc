// Cluster, forwarded drops (SPEC R9, R10, R11, C8, C14): this node's drops sent to every peer
// in parallel, each answered dropped, kept, absent or failed (DropOutcome), and the peers' drops
// applied here (the Peer service's Forward, after authentication and the R9 provenance
// check). A peer that misses a drop learns it from the marker in the next DbSchema.
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "grpcpp/grpcpp.h"
#include "replication/cluster.h"
#include "replication/internal/peer_call.h"
#include "spdlog/spdlog.h"

namespace cairn::replication {
namespace {

// A peer's reason is shown to the client of the drop: at most this much of it.
constexpr size_t kMaxReasonBytes = 1024;

peer::v1::DropOutcome WireOutcome(catalog::PeerDropResult r) {
  switch (r) {
    case catalog::PeerDropResult::kDropped:
      return peer::v1::DROP_OUTCOME_DROPPED;
    case catalog::PeerDropResult::kKept:
      return peer::v1::DROP_OUTCOME_KEPT;
    case catalog::PeerDropResult::kAbsent:
      return peer::v1::DROP_OUTCOME_ABSENT;
  }
  return peer::v1::DROP_OUTCOME_ABSENT;
}

void SetOutcome(peer::v1::DropOutcome outcome, peer::v1::ForwardResponse* response) {
  response->set_outcome(outcome);
  // For nodes that predate `outcome` (they read R10's word).
  switch (outcome) {
    case peer::v1::DROP_OUTCOME_DROPPED:
      response->set_status(std::string(DropOutcomeName(DropOutcome::kDropped)));
      return;
    case peer::v1::DROP_OUTCOME_KEPT:
      response->set_status(std::string(DropOutcomeName(DropOutcome::kKept)));
      return;
    default:
      response->set_status(std::string(DropOutcomeName(DropOutcome::kAbsent)));
  }
}

// A peer's answer is input: its `outcome`, or from a node that predates it R10's word in
// `status`. Anything else is an answer this node cannot read, so it cannot report the drop as
// applied there: failed, saying what came.
PeerDropStatus ReadAnswer(const std::string& node, const peer::v1::ForwardResponse& r) {
  PeerDropStatus out{node, DropOutcome::kFailed, r.reason().substr(0, kMaxReasonBytes)};
  switch (r.outcome()) {
    case peer::v1::DROP_OUTCOME_DROPPED:
      out.outcome = DropOutcome::kDropped;
      return out;
    case peer::v1::DROP_OUTCOME_KEPT:
      out.outcome = DropOutcome::kKept;
      return out;
    case peer::v1::DROP_OUTCOME_ABSENT:
      out.outcome = DropOutcome::kAbsent;
      return out;
    case peer::v1::DROP_OUTCOME_UNSPECIFIED:
      break;
    default:
      out.reason = absl::StrCat("unrecognized answer: outcome ", static_cast<int>(r.outcome()));
      return out;
  }
  for (DropOutcome o : {DropOutcome::kDropped, DropOutcome::kKept, DropOutcome::kAbsent}) {
    if (r.status() == DropOutcomeName(o)) {
      out.outcome = o;
      return out;
    }
  }
  out.reason =
      absl::StrCat("unrecognized answer '", absl::CHexEscape(r.status().substr(0, 64)), "'");
  return out;
}

}  // namespace

absl::string_view DropOutcomeName(DropOutcome outcome) {
  switch (outcome) {
    case DropOutcome::kDropped:
      return "dropped";
    case DropOutcome::kKept:
      return "kept";
    case DropOutcome::kAbsent:
      return "absent";
    case DropOutcome::kFailed:
      return "failed";
  }
  return "failed";
}

PeerDropStatus Cluster::Forward(const PeerRoute& route, const peer::v1::ForwardRequest& request) {
  PeerDropStatus out;
  out.node = route.name;
  if (IsCut(route.name)) return {route.name, DropOutcome::kFailed, "the link is cut (test hook)"};
  std::shared_ptr<grpc::Channel> channel = ChannelTo(route);
  bool linked = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = peers_.find(route.name);
    linked = it != peers_.end() && it->second.links > 0;
  }
  if (linked && channel->GetState(/*try_to_connect=*/true) != GRPC_CHANNEL_READY) {
    // A link with the peer is up, so it serves: give this channel a moment to reconnect
    // rather than fail fast from a backoff that predates the peer's restart.
    channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }
  auto peer_client = peer::v1::Peer::NewStub(channel);
  grpc::ClientContext context;
  AddClientMetadata(&context);
  context.AddMetadata(internal::kReplicatedFromHeader, options_.node_name);
  context.set_deadline(std::chrono::system_clock::now() +
                       absl::ToChronoMilliseconds(options_.forward_timeout));
  peer::v1::ForwardResponse response;
  grpc::Status s = peer_client->Forward(&context, request, &response);
  if (!s.ok()) {
    out.outcome = DropOutcome::kFailed;
    out.reason =
        s.error_message().empty() ? "unreachable" : s.error_message().substr(0, kMaxReasonBytes);
    out.code = internal::PeerErrorCode(s).value_or(ErrorCode::kUnspecified);
    return out;
  }
  return ReadAnswer(route.name, response);
}

std::vector<PeerDropStatus> Cluster::ForwardToAll(const peer::v1::ForwardRequest& request) {
  std::vector<PeerRoute> routes;
  {
    absl::MutexLock lock(&mu_);
    routes = routes_;
  }
  std::vector<std::future<PeerDropStatus>> calls;
  for (const PeerRoute& route : routes) {
    if (request.has_drop_table() &&
        route.exclude.Excludes(request.drop_table().database(), request.drop_table().table())) {
      // R11, sender's side: not sent; the peer keeps its own table of that name.
      calls.push_back(std::async(std::launch::deferred, [name = route.name] {
        return PeerDropStatus{name, DropOutcome::kKept, "excluded by the route (R11)"};
      }));
      continue;
    }
    if (request.has_drop_database() && route.exclude.AnyIn(request.drop_database().database())) {
      // R11, sender's side: the peer drops the database minus what this route excludes.
      peer::v1::ForwardRequest narrowed = request;
      peer::v1::DropDatabase* d = narrowed.mutable_drop_database();
      for (const std::string& t : route.exclude.TablesIn(d->database())) d->add_keep_tables(t);
      d->clear_tables();  // and no stamp of an excluded table either
      for (const peer::v1::TableStamp& t : request.drop_database().tables()) {
        if (!route.exclude.Excludes(d->database(), t.table())) *d->add_tables() = t;
      }
      calls.push_back(std::async(std::launch::async,
                                 [this, route, narrowed] { return Forward(route, narrowed); }));
      continue;
    }
    calls.push_back(std::async(std::launch::async,
                               [this, route, &request] { return Forward(route, request); }));
  }
  std::vector<PeerDropStatus> out;
  for (auto& c : calls) out.push_back(c.get());
  return out;
}

std::vector<PeerDropStatus> Cluster::ForwardDropTable(const std::string& db,
                                                      const std::string& table, Hlc dropped_time) {
  peer::v1::ForwardRequest request;
  request.mutable_drop_table()->set_database(db);
  request.mutable_drop_table()->set_table(table);
  request.mutable_drop_table()->set_dropped_time(dropped_time);
  return ForwardToAll(request);
}

std::vector<PeerDropStatus> Cluster::ForwardDropDatabase(
    const std::string& db, Hlc dropped_time, const std::vector<std::pair<std::string, Hlc>>& tables,
    Hlc database_marker) {
  peer::v1::ForwardRequest request;
  request.mutable_drop_database()->set_database(db);
  request.mutable_drop_database()->set_dropped_time(dropped_time);
  request.mutable_drop_database()->set_database_marker(database_marker);
  for (const auto& [table, stamp] : tables) {
    peer::v1::TableStamp* t = request.mutable_drop_database()->add_tables();
    t->set_table(table);
    t->set_dropped_time(stamp);
  }
  return ForwardToAll(request);
}

absl::Status Cluster::ServeForward(const std::string& peer, const peer::v1::ForwardRequest& request,
                                   peer::v1::ForwardResponse* response) {
  // R16: no stamp from the future is applied or observed.
  CAIRN_RETURN_IF_ERROR(clock_bound_.CheckForward(request, peer));
  if (request.has_drop_table()) return ServeDropTable(peer, request.drop_table(), response);
  if (request.has_drop_database()) {
    return ServeDropDatabase(peer, request.drop_database(), response);
  }
  CountUnknownMessage();
  return absl::UnimplementedError("unknown forwarded operation");
}

absl::Status Cluster::ServeDropTable(const std::string& peer, const peer::v1::DropTable& d,
                                     peer::v1::ForwardResponse* response) {
  if (ExclusionsFor(peer).Excludes(d.database(), d.table())) {  // R11, receiver's side
    SetOutcome(peer::v1::DROP_OUTCOME_KEPT, response);
    response->set_reason("excluded by this node's route (R11)");
    return absl::OkStatus();
  }
  CAIRN_ASSIGN_OR_RETURN(const catalog::PeerDropResult r,
                         node_->records->ApplyPeerDrop(d.database(), d.table(), d.dropped_time()));
  SetOutcome(WireOutcome(r), response);
  // The drop's marker may have arrived first, in a snapshot: then this very drop is already
  // in effect here, and the origin should hear "dropped", not "absent".
  if (r == catalog::PeerDropResult::kAbsent &&
      node_->catalog->Snapshot()->MarkerFor(d.database(), d.table()) == d.dropped_time()) {
    SetOutcome(peer::v1::DROP_OUTCOME_DROPPED, response);
    response->set_reason("already applied from a schema snapshot");
  }
  spdlog::info("[{}] drop of {}.{} at {} forwarded by {}: {}", options_.node_name, d.database(),
               d.table(), d.dropped_time(), peer, response->status());
  return absl::OkStatus();
}

absl::Status Cluster::ServeDropDatabase(const std::string& peer, const peer::v1::DropDatabase& d,
                                        peer::v1::ForwardResponse* response) {
  const Exclusions exclusions = ExclusionsFor(peer);
  absl::flat_hash_map<std::string, Hlc> stamps;  // C7: each table's own stamp
  for (const peer::v1::TableStamp& t : d.tables()) stamps[t.table()] = t.dropped_time();
  const absl::flat_hash_set<std::string> keep(d.keep_tables().begin(), d.keep_tables().end());
  bool excluded = false;
  auto stamp_of = [&](const std::string& t) -> std::optional<Hlc> {
    // R11: neither what this node's route excludes (receiver's side) nor what the sender's
    // does (sender's side): those tables, and so the database, stay.
    if (exclusions.Excludes(d.database(), t) || keep.contains(t)) {
      excluded = true;
      return std::nullopt;
    }
    auto it = stamps.find(t);
    return it == stamps.end() ? d.dropped_time() : it->second;
  };
  // C8 for every table, and the purge of those it keeps.
  CAIRN_ASSIGN_OR_RETURN(const auto results,
                         node_->records->ApplyPeerDropDatabase(d.database(), stamp_of));
  // P1: the database marker (a DbSchema brings it too; this is the sooner way).
  if (d.database_marker() != 0) {
    CAIRN_RETURN_IF_ERROR(
        node_->catalog->ApplyPeerPlacement(d.database(), nullptr, d.database_marker()));
  }
  bool dropped = false, kept = excluded;
  for (const auto& [table, result] : results) {
    dropped |= result == catalog::PeerDropResult::kDropped;
    kept |= result == catalog::PeerDropResult::kKept;
  }
  SetOutcome(kept      ? peer::v1::DROP_OUTCOME_KEPT
             : dropped ? peer::v1::DROP_OUTCOME_DROPPED
                       : peer::v1::DROP_OUTCOME_ABSENT,
             response);
  if (excluded) response->set_reason("tables excluded by a route stay (R11)");
  spdlog::info("[{}] drop of database {} forwarded by {}: {}", options_.node_name, d.database(),
               peer, response->status());
  return absl::OkStatus();
}

}  // namespace cairn::replication
