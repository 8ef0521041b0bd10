// What both ends of a peer call share (not for use outside replication/): the metadata a
// caller sends, the channel and server limits, and the conversion of statuses to and from
// gRPC's.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/grpcpp.h"

namespace cairn::replication::internal {

// Call metadata (R2, R9): the caller's node name, the cluster secret, and the provenance of a
// forwarded drop (which must be the authenticated caller).
inline constexpr char kNodeHeader[] = "cairn-node";
inline constexpr char kSecretHeader[] = "cairn-secret";
inline constexpr char kReplicatedFromHeader[] = "cairn-replicated-from";
// A ChangeBatch holds up to 1 MiB of bodies plus one row; a row may be as large as a request
// body (--max-body-bytes, 10 MiB by default), the default 4 MiB limit is not enough.
inline constexpr int kMaxMessageBytes = 256 << 20;
// A keepalive ping unanswered this long ends the connection (decision 113).
inline constexpr int kKeepaliveTimeoutMs = 5'000;

grpc::Status ToGrpc(const absl::Status& s);
absl::Status FromGrpc(const grpc::Status& s);
// The value of a caller's metadata `key`; empty when it sent none.
std::string Metadata(const grpc::ServerContext& context, const char* key);
// Secrets compare in constant time (OpenSSL's CRYPTO_memcmp); a length difference shows.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);
// What a call to or from a peer cut by the test hook (Cluster::CutLink) gets.
grpc::Status CutStatus();

}  // namespace cairn::replication::internal
