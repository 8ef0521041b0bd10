// ReplyStream (node/http_session.h): a streamed answer's queue between its producer and its
// connection.
#include <algorithm>

#include "absl/cleanup/cleanup.h"
#include "absl/time/clock.h"
#include "common/status.h"
#include "node/http_session.h"

namespace cairn::node::http_internal {

bool ReplyStream::Write(absl::string_view piece) {
  bool wake = false;
  {
    absl::MutexLock lock(&mu_);
    auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return cancelled_ || queued_.size() < kMaxQueued;
    };
    if (room()) window_start_ = absl::InfinitePast();  // not waiting on the reader
    while (!room()) {
      const absl::Time now = absl::Now();
      if (now >= deadline_ || now - last_taken_ >= stall_timeout_ || !ReadFastEnough(now)) {
        cancelled_ = true;
        break;
      }
      mu_.AwaitWithDeadline(
          absl::Condition(&room),
          std::min({deadline_, last_taken_ + stall_timeout_, window_start_ + kRateWindow}));
    }
    if (cancelled_) return false;
    queued_.append(piece.data(), piece.size());
    if (!scheduled_) scheduled_ = wake = true;
  }
  if (wake) wake_();
  return true;
}

bool ReplyStream::ReadFastEnough(absl::Time now) {
  if (window_start_ == absl::InfinitePast()) {
    window_start_ = now;
    taken_in_window_ = 0;
    return true;
  }
  if (now - window_start_ < kRateWindow) return true;
  const bool fast =
      taken_in_window_ >= static_cast<uint64_t>(absl::ToDoubleSeconds(now - window_start_) *
                                                static_cast<double>(kMinReadRate));
  window_start_ = now;
  taken_in_window_ = 0;
  return fast;
}

bool ReplyStream::Full() const {
  absl::MutexLock lock(&mu_);
  return !cancelled_ && queued_.size() >= kMaxQueued;
}

void ReplyStream::Finish(absl::Status status) {
  bool wake = false;
  {
    absl::MutexLock lock(&mu_);
    finished_ = true;
    // A stream Append already cut stays cut: the hub's End after it must not make it whole.
    if (status_.ok()) status_ = std::move(status);
    if (!scheduled_) scheduled_ = wake = true;
  }
  if (wake) wake_();
}

size_t ReplyStream::Waiting() const {
  absl::MutexLock lock(&mu_);
  return cancelled_ ? 0 : queued_.size();
}

bool ReplyStream::Append(absl::string_view piece) {
  bool wake = false, ok = true;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    if (!cancelled_ && !queued_.empty() &&
        now - std::max(last_taken_, waiting_since_) >= stall_timeout_) {
      // The connection has taken nothing for the stall timeout: the answer ends cut, and the
      // connection closes once its write in flight ends (or times out).
      cancelled_ = finished_ = true;
      status_ = Error(ErrorCode::kRequestTimeout, "the client took nothing for the write timeout");
      if (!scheduled_) scheduled_ = wake = true;
    }
    if (cancelled_) {
      ok = false;
    } else if (!piece.empty()) {
      if (queued_.empty()) waiting_since_ = now;
      queued_.append(piece.data(), piece.size());
      if (!scheduled_) scheduled_ = wake = true;
    }
  }
  if (wake) wake_();
  return ok;
}

void ReplyStream::WakeWhenTaken(std::function<void()> wake) {
  absl::MutexLock lock(&mu_);
  taken_wake_ = std::move(wake);
}

ReplyStream::Taken ReplyStream::Take() {
  std::function<void()> taken_wake;
  absl::Cleanup call_wake = [&taken_wake] {
    if (taken_wake) taken_wake();  // after the lock below is released
  };
  absl::MutexLock lock(&mu_);
  Taken t;
  if (queued_.size() <= kTakePiece) {
    t.data.swap(queued_);
  } else {
    t.data.assign(queued_, 0, kTakePiece);
    queued_.erase(0, kTakePiece);
  }
  t.finished = finished_ && queued_.empty();
  t.status = status_;
  if (!t.data.empty()) {
    last_taken_ = absl::Now();
    taken_in_window_ += t.data.size();
    taken_wake.swap(taken_wake_);
  }
  if (t.data.empty() && !t.finished) scheduled_ = false;
  return t;
}

void ReplyStream::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
}

}  // namespace cairn::node::http_internal
