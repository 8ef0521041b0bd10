#include "common/log_limiter.h"

namespace cairn {

std::optional<uint64_t> LogLimiter::Event(absl::string_view source, absl::Time now) {
  absl::MutexLock lock(&mu_);
  ++total_;
  if (sources_.size() >= kMaxSources && !sources_.contains(source)) sources_.clear();
  Source& s = sources_[source];
  if (now - s.logged_at < every_) {
    ++s.unlogged;
    return std::nullopt;
  }
  const uint64_t unlogged = s.unlogged;
  s.unlogged = 0;
  s.logged_at = now;
  return unlogged;
}

uint64_t LogLimiter::total() const {
  absl::MutexLock lock(&mu_);
  return total_;
}

}  // namespace cairn
