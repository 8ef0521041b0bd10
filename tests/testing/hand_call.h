// MustReachNode: settings for a gRPC call a test makes by hand to a node's peer port.
#pragma once

#include <chrono>

#include "grpcpp/grpcpp.h"

namespace cairn::testing {

// Prepares a hand-made call whose answer must come from the node: a connection attempt that
// fails under load (CI saw UNAVAILABLE "failed to connect to all addresses" on a listening
// loopback port) is retried instead of failing the call before the node could answer, and a
// refusal the test expects but the node does not make fails the test at the deadline instead of
// hanging it.
inline void MustReachNode(grpc::ClientContext& context) {
  context.set_wait_for_ready(true);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
}

}  // namespace cairn::testing
