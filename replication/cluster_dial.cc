// Cluster, dialing side (SPEC R2, R13): one dialer thread per route runs a LinkSession over an
// outbound Link call, again and again with capped, jittered exponential backoff, until the
// route is removed or the node stops. Also the channels to peers, which forwarded drops
// (cluster_forward.cc) and verify calls (cluster_verify.cc) share.
#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <utility>

#include "grpcpp/grpcpp.h"
#include "grpcpp/security/credentials.h"
#include "replication/cluster.h"
#include "replication/internal/peer_call.h"
#include "replication/internal/steady_clock.h"
#include "replication/link_session.h"

namespace cairn::replication {

using internal::FromGrpc;

namespace {

class ClientLinkStream : public LinkStream {
 public:
  ClientLinkStream(
      std::shared_ptr<grpc::ClientContext> context,
      std::unique_ptr<grpc::ClientReaderWriter<peer::v1::LinkMessage, peer::v1::LinkMessage>>
          stream)
      : context_(std::move(context)), stream_(std::move(stream)) {}
  bool Read(peer::v1::LinkMessage* m) override { return stream_->Read(m); }
  bool Write(const peer::v1::LinkMessage& m, bool more_follows) override {
    return stream_->Write(
        m, more_follows ? grpc::WriteOptions().set_buffer_hint() : grpc::WriteOptions());
  }
  void Cancel() override { context_->TryCancel(); }
  void Abort() override { context_->TryCancel(); }
  absl::Status Finish() override { return FromGrpc(stream_->Finish()); }

 private:
  std::shared_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReaderWriter<peer::v1::LinkMessage, peer::v1::LinkMessage>> stream_;
};

}  // namespace

std::shared_ptr<grpc::Channel> Cluster::ChannelTo(const PeerRoute& route) {
  absl::MutexLock lock(&mu_);
  auto& channel = channels_[route.name + "@" + route.address];
  if (channel == nullptr) {
    grpc::ChannelArguments args;
    // gRPC's own reconnect backoff (up to 120 s by default) would outlast ours.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
                static_cast<int>(absl::ToInt64Milliseconds(options_.backoff_initial)));
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
                static_cast<int>(absl::ToInt64Milliseconds(options_.backoff_initial)));
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
                static_cast<int>(absl::ToInt64Milliseconds(options_.backoff_max)));
    // Notice a silent peer (decision 113; the peer's server allows this rate): every
    // `keepalive`, calls or none, data or none (by default gRPC stops after two pings
    // without data, and a quiet link's dead peer would go unnoticed).
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS,
                static_cast<int>(absl::ToInt64Milliseconds(options_.keepalive)));
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, internal::kKeepaliveTimeoutMs);
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
    args.SetMaxReceiveMessageSize(internal::kMaxMessageBytes);
    args.SetMaxSendMessageSize(internal::kMaxMessageBytes);
    std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
    if (tls()) {
      grpc::SslCredentialsOptions ssl;
      ssl.pem_root_certs = options_.tls_ca;
      ssl.pem_private_key = options_.tls_key;
      ssl.pem_cert_chain = options_.tls_cert;
      credentials = grpc::SslCredentials(ssl);
      // The peer's certificate must name the node the route is for, whatever its address.
      args.SetSslTargetNameOverride(route.name);
    }
    channel = grpc::CreateCustomChannel(route.address, credentials, args);
  }
  return channel;
}

void Cluster::Dial(PeerRoute route) {
  DialLoop(route);
  absl::MutexLock lock(&mu_);
  ended_dialers_.push_back(route.id);
}

void Cluster::DialLoop(const PeerRoute& route) {
  std::mt19937_64 rng(std::hash<std::string>()(options_.node_name + route.name));
  absl::Duration backoff = options_.backoff_initial;
  while (!stopping_.load()) {
    auto peer_client = peer::v1::Peer::NewStub(ChannelTo(route));
    auto context = std::make_shared<grpc::ClientContext>();
    AddClientMetadata(context.get());
    {
      absl::MutexLock lock(&mu_);
      // A cut link (test hook) is not dialed until it is restored.
      std::pair<Cluster*, const PeerRoute*> arg(this, &route);
      mu_.Await(absl::Condition(
          +[](std::pair<Cluster*, const PeerRoute*>* a) {
            a->first->mu_.AssertReaderHeld();  // evaluated by a reader unlocking too
            return a->first->stopping_.load() || !a->first->HasRouteIdLocked(a->second->id) ||
                   !a->first->cut_.contains(a->second->name);
          },
          &arg));
      if (stopping_.load() || !HasRouteIdLocked(route.id)) return;  // stopped or removed
      dialing_[route.id] = context;
    }
    const absl::Time start = internal::SteadyNow();
    auto session = std::make_shared<LinkSession>(
        this, std::make_unique<ClientLinkStream>(context, peer_client->Link(context.get())),
        route.name);
    Register(session);
    absl::Status why = session->Run();
    Unregister(session.get(), why, session->hello_received());
    {
      absl::MutexLock lock(&mu_);
      dialing_.erase(route.id);
    }
    if (internal::SteadyNow() - start > absl::Seconds(10)) backoff = options_.backoff_initial;
    // Capped exponential backoff with jitter (R13): 50-150 % of the current step.
    std::uniform_real_distribution<double> jitter(0.5, 1.5);
    const absl::Duration wait = backoff * jitter(rng);
    backoff = std::min(backoff * 2, options_.backoff_max);
    // Wakes early when stopped or when the route is removed (both change state under mu_).
    std::pair<Cluster*, uint64_t> arg(this, route.id);
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(
        absl::Condition(
            +[](std::pair<Cluster*, uint64_t>* a) {
              a->first->mu_.AssertReaderHeld();  // evaluated by a reader unlocking too
              return a->first->stopping_.load() || !a->first->HasRouteIdLocked(a->second);
            },
            &arg),
        wait);
  }
}

void Cluster::AddClientMetadata(grpc::ClientContext* context) const {
  context->AddMetadata(internal::kNodeHeader, options_.node_name);
  if (!options_.secret.empty()) context->AddMetadata(internal::kSecretHeader, options_.secret);
}

}  // namespace cairn::replication
