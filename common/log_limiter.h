// LogLimiter: which of many events from one source earn a log line (SPEC U8's "rate-limited
// per source", and the peer port's refusals, issue 41): at most one line per source every
// `every`, carrying how many events went unlogged since, and a count of all of them for
// /metrics. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace cairn {

class LogLimiter {
 public:
  // Sources remembered at most; past it the map starts over (a flood from that many sources
  // gets a line each, once).
  static constexpr size_t kMaxSources = 10'000;

  explicit LogLimiter(absl::Duration every) : every_(every) {}

  // Counts an event from `source`. When a line is due: how many earlier events from it went
  // unlogged (0 or more); nullopt: log nothing for this one.
  std::optional<uint64_t> Event(absl::string_view source, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t total() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Source {
    absl::Time logged_at = absl::InfinitePast();
    uint64_t unlogged = 0;
  };
  const absl::Duration every_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Source> sources_ ABSL_GUARDED_BY(mu_);
  uint64_t total_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace cairn
