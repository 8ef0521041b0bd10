#include "common/deadline.h"

#include "absl/time/clock.h"
#include "common/status.h"

namespace cairn {

absl::Status Deadline::Check() {
  const absl::Time now = absl::Now();
  if (!cancelled() && (client_present_ != nullptr || pause_ != nullptr) && now >= next_probe_) {
    next_probe_ = now + kProbeEvery;
    if (client_present_ != nullptr && !client_present_()) Cancel();
    if (!cancelled() && pause_ != nullptr) {
      if (absl::Status paused = pause_(); !paused.ok()) return paused;
    }
  }
  if (cancelled()) {
    return Error(ErrorCode::kRequestTimeout, "the request was cancelled: its client left");
  }
  return CheckTime();
}

absl::Status Deadline::CheckTime() const {
  if (absl::Now() >= at_) {
    return Error(ErrorCode::kRequestTimeout,
                 "the request ran out of time (--operation-timeout, or its 'timeout_ms')");
  }
  return absl::OkStatus();
}

}  // namespace cairn
