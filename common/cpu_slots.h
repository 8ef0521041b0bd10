// CpuSlots: how many long-running, low-priority tasks (streamed searches, issue 41) use a CPU
// at once. A task holds a slot while it computes, gives it up while it waits on something
// else (its reader), and hands it to a waiting task after each Deadline::kProbeEvery of its
// own work (Deadline::SetPause; the time it waited does not count), so that they take turns.
//
// Why a count and not only a priority (decision 134): stream threads run at SCHED_IDLE, but on
// this kind of machine a thread woken for a request still waits up to a scheduler tick (4 ms)
// in about 0.1 % of wake-ups whenever every CPU runs such a thread (measured: a ping-pong's
// p99.9 0.1 ms with one busy idle-priority thread on two CPUs, 3.9 ms with two). Keeping one
// CPU free of them keeps the node's own requests off that tail.
//
// Invariants:
//  (1) At most `slots` tasks hold a slot at any time.
//  (2) Slots are granted in the order tasks asked for them (waiters_ is that queue), so a
//      task that yields goes behind every task already waiting; a free slot is never left
//      unheld while a task waits.
// Thread-safe.
#pragma once

#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/deadline.h"

namespace cairn {

class CpuSlots {
 public:
  // `slots` 0: one fewer than the machine's CPUs, at least one.
  explicit CpuSlots(int slots);
  CpuSlots(const CpuSlots&) = delete;
  CpuSlots& operator=(const CpuSlots&) = delete;

  int slots() const { return slots_; }

  // Waits for a slot: OK once held; REQUEST_TIMEOUT, holding none, when `deadline` passes
  // or its client leaves first (asked every deadline.probe_every() while it waits).
  absl::Status Acquire(Deadline& deadline) ABSL_LOCKS_EXCLUDED(mu_);
  // Gives a held slot back.
  void Release() ABSL_LOCKS_EXCLUDED(mu_);
  // For a task that holds a slot: when another task waits, gives the slot back and waits for
  // its turn again (invariant 2). The status as Acquire's; OK at once when nobody waits.
  absl::Status Yield(Deadline& deadline) ABSL_LOCKS_EXCLUDED(mu_);

  // Tasks holding a slot, and waiting for one (for tests and /metrics).
  int held() const ABSL_LOCKS_EXCLUDED(mu_);
  int waiting() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Waiter {
    bool granted = false;
  };
  // Hands free slots to the longest waiting tasks (invariant 2).
  void GrantLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits up to one deadline.probe_every() for `w`'s slot. True: granted, or gave up
  // (dequeued, `*gave_up` set) because the deadline passed or was cancelled.
  bool AwaitTurn(Waiter* w, const Deadline& deadline, absl::Status* gave_up)
      ABSL_LOCKS_EXCLUDED(mu_);

  const int slots_;
  mutable absl::Mutex mu_;
  int held_ ABSL_GUARDED_BY(mu_) = 0;  // invariant 1: held_ <= slots_
  std::deque<Waiter*> waiters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn
