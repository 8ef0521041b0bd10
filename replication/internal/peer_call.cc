#include "replication/internal/peer_call.h"

#include <openssl/crypto.h>

#include "absl/strings/str_cat.h"
#include "cairn/common/v1/error.pb.h"

namespace cairn::replication::internal {

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  if (!HasErrorCode(s)) {
    return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
  }
  common::v1::ErrorDetail detail;
  detail.set_code(static_cast<common::v1::ErrorCode>(GetErrorCode(s)));
  detail.set_message(std::string(s.message()));
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()),
                      detail.SerializeAsString());
}

absl::Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  // A peer's values are input (SPEC §6, no crash on any input): a canonical code this build
  // does not know is UNKNOWN, and details that do not parse, or name a code out of range,
  // are ignored.
  const int raw = static_cast<int>(s.error_code());
  const absl::StatusCode code =
      raw > 0 && raw <= static_cast<int>(absl::StatusCode::kUnauthenticated)
          ? static_cast<absl::StatusCode>(raw)
          : absl::StatusCode::kUnknown;
  const std::optional<ErrorCode> detail = PeerErrorCode(s);
  if (!detail.has_value()) return absl::Status(code, s.error_message());
  return MakeError(code, *detail, s.error_message());
}

std::optional<ErrorCode> PeerErrorCode(const grpc::Status& s) {
  if (s.ok() || s.error_details().empty()) return std::nullopt;
  common::v1::ErrorDetail detail;
  if (!detail.ParseFromString(s.error_details())) return std::nullopt;
  const int code = static_cast<int>(detail.code());
  if (code <= 0 || code > kMaxErrorCode) return std::nullopt;
  return static_cast<ErrorCode>(code);
}

std::string Describe(const absl::Status& s) {
  std::string out = absl::StrCat(absl::StatusCodeToString(s.code()), ": ", s.message());
  if (HasErrorCode(s)) absl::StrAppend(&out, " (", ErrorCodeName(GetErrorCode(s)), ")");
  return out;
}

std::string Metadata(const grpc::ServerContext& context, const char* key) {
  auto it = context.client_metadata().find(key);
  if (it == context.client_metadata().end()) return "";
  return std::string(it->second.data(), it->second.size());
}

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

grpc::Status CutStatus() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the link is cut (test hook)");
}

}  // namespace cairn::replication::internal
