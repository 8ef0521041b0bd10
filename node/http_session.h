// The pieces of HttpServer that live below its interface: what its connections share
// (HttpShared: options, credentials, the worker pool, the connection registry and counters),
// one connection (StartSession: a request at a time, from its first byte to its answer), and
// the hand-off of a streamed answer from the worker that produces it to the connection that
// sends it (ReplyStream, node/reply_stream.cc). Only node/http_server.cc, node/http_session.cc,
// node/http_websocket.{h,cc} and node/reply_stream.cc include this.
//
// Lock order: HttpShared::mu, then ReplyStream::mu_ (never held together today).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/ssl/context.hpp"
#include "boost/asio/thread_pool.hpp"
#include "common/cpu_slots.h"
#include "common/deadline.h"
#include "node/authenticator.h"
#include "node/event_sink.h"
#include "node/http_auth.h"
#include "node/http_server.h"

namespace cairn::node::http_internal {

// Who a connection counts against for --max-connections-per-client and the login guard: an
// IPv4 address (an IPv4-mapped IPv6 one as IPv4), or an IPv6 address's /64 prefix, the block
// one host or one customer is given (RFC 6177): counting IPv6 addresses one by one would give
// a client 2^64 of them.
std::string ClientKey(const boost::asio::ip::address& address);

// A connection as the registry sees it: something Stop() can close and Admit can evict.
class Connection {
 public:
  virtual ~Connection() = default;
  // A reference that keeps the connection alive; null once it is being destroyed.
  virtual std::shared_ptr<Connection> Pin() = 0;
  // From any thread (on a pinned connection): closes it if it waits for a request; one whose
  // operation runs or whose answer is on its way closes after it.
  virtual void Cancel() = 0;
  // From any thread (on a pinned connection that HttpShared::Admit marked kEvicted): closes it
  // unless a request of it is already under way (which then closes it: see waiting_since_ns).
  virtual void Evict() = 0;

  // What HttpShared::Admit reads (under its lock) to choose whom to evict; written by the
  // connection. `proven`: a request on it passed the credential check. `waiting_since_ns`:
  // since when it waits for a request's first byte or is reading its headers (accept time for
  // the first); 0 while a request is under way; kEvicted once Admit took its slot (set by
  // compare-and-swap from the value Admit saw, so a request cannot start unseen: the
  // connection swaps it to 0 when a request's headers are in and closes if it finds kEvicted).
  static constexpr int64_t kEvicted = -1;
  std::atomic<bool> proven{false};
  std::atomic<int64_t> waiting_since_ns{absl::ToUnixNanos(absl::Now())};
};

struct HttpShared {
  HttpShared(OperationHandler h, Metrics* m, HttpServerOptions o);

  const HttpServerOptions options;
  const OperationHandler handler;
  Metrics* const metrics;
  Authenticator* const auth;  // null: no credentials asked (HttpServerOptions)
  LoginGuard logins;
  boost::asio::thread_pool workers;
  // Password hashes (argon2id, ~40 ms each): threads of their own, one per core (at most 4),
  // so a flood of logins never takes the workers; `hashing` counts those queued or running,
  // at most kMaxPendingHashes (more are refused at once).
  static constexpr int kMaxPendingHashes = 64;
  boost::asio::thread_pool hashers;
  // Producers of streamed answers (guarantee 8): threads of their own, so that clients that
  // read slowly hold these, never the workers. More streams than threads wait their turn
  // (within their deadline).
  static constexpr int kStreamThreads = 64;
  // ... and they run at options.stream_priority (idle: SCHED_IDLE; low: nice +kStreamNice):
  // a search the limits allow may still scan a table for up to its deadline, and 64 of them
  // would otherwise take the cores from every point operation (issue 41, decision 133).
  static constexpr int kStreamNice = 10;
  boost::asio::thread_pool streamers;
  // ... and at most options.stream_cpus of them compute at once (decision 134): a thread
  // woken for a request waits up to a scheduler tick when every CPU runs a stream thread,
  // whatever its priority.
  CpuSlots stream_cpus;
  std::atomic<int> hashing{0};
  std::atomic<bool> draining{false};

  // Counters for /metrics.
  std::atomic<uint64_t> refused_connections{0};   // over a cap
  std::atomic<uint64_t> timeouts{0};              // a request or an idle connection timed out
  std::atomic<uint64_t> malformed{0};             // refused by the parser or the framing rules
  std::atomic<uint64_t> internal_errors{0};       // exceptions out of an operation (500)
  std::atomic<uint64_t> cancelled_operations{0};  // stopped by their deadline (guarantee 8)
  std::atomic<uint64_t> evicted_connections{0};   // closed to admit another (guarantee 2)

  // An operation stopped by its deadline or its client's leaving: counted, and logged at most
  // once per kCancelLogEvery for the whole server (a client can cause any number of them).
  static constexpr absl::Duration kCancelLogEvery = absl::Seconds(10);
  void TimedOut(const std::string& address, const std::string& operation);
  std::atomic<int64_t> last_cancel_log_ns{0};
  std::atomic<uint64_t> unlogged_cancels{0};

  // Admission (guarantee 2), for a connection from `client` (ClientKey) when `max_total`
  // connections are the most the process can hold (options.max_connections or less).
  //  - Over the client's cap (options.max_connections_per_client): kRefused.
  //  - Within the last ReservedSlots(max_total) slots, the longest-waiting connection that
  //    has never passed a credential check is evicted and its slot given to this one.
  //  - Otherwise, when the reserved slots are all that is left, kHealthOnly: the connection
  //    may ask for /health or /metrics, once (so monitoring reaches a node whose every slot
  //    is held by authenticated clients); kRefused when they are taken too.
  // Release undoes an admission; `taken_over`: the connection was evicted, its slot already
  // handed on. Register/Unregister keep the set Stop() closes and Admit evicts from.
  enum class Admission { kRefused, kAdmitted, kHealthOnly };
  static int ReservedSlots(int max_total) { return std::clamp(max_total / 64, 1, 8); }
  Admission Admit(const std::string& client, int max_total) ABSL_LOCKS_EXCLUDED(mu);
  void Release(const std::string& client, bool taken_over) ABSL_LOCKS_EXCLUDED(mu);
  void Register(Connection* c) ABSL_LOCKS_EXCLUDED(mu);
  void Unregister(Connection* c) ABSL_LOCKS_EXCLUDED(mu);
  // Cancels every registered connection. The connections are pinned under the lock and
  // cancelled (and possibly destroyed, which unregisters them) after it.
  void CancelAll() ABSL_LOCKS_EXCLUDED(mu);
  int connections() const ABSL_LOCKS_EXCLUDED(mu);

  // Operations running on a worker (BeginDrain/Stop wait for them).
  std::atomic<int> running{0};

 private:
  // The registered connection that has waited longest without passing a credential check,
  // marked kEvicted and its slot released; null when there is none.
  std::shared_ptr<Connection> TakeOverLongestWaiting() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  mutable absl::Mutex mu;
  int connections_ ABSL_GUARDED_BY(mu) = 0;
  absl::flat_hash_map<std::string, int> per_client_ ABSL_GUARDED_BY(mu);
  absl::flat_hash_set<Connection*> registered_ ABSL_GUARDED_BY(mu);
};

// Serves one accepted, admitted connection until it closes; `tls` null for plain HTTP. The
// session releases its admission when it ends. `address` names the client in logs and audit;
// `client` is its ClientKey; `health_only`: admitted as HttpShared::Admission::kHealthOnly.
void StartSession(std::shared_ptr<HttpShared> shared, boost::asio::ip::tcp::socket socket,
                  std::string address, std::string client, bool health_only,
                  boost::asio::ssl::context* tls);

// A streamed answer between the thread producing it and the connection sending it. The
// producer blocks while kMaxQueued bytes wait to be sent (so a slow reader costs bounded
// memory and work: the socket holds at most kNotSentLowWater more, HttpServer) and stops once
// the connection is gone, has taken nothing for the stall timeout, has taken less than
// kMinReadRate over a kRateWindow in which it had bytes waiting, or the deadline passed (so
// the RocksDB snapshot a search holds goes with it). The connection takes at most kTakePiece
// at a time, so "taken" follows the reader's pace and the rate decides, not one large write.
// A change subscription writes through the EventSink side instead, which never blocks (the
// subscription hub bounds what waits) and ends the stream once the connection took nothing for
// the stall timeout while bytes waited.
class ReplyStream : public EventSink {
 public:
  static constexpr size_t kMaxQueued = 256 << 10;
  static constexpr size_t kTakePiece = 64 << 10;
  static constexpr uint64_t kMinReadRate = 16 << 10;  // bytes per second
  static constexpr absl::Duration kRateWindow = absl::Seconds(10);

  // `wake` is called (from the producer, without the lock) when there is something to send
  // and nothing scheduled to send it; it must arrange for Take() to run on the connection.
  ReplyStream(std::function<void()> wake, absl::Duration stall_timeout, absl::Time deadline)
      : wake_(std::move(wake)), stall_timeout_(stall_timeout), deadline_(deadline) {}

  // Producer side. False once the connection is gone, too slow, or the deadline passed: stop
  // writing.
  bool Write(absl::string_view piece) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether a Write now would wait for the reader. Only the producer adds to the queue, so
  // a false stays false until its next Write.
  bool Full() const ABSL_LOCKS_EXCLUDED(mu_);
  // The producer is done (a stream already cut by Append keeps that error); an error: the
  // answer is cut short (the client sees a body that does
  // not end well-formed, never a complete one with records missing), or, when nothing was
  // written yet, answered as a plain error.
  void Finish(absl::Status status) ABSL_LOCKS_EXCLUDED(mu_);

  // Connection side. What is queued (up to kTakePiece of it), and whether the producer
  // finished and this is the last of it (then its status).
  // When nothing is queued and the producer has not finished, the stream goes idle: the
  // next Write wakes it.
  struct Taken {
    std::string data;
    bool finished = false;
    absl::Status status;
  };
  Taken Take() ABSL_LOCKS_EXCLUDED(mu_);
  // The connection is gone: every Write from now on returns false.
  void Cancel() ABSL_LOCKS_EXCLUDED(mu_);

  // EventSink (a subscription's producer side). Waiting() is 0 once cancelled.
  size_t Waiting() const override ABSL_LOCKS_EXCLUDED(mu_);
  bool Append(absl::string_view piece) override ABSL_LOCKS_EXCLUDED(mu_);
  void WakeWhenTaken(std::function<void()> wake) override ABSL_LOCKS_EXCLUDED(mu_);
  void End() override { Finish(absl::OkStatus()); }

 private:
  // Whether the reader kept up over the window that just ended (starts the next one).
  bool ReadFastEnough(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::function<void()> wake_;
  const absl::Duration stall_timeout_;
  const absl::Time deadline_;
  mutable absl::Mutex mu_;
  std::string queued_ ABSL_GUARDED_BY(mu_);
  bool scheduled_ ABSL_GUARDED_BY(mu_) = true;  // a Take() is due; the connection starts one
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  // The read rate: bytes taken since the window began (a window starts when bytes wait).
  absl::Time last_taken_ ABSL_GUARDED_BY(mu_) = absl::Now();
  absl::Time window_start_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  uint64_t taken_in_window_ ABSL_GUARDED_BY(mu_) = 0;
  // Append's stall rule: since when bytes have waited (set when an Append finds none).
  absl::Time waiting_since_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::function<void()> taken_wake_ ABSL_GUARDED_BY(mu_);  // WakeWhenTaken
};

}  // namespace cairn::node::http_internal
