// A change subscription over WebSocket (SPEC W1, decision 140): the connection an HTTP session
// hands over once a `GET /subscribe/...` that asked for the upgrade has passed its credentials
// and opened its subscription. Only node/http_session.cc and node/http_websocket.cc include
// this.
//
// The connection then belongs to a WebSocketSession, which
//  - answers the upgrade (101), then sends each event line of the subscription's ReplyStream
//    as one text message (EventFraming::kWebSocket), one message in flight at a time, taking
//    more from the stream only when every line taken is sent (so "taken" follows the reader,
//    and the hub's buffer rule, W5, sees a slow one);
//  - reads what the client sends and throws its messages away (at most kMaxClientMessage
//    bytes each; a larger one closes the connection with 1009): Beast answers its pings and
//    its close;
//  - pings after kIdle / 2 without a byte from the client and closes after kIdle, and closes
//    when a message is not taken within the write timeout: a subscriber that is gone, or
//    reads nothing (even one that still sends), is found and its subscription ends;
//  - when the stream ends well (its last event is an end event, W6), closes with 1000; when it
//    is cut, closes the socket at once.
// It holds the session's admission (HttpShared::Admit) until it ends, is registered for
// HttpShared::CancelAll, and is never evicted (its client has passed a credential check).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "boost/beast/http/message.hpp"
#include "boost/beast/http/string_body.hpp"
#include "node/http_session.h"

namespace cairn::node::http_internal {

// Where a subscription's ReplyStream wakes its connection: whichever object serves the
// connection now (its HTTP session, then the WebSocketSession it was handed to). Called, set
// and cleared on the connection's strand only; empty once the connection closed.
using StrandPump = std::shared_ptr<std::function<void()>>;

// Serves `request` (an upgrade, its subscription open and writing into `events`) on `stream`
// from now on. Call on the connection's strand, with nothing of the connection in flight; the
// caller gives up the connection's admission (the WebSocketSession releases it) and points
// `pump` at nothing it holds. `started`: the request's first byte, for the request metrics.
template <class Stream>
void StartWebSocket(std::shared_ptr<HttpShared> shared, Stream stream,
                    boost::beast::http::request<boost::beast::http::string_body> request,
                    std::shared_ptr<ReplyStream> events, StrandPump pump, std::string client,
                    absl::Time started);

}  // namespace cairn::node::http_internal
