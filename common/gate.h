// Gate: counts operations in flight against an object so its owner can refuse new ones and
// wait for the old ones before tearing it down (cf. seastar::gate in redpanda, the wait loop
// in leveldb's ~DBImpl). Used as the admission gate of a table generation (SPEC C9).
// Thread-safe.
#pragma once

#include <atomic>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace cairn {

// Invariants:
//  (1) Once Close() has begun, Enter() never succeeds again.
//  (2) Close() returns OK only when no token is outstanding; with (1), nothing can be in
//      flight afterwards.
class Gate {
 public:
  // Proof of admission. Move-only; destroying it leaves the gate.
  class Token {
   public:
    Token() = default;
    Token(Token&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    Token& operator=(Token&& other) noexcept;
    Token(const Token&) = delete;
    Token& operator=(const Token&) = delete;
    ~Token() { Reset(); }

    bool valid() const { return gate_ != nullptr; }
    void Reset();

   private:
    friend class Gate;
    explicit Token(Gate* gate) : gate_(gate) {}
    Gate* gate_ = nullptr;
  };

  Gate() = default;
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  ~Gate();

  // A token, or UNAVAILABLE once Close() has begun.
  absl::StatusOr<Token> Enter() ABSL_LOCKS_EXCLUDED(mu_);

  // Refuses new entries, then blocks until every token is gone or `deadline` passes
  // (DEADLINE_EXCEEDED; the gate stays closed, so a retry only waits again). Idempotent.
  absl::Status Close(absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);

  // True once Close() has begun. One relaxed load: long scans poll it to cancel themselves.
  bool closing() const { return closing_flag_.load(std::memory_order_relaxed); }
  int in_flight() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Leave() ABSL_LOCKS_EXCLUDED(mu_);
  bool DrainedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ == 0; }

  mutable absl::Mutex mu_;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;     // outstanding tokens, >= 0
  bool closing_ ABSL_GUARDED_BY(mu_) = false;  // never goes back to false
  std::atomic<bool> closing_flag_{false};      // mirrors closing_ for lock-free polling
};

}  // namespace cairn
