// Cluster, anti-entropy's transport (SPEC R18): the caller's Verify calls and which peers a
// background verify visits. The callee's side is Cluster::Service::Verify (peer_service.cc).
#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "replication/cluster.h"
#include "replication/internal/peer_call.h"
#include "replication/link_session.h"

namespace cairn::replication {

namespace {
constexpr auto kReconnectWait = std::chrono::seconds(5);
}  // namespace

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
  std::shared_ptr<grpc::Channel> channel = ChannelTo(*route);
  bool linked = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = peers_.find(peer);
    linked = it != peers_.end() && it->second.links > 0;
  }
  if (linked && channel->GetState(/*try_to_connect=*/true) != GRPC_CHANNEL_READY) {
    // The link is up (perhaps dialed by the peer) while this channel still backs off from
    // when the peer was down: give it a moment rather than fail fast (as Forward does).
    channel->WaitForConnected(std::chrono::system_clock::now() + kReconnectWait);
  }
  auto peer_client = peer::v1::Peer::NewStub(channel);
  grpc::ClientContext context;
  AddClientMetadata(&context);
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout));
  {
    absl::MutexLock lock(&mu_);
    if (verify_calls_closed_) return absl::CancelledError("this node is shutting down");
    verify_calls_.insert(&context);
  }
  grpc::Status s = peer_client->Verify(&context, request, response);
  {
    absl::MutexLock lock(&mu_);
    verify_calls_.erase(&context);
  }
  if (s.error_code() == grpc::StatusCode::CANCELLED) {
    return absl::CancelledError(
        absl::StrCat("verify call to '", peer, "' cancelled: a node is shutting down"));
  }
  if (!s.ok()) {
    // An error the peer answered with its code keeps it (a scan that failed there fails one
    // table, not the run); any other failure is the transport's, or an older peer's: UNAVAILABLE.
    const absl::Status answered = internal::FromGrpc(s);
    if (HasErrorCode(answered))
      return Annotate(answered, absl::StrCat("verify call to '", peer, "'"));
    return absl::UnavailableError(
        absl::StrCat("verify call to '", peer,
                     "': ", s.error_message().empty() ? "unreachable" : s.error_message()));
  }
  return absl::OkStatus();
}

void Cluster::CancelVerifyCalls() {
  absl::MutexLock lock(&mu_);
  verify_calls_closed_ = true;
  for (grpc::ClientContext* context : verify_calls_) context->TryCancel();
}

std::vector<std::string> Cluster::VerifyPeers() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [name, state] : peers_) {
    if (state.links > 0 && state.Speaks(kVerifyCapability) && HasRouteLocked(name) &&
        !cut_.contains(name)) {
      out.push_back(name);
    }
  }
  return out;
}

}  // namespace cairn::replication
