// Cluster, forwarded operations, caller's side (design 0013, P4): which members an operation
// can go to, and the Operate call to one. The callee's side is Cluster::Service::Operate
// (peer_service.cc), which hands the request to the node's OperationRunner.
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "replication/cluster.h"
#include "replication/internal/peer_call.h"
#include "replication/link_session.h"

namespace cairn::replication {

namespace {
// How long an Operate call waits for its channel to connect (Cluster::Operate).
constexpr absl::Duration kConnectWait = absl::Seconds(2);
}  // namespace

OperateCall::OperateCall(Cluster* cluster, std::shared_ptr<grpc::Channel> channel,
                         std::unique_ptr<grpc::ClientContext> context,
                         const peer::v1::OperateRequest& request)
    : cluster_(cluster),
      stub_(peer::v1::Peer::NewStub(std::move(channel))),
      context_(std::move(context)) {
  reader_ = stub_->Operate(context_.get(), request);
}

OperateCall::~OperateCall() {
  if (!finished_) {
    context_->TryCancel();
    (void)Finish();
  }
  cluster_->EndOperateCall(context_.get());
}

bool OperateCall::Read(peer::v1::OperateReply* reply) { return reader_->Read(reply); }

absl::Status OperateCall::Finish() {
  if (finished_) return absl::OkStatus();
  finished_ = true;
  peer::v1::OperateReply rest;
  while (reader_->Read(&rest)) {
  }
  return internal::FromGrpc(reader_->Finish());
}

std::vector<std::string> Cluster::ForwardTargets(const std::vector<std::string>& members) const {
  std::vector<std::string> out;
  absl::MutexLock lock(&mu_);
  for (const std::string& m : members) {
    auto it = peers_.find(m);
    if (it == peers_.end() || it->second.links == 0 || cut_.contains(m)) continue;
    if (!it->second.Speaks(kForwardCapability) || !HasRouteLocked(m)) continue;
    out.push_back(m);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<OperateCall>> Cluster::Operate(
    const std::string& member, const peer::v1::OperateRequest& request, absl::Time deadline) {
  std::optional<PeerRoute> route;
  {
    absl::MutexLock lock(&mu_);
    for (const PeerRoute& r : routes_) {
      if (r.name == member) route = r;
    }
  }
  if (!route.has_value()) {
    return absl::UnavailableError(absl::StrCat("no route to '", member, "' from this node"));
  }
  std::shared_ptr<grpc::Channel> channel = ChannelTo(*route);
  if (channel->GetState(/*try_to_connect=*/true) != GRPC_CHANNEL_READY) {
    // The link is up (ForwardTargets), perhaps dialed by the member, while this channel may
    // still back off from when it was down: a moment to connect, not the whole deadline, so
    // that a member this node cannot reach costs little and the next one is tried.
    channel->WaitForConnected(absl::ToChronoTime(std::min(deadline, absl::Now() + kConnectWait)));
    if (channel->GetState(/*try_to_connect=*/false) != GRPC_CHANNEL_READY) {
      return absl::UnavailableError(absl::StrCat("could not connect to '", member, "' within ",
                                                 absl::FormatDuration(kConnectWait)));
    }
  }
  auto context = std::make_unique<grpc::ClientContext>();
  AddClientMetadata(context.get());
  context->set_deadline(absl::ToChronoTime(deadline));
  {
    absl::MutexLock lock(&mu_);
    if (operate_calls_closed_) return absl::CancelledError("this node is shutting down");
    operate_calls_.insert(context.get());
  }
  return std::make_unique<OperateCall>(this, std::move(channel), std::move(context), request);
}

void Cluster::EndOperateCall(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  operate_calls_.erase(context);
}

void Cluster::CancelOperateCalls() {
  absl::MutexLock lock(&mu_);
  operate_calls_closed_ = true;
  for (grpc::ClientContext* context : operate_calls_) context->TryCancel();
}

}  // namespace cairn::replication
