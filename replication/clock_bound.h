// ClockBound: SPEC R16, the maximum clock offset between this node and its peers.
//
// A peer's wall clock (Hello.wall_ms) further ahead of ours than the bound refuses the link at
// Hello; any stamp a peer sends (record version and row generation, created_time,
// dropped_time) further ahead of our wall clock than the bound is refused before anything of
// its message is applied or observed by our HLC. Without the bound one node a day ahead
// drags every HLC a day ahead after one write, and every node then loses last-writer-wins
// conflicts to stamps from a day it has not reached. A refusal is FAILED_PRECONDITION naming
// the offset; the link (or the forwarded drop) fails with it, and it is counted.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cairn/peer/v1/peer.pb.h"
#include "common/clock.h"

namespace cairn::replication {

class ClockBound {
 public:
  // `max_offset`: absl::InfiniteDuration() turns the bound off.
  ClockBound(const HybridClock* hlc, absl::Duration max_offset)
      : hlc_(hlc), max_offset_(max_offset) {}

  // How far `wall_ms` (a peer's wall clock, ms since the epoch) is ahead of ours (negative:
  // behind).
  int64_t OffsetMs(int64_t wall_ms) const;
  // The peer's Hello: refused when its clock is ahead by more than the bound. A Hello without
  // a wall clock (a peer that predates R16) passes; its stamps are still checked.
  absl::Status CheckHello(const peer::v1::Hello& hello, absl::string_view peer);
  // Every stamp of a message from `peer`, before it is applied.
  absl::Status CheckSchema(const peer::v1::DbSchema& schema, absl::string_view peer);
  absl::Status CheckBatch(const peer::v1::ChangeBatch& batch, absl::string_view peer);
  absl::Status CheckForward(const peer::v1::ForwardRequest& request, absl::string_view peer);

  uint64_t refusals() const { return refusals_.load(std::memory_order_relaxed); }
  absl::Duration max_offset() const { return max_offset_; }

 private:
  // OK when `stamp` is at most max_offset_ ahead of the wall clock now.
  absl::Status Check(Hlc stamp, absl::string_view what, absl::string_view peer);
  absl::Status Refuse(int64_t ahead_ms, absl::string_view what, absl::string_view peer);

  const HybridClock* const hlc_;
  const absl::Duration max_offset_;
  std::atomic<uint64_t> refusals_{0};
};

}  // namespace cairn::replication
