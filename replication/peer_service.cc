// Cluster, callee's side: the Peer gRPC service (SPEC R1, R2, R9). Every call is
// authenticated first (the cluster secret, then the claimed name against the client
// certificate under TLS); then Link runs a LinkSession, Verify answers one step of a peer's
// anti-entropy (R18), Forward applies a forwarded drop (cluster_forward.cc) and Operate runs a
// forwarded client operation (design 0013, P4). Also the peer port's credentials and server
// settings.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "catalog/names.h"
#include "common/status.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/security/server_credentials.h"
#include "replication/cluster.h"
#include "replication/internal/peer_call.h"
#include "replication/internal/steady_clock.h"
#include "replication/link_session.h"
#include "spdlog/spdlog.h"

namespace cairn::replication {

using internal::ConstantTimeEquals;
using internal::CutStatus;
using internal::Metadata;
using internal::ToGrpc;

namespace {

class ServerLinkStream : public LinkStream {
 public:
  ServerLinkStream(grpc::ServerContext* context,
                   grpc::ServerReaderWriter<peer::v1::LinkMessage, peer::v1::LinkMessage>* stream)
      : context_(context), stream_(stream) {}
  bool Read(peer::v1::LinkMessage* m) override { return stream_->Read(m); }
  bool Write(const peer::v1::LinkMessage& m, bool more_follows) override {
    return stream_->Write(
        m, more_follows ? grpc::WriteOptions().set_buffer_hint() : grpc::WriteOptions());
  }
  void Cancel() override { context_->TryCancel(); }
  void Abort() override {}
  absl::Status Finish() override { return absl::OkStatus(); }  // the handler returns it

 private:
  grpc::ServerContext* context_;
  grpc::ServerReaderWriter<peer::v1::LinkMessage, peer::v1::LinkMessage>* stream_;
};

// "ipv4:10.0.0.2:51234" -> "ipv4:10.0.0.2": a caller's address without its port, the source a
// refusal is counted against.
std::string SourceOf(const std::string& peer) {
  const size_t colon = peer.rfind(':');
  return colon == std::string::npos || colon < 5 ? peer : peer.substr(0, colon);
}

// What a call to a node that is stopping gets.
absl::Status Stopping() { return Error(ErrorCode::kShuttingDown, "this node is stopping"); }

}  // namespace

class Cluster::Service final : public peer::v1::Peer::Service {
 public:
  explicit Service(Cluster* cluster) : cluster_(cluster) {}

  grpc::Status Link(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<peer::v1::LinkMessage, peer::v1::LinkMessage>* stream) override {
    absl::StatusOr<std::string> peer = cluster_->Authenticate(*context);
    if (!peer.ok()) return ToGrpc(peer.status());
    if (cluster_->stopping()) return ToGrpc(Stopping());
    if (cluster_->IsCut(*peer)) return CutStatus();
    auto session = std::make_shared<LinkSession>(
        cluster_, std::make_unique<ServerLinkStream>(context, stream), *peer);
    cluster_->Register(session);
    absl::Status s = session->Run();
    cluster_->Unregister(session.get(), s, session->hello_received());
    return ToGrpc(s);
  }

  // R18: one step of a peer's verify, answered from this node's store.
  grpc::Status Verify(grpc::ServerContext* context, const peer::v1::VerifyRequest* request,
                      peer::v1::VerifyResponse* response) override {
    absl::StatusOr<std::string> peer = cluster_->Authenticate(*context);
    if (!peer.ok()) return ToGrpc(peer.status());
    if (cluster_->stopping()) return ToGrpc(Stopping());
    if (cluster_->IsCut(*peer)) return CutStatus();
    return ToGrpc(cluster_->anti_entropy()->Serve(*peer, *request, response,
                                                  [context] { return context->IsCancelled(); }));
  }

  grpc::Status Forward(grpc::ServerContext* context, const peer::v1::ForwardRequest* request,
                       peer::v1::ForwardResponse* response) override {
    absl::StatusOr<std::string> peer = cluster_->Authenticate(*context);
    if (!peer.ok()) return ToGrpc(peer.status());
    if (cluster_->IsCut(*peer)) return CutStatus();
    // R9: provenance is out of band and must be the authenticated caller.
    const std::string from = Metadata(*context, internal::kReplicatedFromHeader);
    if (from != *peer) {
      spdlog::warn("[{}] refused a forwarded drop from '{}' claiming provenance '{}' (R9)",
                   cluster_->options().node_name, *peer, from);
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          absl::StrCat("cairn-replicated-from '", from,
                                       "' is not the authenticated peer '", *peer, "'"));
    }
    return ToGrpc(cluster_->ServeForward(*peer, *request, response));
  }

  // Design 0013, P4, P5: a peer's client operation on rows this node holds, run by the node's
  // operations API as the user the peer names; the answer streams back with gRPC's flow
  // control, so a slow first node slows the search here instead of buffering it.
  grpc::Status Operate(grpc::ServerContext* context, const peer::v1::OperateRequest* request,
                       grpc::ServerWriter<peer::v1::OperateReply>* writer) override {
    absl::StatusOr<std::string> peer = cluster_->Authenticate(*context);
    if (!peer.ok()) return ToGrpc(peer.status());
    if (cluster_->stopping()) return ToGrpc(Stopping());
    if (cluster_->IsCut(*peer)) return CutStatus();
    OperationRunner* runner = cluster_->operation_runner();
    if (runner == nullptr) {
      return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "this node runs no forwarded operation");
    }
    return ToGrpc(runner->Run(
        *peer, *request, [context] { return !context->IsCancelled(); },
        [writer, context](const peer::v1::OperateReply& reply, bool last) {
          if (context->IsCancelled()) return false;
          if (!last) return writer->Write(reply);
          writer->WriteLast(reply, grpc::WriteOptions());  // goes out with the status
          return true;
        }));
  }

 private:
  Cluster* const cluster_;
};

std::unique_ptr<grpc::Service> Cluster::NewService(Cluster* cluster) {
  return std::make_unique<Service>(cluster);
}

grpc::Service* Cluster::service() { return service_.get(); }

std::shared_ptr<grpc::ServerCredentials> Cluster::ServerCredentials() const {
  if (!tls()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  ssl.pem_root_certs = options_.tls_ca;
  ssl.pem_key_cert_pairs.push_back({options_.tls_key, options_.tls_cert});
  return grpc::SslServerCredentials(ssl);
}

void Cluster::ConfigureServer(grpc::ServerBuilder* builder) const {
  builder->SetMaxReceiveMessageSize(internal::kMaxMessageBytes);
  builder->SetMaxSendMessageSize(internal::kMaxMessageBytes);
  // Decision 113: a peer's channel pings every `keepalive` on a quiet link (ChannelTo).
  // gRPC's server defaults (a ping without data once per 5 minutes, none without a call) would
  // count those as strikes and close the connection at the third with GOAWAY "too many
  // pings", failing every call on it: the link, and a verify or forwarded drop under way. A
  // peer may ping at twice our own rate (its setting may be shorter, its timer early); one
  // pinging faster still gets the default two strikes, so a flood of pings is still cut off.
  const int ms = static_cast<int>(absl::ToInt64Milliseconds(options_.keepalive));
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                              std::max(1, ms / 2));
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // This side pings too: a dialer that went silent ends the accepted link as well.
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, ms);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, internal::kKeepaliveTimeoutMs);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
}

absl::StatusOr<std::string> Cluster::Authenticate(const grpc::ServerContext& context) const {
  absl::StatusOr<std::string> name = CheckCaller(context);
  if (!name.ok()) {
    // Issue 41: one line per source every kRefusalLogEvery, not one per call (a wrong secret
    // retried in a loop wrote 5,000 lines in 4.4 s).
    const std::string source = SourceOf(context.peer());
    if (std::optional<uint64_t> also = refusals_.Event(source, internal::SteadyNow())) {
      spdlog::warn("[{}] refused a peer call from {}: {}{}", options_.node_name, source,
                   std::string(name.status().message()),
                   *also == 0 ? "" : absl::StrCat(" (", *also, " more refused from there before)"));
    }
  }
  return name;
}

absl::StatusOr<std::string> Cluster::CheckCaller(const grpc::ServerContext& context) const {
  if (options_.secret.empty() && !tls()) {
    // R2: nothing a caller sends is applied before it is authenticated, and without a secret
    // or TLS nothing can authenticate it. cairnd never runs so (it generates a secret); a
    // library user who forgot both gets a closed port, not an open one.
    return absl::UnauthenticatedError(
        "this node has no cluster secret and no TLS: it accepts no peer (R2)");
  }
  if (!options_.secret.empty() &&
      !ConstantTimeEquals(Metadata(context, internal::kSecretHeader), options_.secret)) {
    return absl::UnauthenticatedError("wrong or missing cluster secret (R2)");
  }
  const std::string name = Metadata(context, internal::kNodeHeader);
  if (!catalog::ValidateDatabaseName(name).ok()) {
    return absl::UnauthenticatedError("missing or malformed cairn-node");
  }
  if (name == options_.node_name) {
    return absl::PermissionDeniedError("a node does not link to itself (R2)");
  }
  if (tls()) {
    // The claim must be a name the verified client certificate carries.
    std::vector<std::string> names;
    auto auth = context.auth_context();
    for (const char* property : {GRPC_X509_SAN_PROPERTY_NAME, GRPC_X509_CN_PROPERTY_NAME}) {
      for (const grpc::string_ref& v : auth->FindPropertyValues(property)) {
        names.emplace_back(v.data(), v.size());
      }
    }
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return absl::PermissionDeniedError(absl::StrCat("the claimed name '", name,
                                                      "' is not in the client certificate [",
                                                      absl::StrJoin(names, ", "), "] (R2)"));
    }
  }
  return name;
}

}  // namespace cairn::replication
