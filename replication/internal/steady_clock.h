// The second of the two clocks replication reads (decision 136). Stamps, and the protocol
// timers tests advance rather than wait out, read the node's clock (`node->hlc->WallNow()`,
// a ManualClock in tests, an OffsetClock under cairnd's clock-fault hooks); measured
// durations and short pacing (the advert interval, a cursor poll, a log limiter, a backoff's
// reset) read this one, which neither a test nor a clock fault moves, and never goes back.
#pragma once

#include <chrono>

#include "absl/time/time.h"

namespace cairn::replication::internal {

// A monotonic reading as an absl::Time: meaningful only as a difference from another.
inline absl::Time SteadyNow() {
  return absl::UnixEpoch() + absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

}  // namespace cairn::replication::internal
