// Deadline: when a request's work must stop, because its time is up or its client left
// (issue 41). The work checks it where it already checks a table's drop (C9: at every row a
// scan reads), so a request never outlives its deadline, nor its client, by more than one
// check. Cancel() from any thread; Check() and Tighten() from the one thread that runs the
// work at a time (the request's worker, then its stream's producer).
#pragma once

#include <atomic>
#include <functional>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace cairn {

class Deadline {
 public:
  // How often Check() asks `client_present` whether the client is still there, and pauses.
  static constexpr absl::Duration kProbeEvery = absl::Milliseconds(20);

  // `client_present`, when set, says whether the request's client is still connected; it is
  // called by Check() at most every `probe_every` (kProbeEvery but in tests).
  explicit Deadline(absl::Time at, std::function<bool()> client_present = nullptr,
                    absl::Duration probe_every = kProbeEvery)
      : at_(at), client_present_(std::move(client_present)), probe_every_(probe_every) {}
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

  absl::Time at() const { return at_; }
  absl::Duration probe_every() const { return probe_every_; }
  // A request's own, shorter deadline (never a later one).
  void Tighten(absl::Time at) {
    if (at < at_) at_ = at;
  }
  // The client left, or the server stops the request.
  void Cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

  // Where long work gives way to other work: called by Check() every probe_every() of work
  // (the time it blocks does not count), first probe_every() after it is set, on the thread that
  // runs the work, which sets it before and clears it after (a stream's CPU slot,
  // common/cpu_slots.h). A non-OK status stops the work.
  void SetPause(std::function<absl::Status()> pause);
  // Asks now whether the client is still there (when `client_present` can tell), cancelling
  // when it is not: for work that waits outside Check() (a stream queued for a CPU slot). On
  // the thread that runs the work. False: cancelled.
  bool ProbeClient();

  // OK while the work may go on; REQUEST_TIMEOUT saying why not.
  absl::Status Check();
  // The same without asking whether the client is there: for work that, once its request was
  // received whole, should happen whether or not its client waits for the answer (a write).
  absl::Status CheckTime() const;

 private:
  absl::Time at_;
  const std::function<bool()> client_present_;
  const absl::Duration probe_every_;
  std::function<absl::Status()> pause_;
  absl::Time next_probe_ = absl::InfinitePast();
  std::atomic<bool> cancelled_{false};
};

}  // namespace cairn
