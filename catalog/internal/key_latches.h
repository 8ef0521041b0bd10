// KeyLatches: striped per-key locks for the record write path.
//
// A record write reads the stored version of each key, decides (insert/update/LWW), and
// writes the record with its index changes. Two writers of one key must not interleave
// between that read and that write, or an index entry of the loser would survive (D3). Each
// key hashes to one of N mutexes; a writer locks the stripes of all its keys in ascending
// order (no deadlock) and holds them until its batch commits. Writers of different keys
// rarely share a stripe, so they proceed in parallel and RocksDB group-commits them.
//
// This is the one lock held across a (possibly synced) RocksDB write, deliberately: it guards
// only the keys being written. Thread-safe.
//
// The stripes are std::mutex, not absl::Mutex: thread-safety annotations cannot follow a
// dynamic set of stripes anyway, and absl's deadlock detector (on in Debian's abseil build)
// records a lock-graph edge per stripe pair, which cost 55% of the write path's CPU in a
// 100-record batch (measured with perf on bench/record_bench).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"

namespace cairn::catalog::internal {

class KeyLatches {
 public:
  explicit KeyLatches(size_t stripes = 4096)
      : stripes_(stripes == 0 ? 1 : stripes), mutexes_(new std::mutex[stripes_]) {}

  class Guard {
   public:
    Guard() = default;
    Guard(Guard&& o) noexcept : owner_(o.owner_), held_(std::move(o.held_)) { o.owner_ = nullptr; }
    Guard& operator=(Guard&& o) noexcept {
      Release();
      owner_ = o.owner_;
      held_ = std::move(o.held_);
      o.owner_ = nullptr;
      return *this;
    }
    ~Guard() { Release(); }
    void Release() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      if (owner_ == nullptr) return;
      for (auto it = held_.rbegin(); it != held_.rend(); ++it) owner_->mutexes_[*it].unlock();
      owner_ = nullptr;
      held_.clear();
    }

   private:
    friend class KeyLatches;
    KeyLatches* owner_ = nullptr;
    std::vector<size_t> held_;  // ascending stripe numbers
  };

  // Locks the stripes of every key (duplicates allowed).
  Guard Lock(const std::vector<std::string>& keys) ABSL_NO_THREAD_SAFETY_ANALYSIS;

 private:
  const size_t stripes_;
  std::unique_ptr<std::mutex[]> mutexes_;
};

}  // namespace cairn::catalog::internal
