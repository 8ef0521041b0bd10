#include "common/clock.h"

#include <algorithm>

namespace cairn {

SystemClock* SystemClock::Default() {
  static SystemClock* clock = new SystemClock();
  return clock;
}

Hlc HybridClock::Now() {
  const Hlc floor = Make(static_cast<uint64_t>(absl::ToUnixMillis(wall_->Now())), 0);
  Hlc last = last_.load(std::memory_order_acquire);
  Hlc next;
  do {
    // Saturates rather than wrapping: a clock pushed to the end of time stays there.
    next = std::max(last == UINT64_MAX ? last : last + 1, floor);
  } while (!last_.compare_exchange_weak(last, next, std::memory_order_acq_rel,
                                        std::memory_order_acquire));
  return next;
}

void HybridClock::Observe(Hlc remote) {
  Hlc last = last_.load(std::memory_order_acquire);
  while (remote > last && !last_.compare_exchange_weak(last, remote, std::memory_order_acq_rel,
                                                       std::memory_order_acquire)) {
  }
}

}  // namespace cairn
