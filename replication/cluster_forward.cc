// Cluster, forwarded drops (SPEC R9, R10, R11, C8, C14): this node's drops sent to every peer
// in parallel, each answered "dropped", "kept", "absent" or "failed", and the peers' drops
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
#include "common/status.h"
#include "grpcpp/grpcpp.h"
#include "replication/cluster.h"
#include "replication/internal/peer_call.h"
#include "spdlog/spdlog.h"

namespace cairn::replication {

PeerDropStatus Cluster::Forward(const PeerRoute& route, const peer::v1::ForwardRequest& request) {
  PeerDropStatus out;
  out.node = route.name;
  if (IsCut(route.name)) return {route.name, "failed", "the link is cut (test hook)"};
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
    out.status = "failed";
    out.reason = s.error_message().empty() ? "unreachable" : s.error_message();
    return out;
  }
  out.status = response.status();
  out.reason = response.reason();
  return out;
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
        return PeerDropStatus{name, "kept", "excluded by the route (R11)"};
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
    const std::string& db, Hlc dropped_time,
    const std::vector<std::pair<std::string, Hlc>>& tables) {
  peer::v1::ForwardRequest request;
  request.mutable_drop_database()->set_database(db);
  request.mutable_drop_database()->set_dropped_time(dropped_time);
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
    response->set_status("kept");
    response->set_reason("excluded by this node's route (R11)");
    return absl::OkStatus();
  }
  CAIRN_ASSIGN_OR_RETURN(const catalog::PeerDropResult r,
                         node_->records->ApplyPeerDrop(d.database(), d.table(), d.dropped_time()));
  response->set_status(std::string(catalog::PeerDropResultName(r)));
  // The drop's marker may have arrived first, in a snapshot: then this very drop is already
  // in effect here, and the origin should hear "dropped", not "absent".
  if (r == catalog::PeerDropResult::kAbsent &&
      node_->catalog->Snapshot()->MarkerFor(d.database(), d.table()) == d.dropped_time()) {
    response->set_status("dropped");
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
  bool dropped = false, kept = excluded;
  for (const auto& [table, result] : results) {
    dropped |= result == catalog::PeerDropResult::kDropped;
    kept |= result == catalog::PeerDropResult::kKept;
  }
  response->set_status(kept ? "kept" : dropped ? "dropped" : "absent");
  if (excluded) response->set_reason("tables excluded by a route stay (R11)");
  spdlog::info("[{}] drop of database {} forwarded by {}: {}", options_.node_name, d.database(),
               peer, response->status());
  return absl::OkStatus();
}

}  // namespace cairn::replication
