// One copy of each write (design 0004), the subscribing side: per database, the peers this
// node receives directly as origins (ReceiverState::Direct of each claimed subscription), and
// what each link has told its peer of them (OriginAdvert). Thread-safe; its lock is a leaf.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/synchronization/mutex.h"
#include "cairn/peer/v1/peer.pb.h"
#include "replication/record_stream.h"

namespace cairn::replication {

// (database, origin)
using OriginKey = std::pair<std::string, std::string>;
using OriginMap = absl::btree_map<OriginKey, DirectOrigin>;

class OriginBook {
 public:
  // The claimed subscription to `origin` applied a batch of `db`; `direct` is what it now
  // allows (nullopt: nothing). True when that changed the book; `*urgent` (when given) then
  // says whether more than the origin's `seq` moved (as in Diff).
  bool Update(const std::string& origin, const std::string& db,
              const std::optional<DirectOrigin>& direct, bool* urgent = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The subscription to `origin` ended. True when that changed the book.
  bool Withdraw(const std::string& origin) ABSL_LOCKS_EXCLUDED(mu_);
  OriginMap Snapshot() const ABSL_LOCKS_EXCLUDED(mu_);

  // What to tell `peer` after having told it `*told` (updated): every origin but the peer
  // itself, changes and withdrawals only. Empty: nothing changed. `*urgent` (when given):
  // something other than an origin's `seq` moved (a withdrawal, a new origin, since or log
  // id): the peer may be holding entries it must now send.
  static peer::v1::OriginAdvert Diff(const OriginMap& now, const std::string& peer, OriginMap* told,
                                     bool* urgent = nullptr);

 private:
  mutable absl::Mutex mu_;
  OriginMap origins_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn::replication
