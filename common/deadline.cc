#include "common/deadline.h"

#include "absl/time/clock.h"
#include "common/status.h"

namespace cairn {

void Deadline::SetPause(std::function<absl::Status()> pause) {
  pause_ = std::move(pause);
  next_probe_ = absl::Now() + probe_every_;
}

bool Deadline::ProbeClient() {
  next_probe_ = absl::Now() + probe_every_;
  if (!cancelled() && client_present_ != nullptr && !client_present_()) Cancel();
  return !cancelled();
}

absl::Status Deadline::Check() {
  if (!cancelled() && (client_present_ != nullptr || pause_ != nullptr) &&
      absl::Now() >= next_probe_) {
    if (ProbeClient() && pause_ != nullptr) {
      absl::Status paused = pause_();
      next_probe_ = absl::Now() + probe_every_;  // the time paused is not the work's
      if (!paused.ok()) return paused;
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
