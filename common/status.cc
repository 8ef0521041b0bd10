#include "common/status.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace cairn {
namespace {

constexpr absl::string_view kPayloadUrl = "type.cairn.dev/cairn.common.v1.ErrorCode";
constexpr absl::string_view kDetailsUrl = "type.cairn.dev/cairn.common.v1.ErrorDetails";

struct CodeInfo {
  absl::string_view name;
  absl::StatusCode canonical;
  int http;
};

// Indexed by ErrorCode. SPEC §5 decides names and HTTP statuses.
constexpr CodeInfo kCodes[] = {
    {"UNSPECIFIED", absl::StatusCode::kUnknown, 500},
    {"BAD_REQUEST", absl::StatusCode::kInvalidArgument, 400},
    {"INVALID_NAME", absl::StatusCode::kInvalidArgument, 400},
    {"UNKNOWN_ATTRIBUTE", absl::StatusCode::kInvalidArgument, 400},
    {"TYPE_MISMATCH", absl::StatusCode::kInvalidArgument, 400},
    {"TABLE_EXISTS", absl::StatusCode::kAlreadyExists, 400},
    {"DATABASE_EXISTS", absl::StatusCode::kAlreadyExists, 400},
    {"ATTRIBUTE_EXISTS", absl::StatusCode::kAlreadyExists, 400},
    {"UNAUTHORIZED", absl::StatusCode::kUnauthenticated, 401},
    {"FORBIDDEN", absl::StatusCode::kPermissionDenied, 403},
    {"DATABASE_NOT_FOUND", absl::StatusCode::kNotFound, 404},
    {"TABLE_NOT_FOUND", absl::StatusCode::kNotFound, 404},
    {"NODE_NOT_FOUND", absl::StatusCode::kNotFound, 404},
    {"TABLE_GENERATION_DROPPED", absl::StatusCode::kAborted, 409},
    {"BODY_TOO_LARGE", absl::StatusCode::kResourceExhausted, 413},
    {"TABLE_DROPPING", absl::StatusCode::kUnavailable, 503},
    {"SHUTTING_DOWN", absl::StatusCode::kUnavailable, 503},
    {"INTERNAL", absl::StatusCode::kInternal, 500},
    {"LENGTH_REQUIRED", absl::StatusCode::kFailedPrecondition, 411},
    {"HEADER_TOO_LARGE", absl::StatusCode::kResourceExhausted, 431},
    {"TOO_MANY_CONNECTIONS", absl::StatusCode::kUnavailable, 503},
    {"USER_EXISTS", absl::StatusCode::kAlreadyExists, 409},
    {"ROLE_EXISTS", absl::StatusCode::kAlreadyExists, 409},
    {"USER_NOT_FOUND", absl::StatusCode::kNotFound, 404},
    {"ROLE_NOT_FOUND", absl::StatusCode::kNotFound, 404},
    {"ROLE_IN_USE", absl::StatusCode::kFailedPrecondition, 409},
    {"LAST_SUPER_USER", absl::StatusCode::kFailedPrecondition, 409},
    {"INVALID_PERMISSIONS", absl::StatusCode::kInvalidArgument, 400},
    {"REQUEST_TIMEOUT", absl::StatusCode::kDeadlineExceeded, 503},
    {"TOO_MANY_LOGINS", absl::StatusCode::kResourceExhausted, 429},
    {"NODE_EXISTS", absl::StatusCode::kAlreadyExists, 400},
    {"TOO_MANY_SUBSCRIPTIONS", absl::StatusCode::kUnavailable, 503},
    {"NOT_A_MEMBER", absl::StatusCode::kUnavailable, 503},
    {"NO_MEMBER_REACHABLE", absl::StatusCode::kUnavailable, 503},
    {"CONFIRMATION_TIMEOUT", absl::StatusCode::kDeadlineExceeded, 504},
};
static_assert(sizeof(kCodes) / sizeof(kCodes[0]) == kMaxErrorCode + 1);

const CodeInfo& Info(ErrorCode code) {
  int i = static_cast<int>(code);
  if (i < 0 || i > kMaxErrorCode) i = 0;
  return kCodes[i];
}

}  // namespace

absl::StatusCode CanonicalCodeFor(ErrorCode code) { return Info(code).canonical; }

absl::Status MakeError(absl::StatusCode code, ErrorCode detail, absl::string_view msg) {
  absl::Status s(code, msg);
  if (!s.ok()) s.SetPayload(kPayloadUrl, absl::Cord(absl::StrCat(static_cast<int>(detail))));
  return s;
}

absl::Status Error(ErrorCode detail, absl::string_view msg) {
  return MakeError(CanonicalCodeFor(detail), detail, msg);
}

ErrorCode GetErrorCode(const absl::Status& s) {
  if (s.ok()) return ErrorCode::kUnspecified;
  if (auto payload = s.GetPayload(kPayloadUrl)) {
    int v = 0;
    if (absl::SimpleAtoi(std::string(*payload), &v) && v > 0 && v <= kMaxErrorCode) {
      return static_cast<ErrorCode>(v);
    }
  }
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return ErrorCode::kBadRequest;
    default:
      return ErrorCode::kInternal;
  }
}

bool HasErrorCode(const absl::Status& s) {
  return !s.ok() && s.GetPayload(kPayloadUrl).has_value();
}

absl::string_view ErrorCodeName(ErrorCode code) { return Info(code).name; }

int HttpStatusFor(const absl::Status& s) {
  if (s.ok()) return 200;
  return Info(GetErrorCode(s)).http;
}

absl::Status Annotate(const absl::Status& s, absl::string_view context) {
  if (s.ok() || context.empty()) return s;
  absl::Status out(s.code(), absl::StrCat(context, ": ", s.message()));
  s.ForEachPayload(
      [&out](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

absl::Status WithDetails(absl::Status s, absl::string_view json_object) {
  if (!s.ok()) s.SetPayload(kDetailsUrl, absl::Cord(json_object));
  return s;
}

std::string DetailsOf(const absl::Status& s) {
  if (auto payload = s.GetPayload(kDetailsUrl)) return std::string(*payload);
  return "";
}

namespace internal {

CheckFailure::CheckFailure(const char* file, int line, const char* condition) {
  stream_ << file << ":" << line << ": CAIRN_CHECK failed: " << condition << " ";
}

CheckFailure::~CheckFailure() {
  std::fprintf(stderr, "%s\n", stream_.str().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace internal
}  // namespace cairn
