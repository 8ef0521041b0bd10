#include "node/http_auth.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "common/status.h"
#include "spdlog/spdlog.h"

namespace cairn::node {
namespace {

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

}  // namespace

BasicAuth::BasicAuth(absl::string_view user, absl::string_view password)
    : expected_user_(password.empty() ? "" : user), expected_password_(password) {}

absl::Status BasicAuth::Check(absl::string_view header) const {
  if (!required()) return absl::OkStatus();
  if (header.size() > 6 && absl::EqualsIgnoreCase(header.substr(0, 6), "basic ")) {
    std::string decoded;
    if (absl::Base64Unescape(absl::StripAsciiWhitespace(header.substr(6)), &decoded)) {
      const size_t colon = decoded.find(':');
      if (colon != std::string::npos) {
        // Both comparisons always run: the time taken does not tell which one failed.
        const int user_ok =
            ConstantTimeEquals(absl::string_view(decoded).substr(0, colon), expected_user_);
        const int password_ok =
            ConstantTimeEquals(absl::string_view(decoded).substr(colon + 1), expected_password_);
        if ((user_ok & password_ok) != 0) return absl::OkStatus();
      }
    }
  }
  // "Login failed": Harper's words for wrong credentials, which its clients look for.
  return Error(ErrorCode::kUnauthorized,
               header.empty() ? "credentials required (Basic auth)" : "Login failed");
}

absl::Duration LoginGuard::Failed(absl::string_view address, absl::Time now) {
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
    spdlog::warn("[{}] failed login from {} ({} in the last minute)", node_name_,
                 std::string(address), c.failures);
    c.logged_at = now;
    c.unlogged = 0;
  }
  if (c.failures <= kFreeFailures) return absl::ZeroDuration();
  // 100 ms, 200 ms, 400 ms, ... up to kMaxDelay.
  const int doublings = std::min(c.failures - kFreeFailures - 1, 16);
  return std::min(absl::Milliseconds(100) * (1 << doublings), kMaxDelay);
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
