// ForwardedOperations: the node's side of design 0013's P4 on a member: runs an operation a
// peer forwarded (Cluster's Operate call) through the operations API, as the user the peer
// authenticated, and sends the answer back in pieces.
#pragma once

#include <functional>
#include <string>

#include "node/authenticator.h"
#include "node/ops_api.h"
#include "replication/operation_runner.h"

namespace cairn::node {

class ForwardedOperations final : public replication::OperationRunner {
 public:
  // Both must outlive the peer server.
  ForwardedOperations(const OpsApi* api, const Authenticator* authenticator)
      : api_(api), authenticator_(authenticator) {}

  absl::Status Run(const std::string& from, const peer::v1::OperateRequest& request,
                   const std::function<bool()>& caller_present,
                   const replication::ReplySender& send) override;

 private:
  const OpsApi* const api_;
  const Authenticator* const authenticator_;
};

}  // namespace cairn::node
