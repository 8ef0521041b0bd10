// Subscriber: a change subscription read as a client reads it (SPEC §8): a plain TCP
// connection to a node's operations port, `GET /subscribe/<db>/<table>[/<id>]` with the node's
// credentials (W1: the same Basic auth as `POST /`), the chunked answer de-chunked and its
// Server-Sent Events parsed as they arrive. The framing is node/subscription_wire.h's.
//
// Reads wait with a deadline (poll), never sleep. Received bytes are buffered and parsed
// incrementally (no block is scanned twice), and a request may leave the data unparsed, so
// one thread can follow many subscriptions at a benchmark's rates (tens of thousands of events
// per second each).
//
// Not thread-safe: one thread reads a Subscriber at a time.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cluster-tests/harness/cairnd_process.h"
#include "nlohmann/json.hpp"

namespace cairn::harness {

// What to subscribe to (W1's path and query).
struct SubscribeRequest {
  std::string database, table;
  // Set: one record's feed (/subscribe/<db>/<table>/<id>). An integer is written as a number;
  // a string that would read as one is written quoted, as subscription_wire.h asks.
  std::optional<nlohmann::json> id;
  std::string since;                        // W4: resume after this cursor; empty: none
  bool current = true;                      // W2: the state first (false: changes from now on)
  std::vector<std::string> get_attributes;  // empty: every attribute
  std::string last_event_id;                // sent as the Last-Event-ID header; empty: none
  // False: each event's data is kept as text (SseEvent::text) and not parsed, which is most
  // of a reader's cost; for benchmarks that only count.
  bool parse_data = true;
  int receive_buffer = 0;  // SO_RCVBUF in bytes; 0: the kernel's
};

// One Server-Sent Event.
struct SseEvent {
  std::string name;     // `event:`; "message" when it had none
  std::string id;       // `id:` (the cursor of a change or of caught_up); empty: none
  nlohmann::json data;  // `data:` parsed; null when it is not JSON or was not parsed
  std::string text;     // `data:` as sent, when the request asked not to parse it
};

// The sequence number of a cursor (`<seq>-<log id>-<generation>`, design 0012), or nullopt
// when `cursor` is not one. Cursors of one node's log order its changes (W3, W4).
std::optional<uint64_t> CursorSeq(absl::string_view cursor);

class Subscriber {
 public:
  // Connects to `node` (plain HTTP only: UNIMPLEMENTED for a node serving HTTPS) and sends the
  // request with the endpoint's credentials (none when it has no password). The answer is read
  // by the calls below; an answer other than 200 is their error.
  static absl::StatusOr<std::unique_ptr<Subscriber>> Open(const OpsEndpoint& node,
                                                          const SubscribeRequest& request);
  ~Subscriber();  // Close()
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  // Appends to `out` the events that have arrived, waiting until `deadline` for at least one
  // (a past deadline: only what the socket already holds). Returns early when the stream ends.
  // OK with nothing appended when none came in time. An error when the node answered other
  // than 200 (UNAVAILABLE for 503, else FAILED_PRECONDITION, naming the status and body) or
  // closed the connection before answering (UNAVAILABLE).
  absl::Status Read(absl::Time deadline, std::vector<SseEvent>* out);
  // The events up to and including the first named `name`; those after it stay for the next
  // read. DEADLINE_EXCEEDED or FAILED_PRECONDITION (the stream ended first) name the events
  // that came instead.
  absl::StatusOr<std::vector<SseEvent>> ReadUntil(absl::string_view name, absl::Time deadline);
  // Waits for the stream's first bytes, the `: subscribed` comment: from then on the stream
  // holds every change committed after the feed opened (W2). Events that come meanwhile stay
  // for the next read.
  absl::Status AwaitOpened(absl::Time deadline);
  // The client leaves: the connection is closed; later reads return nothing.
  void Close();

  // The socket, for a reader that polls many subscribers (-1 once closed).
  int fd() const { return fd_; }
  const std::string& target() const { return target_; }
  // The answer's status: 0 until its head came, -1 when it was not HTTP.
  int http_status() const { return status_; }
  const std::string& head() const { return head_; }
  // The `: subscribed` comment came, before any event.
  bool opened() const { return opened_; }
  // The stream is over: its closing chunk came, or the connection closed.
  bool ended() const { return ended_; }
  int keepalives() const { return keepalives_; }  // `: keepalive` comments so far
  uint64_t events() const { return events_; }     // events parsed so far
  uint64_t bytes() const { return bytes_; }       // bytes received so far

 private:
  // Where the decoder is in the answer.
  enum class Framing { kHead, kChunkSize, kChunkData, kChunkEnd, kLength, kToClose, kDone };

  Subscriber(std::string target, bool parse_data);
  // Waits until the socket is readable or `deadline`, then receives what it holds. False when
  // nothing came in time or the connection closed (then ended_).
  bool Receive(absl::Time deadline);
  // Moves the body bytes of in_ into body_, following the answer's framing.
  void Decode();
  void ParseHead();
  // Read without pending_: receives and parses until at least one event is appended to
  // `out`, the `: subscribed` comment came, the stream ended, or `deadline`.
  absl::Status Fill(absl::Time deadline, std::vector<SseEvent>* out);
  // Parses the complete event blocks of body_ into `out`.
  void ParseEvents(std::vector<SseEvent>* out);
  void ParseBlock(absl::string_view block, std::vector<SseEvent>* out);
  // The error of an answer other than 200.
  absl::Status Refused() const;

  const std::string target_;
  const bool parse_data_;
  int fd_ = -1;
  std::unique_ptr<char[]> scratch_;  // recv's buffer
  std::string in_;                   // received, not yet decoded from in_pos_ on
  size_t in_pos_ = 0;
  std::string body_;              // decoded, not yet parsed from block_start_ on
  size_t block_start_ = 0;        // where the next event block starts in body_
  size_t search_from_ = 0;        // where to look for its end ("\n\n"); before it there is none
  std::deque<SseEvent> pending_;  // parsed, not yet returned (ReadUntil, AwaitOpened)
  Framing framing_ = Framing::kHead;
  uint64_t left_ = 0;  // bytes of the current chunk, or of a Content-Length body, to come
  int status_ = 0;
  std::string head_;
  bool opened_ = false, ended_ = false, any_event_ = false;
  int keepalives_ = 0;
  uint64_t events_ = 0, bytes_ = 0;
};

}  // namespace cairn::harness
