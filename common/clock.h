// Time sources: the injectable wall clock (Clock) and the hybrid logical clock (HybridClock,
// SPEC §1) that stamps every record version, created_time and dropped_time.
// Both are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace cairn {

// Wall time. Production uses SystemClock; tests inject a ManualClock (tests/testing).
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() = 0;
};

class SystemClock final : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
  // A process-wide instance, never destroyed.
  static SystemClock* Default();
};

// The system clock shifted by an offset that may change at any time: a test hook's clock
// faults (a node's clock ahead, behind, or jumping; issue 19). Thread-safe.
class OffsetClock final : public Clock {
 public:
  absl::Time Now() override {
    return absl::Now() + absl::Nanoseconds(offset_ns_.load(std::memory_order_relaxed));
  }
  void set_offset(absl::Duration offset) {
    offset_ns_.store(absl::ToInt64Nanoseconds(offset), std::memory_order_relaxed);
  }
  absl::Duration offset() const {
    return absl::Nanoseconds(offset_ns_.load(std::memory_order_relaxed));
  }

 private:
  std::atomic<int64_t> offset_ns_{0};
};

// A 64-bit hybrid logical clock value: physical milliseconds since the Unix epoch in the high
// 48 bits, a logical counter in the low 16 (SPEC §1). Comparing two values as integers orders
// them in time.
using Hlc = uint64_t;
inline constexpr Hlc kMaxHlc = std::numeric_limits<Hlc>::max();

// SPEC C16: the stamp right after `t`, for derivations such as C3's "marker + 1" and C7's
// "created_time + 1". INTERNAL, with a message naming `what`, when `t` is kMaxHlc: no later
// stamp exists, and wrapping to 0 would make the derived stamp the oldest of all.
absl::StatusOr<Hlc> HlcAfter(Hlc t, absl::string_view what);

// Issues strictly increasing HLC values and moves past every value it is told about.
//
// Invariants:
//  (1) Now() returns a value greater than every earlier Now() result and every value given to
//      Observe(), so whatever this node does after learning of an event is stamped after it.
//  (2) The physical part never runs behind the wall clock it reads.
//  (3) Stamps never wrap (SPEC C16). Once the clock has issued or observed kMaxHlc it can
//      issue nothing greater, so Now() refuses (INTERNAL) rather than repeat or wrap a value:
//      two writes with one version and origin would be dropped by peers as duplicates (D5).
//      Only a peer stamp at the end of time can bring it there; R16 bounds peer stamps.
// When the logical counter overflows it carries into the physical part: the clock runs up to
// a few milliseconds ahead of the wall clock under extreme load, never backwards.
class HybridClock {
 public:
  explicit HybridClock(Clock* wall) : wall_(wall) {}

  // A fresh stamp, greater than every earlier one (invariants (1)-(3)).
  absl::StatusOr<Hlc> Now();
  // Advances the clock past `remote` (a version or stamp received from a peer).
  void Observe(Hlc remote);
  // The last value issued or observed, without advancing.
  Hlc Last() const { return last_.load(std::memory_order_acquire); }
  // The wall clock this HLC reads (SPEC R16 measures peers' offsets against it).
  absl::Time WallNow() const { return wall_->Now(); }

  static constexpr int kLogicalBits = 16;
  static constexpr Hlc Make(uint64_t physical_ms, uint64_t logical) {
    return (physical_ms << kLogicalBits) | (logical & 0xFFFF);
  }
  static constexpr uint64_t PhysicalMs(Hlc t) { return t >> kLogicalBits; }

 private:
  Clock* const wall_;
  std::atomic<Hlc> last_{0};  // monotonic; see invariant (1)
};

}  // namespace cairn
