#include "node/http_auth.h"

#include <algorithm>
#include <utility>

#include "spdlog/spdlog.h"

namespace cairn::node {

absl::Duration LoginGuard::Failed(absl::string_view address, absl::string_view user,
                                  absl::Time now) {
  absl::MutexLock lock(&mu_);
  ++failures_total_;
  if (clients_.size() >= kMaxAddresses && !clients_.contains(address)) {
    // Forget every address whose window has passed; if all are recent, forget them all (a
    // guesser with 10,000 addresses is not slowed by this guard anyway).
    absl::erase_if(clients_,
                   [now](const auto& c) { return now - c.second.window_start > kWindow; });
    if (clients_.size() >= kMaxAddresses) clients_.clear();
  }
  Client& c = clients_[address];
  if (now - c.window_start > kWindow) {
    c.window_start = now;
    c.failures = 0;
  }
  ++c.failures;
  ++c.unlogged;
  if (now - c.logged_at >= kLogEvery) {
    spdlog::warn("[{}] failed login as '{}' from {} ({} in the last minute)", node_name_,
                 std::string(user), std::string(address), c.failures);
    c.logged_at = now;
    c.unlogged = 0;
  }
  return DelayAfter(c.failures);
}

absl::Duration LoginGuard::DelayAfter(int failures) {
  if (failures <= kFreeFailures) return absl::ZeroDuration();
  // 100 ms, 200 ms, 400 ms, ... up to kMaxDelay.
  const int doublings = std::min(failures - kFreeFailures - 1, 16);
  return std::min(absl::Milliseconds(100) * (1 << doublings), kMaxDelay);
}

absl::Duration LoginGuard::Penalty(absl::string_view address, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = clients_.find(address);
  if (it == clients_.end() || now - it->second.window_start > kWindow) return absl::ZeroDuration();
  return DelayAfter(it->second.failures + 1);
}

void LoginGuard::Succeeded(absl::string_view address) {
  absl::MutexLock lock(&mu_);
  if (clients_.empty()) return;
  // The failures are forgiven, not the log's pace: interleaving good logins with bad ones
  // must not flood the log.
  auto it = clients_.find(address);
  if (it != clients_.end()) it->second.failures = 0;
}

uint64_t LoginGuard::failures_total() const {
  absl::MutexLock lock(&mu_);
  return failures_total_;
}

}  // namespace cairn::node
