// The operations API's credentials: Basic authentication against the admin user, and a guard
// that slows down repeated failures from one client address (a password guesser gets a few
// tries at full speed, then waits longer for each, up to kMaxDelay) and logs them without
// flooding the log. Thread-safe.
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

class BasicAuth {
 public:
  // An empty password: every request is authorized.
  BasicAuth(absl::string_view user, absl::string_view password);

  bool required() const { return !expected_user_.empty() || !expected_password_.empty(); }
  // OK when no password is configured or `authorization` (the header's value) names the admin
  // user and password; UNAUTHORIZED otherwise. Takes the same time whichever part is wrong.
  absl::Status Check(absl::string_view authorization) const;

 private:
  const std::string expected_user_, expected_password_;  // both empty: no authentication
};

class LoginGuard {
 public:
  // Failures from one address within kWindow answered without delay.
  static constexpr int kFreeFailures = 3;
  static constexpr absl::Duration kWindow = absl::Minutes(1);
  static constexpr absl::Duration kMaxDelay = absl::Seconds(5);
  // Addresses remembered at most; past it the stalest are forgotten.
  static constexpr size_t kMaxAddresses = 10'000;

  explicit LoginGuard(std::string node_name) : node_name_(std::move(node_name)) {}

  // A failed login from `address`: counts and logs it (at most one line per address per
  // kLogEvery), and returns how long to wait before answering it.
  absl::Duration Failed(absl::string_view address, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // A successful login from `address` forgives its failures.
  void Succeeded(absl::string_view address) ABSL_LOCKS_EXCLUDED(mu_);

  uint64_t failures_total() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  static constexpr absl::Duration kLogEvery = absl::Seconds(10);
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
