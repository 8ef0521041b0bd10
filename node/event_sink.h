// EventSink: the connection end of a change subscription (SPEC §8, node/subscription_hub.h),
// what the hub writes a subscriber's events into. The HTTP server's implementation is its
// streamed-answer queue (http_internal::ReplyStream); tests use their own. Nothing here
// blocks: a subscriber that reads slowly shows as bytes waiting, and the hub decides (W5).
#pragma once

#include <cstddef>
#include <functional>

#include "absl/strings/string_view.h"

namespace cairn::node {

class EventSink {
 public:
  virtual ~EventSink() = default;

  // Bytes written and not yet taken by the connection.
  virtual size_t Waiting() const = 0;
  // Appends `piece` (may be empty) whatever is waiting. False once the connection is gone, or
  // has taken nothing for its write timeout while bytes waited: stop writing.
  virtual bool Append(absl::string_view piece) = 0;
  // Calls `wake` once, without the sink's lock, the next time the connection takes bytes
  // (replacing a `wake` set before and not yet called).
  virtual void WakeWhenTaken(std::function<void()> wake) = 0;
  // The stream is complete: what waits is sent, then the answer ends.
  virtual void End() = 0;
};

}  // namespace cairn::node
