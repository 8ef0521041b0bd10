// RawLink: a Link call made by hand to a TestNode, as a peer that speaks only what the test
// says, for tests of what a node does with an old, odd or forged peer.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>

#include "cairn/peer/v1/peer.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "tests/replication/test_node.h"
#include "tests/testing/hand_call.h"

namespace cairn::replication {

// A Link call to `to` as a peer named `claimed` (with the test secret), that has sent a Hello
// naming `hello_name` and advertising `capabilities`.
struct RawLink {
  RawLink(const TestNode& to, const std::string& claimed, const std::string& hello_name,
          std::initializer_list<const char*> capabilities = {"schema.v1"})
      : peer_client(peer::v1::Peer::NewStub(
            grpc::CreateChannel(to.address(), grpc::InsecureChannelCredentials()))) {
    testing::MustReachNode(context);
    context.AddMetadata("cairn-node", claimed);
    context.AddMetadata("cairn-secret", "s3cret");
    stream = peer_client->Link(&context);
    peer::v1::LinkMessage hello;
    hello.mutable_hello()->set_node_name(hello_name);
    hello.mutable_hello()->set_protocol_version(1);
    for (const char* c : capabilities) hello.mutable_hello()->add_capabilities(c);
    hello_sent = stream->Write(hello);
  }
  // Reads until the node ends the call; its status.
  grpc::Status Drain() {
    peer::v1::LinkMessage m;
    while (stream->Read(&m)) {
    }
    return stream->Finish();
  }
  std::unique_ptr<peer::v1::Peer::StubInterface> peer_client;
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderWriterInterface<peer::v1::LinkMessage, peer::v1::LinkMessage>>
      stream;
  bool hello_sent = false;
};

}  // namespace cairn::replication
