// A guard that slows down repeated failed logins from one client address, and against one
// user (a password guesser gets a few tries at full speed, then waits longer for each, up to
// kMaxDelay, however many connections it opens) and logs them
// without flooding the log (U8). Who a request comes from is the Authenticator's business
// (node/authenticator.h). Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/log_limiter.h"

namespace cairn::node {

// Invariants:
//  (1) Password checks (argon2id) of one address, and of one claimed user, start one after
//      another: each at least DelayAfter(failures + checks queued) after the one before, so a
//      guesser gains nothing from more connections (issue 41: 39.5 guesses/s with 200
//      connections from one address, 1.4 with one). A check that would wait longer than
//      kMaxDelay is refused instead (429), so no queue grows without end and a user guessed
//      at from many addresses is slowed, never locked out for longer than kMaxDelay.
//  (2) Every Reserve is ended by exactly one Failed/Succeeded/Released with `reserved`.
class LoginGuard {
 public:
  // Failures from one address (or against one user) within kWindow answered without delay.
  static constexpr int kFreeFailures = 3;
  static constexpr absl::Duration kWindow = absl::Minutes(1);
  static constexpr absl::Duration kMaxDelay = absl::Seconds(5);
  // Addresses and users remembered at most; past it the stalest are forgotten.
  static constexpr size_t kMaxAddresses = 10'000;

  // `free_failures`: kFreeFailures unless a test that fails logins in bulk asks for more.
  explicit LoginGuard(std::string node_name, int free_failures = kFreeFailures)
      : node_name_(std::move(node_name)), free_failures_(free_failures) {}

  // Reserves a password check for `address` claiming `user` (empty: not known yet): how long
  // to wait before it starts; nullopt: refused, nothing reserved (invariant 1).
  std::optional<absl::Duration> Reserve(absl::string_view address, absl::string_view user,
                                        absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // A failed login from `address` as `user` (what the credentials claimed; `reserved`: a check
  // Reserve made room for): counts and logs it (at most one line per address per kLogEvery,
  // U8), and returns how long to wait before answering it.
  absl::Duration Failed(absl::string_view address, absl::string_view user, absl::Time now,
                        bool reserved = false) ABSL_LOCKS_EXCLUDED(mu_);
  // A password verified from `address` as `user` forgives their failures.
  void Succeeded(absl::string_view address, absl::string_view user, bool reserved = false)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A reserved check that ended neither way (a token request that was malformed).
  void Released(absl::string_view address, absl::string_view user) ABSL_LOCKS_EXCLUDED(mu_);

  uint64_t failures_total() const;

 private:
  static constexpr absl::Duration kLogEvery = absl::Seconds(10);
  // The delay of the `failures`-th failure within the window.
  absl::Duration DelayAfter(int failures) const;
  struct Client {
    absl::Time window_start;
    int failures = 0;      // within the window
    int queued = 0;        // reserved checks not yet ended
    absl::Time next_free;  // when the next check may start (invariant 1)
  };
  // The entries a check of `address` as `user` counts against: the address's, and the user's
  // when one is claimed.
  struct Keys {
    std::string address, user;
  };
  static Keys KeysOf(absl::string_view address, absl::string_view user);
  Client& EntryLocked(const std::string& key, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EndLocked(const Keys& keys, bool reserved) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends a reserved check as failed and counts it against `keys`: the address's failures now.
  int CountFailureLocked(const Keys& keys, absl::Time now, bool reserved)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string node_name_;
  const int free_failures_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Client> clients_ ABSL_GUARDED_BY(mu_);
  LogLimiter log_{kLogEvery};  // failed logins per address: the log's pace and the total
};

}  // namespace cairn::node
