// Audit: operations refused to a caller's role (SPEC U8), logged with the user, the operation
// and the source address, at most one line per source every kLogEvery (with how many were
// refused meanwhile), and counted for /metrics. Failed logins are LoginGuard's (http_auth.h).
// Thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/log_limiter.h"
#include "node/authenticator.h"

namespace cairn::node {

class Audit {
 public:
  static constexpr absl::Duration kLogEvery = absl::Seconds(10);

  explicit Audit(std::string node_name) : node_name_(std::move(node_name)), log_(kLogEvery) {}

  // `caller` was refused `operation` (403); `why` is the answer's message and details.
  void Refused(const Caller& caller, absl::string_view operation, absl::string_view why);
  uint64_t refused_total() const { return log_.total(); }

 private:
  const std::string node_name_;
  LogLimiter log_;  // per source address
};

}  // namespace cairn::node
