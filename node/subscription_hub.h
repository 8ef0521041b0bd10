// SubscriptionHub: the node's change subscriptions (SPEC §8, design 0012). Each is a
// catalog::ChangeFeed and the connection it writes to (EventSink); one thread serves them all,
// woken by the change log's commits, by a connection taking bytes it waited on, and by a tick.
// The HTTP endpoint (GET /subscribe/..., node/http_session.cc) hands each new one here.
//
// A round of one subscription writes what its buffer has room for: state rows (W2) until the
// state is sent, then `caught_up`, then the changes its feed reads. It never waits: a
// subscriber whose unsent bytes reach the buffer while changes are due is ended with
// `overflow` and the cursor to resume from (W5); during the state it is only paced, since the
// state is a snapshot that writers do not add to.
//
// Invariants:
//  (1) Nothing here blocks a writer or waits for a subscriber: the commit listener sets a flag
//      (and takes mu_ only when it was clear), and sinks never block (EventSink).
//  (2) A subscription's events are written in its feed's order, the state before every change
//      (W2, W3); the last one written is an end event (resync_required, dropped, overflow,
//      shutdown, error), unless its connection went first.
//  (3) A feed is read only while less than options.buffer_bytes wait in its sink, and a read
//      adds at most kEntriesPerRead entries' events (or kStateRowsPerRead rows): a subscriber
//      that never reads holds at most the buffer plus one read (W5).
//  (4) `open_` counts the subscriptions admitted and not yet ended, at most
//      options.max_subscriptions; `per_user_` the same per user, at most options.max_per_user.
//
// Lock order: mu_ is a leaf. Subscription objects are the hub thread's alone once added
// (Shutdown touches them after joining it).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "catalog/change_feed.h"
#include "catalog/local_node.h"
#include "node/audit.h"
#include "node/authenticator.h"
#include "node/event_sink.h"
#include "node/subscription_wire.h"

namespace cairn::node {

struct SubscriptionOptions {
  size_t buffer_bytes = 1 << 20;  // --subscription-buffer: unsent bytes before overflow (W5)
  int max_subscriptions = 1024;   // --max-subscriptions: open at once on the node
  int max_per_user = 128;         // --max-subscriptions-per-user
  absl::Duration keepalive = absl::Seconds(15);  // a comment after this long without a byte
  Audit* audit = nullptr;                        // refusals (U8); null: only answered
};

class SubscriptionHub {
 public:
  static constexpr size_t kEntriesPerRead = 256;
  static constexpr size_t kStateRowsPerRead = 256;
  // Reads of one subscription in one round, so one busy subscriber does not hold the others.
  static constexpr int kReadsPerRound = 8;
  static constexpr absl::Duration kTick = absl::Milliseconds(200);

  // Starts the thread and listens to `node`'s commits; `node` outlives the hub, and the hub
  // outlives every sink it is given (the HTTP server stops first).
  SubscriptionHub(catalog::LocalNode* node, SubscriptionOptions options);
  ~SubscriptionHub();  // Shutdown(0)
  SubscriptionHub(const SubscriptionHub&) = delete;
  SubscriptionHub& operator=(const SubscriptionHub&) = delete;

  // Opens the subscription a `GET target` asks for (subscription_wire.h), with the request's
  // Last-Event-ID header, for `caller`, whose role must be able to read the table (U4; the
  // attributes it cannot read are left out of every event). OK: the hub now writes its events
  // into `sink` in `framing`, which already holds its first bytes (if the framing has any). Else
  // nothing was written: BAD_REQUEST, TABLE_NOT_FOUND, FORBIDDEN, UNAUTHORIZED (a refresh token),
  // TOO_MANY_SUBSCRIPTIONS (503), SHUTTING_DOWN.
  absl::Status Subscribe(absl::string_view target, absl::string_view last_event_id,
                         const Caller& caller, std::shared_ptr<EventSink> sink,
                         EventFraming framing = EventFraming::kSse) ABSL_LOCKS_EXCLUDED(mu_);

  // W6: ends every subscription with `event: shutdown` and its cursor, then waits up to
  // `flush` for their connections to take what waits. Later subscriptions are refused.
  void Shutdown(absl::Duration flush) ABSL_LOCKS_EXCLUDED(mu_);

  // For /metrics.
  int open() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t events_sent() const { return events_.load(); }
  uint64_t overflows() const { return overflows_.load(); }
  uint64_t resyncs() const { return resyncs_.load(); }
  uint64_t refused() const { return refused_.load(); }

 private:
  struct Subscription {
    std::unique_ptr<catalog::ChangeFeed> feed;
    std::shared_ptr<EventSink> sink;
    EventFraming framing = EventFraming::kSse;
    std::string user;
    bool in_state = false;  // the state (W2) is being sent; `caught_up` follows it
    absl::Time last_write;  // for the keepalive
  };
  // What a round of one subscription left: nothing to do until a wake-up, more to do at once,
  // or the subscription ended.
  enum class Round { kIdle, kMore, kEnded };
  struct Hook;

  // Admits `user` under invariant (4), or says why not.
  absl::Status Reserve(const std::string& user) ABSL_LOCKS_EXCLUDED(mu_);
  void Release(const std::string& user) ABSL_LOCKS_EXCLUDED(mu_);
  // The feed `caller` may read (U4), with the role's attributes; `*with_state`: it sends the
  // state first.
  absl::StatusOr<std::unique_ptr<catalog::ChangeFeed>> OpenFeed(absl::string_view target,
                                                                absl::string_view last_event_id,
                                                                const Caller& caller,
                                                                bool* with_state);
  // The commit listener and the sinks' wake-up: invariant (1).
  void Wake() ABSL_LOCKS_EXCLUDED(mu_);
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  // One round of `s` (hub thread): the state, or the changes, as its buffer has room; `tick`
  // (InfinitePast: none): the time of a tick, when an idle connection gets its keepalive.
  Round Serve(Subscription& s, absl::Time tick);
  Round ServeState(Subscription& s);
  Round ServeChanges(Subscription& s);
  // Appends `piece`; false when the connection is gone.
  bool Write(Subscription& s, absl::string_view piece);
  // Writes the end event `name` and ends the stream.
  Round End(Subscription& s, absl::string_view name, const nlohmann::json& data);
  Round EndWithError(Subscription& s, const absl::Status& error);
  // Whether `s`'s sink has room for a read (invariant 3); arms the wake-up when it has none.
  bool HasRoom(Subscription& s);

  catalog::LocalNode* const node_;
  const SubscriptionOptions options_;
  const std::shared_ptr<Hook> hook_;  // how the commit listener and the sinks reach the hub

  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<Subscription>> added_ ABSL_GUARDED_BY(mu_);  // for the thread
  int open_ ABSL_GUARDED_BY(mu_) = 0;                                      // invariant (4)
  absl::flat_hash_map<std::string, int> per_user_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> woken_{false};  // invariant (1)

  std::vector<std::shared_ptr<Subscription>> serving_;  // the hub thread's
  std::thread thread_;

  std::atomic<uint64_t> events_{0}, overflows_{0}, resyncs_{0}, refused_{0};
};

}  // namespace cairn::node
