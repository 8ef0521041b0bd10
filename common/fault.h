// FaultRegistry: named fault points, one registry per node (STYLE 2.7).
//
// Production code calls CAIRN_FAULT(registry, kSomePoint) at the moments listed in
// common/fault_points.h. With nothing armed a hit costs one relaxed atomic load. Tests and
// the test-hook operations arm points with an action: delay, block until released, return an
// error, or crash the process with kInjectedCrashExitCode. In buggify mode (EnableBuggify)
// every listed point may also fire on its own, as a seed decides, so that rare interleavings
// become common; probes (Probes) say which points fired. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace cairn {

// Exit status of a process stopped by a crash fault. Distinctive so a harness can tell an
// injected crash from a real one.
inline constexpr int kInjectedCrashExitCode = 85;

struct FaultAction {
  enum class Kind { kDelay, kBlock, kError, kCrash };
  enum class Trigger { kAlways, kProbability, kNth, kOnce };

  static FaultAction Delay(absl::Duration d);
  // Parks the hitting thread until Release(point).
  static FaultAction Block();
  static FaultAction ReturnError(absl::Status status);
  // std::_Exit(kInjectedCrashExitCode) at the point: no destructors, no flush, like a kill.
  static FaultAction Crash();

  FaultAction WithProbability(double p) const;  // fires with probability p (seeded RNG)
  FaultAction OnNth(int64_t n) const;           // fires on the n-th hit only (1-based)
  FaultAction Once() const;                     // fires on the first hit, then disarms

  Kind kind = Kind::kError;
  Trigger trigger = Trigger::kAlways;
  absl::Duration delay;
  absl::Status error;
  double probability = 1.0;
  int64_t nth = 1;
};

// Parses "name=action[@p]" as given to --fault: action is `crash`, `block`, `error`,
// `error:MESSAGE` or `delay:DURATION` (absl duration syntax, "100ms"); `@p` is a probability
// (0..1] or `#n` the n-th hit. Example: "catalog.drop.after_tombstone=crash@0.5".
absl::Status ParseFaultSpec(absl::string_view spec, std::string* name, FaultAction* action);

// Buggify (FoundationDB's name for it). The seed decides which points are active in this
// run (each with probability `active_probability`) and, per active point, how often it fires
// (one of 1 %, 10 %, 50 % of its hits; a PointInfo::hot point at most 1 %). A firing is a delay
// drawn from a heavy-tailed distribution (most under a millisecond, 1 in 200 between 0.5 and
// `max_delay`), or, where the point handles errors (fault_points::PointInfo), an injected error one
// time in four, or, with `crashes`, a crash one firing in `crash_one_in`. A point armed with Set()
// acts as armed instead.
struct BuggifyOptions {
  uint64_t seed = 0;
  double active_probability = 0.5;
  absl::Duration max_delay = absl::Seconds(2);
  bool crashes = false;
  int64_t crash_one_in = 500;
};

// What one point did in this process: hits while buggify was on or the point was armed, and
// firings (of an armed action or of buggify).
struct FaultProbe {
  std::string point;
  bool active = false;  // buggify chose it for this run
  int64_t hits = 0;
  int64_t fired = 0;
  int64_t errors = 0;  // of the firings: injected errors
  int64_t delays = 0;
};

class FaultRegistry {
 public:
  explicit FaultRegistry(uint64_t seed = 0x5eed) : rng_(seed) {}
  FaultRegistry(const FaultRegistry&) = delete;
  FaultRegistry& operator=(const FaultRegistry&) = delete;

  // The point was reached: runs its action if armed. OK when nothing fires.
  absl::Status Hit(absl::string_view point) ABSL_LOCKS_EXCLUDED(mu_) {
    if (armed_.load(std::memory_order_relaxed) == 0) return absl::OkStatus();
    return HitSlow(point);
  }

  void Set(absl::string_view point, FaultAction action) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status SetFromSpec(absl::string_view spec) ABSL_LOCKS_EXCLUDED(mu_);
  // Disarms `point` and releases any thread blocked at it.
  void Clear(absl::string_view point) ABSL_LOCKS_EXCLUDED(mu_);
  void ClearAll() ABSL_LOCKS_EXCLUDED(mu_);
  // Releases threads blocked at `point` and disarms it.
  void Release(absl::string_view point) ABSL_LOCKS_EXCLUDED(mu_) { Clear(point); }

  // Waits until at least one thread is parked at a Block() point. False on timeout.
  bool WaitUntilBlocked(absl::string_view point, absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);
  // How many times an armed point was hit since it was last Set (whether or not its trigger
  // fired).
  int64_t HitCount(absl::string_view point) const ABSL_LOCKS_EXCLUDED(mu_);

  // Turns buggify on for every point in fault_points::kAll (see BuggifyOptions).
  void EnableBuggify(const BuggifyOptions& options) ABSL_LOCKS_EXCLUDED(mu_);
  bool buggify() const ABSL_LOCKS_EXCLUDED(mu_);
  // Every listed point (fired or not) and any other point hit, sorted by name.
  std::vector<FaultProbe> Probes() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Point {
    FaultAction action;
    bool armed = false;
    int64_t hits = 0;
    int blocked = 0;             // threads parked here now
    uint64_t release_epoch = 0;  // bumped by Clear(); parked threads wait for a change
  };

  // Buggify's state of one listed point.
  struct Buggified {
    bool errors = false;  // PointInfo::errors
    double fire = 0;      // probability per hit; 0: inactive
    std::mt19937_64 rng;  // seeded from the run's seed and the point's name
  };

  absl::Status HitSlow(absl::string_view point) ABSL_LOCKS_EXCLUDED(mu_);
  // Buggify's decision for one hit of `point`: nullopt to do nothing.
  std::optional<FaultAction> Buggify(Buggified& b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Point> points_ ABSL_GUARDED_BY(mu_);
  std::optional<BuggifyOptions> buggify_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Buggified> buggified_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, FaultProbe> probes_ ABSL_GUARDED_BY(mu_);
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> armed_{0};  // number of armed points; the fast-path check
};

}  // namespace cairn

// Hits a fault point of a (possibly null) registry. Compiled out without CAIRN_TEST_HOOKS.
#ifdef CAIRN_TEST_HOOKS
#define CAIRN_FAULT(registry, point) \
  ((registry) == nullptr ? ::absl::OkStatus() : (registry)->Hit(point))
#else
#define CAIRN_FAULT(registry, point) ::absl::OkStatus()
#endif
