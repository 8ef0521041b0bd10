// ForegroundActivity and BackgroundPace: background work (verifies, SPEC R18; strips of a
// dropped attribute, C15) that gives way to the node's foreground work (decision 156).
//
// Foreground work (a client's request on the operations API, a peer's batch applied) marks
// the node busy in its ForegroundActivity. Background work asks a BackgroundPace when its next
// rows may run: at the configured rate while the node has been quiet for `quiet_after`, at
// `busy_share` of it while the node is busy. On a machine whose cores the foreground keeps
// full, the background then takes a tenth of what a fixed rate took, and still runs at the
// full rate the rest of the time.
//
// Invariants:
//  (1) Over any interval a pace grants at most rate x interval units, plus one reservation's:
//      the flag stays the bound R18 and C15 promise, busy or not.
//  (2) A pace with a rate grants busy_share x rate > 0 units a second however busy the node
//      stays, so a verify or a strip always finishes.
// Thread-safe. pace_mu_ is a leaf.
#pragma once

#include <atomic>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace cairn {

// When the node last did foreground work. Note() is on every request's path: one relaxed load,
// and a store at most once a millisecond per thread that sees a stale time.
class ForegroundActivity {
 public:
  void Note(absl::Time now) {
    const int64_t ns = absl::ToUnixNanos(now);
    if (ns - last_ns_.load(std::memory_order_relaxed) >= kResolutionNs) {
      last_ns_.store(ns, std::memory_order_relaxed);
    }
  }
  absl::Time last() const { return absl::FromUnixNanos(last_ns_.load(std::memory_order_relaxed)); }

 private:
  static constexpr int64_t kResolutionNs = 1'000'000;
  std::atomic<int64_t> last_ns_{0};
};

struct BackgroundPaceOptions {
  uint64_t rate = 0;        // units a second at most; 0: no limit
  double busy_share = 1.0;  // of `rate` while the node is busy; in (0, 1]
  // Null: the node is never busy (the full rate always).
  const ForegroundActivity* activity = nullptr;
  // The node is busy until this long after its last foreground work.
  absl::Duration quiet_after = absl::Milliseconds(100);
};

class BackgroundPace {
 public:
  explicit BackgroundPace(BackgroundPaceOptions options);
  BackgroundPace(const BackgroundPace&) = delete;
  BackgroundPace& operator=(const BackgroundPace&) = delete;

  // Reserves `units` and returns the time they may start (`now` or later; `now` when the pace
  // has no rate), at the full rate or the busy share as `busy` says. `now` is on a clock that
  // never goes back (Wait's), so a wall clock stepped back does not stall the pace.
  absl::Time Reserve(uint64_t units, absl::Time now, bool busy) ABSL_LOCKS_EXCLUDED(pace_mu_);
  // Reserve now (busy as Busy(absl::Now()) says), then sleeps until the start in steps of at
  // most 50 ms. Returns the first error of `check`, asked before every step and once more at
  // the start (a shutdown, a drop, a cancelled call must not wait for the pace).
  absl::Status Wait(uint64_t units, absl::FunctionRef<absl::Status()> check);

  // Whether the node counts as busy at `now` (the wall clock, as ForegroundActivity's).
  bool Busy(absl::Time now) const;
  // Units reserved so far (for /metrics and tests).
  uint64_t units_reserved() const { return reserved_.load(std::memory_order_relaxed); }

 private:
  const BackgroundPaceOptions options_;
  std::atomic<uint64_t> reserved_{0};
  absl::Mutex pace_mu_;
  absl::Time next_ ABSL_GUARDED_BY(pace_mu_) = absl::InfinitePast();  // the next free start
};

}  // namespace cairn
