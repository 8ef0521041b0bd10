#include "common/background_pace.h"

#include <algorithm>
#include <chrono>

#include "absl/time/clock.h"

namespace cairn {

namespace {

// A clock that never goes back, as an absl::Time (its epoch is the steady clock's).
absl::Time SteadyNow() {
  return absl::UnixEpoch() + absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

}  // namespace

BackgroundPace::BackgroundPace(BackgroundPaceOptions options) : options_(options) {}

bool BackgroundPace::Busy(absl::Time now) const {
  return options_.activity != nullptr && now - options_.activity->last() < options_.quiet_after;
}

absl::Time BackgroundPace::Reserve(uint64_t units, absl::Time now, bool busy) {
  reserved_.fetch_add(units, std::memory_order_relaxed);
  if (options_.rate == 0) return now;
  // Invariant (2): a share outside (0, 1] is taken as 1 (the flag's parser refuses it).
  const double share =
      options_.busy_share > 0 && options_.busy_share <= 1 ? options_.busy_share : 1.0;
  const double rate = static_cast<double>(options_.rate) * (busy ? share : 1.0);
  absl::MutexLock lock(&pace_mu_);
  // Time left unused is not saved up (invariant 1): the next start is never before now.
  next_ = std::max(next_, now);
  const absl::Time start = next_;
  next_ += absl::Seconds(static_cast<double>(units) / rate);
  return start;
}

absl::Status BackgroundPace::Wait(uint64_t units, absl::FunctionRef<absl::Status()> check) {
  const absl::Time start = Reserve(units, SteadyNow(), Busy(absl::Now()));
  for (absl::Time now = SteadyNow(); now < start; now = SteadyNow()) {
    if (absl::Status s = check(); !s.ok()) return s;
    absl::SleepFor(std::min(start - now, absl::Milliseconds(50)));
  }
  return check();
}

}  // namespace cairn
