// One copy of each write (design 0004), the sending side: which of this node's log entries a
// subscriber gets from their origin directly, so that this node need not relay them.
//
// The subscriber P advertises, per database, each origin O it is subscribed to directly
// (peer::v1::OriginAdvert): P receives from O every entry of O's log (log id L) with an
// origin sequence number above `since`, and has applied them through `seq`. This node's log
// stream to P then leaves out ("skips") an entry of O whose origin sequence number is above
// `since`: at or below `seq` P has it (covered); above it P will have it once O's link
// delivers it, and until a later advert says so the entry is *held*: its position here keeps
// the cursor P stores (ChangeBatch.cursor_seq) back, so that a resubscription of P, after a
// crash of either end, starts before it.
//
// Held entries are sent after all (a *replay*: the stream goes back to the first of them and
// sends, up to where it had been, only the entries of the replayed origins) when P withdraws
// O (its link to O ended, a full copy from O began), names another `since` (O left entries
// of its own out, ChangeBatch.origin_gap, or P subscribed to O again) or another log id, or
// when P's `seq` for O has not moved for `hold_limit` while entries are held (a link that is
// up but does not deliver). After such a timeout this node relays O again until P's `seq`
// reaches what it had read of O by then. Duplicates a replay causes are identity ties (D5).
//
// Invariants, per database:
//  (1) Every entry of this node's log through the stream position that was not sent to P
//      since its subscription is, if it is for P at all, either covered (P advertised an
//      origin sequence at least its own, with the same since and log id), held (in its
//      origin's `uncovered`), or inside a replay range still to be sent.
//  (2) CursorFor() is at most the position before the first held entry and at most the
//      stream position; it never decreases within one subscription.
//  (3) An entry whose origin sequence is 0 (unknown), or of an origin P does not advertise,
//      is never skipped.
// Not thread-safe: owned by one LogSender.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cairn/peer/v1/peer.pb.h"

namespace cairn::replication {

// How long held entries may wait for the subscriber's advert to move before they are sent.
inline constexpr absl::Duration kHoldLimit = absl::Milliseconds(500);

class OriginHolds {
 public:
  using Clock = std::function<absl::Time()>;
  explicit OriginHolds(absl::Duration hold_limit = kHoldLimit, Clock clock = absl::Now);

  // A new subscription: nothing is advertised, held or replayed.
  void Clear();
  // The subscriber's advert (a change since its previous one).
  void Advertise(const peer::v1::OriginAdvert& advert);
  // Sends what has been held for longer than the limit (see above).
  void Expire();
  // True once the subscriber has sent an advert on this subscription: batches carry
  // cursor_seq from then on.
  bool advertised() const { return advertised_; }
  // Entries are held somewhere (the caller looks again within the hold limit).
  bool holding() const;
  // The (database, origin) pairs whose entries Classify may skip now: advertised as direct
  // and not relayed again after a timeout.
  absl::flat_hash_set<std::pair<std::string, std::string>> Skipping() const;

  // A full copy of `db` starts: it carries every row, so nothing of `db` stays held.
  void ResetDatabase(const std::string& db);
  // A read of `db`'s log starts. Set after a replay was decided: the stream goes back, and
  // this is the sequence number it has been sent through from now on (before the replay's
  // first entry).
  std::optional<uint64_t> Begin(const std::string& db);

  enum class Verdict {
    kSend,    // send it as before (if it is for the peer at all)
    kSkip,    // the peer gets it from its origin
    kIgnore,  // inside a replay range and not of a replayed origin: dealt with before
  };
  // Entry `seq` of this node's log of `db` (read in order), of `origin` at (origin_seq,
  // origin_log_id). `self`: this node's own write (never skipped).
  Verdict Classify(const std::string& db, uint64_t seq, absl::string_view origin, bool self,
                   uint64_t origin_seq, uint64_t origin_log_id);
  // The stream of `db` has been sent through `last`: entries skipped up to it are held (the
  // uncovered ones), skipped ones after it were not read after all (the batch ended early).
  void Commit(const std::string& db, uint64_t last);
  // The cursor for the subscriber to store, the stream of `db` being sent through `sent`.
  uint64_t CursorFor(const std::string& db, uint64_t sent) const;

 private:
  struct Held {
    uint64_t log_id = 0;
    uint64_t since = 0;
    uint64_t seq = 0;
    bool direct = false;
    bool timed_out = false;  // relaying again until seq reaches resume_at
    uint64_t resume_at = 0;
    uint64_t highest_read = 0;  // origin sequence of the newest entry of it read here
    absl::Time stalled_since;   // when seq last moved, or the first entry was held
    std::deque<std::pair<uint64_t, uint64_t>> uncovered;  // (seq here, origin seq)
  };
  struct Pending {
    uint64_t seq;
    std::string origin;
    uint64_t origin_seq;
  };
  struct Db {
    uint64_t pos = 0;   // the stream's position (last Commit, or a rewind)
    uint64_t high = 0;  // the furthest position it reached
    uint64_t replay_through = 0;
    absl::flat_hash_map<std::string, uint64_t> replay_from;  // origin -> first seq to resend
    std::optional<uint64_t> rewind_to;
    absl::btree_map<std::string, Held> origins;
    std::vector<Pending> pending;  // skipped by Classify since the last Commit
  };
  // Sends `origin`'s held entries of `db` again (see the class comment).
  void Replay(Db& db, const std::string& origin, Held& held);
  // The advert's origin sequence moved to `seq`: held entries it covers are released.
  void Cover(Held& held, uint64_t seq);

  const absl::Duration hold_limit_;
  const Clock clock_;
  bool advertised_ = false;
  absl::btree_map<std::string, Db> dbs_;
};

}  // namespace cairn::replication
