#include "common/clock.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace cairn {

SystemClock* SystemClock::Default() {
  static SystemClock* clock = new SystemClock();
  return clock;
}

absl::StatusOr<Hlc> HlcAfter(Hlc t, absl::string_view what) {
  if (t == kMaxHlc) {
    return Error(ErrorCode::kInternal,
                 absl::StrCat("cannot stamp ", what, ": it must follow ", t,
                              ", the largest HLC value (a peer's clock at the end of time "
                              "reached this node; SPEC C16)"));
  }
  return t + 1;
}

absl::StatusOr<Hlc> HybridClock::Now() {
  const Hlc floor = Make(static_cast<uint64_t>(absl::ToUnixMillis(wall_->Now())), 0);
  Hlc last = last_.load(std::memory_order_acquire);
  Hlc next;
  do {
    // Invariant (3): at the end of time there is no next value to give.
    if (last == kMaxHlc) return HlcAfter(last, "a new HLC value");
    next = std::max(last + 1, floor);
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
