// Cluster, anti-entropy's transport (SPEC R18): the caller's Verify calls and which peers a
// background verify visits. The callee's side is Cluster::Service::Verify (cluster.cc).
#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "replication/cluster.h"
#include "replication/link_session.h"

namespace cairn::replication {

absl::Status Cluster::CallVerify(const std::string& peer, const peer::v1::VerifyRequest& request,
                                 peer::v1::VerifyResponse* response, absl::Duration timeout) {
  std::optional<PeerRoute> route;
  {
    absl::MutexLock lock(&mu_);
    for (const PeerRoute& r : routes_) {
      if (r.name == peer) route = r;
    }
  }
  if (!route.has_value()) {
    return absl::UnavailableError(absl::StrCat("no route to '", peer, "' from this node"));
  }
  if (IsCut(peer)) return absl::UnavailableError("the link is cut (test hook)");
  auto stub = peer::v1::Peer::NewStub(ChannelTo(*route));
  grpc::ClientContext context;
  AddClientMetadata(&context);
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout));
  grpc::Status s = stub->Verify(&context, request, response);
  if (!s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("verify call to '", peer,
                     "': ", s.error_message().empty() ? "unreachable" : s.error_message()));
  }
  return absl::OkStatus();
}

std::vector<std::string> Cluster::VerifyPeers() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [name, state] : peers_) {
    const bool speaks = std::find(state.capabilities.begin(), state.capabilities.end(),
                                  kVerifyCapability) != state.capabilities.end();
    if (state.links > 0 && speaks && HasRouteLocked(name) && !cut_.contains(name)) {
      out.push_back(name);
    }
  }
  return out;
}

}  // namespace cairn::replication
