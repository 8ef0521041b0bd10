// Error conventions for the whole node.
//
// Every error is an absl::Status. The canonical absl code is the primary signal: it crosses
// gRPC and decides retry versus fail. cairn::ErrorCode is the precise domain reason (SPEC §5),
// carried as a payload, for callers, the HTTP layer and tests. Thread-safe (free functions).
#pragma once

#include <cstdint>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cairn {

// Mirrors cairn.common.v1.ErrorCode (proto/cairn/common/v1/error.proto) value for value.
enum class ErrorCode : int32_t {
  kUnspecified = 0,
  kBadRequest = 1,               // INVALID_ARGUMENT      400
  kInvalidName = 2,              // INVALID_ARGUMENT      400  SPEC C13
  kUnknownAttribute = 3,         // INVALID_ARGUMENT      400  SPEC D2, D6
  kTypeMismatch = 4,             // INVALID_ARGUMENT      400  SPEC D2, D3
  kTableExists = 5,              // ALREADY_EXISTS        400  SPEC C3
  kDatabaseExists = 6,           // ALREADY_EXISTS        400
  kAttributeExists = 7,          // ALREADY_EXISTS        400
  kUnauthorized = 8,             // UNAUTHENTICATED       401
  kForbidden = 9,                // PERMISSION_DENIED     403
  kDatabaseNotFound = 10,        // NOT_FOUND             404
  kTableNotFound = 11,           // NOT_FOUND             404
  kNodeNotFound = 12,            // NOT_FOUND             404
  kTableGenerationDropped = 13,  // ABORTED               409  SPEC C6
  kBodyTooLarge = 14,            // RESOURCE_EXHAUSTED    413
  kTableDropping = 15,           // UNAVAILABLE           503  SPEC C9
  kShuttingDown = 16,            // UNAVAILABLE           503
  kInternal = 17,                // INTERNAL              500
  kLengthRequired = 18,          // FAILED_PRECONDITION   411  a body without Content-Length
  kHeaderTooLarge = 19,          // RESOURCE_EXHAUSTED    431
  kTooManyConnections = 20,      // UNAVAILABLE           503  over a connection cap
  kUserExists = 21,              // ALREADY_EXISTS        409  SPEC U2
  kRoleExists = 22,              // ALREADY_EXISTS        409  SPEC U2
  kUserNotFound = 23,            // NOT_FOUND             404  SPEC U2
  kRoleNotFound = 24,            // NOT_FOUND             404  SPEC U2
  kRoleInUse = 25,               // FAILED_PRECONDITION   409  drop_role of a role with active users
  kLastSuperUser = 26,           // FAILED_PRECONDITION   409  SPEC U7
  kInvalidPermissions = 27,      // INVALID_ARGUMENT      400  SPEC U3 (role permission JSON)
  kRequestTimeout = 28,          // DEADLINE_EXCEEDED     503  past its deadline, or its client left
  kTooManyLogins = 29,           // RESOURCE_EXHAUSTED    429  failed logins of an address or user
  kNodeExists = 30,              // ALREADY_EXISTS        400  add_node of a routed name
  kTooManySubscriptions = 31,    // UNAVAILABLE           503  over --max-subscriptions (W5)
  kNotAMember = 32,              // UNAVAILABLE           503  design 0013, P3, P5
  kNoMemberReachable = 33,       // UNAVAILABLE           503  design 0013, P4
  kConfirmationTimeout = 34,     // DEADLINE_EXCEEDED     504  design 0013, P10
};
inline constexpr int kMaxErrorCode = 34;

// The canonical code that goes with a domain code (the table above).
absl::StatusCode CanonicalCodeFor(ErrorCode code);

// An error with both codes. Error() picks the canonical code from the table above.
absl::Status MakeError(absl::StatusCode code, ErrorCode detail, absl::string_view msg);
absl::Status Error(ErrorCode detail, absl::string_view msg);

// The domain code of `s`: its payload if present, else one derived from the canonical code
// (INVALID_ARGUMENT -> kBadRequest, UNAVAILABLE -> kShuttingDown is *not* assumed: anything
// without a payload that is not a client error is kInternal). kUnspecified for OK.
ErrorCode GetErrorCode(const absl::Status& s);
// Whether `s` carries a domain code of its own (MakeError, Error), not one GetErrorCode derives.
bool HasErrorCode(const absl::Status& s);

// "TABLE_EXISTS" etc., the machine code of SPEC §5.
absl::string_view ErrorCodeName(ErrorCode code);

// HTTP status of an error (SPEC §5 table); 200 for OK.
int HttpStatusFor(const absl::Status& s);

// Prefixes the message with `context`, keeping the codes and payloads.
absl::Status Annotate(const absl::Status& s, absl::string_view context);

// More of an error for its client than the message: the text of a JSON object whose members an
// answer adds beside "error" and "code" (Harper's "unauthorized_access", "main_permissions",
// ...). Carried as a payload, so Annotate keeps it.
absl::Status WithDetails(absl::Status s, absl::string_view json_object);
// The details of `s` (WithDetails); empty when it has none.
std::string DetailsOf(const absl::Status& s);

namespace internal {
// Streams a fatal message then aborts. Used by CAIRN_CHECK only.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};
}  // namespace internal

}  // namespace cairn

// Early return on error, in the style of Kudu's RETURN_NOT_OK.
#define CAIRN_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::absl::Status cairn_status_ = (expr);         \
    if (!cairn_status_.ok()) return cairn_status_; \
  } while (0)

#define CAIRN_STATUS_CONCAT_INNER_(a, b) a##b
#define CAIRN_STATUS_CONCAT_(a, b) CAIRN_STATUS_CONCAT_INNER_(a, b)
#define CAIRN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return std::move(tmp).status();     \
  lhs = std::move(tmp).value()
// CAIRN_ASSIGN_OR_RETURN(auto x, Foo()); declares or assigns `lhs` from a StatusOr.
#define CAIRN_ASSIGN_OR_RETURN(lhs, expr) \
  CAIRN_ASSIGN_OR_RETURN_IMPL_(CAIRN_STATUS_CONCAT_(cairn_statusor_, __LINE__), lhs, expr)

// Always-on invariant check for states that would otherwise corrupt data (STYLE 2.2):
//   CAIRN_CHECK(gate.drained()) << "range delete before drain";
#define CAIRN_CHECK(cond) \
  if (cond) {             \
  } else                  \
    ::cairn::internal::CheckFailure(__FILE__, __LINE__, #cond).stream()
