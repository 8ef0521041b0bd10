#include "node/http_auth.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace cairn::node {

LoginGuard::Keys LoginGuard::KeysOf(absl::string_view address, absl::string_view user) {
  // A user's key cannot be an address: addresses never contain a space.
  return {std::string(address), user.empty() ? std::string() : absl::StrCat("user ", user)};
}

LoginGuard::Client& LoginGuard::EntryLocked(const std::string& key, absl::Time now) {
  if (clients_.size() >= kMaxAddresses && !clients_.contains(key)) {
    // Forget every entry whose window has passed and that has no check queued; if all are
    // recent, forget those without one (a guesser with 10,000 addresses is not slowed by
    // this guard anyway).
    absl::erase_if(clients_, [now](const auto& c) {
      return c.second.queued == 0 && now - c.second.window_start > kWindow;
    });
    if (clients_.size() >= kMaxAddresses) {
      absl::erase_if(clients_, [](const auto& c) { return c.second.queued == 0; });
    }
  }
  Client& c = clients_[key];
  if (now - c.window_start > kWindow && c.queued == 0) {
    c.window_start = now;
    c.failures = 0;
  }
  return c;
}

void LoginGuard::EndLocked(const Keys& keys, bool reserved) {
  if (!reserved) return;
  for (const std::string* key : {&keys.address, &keys.user}) {
    auto it = key->empty() ? clients_.end() : clients_.find(*key);
    if (it != clients_.end() && it->second.queued > 0) --it->second.queued;
  }
}

std::optional<absl::Duration> LoginGuard::Reserve(absl::string_view address, absl::string_view user,
                                                  absl::Time now) {
  const Keys keys = KeysOf(address, user);
  absl::MutexLock lock(&mu_);
  absl::Time start = now;
  for (const std::string* key : {&keys.address, &keys.user}) {
    if (!key->empty()) start = std::max(start, EntryLocked(*key, now).next_free);
  }
  if (start - now > kMaxDelay) return std::nullopt;
  for (const std::string* key : {&keys.address, &keys.user}) {
    if (key->empty()) continue;
    Client& c = clients_[*key];
    ++c.queued;
    c.next_free = start + DelayAfter(c.failures + c.queued);
  }
  return start - now;
}

int LoginGuard::CountFailureLocked(const Keys& keys, absl::Time now, bool reserved) {
  EndLocked(keys, reserved);
  // The next check of the address or the user waits out this failure's delay too.
  if (!keys.user.empty()) {
    Client& u = EntryLocked(keys.user, now);
    ++u.failures;
    u.next_free = std::max(u.next_free, now + DelayAfter(u.failures));
  }
  Client& c = EntryLocked(keys.address, now);
  ++c.failures;
  c.next_free = std::max(c.next_free, now + DelayAfter(c.failures));
  return c.failures;
}

absl::Duration LoginGuard::Failed(absl::string_view address, absl::string_view user, absl::Time now,
                                  bool reserved) {
  int failures;
  {
    absl::MutexLock lock(&mu_);
    failures = CountFailureLocked(KeysOf(address, user), now, reserved);
  }
  // At most one line per address per kLogEvery (U8), written outside the guard's lock.
  if (std::optional<uint64_t> unlogged = log_.Event(address, now)) {
    spdlog::warn(
        "[{}] failed login as '{}' from {} ({} in the last minute, {} not logged since the last "
        "line)",
        node_name_, std::string(user), std::string(address), failures, *unlogged);
  }
  return DelayAfter(failures);
}

absl::Duration LoginGuard::DelayAfter(int failures) const {
  if (failures <= free_failures_) return absl::ZeroDuration();
  // 100 ms, 200 ms, 400 ms, ... up to kMaxDelay.
  const int doublings = std::min(failures - free_failures_ - 1, 16);
  return std::min(absl::Milliseconds(100) * (1 << doublings), kMaxDelay);
}

void LoginGuard::Succeeded(absl::string_view address, absl::string_view user, bool reserved) {
  const Keys keys = KeysOf(address, user);
  absl::MutexLock lock(&mu_);
  EndLocked(keys, reserved);
  // The failures are forgiven, not the log's pace: interleaving good logins with bad ones
  // must not flood the log.
  for (const std::string* key : {&keys.address, &keys.user}) {
    auto it = key->empty() ? clients_.end() : clients_.find(*key);
    if (it != clients_.end()) {
      it->second.failures = 0;
      it->second.next_free = absl::InfinitePast();
    }
  }
}

void LoginGuard::Released(absl::string_view address, absl::string_view user) {
  const Keys keys = KeysOf(address, user);
  absl::MutexLock lock(&mu_);
  EndLocked(keys, /*reserved=*/true);
}

uint64_t LoginGuard::failures_total() const { return log_.total(); }

}  // namespace cairn::node
