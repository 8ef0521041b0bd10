// The HTTP form of a change subscription (SPEC W1, design 0012): the target of a
// `GET /subscribe/<db>/<table>[/<id>]` read into the feed it asks for, and each event written
// as Server-Sent Events text. Every input is a client's: anything malformed is BAD_REQUEST
// naming it, never a crash.
//
// The events (each ends with a blank line):
//   id: <cursor>                      (changes and caught_up; not the state's rows)
//   event: put | delete
//   data: {"op", "id", "record", "__updatedtime__", "origin", "cursor"}  (no cursor in state rows)
//
//   event: caught_up                  (after the state: what follows are changes)
//   event: resync_required | dropped | overflow | shutdown | error   (the last event)
//   : keepalive                       (a comment, while nothing else is sent)
// Over WebSocket the same events are JSON text messages (EventFraming::kWebSocket).
// A state row carries no `id:` line and no "cursor": a client resuming mid-state from one
// (Last-Event-ID, `cairn watch --since`) would resume after the snapshot and miss the rows not
// yet sent.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "catalog/change_feed.h"
#include "nlohmann/json.hpp"

namespace cairn::node {

// Whether an HTTP target names the subscription endpoint (its path is /subscribe or below).
bool IsSubscribeTarget(absl::string_view target);

// The feed a target asks for. Path segments and query values are percent-decoded. The id
// segment is a number when it is a signed 64-bit integer as JSON writes it (`/t/42`), a
// string otherwise; a
// string of digits is written quoted (`/t/%2242%22`). Query: `since=<cursor>` (W4),
// `current=true|false`, `get_attributes=a,b`; any other parameter, or one given twice, is
// BAD_REQUEST. `last_event_id` (the Last-Event-ID header, empty: none) resumes as `since` does;
// `since` wins.
absl::StatusOr<catalog::FeedOptions> ParseSubscribeTarget(absl::string_view target,
                                                          absl::string_view last_event_id);

// How a subscription's events are written on its connection (decision 140).
enum class EventFraming {
  // text/event-stream, the format above.
  kSse,
  // WebSocket: each event is one line of JSON, the SSE event's data with its name added as
  // "event" ({"event":"put","op":"put","id":...,"cursor":...}); the connection sends each line
  // as one text message. No opening or keepalive bytes: the connection's pings keep it alive.
  kWebSocket,
};

// One change, or one row of the state (`state`: no id line, no cursor).
std::string ChangeEvent(EventFraming framing, const catalog::FeedEvent& event, bool state);
// The state is all sent; `position` is where the changes start.
std::string CaughtUpEvent(EventFraming framing, const catalog::FeedCursor& position);
// An event that ends the stream: `name` with `data` (an object) as its JSON.
std::string EndEvent(EventFraming framing, absl::string_view name, const nlohmann::json& data);
// The first bytes of an opened subscription, and what an idle one is sent now and then.
absl::string_view OpenedBytes(EventFraming framing);
absl::string_view KeepaliveBytes(EventFraming framing);

}  // namespace cairn::node
