#include "common/cpu_slots.h"

#include <algorithm>
#include <thread>

#include "common/status.h"

namespace cairn {

namespace {

int DefaultSlots() {
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, cpus - 1);
}

}  // namespace

CpuSlots::CpuSlots(int slots) : slots_(slots > 0 ? slots : DefaultSlots()) {}

void CpuSlots::GrantLocked() {
  while (held_ < slots_ && !waiters_.empty()) {
    waiters_.front()->granted = true;
    waiters_.pop_front();
    ++held_;
  }
}

absl::Status CpuSlots::WaitLocked(Waiter* w, const Deadline& deadline) {
  waiters_.push_back(w);
  GrantLocked();
  while (!w->granted) {
    if (deadline.cancelled() || absl::Now() >= deadline.at()) {
      waiters_.erase(std::find(waiters_.begin(), waiters_.end(), w));
      return deadline.cancelled()
                 ? Error(ErrorCode::kRequestTimeout, "the request was cancelled: its client left")
                 : Error(ErrorCode::kRequestTimeout,
                         "the request ran out of time waiting for a CPU slot "
                         "(--operation-timeout, or its 'timeout_ms')");
    }
    // Wakes at the deadline, or to look at a cancellation (Deadline::kProbeEvery).
    mu_.AwaitWithDeadline(absl::Condition(&w->granted),
                          std::min(deadline.at(), absl::Now() + Deadline::kProbeEvery));
  }
  return absl::OkStatus();
}

absl::Status CpuSlots::Acquire(const Deadline& deadline) {
  absl::MutexLock lock(&mu_);
  Waiter w;
  return WaitLocked(&w, deadline);
}

void CpuSlots::Release() {
  absl::MutexLock lock(&mu_);
  --held_;
  GrantLocked();
}

absl::Status CpuSlots::Yield(const Deadline& deadline) {
  absl::MutexLock lock(&mu_);
  if (waiters_.empty()) return absl::OkStatus();
  --held_;
  Waiter w;
  return WaitLocked(
      &w, deadline);  // queued behind every earlier waiter, which GrantLocked serves first
}

int CpuSlots::held() const {
  absl::MutexLock lock(&mu_);
  return held_;
}

int CpuSlots::waiting() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(waiters_.size());
}

}  // namespace cairn
