#include "storage/rocksdb_status.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace cairn::storage {

absl::Status FromRocks(const rocksdb::Status& s) {
  if (s.ok()) return absl::OkStatus();
  std::string msg = absl::StrCat("rocksdb: ", s.ToString());
  if (s.IsBusy() || s.IsTryAgain()) return absl::AbortedError(msg);
  if (s.IsCorruption()) return absl::DataLossError(msg);
  if (s.IsIOError() && s.subcode() == rocksdb::Status::kNoSpace) {
    return absl::ResourceExhaustedError(msg);
  }
  if (s.IsShutdownInProgress()) {
    return MakeError(absl::StatusCode::kUnavailable, ErrorCode::kShuttingDown, msg);
  }
  if (s.IsTimedOut()) return absl::DeadlineExceededError(msg);
  if (s.IsNotFound()) return absl::NotFoundError(msg);
  if (s.IsInvalidArgument()) return absl::InternalError(msg);  // our bug, not the client's
  return absl::InternalError(msg);
}

}  // namespace cairn::storage
