// Forwarded operations (design 0013, P4, P5): the seam between the peer service, which
// receives an Operate call, and the node's operations API, which runs it. replication/ knows
// nothing of the operations; the node gives the Cluster a runner before the peer port serves.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "cairn/peer/v1/peer.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace cairn::replication {

// Sends one message of an answer; `last`: no other follows (it goes out with the call's
// status, in one write). False once the caller is gone.
using ReplySender = std::function<bool(const peer::v1::OperateReply& reply, bool last)>;

class OperationRunner {
 public:
  virtual ~OperationRunner() = default;
  // Runs `request`, forwarded by the authenticated peer `from`, and sends its answer through
  // `send` (the status message, carrying the body's first piece, then the rest in pieces).
  // Never forwards it again (P5). Not OK: the answer broke off after its
  // first piece (the call ends with that error, so the caller cuts its client's body short).
  // `caller_present` says whether the caller still waits (its work stops when not).
  virtual absl::Status Run(const std::string& from, const peer::v1::OperateRequest& request,
                           const std::function<bool()>& caller_present,
                           const ReplySender& send) = 0;
};

class Cluster;

// One Operate call to a member, as the forwarding node reads it. Not thread-safe: one reader.
class OperateCall {
 public:
  // Made by Cluster::Operate, which registered `context` (Cluster::CancelOperateCalls).
  OperateCall(Cluster* cluster, std::shared_ptr<grpc::Channel> channel,
              std::unique_ptr<grpc::ClientContext> context,
              const peer::v1::OperateRequest& request);
  OperateCall(const OperateCall&) = delete;
  OperateCall& operator=(const OperateCall&) = delete;
  ~OperateCall();  // cancels a call not read to its end; unregisters it

  // The next message of the answer; false at its end (then Finish() says how it ended).
  bool Read(peer::v1::OperateReply* reply);
  // How the call ended: OK, or the transport's or the member's error.
  absl::Status Finish();
  void Cancel() { context_->TryCancel(); }

 private:
  Cluster* const cluster_;
  std::unique_ptr<peer::v1::Peer::Stub> stub_;
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReader<peer::v1::OperateReply>> reader_;
  bool finished_ = false;
};

}  // namespace cairn::replication
