// Audit: operations refused to a caller's role (SPEC U8), logged with the user, the operation
// and the source address, at most one line per source every kLogEvery (with how many were
// refused meanwhile), and counted for /metrics. Failed logins are LoginGuard's (http_auth.h).
// Thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "node/authenticator.h"

namespace cairn::node {

class Audit {
 public:
  static constexpr absl::Duration kLogEvery = absl::Seconds(10);
  // Sources remembered at most; past it the map starts over.
  static constexpr size_t kMaxSources = 10'000;

  explicit Audit(std::string node_name) : node_name_(std::move(node_name)) {}

  // `caller` was refused `operation` (403); `why` is the answer's message and details.
  void Refused(const Caller& caller, absl::string_view operation, absl::string_view why)
      ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t refused_total() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Source {
    absl::Time logged_at = absl::InfinitePast();
    uint64_t unlogged = 0;
  };
  const std::string node_name_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Source> sources_ ABSL_GUARDED_BY(mu_);
  uint64_t refused_total_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace cairn::node
