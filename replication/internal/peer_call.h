// What both ends of a peer call share (not for use outside replication/): the metadata a
// caller sends, the channel and server limits, and the conversion of statuses to and from
// gRPC's.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/status.h"
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

// A status crosses the peer port with its cairn code (SPEC §5) as an ErrorDetail in the gRPC
// status's binary details (proto/cairn/common/v1/error.proto), so the caller reads the peer's
// reason, not only its canonical code. A status without details (a transport failure, or a
// node that predates them) comes back with its canonical code alone.
grpc::Status ToGrpc(const absl::Status& s);
absl::Status FromGrpc(const grpc::Status& s);
// The cairn code a peer attached to `s`; none for OK, for no or malformed details, and for a
// code this build does not know.
std::optional<ErrorCode> PeerErrorCode(const grpc::Status& s);
// "CANONICAL: message", with the cairn code after it when `s` has one: how a link's end is
// shown (cluster_status last_error, the log), without absl's payload dump.
std::string Describe(const absl::Status& s);
// The value of a caller's metadata `key`; empty when it sent none.
std::string Metadata(const grpc::ServerContext& context, const char* key);
// Secrets compare in constant time (OpenSSL's CRYPTO_memcmp); a length difference shows.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);
// What a call to or from a peer cut by the test hook (Cluster::CutLink) gets.
grpc::Status CutStatus();

}  // namespace cairn::replication::internal
