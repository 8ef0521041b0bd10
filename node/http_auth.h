// A guard that slows down repeated failed logins from one client address (a password guesser
// gets a few tries at full speed, then waits longer for each, up to kMaxDelay) and logs them
// without flooding the log (U8). Who a request comes from is the Authenticator's business
// (node/authenticator.h). Thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace cairn::node {

class LoginGuard {
 public:
  // Failures from one address within kWindow answered without delay.
  static constexpr int kFreeFailures = 3;
  static constexpr absl::Duration kWindow = absl::Minutes(1);
  static constexpr absl::Duration kMaxDelay = absl::Seconds(5);
  // Addresses remembered at most; past it the stalest are forgotten.
  static constexpr size_t kMaxAddresses = 10'000;

  explicit LoginGuard(std::string node_name) : node_name_(std::move(node_name)) {}

  // A failed login from `address` as `user` (what the credentials claimed): counts and logs
  // it (at most one line per address per kLogEvery, U8), and returns how long to wait before
  // answering it.
  absl::Duration Failed(absl::string_view address, absl::string_view user, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The delay a failed login from `address` would get now, without counting one: what a
  // request that may still fail (a token request) waits first.
  absl::Duration Penalty(absl::string_view address, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // A successful login from `address` forgives its failures.
  void Succeeded(absl::string_view address) ABSL_LOCKS_EXCLUDED(mu_);

  uint64_t failures_total() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  static constexpr absl::Duration kLogEvery = absl::Seconds(10);
  // The delay of the `failures`-th failure within the window.
  static absl::Duration DelayAfter(int failures);
  struct Client {
    absl::Time window_start;
    int failures = 0;      // within the window
    int unlogged = 0;      // failures not yet in a log line
    absl::Time logged_at;  // last log line
  };

  const std::string node_name_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Client> clients_ ABSL_GUARDED_BY(mu_);
  uint64_t failures_total_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace cairn::node
