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

bool CpuSlots::AwaitTurn(Waiter* w, const Deadline& deadline, absl::Status* gave_up) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithDeadline(absl::Condition(&w->granted),
                        std::min(deadline.at(), absl::Now() + deadline.probe_every()));
  if (w->granted) return true;
  if (!deadline.cancelled() && absl::Now() < deadline.at()) return false;
  waiters_.erase(std::find(waiters_.begin(), waiters_.end(), w));
  *gave_up = deadline.cancelled()
                 ? Error(ErrorCode::kRequestTimeout, "the request was cancelled: its client left")
                 : Error(ErrorCode::kRequestTimeout,
                         "the request ran out of time waiting for a CPU slot "
                         "(--operation-timeout, or its 'timeout_ms')");
  return true;
}

absl::Status CpuSlots::Acquire(Deadline& deadline) {
  Waiter w;
  {
    absl::MutexLock lock(&mu_);
    waiters_.push_back(&w);
    GrantLocked();
  }
  absl::Status gave_up;
  // Between waits, outside the lock: whether the client is still there.
  while (!AwaitTurn(&w, deadline, &gave_up)) deadline.ProbeClient();
  return gave_up;
}

void CpuSlots::Release() {
  absl::MutexLock lock(&mu_);
  --held_;
  GrantLocked();
}

absl::Status CpuSlots::Yield(Deadline& deadline) {
  {
    absl::MutexLock lock(&mu_);
    if (waiters_.empty()) return absl::OkStatus();
    --held_;
    GrantLocked();  // to the longest waiting; this task queues behind every one (invariant 2)
  }
  return Acquire(deadline);
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
