// SubscriptionHub: the node's change subscriptions (SPEC §8, design 0012).
#include "node/subscription_hub.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status.h"
#include "node/access.h"
#include "node/subscription_wire.h"
#include "spdlog/spdlog.h"

namespace cairn::node {

using catalog::FeedEnd;
using catalog::FeedEvent;
using nlohmann::json;

// The commit listener outlives the hub (the change log keeps it): it reaches the hub through
// this, cleared when the hub goes.
struct SubscriptionHub::Hook {
  absl::Mutex mu;
  SubscriptionHub* hub ABSL_GUARDED_BY(mu) = nullptr;
};

SubscriptionHub::SubscriptionHub(catalog::LocalNode* node, SubscriptionOptions options)
    : node_(node), options_(std::move(options)), hook_(std::make_shared<Hook>()) {
  {
    absl::MutexLock lock(&hook_->mu);
    hook_->hub = this;
  }
  node_->log->AddCommitListener([hook = hook_](absl::string_view, const std::string*) {
    absl::ReaderMutexLock lock(&hook->mu);
    if (hook->hub != nullptr) hook->hub->Wake();
  });
  thread_ = std::thread([this] { Loop(); });
}

SubscriptionHub::~SubscriptionHub() {
  Shutdown(absl::ZeroDuration());
  absl::MutexLock lock(&hook_->mu);
  hook_->hub = nullptr;
}

absl::Status SubscriptionHub::Subscribe(absl::string_view target, absl::string_view last_event_id,
                                        const Caller& caller, std::shared_ptr<EventSink> sink,
                                        EventFraming framing) {
  // A request without credentials may only ask for tokens; a refresh token only refreshes.
  if (caller.kind == Caller::Kind::kAnonymous) return Error(ErrorCode::kUnauthorized, "Must login");
  if (caller.kind == Caller::Kind::kRefreshToken) {
    return Error(ErrorCode::kUnauthorized, "invalid token");
  }
  const std::string user = caller.Who();
  CAIRN_RETURN_IF_ERROR(Reserve(user));
  auto s = std::make_shared<Subscription>();
  s->user = user;
  s->sink = std::move(sink);
  s->framing = framing;
  absl::StatusOr<std::unique_ptr<catalog::ChangeFeed>> feed =
      OpenFeed(target, last_event_id, caller, &s->in_state);
  absl::Status status = feed.status();
  if (status.ok() && !s->sink->Append(OpenedBytes(framing))) {
    status = Error(ErrorCode::kRequestTimeout, "the client left");
  }
  if (status.ok()) {
    s->feed = *std::move(feed);
    s->last_write = absl::Now();
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      status = Error(ErrorCode::kShuttingDown, "the node is shutting down");
    } else {
      added_.push_back(std::move(s));
    }
  }
  if (!status.ok()) {
    Release(user);
    return status;
  }
  Wake();
  return absl::OkStatus();
}

absl::Status SubscriptionHub::Reserve(const std::string& user) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return Error(ErrorCode::kShuttingDown, "the node is shutting down");
  int& mine = per_user_[user];
  absl::Status refused;
  if (open_ >= options_.max_subscriptions) {
    refused = Error(ErrorCode::kTooManySubscriptions,
                    absl::StrCat("too many subscriptions on this node (--max-subscriptions ",
                                 options_.max_subscriptions, ")"));
  } else if (mine >= options_.max_per_user) {
    refused =
        Error(ErrorCode::kTooManySubscriptions,
              absl::StrCat("too many subscriptions of this user (--max-subscriptions-per-user ",
                           options_.max_per_user, ")"));
  }
  if (!refused.ok()) {
    if (mine == 0) per_user_.erase(user);
    ++refused_;
    return refused;
  }
  ++mine;
  ++open_;
  return absl::OkStatus();
}

void SubscriptionHub::Release(const std::string& user) {
  absl::MutexLock lock(&mu_);
  --open_;
  auto it = per_user_.find(user);
  if (it != per_user_.end() && --it->second == 0) per_user_.erase(it);
}

absl::StatusOr<std::unique_ptr<catalog::ChangeFeed>> SubscriptionHub::OpenFeed(
    absl::string_view target, absl::string_view last_event_id, const Caller& caller,
    bool* with_state) {
  CAIRN_ASSIGN_OR_RETURN(catalog::FeedOptions o, ParseSubscribeTarget(target, last_event_id));
  const Access access(caller);
  if (!access.unrestricted()) {  // U4, as a search checks it (OpsApi::CheckRead)
    absl::Status allowed = access.Table(o.database, o.table, {Action::kRead});
    if (allowed.ok()) {
      absl::StatusOr<catalog::TableRef> def =
          node_->catalog->Snapshot()->FindTable(o.database, o.table);
      allowed = def.ok() ? access.Read(**def, &o.get_attributes, {}) : def.status();
    }
    if (GetErrorCode(allowed) == ErrorCode::kForbidden && options_.audit != nullptr) {
      options_.audit->Refused(caller, "subscribe", allowed.message());
    }
    CAIRN_RETURN_IF_ERROR(allowed);
  }
  *with_state = o.current && !o.since.has_value();
  return catalog::ChangeFeed::Open(node_, std::move(o));
}

void SubscriptionHub::Wake() {
  if (woken_.exchange(true)) return;
  absl::MutexLock lock(&mu_);  // its release has the hub thread look at woken_ again
}

void SubscriptionHub::Loop() {
  absl::Time next_tick = absl::Now() + kTick;
  bool more = false;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (!more) {
        mu_.AwaitWithDeadline(absl::Condition(
                                  +[](SubscriptionHub* h) ABSL_EXCLUSIVE_LOCKS_REQUIRED(h->mu_) {
                                    return h->stopping_ || h->woken_.load() || !h->added_.empty();
                                  },
                                  this),
                              next_tick);
      }
      if (stopping_) return;
      for (auto& s : added_) serving_.push_back(std::move(s));
      added_.clear();
    }
    woken_.store(false);  // before the round: a commit during it wakes the next
    const absl::Time now = absl::Now();
    const bool tick = now >= next_tick;
    if (tick) next_tick = now + kTick;
    more = false;
    for (size_t i = 0; i < serving_.size();) {
      const Round r = Serve(*serving_[i], tick ? now : absl::InfinitePast());
      if (r != Round::kEnded) {
        more = more || r == Round::kMore;
        ++i;
        continue;
      }
      Release(serving_[i]->user);
      serving_[i] = std::move(serving_.back());
      serving_.pop_back();
    }
  }
}

SubscriptionHub::Round SubscriptionHub::Serve(Subscription& s, absl::Time tick) {
  const Round r = s.in_state ? ServeState(s) : ServeChanges(s);
  if (r != Round::kIdle || tick == absl::InfinitePast()) return r;
  // A tick: a keepalive to a quiet connection; a stalled one is found gone (EventSink).
  const bool quiet = s.sink->Waiting() == 0;
  if (quiet && tick - s.last_write < options_.keepalive) return r;
  return Write(s, quiet ? KeepaliveBytes(s.framing) : "") ? r : Round::kEnded;
}

SubscriptionHub::Round SubscriptionHub::ServeState(Subscription& s) {
  for (int reads = 0; reads < kReadsPerRound && !s.feed->StateDone(); ++reads) {
    if (!HasRoom(s)) return Round::kIdle;  // paced by its reader: the state is a snapshot
    // A read's events go to the connection in one piece: one wake-up and one write of it,
    // not one per event.
    std::string out;
    uint64_t rows = 0;
    absl::StatusOr<FeedEnd> end = s.feed->ReadState(
        [&](FeedEvent e) {
          out += ChangeEvent(s.framing, e, /*state=*/true);
          ++rows;
        },
        kStateRowsPerRead);
    if (!Write(s, out)) return Round::kEnded;
    events_ += rows;
    if (!end.ok()) return EndWithError(s, end.status());
    if (*end == FeedEnd::kDropped) return End(s, "dropped", json::object());
  }
  if (!s.feed->StateDone()) return Round::kMore;
  s.in_state = false;
  return Write(s, CaughtUpEvent(s.framing, s.feed->position())) ? Round::kMore : Round::kEnded;
}

SubscriptionHub::Round SubscriptionHub::ServeChanges(Subscription& s) {
  std::vector<FeedEvent> events;
  for (int reads = 0; reads < kReadsPerRound; ++reads) {
    // Full: what this read finds for the subscriber is not written (invariant 3); it resumes
    // from before it (W5).
    const bool full = !HasRoom(s);
    const catalog::FeedCursor before = s.feed->position();
    events.clear();
    absl::StatusOr<FeedEnd> end = s.feed->Next(kEntriesPerRead, &events);
    if (!end.ok()) return EndWithError(s, end.status());
    if (full && !events.empty()) {
      ++overflows_;
      return End(s, "overflow", {{"cursor", before.ToString()}});
    }
    std::string out;  // in one piece, as the state's
    for (const FeedEvent& e : events) out += ChangeEvent(s.framing, e, /*state=*/false);
    if (!Write(s, out)) return Round::kEnded;
    events_ += events.size();
    if (*end == FeedEnd::kResyncRequired) {
      ++resyncs_;
      return End(s, "resync_required", {{"cursor", s.feed->position().ToString()}});
    }
    if (*end == FeedEnd::kDropped) return End(s, "dropped", json::object());
    if (s.feed->CaughtUp()) return Round::kIdle;
  }
  return Round::kMore;
}

bool SubscriptionHub::HasRoom(Subscription& s) {
  if (s.sink->Waiting() < options_.buffer_bytes) return true;
  s.sink->WakeWhenTaken([hook = hook_] {
    absl::ReaderMutexLock lock(&hook->mu);
    if (hook->hub != nullptr) hook->hub->Wake();
  });
  return false;
}

bool SubscriptionHub::Write(Subscription& s, absl::string_view piece) {
  if (!s.sink->Append(piece)) {
    s.sink->WakeWhenTaken(nullptr);
    return false;
  }
  if (!piece.empty()) s.last_write = absl::Now();
  return true;
}

SubscriptionHub::Round SubscriptionHub::End(Subscription& s, absl::string_view name,
                                            const json& data) {
  Write(s, EndEvent(s.framing, name, data));
  s.sink->WakeWhenTaken(nullptr);
  s.sink->End();
  return Round::kEnded;
}

SubscriptionHub::Round SubscriptionHub::EndWithError(Subscription& s, const absl::Status& error) {
  spdlog::warn("a change subscription ended with an error: {}", error.ToString());
  return End(
      s, "error",
      {{"error", std::string(error.message())}, {"code", ErrorCodeName(GetErrorCode(error))}});
}

void SubscriptionHub::Shutdown(absl::Duration flush) {
  std::vector<std::shared_ptr<Subscription>> ended;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    ended = std::move(added_);  // never served
    added_.clear();
  }
  if (thread_.joinable()) thread_.join();
  // The thread is gone: its subscriptions are this thread's now.
  for (auto& s : serving_) ended.push_back(std::move(s));
  serving_.clear();
  for (const std::shared_ptr<Subscription>& s : ended) {
    // Mid-state there is no cursor to offer: resuming from the snapshot would skip the rows
    // not sent yet.
    End(*s, "shutdown",
        s->in_state ? json::object() : json{{"cursor", s->feed->position().ToString()}});
    Release(s->user);
  }
  const absl::Time deadline = absl::Now() + flush;
  auto waiting = [&ended] {
    for (const auto& s : ended) {
      if (s->sink->Waiting() > 0) return true;
    }
    return false;
  };
  while (absl::Now() < deadline && waiting()) absl::SleepFor(absl::Milliseconds(5));
}

int SubscriptionHub::open() const {
  absl::MutexLock lock(&mu_);
  return open_;
}

}  // namespace cairn::node
