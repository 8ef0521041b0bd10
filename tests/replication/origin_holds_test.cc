// OriginHolds (design 0004, one copy of each write): what a relay leaves out of its stream to
// a peer that gets an origin directly, and what it sends after all.
#include "replication/origin_holds.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/testing/testing.h"

namespace cairn::replication {
namespace {

using Verdict = OriginHolds::Verdict;

constexpr char kDb[] = "d";
constexpr uint64_t kLogA = 0xA;

peer::v1::OriginAdvert Advert(const std::string& origin, uint64_t since, uint64_t seq,
                              bool direct = true, uint64_t log_id = kLogA) {
  peer::v1::OriginAdvert a;
  peer::v1::OriginAdvert::Origin* o = a.add_origins();
  o->set_database(kDb);
  o->set_origin(origin);
  o->set_log_id(log_id);
  o->set_since(since);
  o->set_seq(seq);
  o->set_direct(direct);
  return a;
}

struct FakeClock {
  absl::Time now = absl::UnixEpoch();
  OriginHolds::Clock fn() {
    return [this] { return now; };
  }
};

TEST(OriginHoldsTest, WithoutAnAdvertNothingIsSkipped) {
  OriginHolds holds;
  EXPECT_EQ(holds.Classify(kDb, 1, "a", false, 5, kLogA), Verdict::kSend);
  holds.Commit(kDb, 1);
  EXPECT_FALSE(holds.advertised());
  EXPECT_EQ(holds.CursorFor(kDb, 1), 1u);
}

TEST(OriginHoldsTest, AnAdvertisedOriginIsSkippedAndHeldUntilCovered) {
  FakeClock clock;
  OriginHolds holds(kHoldLimit, clock.fn());
  holds.Advertise(Advert("a", /*since=*/10, /*seq=*/12));
  // Our log: 1 = a:11 (covered), 2 = own, 3 = a:13 (held), 4 = a:9 (before since: sent),
  // 5 = a:14 under another log id (sent), 6 = b:3 (not advertised: sent).
  EXPECT_EQ(holds.Classify(kDb, 1, "a", false, 11, kLogA), Verdict::kSkip);
  EXPECT_EQ(holds.Classify(kDb, 2, "r", true, 0, 0), Verdict::kSend);
  EXPECT_EQ(holds.Classify(kDb, 3, "a", false, 13, kLogA), Verdict::kSkip);
  EXPECT_EQ(holds.Classify(kDb, 4, "a", false, 9, kLogA), Verdict::kSend);
  EXPECT_EQ(holds.Classify(kDb, 5, "a", false, 14, 0xB), Verdict::kSend);
  EXPECT_EQ(holds.Classify(kDb, 6, "b", false, 3, kLogA), Verdict::kSend);
  EXPECT_EQ(holds.Classify(kDb, 7, "a", false, 0, kLogA), Verdict::kSend);  // unknown
  holds.Commit(kDb, 7);
  EXPECT_TRUE(holds.holding());
  EXPECT_EQ(holds.CursorFor(kDb, 7), 2u) << "the peer's cursor stops before the held entry";
  holds.Advertise(Advert("a", 10, 13));
  EXPECT_FALSE(holds.holding());
  EXPECT_EQ(holds.CursorFor(kDb, 7), 7u);
}

TEST(OriginHoldsTest, AWithdrawalReplaysTheHeldEntriesOfThatOriginOnly) {
  FakeClock clock;
  OriginHolds holds(kHoldLimit, clock.fn());
  holds.Advertise(Advert("a", 0, 0));
  holds.Advertise(Advert("b", 0, 0));
  // 1 = a:1, 2 = own, 3 = b:1, 4 = a:2: all of a and b held.
  EXPECT_EQ(holds.Classify(kDb, 1, "a", false, 1, kLogA), Verdict::kSkip);
  EXPECT_EQ(holds.Classify(kDb, 2, "r", true, 0, 0), Verdict::kSend);
  EXPECT_EQ(holds.Classify(kDb, 3, "b", false, 1, kLogA), Verdict::kSkip);
  EXPECT_EQ(holds.Classify(kDb, 4, "a", false, 2, kLogA), Verdict::kSkip);
  holds.Commit(kDb, 4);
  holds.Advertise(Advert("a", 0, 0, /*direct=*/false));
  std::optional<uint64_t> rewind = holds.Begin(kDb);
  ASSERT_TRUE(rewind.has_value());
  EXPECT_EQ(*rewind, 0u);
  EXPECT_EQ(holds.Classify(kDb, 1, "a", false, 1, kLogA), Verdict::kSend);
  EXPECT_EQ(holds.Classify(kDb, 2, "r", true, 0, 0), Verdict::kIgnore) << "sent before";
  EXPECT_EQ(holds.Classify(kDb, 3, "b", false, 1, kLogA), Verdict::kIgnore) << "still held";
  EXPECT_EQ(holds.Classify(kDb, 4, "a", false, 2, kLogA), Verdict::kSend);
  EXPECT_EQ(holds.Classify(kDb, 5, "a", false, 3, kLogA), Verdict::kSend) << "withdrawn";
  holds.Commit(kDb, 5);
  EXPECT_EQ(holds.CursorFor(kDb, 5), 2u) << "b's entry is still held";
  EXPECT_FALSE(holds.Begin(kDb).has_value());
}

TEST(OriginHoldsTest, ANewSinceSendsWhatWasHeld) {
  // The origin left entries of its own out (origin_gap): the peer now counts on it only from
  // a later point, so what was held under the old promise goes.
  FakeClock clock;
  OriginHolds holds(kHoldLimit, clock.fn());
  holds.Advertise(Advert("a", 0, 0));
  EXPECT_EQ(holds.Classify(kDb, 1, "a", false, 1, kLogA), Verdict::kSkip);
  holds.Commit(kDb, 1);
  holds.Advertise(Advert("a", /*since=*/1, /*seq=*/1));
  ASSERT_EQ(holds.Begin(kDb), std::optional<uint64_t>(0));
  EXPECT_EQ(holds.Classify(kDb, 1, "a", false, 1, kLogA), Verdict::kSend);
  holds.Commit(kDb, 1);
  EXPECT_EQ(holds.Classify(kDb, 2, "a", false, 2, kLogA), Verdict::kSkip);
}

TEST(OriginHoldsTest, AHoldThePeerDoesNotCoverInTimeIsSentAndTheOriginRelayed) {
  FakeClock clock;
  OriginHolds holds(absl::Milliseconds(500), clock.fn());
  using Pairs = absl::flat_hash_set<std::pair<std::string, std::string>>;
  EXPECT_EQ(holds.Skipping(), Pairs{});
  holds.Advertise(Advert("a", 0, 0));
  EXPECT_EQ(holds.Skipping(), Pairs({{kDb, "a"}}));
  EXPECT_EQ(holds.Classify(kDb, 1, "a", false, 1, kLogA), Verdict::kSkip);
  EXPECT_EQ(holds.Classify(kDb, 2, "a", false, 2, kLogA), Verdict::kSkip);
  holds.Commit(kDb, 2);
  clock.now += absl::Milliseconds(499);
  holds.Expire();
  EXPECT_FALSE(holds.Begin(kDb).has_value());
  clock.now += absl::Milliseconds(1);
  holds.Expire();
  ASSERT_EQ(holds.Begin(kDb), std::optional<uint64_t>(0));
  EXPECT_EQ(holds.Classify(kDb, 1, "a", false, 1, kLogA), Verdict::kSend);
  EXPECT_EQ(holds.Classify(kDb, 2, "a", false, 2, kLogA), Verdict::kSend);
  EXPECT_EQ(holds.Classify(kDb, 3, "a", false, 3, kLogA), Verdict::kSend) << "relayed now";
  holds.Commit(kDb, 3);
  // A commit of the origin's writes must wake the link's writer again (LinkSession's mirror).
  EXPECT_EQ(holds.Skipping(), Pairs{});
  // Skipping resumes once the peer has what was read of the origin by the timeout.
  holds.Advertise(Advert("a", 0, 2));
  EXPECT_EQ(holds.Classify(kDb, 4, "a", false, 4, kLogA), Verdict::kSkip);
  EXPECT_EQ(holds.Skipping(), Pairs({{kDb, "a"}}));
}

TEST(OriginHoldsTest, SkippedEntriesAfterAnEarlyEndAreReadAgain) {
  OriginHolds holds;
  holds.Advertise(Advert("a", 0, 0));
  EXPECT_EQ(holds.Classify(kDb, 1, "a", false, 1, kLogA), Verdict::kSkip);
  EXPECT_EQ(holds.Classify(kDb, 2, "a", false, 2, kLogA), Verdict::kSkip);
  holds.Commit(kDb, 1);  // the batch ended before 2 (a newer snapshot first, R15)
  EXPECT_EQ(holds.CursorFor(kDb, 1), 0u);
  holds.Advertise(Advert("a", 0, 1));
  EXPECT_EQ(holds.CursorFor(kDb, 1), 1u) << "2 was not held: it is read again";
}

// A seeded model: a relay R streams its log to P while P's links to two origins deliver,
// drop, come back (from a stored cursor that may be lower than what P received) and skip
// entries (origin_gap), R receives the origins' writes in any order (several paths), P's
// adverts arrive late, the clock moves, batches end early and P resubscribes to R from the
// cursor it stored. After every step, every
// entry through the stored cursor is sent or in P's hands from its origin (invariants (1),
// (2)); at the end, with every origin withdrawn and the stream drained, every entry is.
TEST(OriginHoldsTest, ModelEveryEntryIsSentHeldOrReceivedFromItsOrigin) {
  const uint64_t seed = testing::TestSeed();  // replay: CAIRN_TEST_SEED=<seed>
  std::mt19937_64 rng(seed);
  auto chance = [&](int percent) { return static_cast<int>(rng() % 100) < percent; };
  for (int round = 0; round < 200; ++round) {
    FakeClock clock;
    OriginHolds holds(absl::Milliseconds(500), clock.fn());
    const std::vector<std::string> origins = {"a", "b"};
    struct Origin {
      uint64_t written = 0;                // its log's last sequence number
      std::vector<bool> gap{false};        // [oseq]: never sent to P by the origin
      uint64_t recv = 0;                   // P's stream from it has reached here (its advert's seq)
      uint64_t got = 0;                    // P has received its log through here
      std::vector<uint64_t> at_r_pending;  // written, not yet in R's log
      uint64_t since = 0;
      bool linked = true;
    };
    absl::btree_map<std::string, Origin> os;
    for (const auto& o : origins) os[o];
    struct Entry {
      std::string origin;  // "r": the relay's own
      uint64_t oseq = 0;
      bool sent = false;
    };
    std::vector<Entry> log(1);  // [seq], 0 unused
    uint64_t pos = 0;           // R's stream
    uint64_t stored = 0;        // P's cursor on R
    std::vector<peer::v1::OriginAdvert> in_flight;
    auto advertise = [&](const std::string& o) {
      const Origin& s = os[o];
      in_flight.push_back(Advert(o, s.since, s.recv, s.linked));
    };
    auto has = [&](const Entry& e) {
      if (e.sent) return true;
      if (e.origin == "r") return false;
      const Origin& s = os[e.origin];
      return e.oseq <= s.got && !s.gap[e.oseq];
    };
    auto stream = [&](uint64_t limit, bool early_end) {
      if (std::optional<uint64_t> r = holds.Begin(kDb)) pos = *r;
      const uint64_t end = std::min<uint64_t>(log.size() - 1, pos + limit);
      if (end == pos) return;
      std::vector<uint64_t> sent_now;
      for (uint64_t seq = pos + 1; seq <= end; ++seq) {
        const Entry& e = log[seq];
        if (holds.Classify(kDb, seq, e.origin, e.origin == "r", e.oseq, kLogA) == Verdict::kSend) {
          sent_now.push_back(seq);
        }
      }
      const uint64_t last = early_end ? pos + 1 + rng() % (end - pos) - 1 : end;
      for (uint64_t seq : sent_now) {
        if (seq <= last) log[seq].sent = true;
      }
      holds.Commit(kDb, last);
      pos = last;
      const uint64_t cursor = holds.CursorFor(kDb, pos);
      ASSERT_GE(cursor, stored) << "round " << round << ": the stored cursor went back";
      stored = cursor;
    };
    for (const auto& o : origins) advertise(o);
    for (int step = 0; step < 300; ++step) {
      const int op = static_cast<int>(rng() % 100);
      if (op < 30) {  // a write: R's own, or an origin's (reaching R's log later)
        const int which = static_cast<int>(rng() % 3);
        if (which == 2) {
          log.push_back(Entry{"r", 0});
        } else {
          Origin& s = os[origins[which]];
          ++s.written;
          s.gap.push_back(chance(5));
          s.at_r_pending.push_back(s.written);
        }
      } else if (op < 40) {  // an origin's write reaches R, not necessarily in order
        const std::string& o = origins[rng() % 2];
        Origin& s = os[o];
        if (s.at_r_pending.empty()) continue;
        const size_t i = chance(70) ? 0 : rng() % s.at_r_pending.size();
        log.push_back(Entry{o, s.at_r_pending[i]});
        s.at_r_pending.erase(s.at_r_pending.begin() + static_cast<std::ptrdiff_t>(i));
      } else if (op < 55) {  // an origin's link delivers to P (from its position on)
        const std::string& o = origins[rng() % 2];
        Origin& s = os[o];
        if (!s.linked || s.recv == s.written) continue;
        const uint64_t to = s.recv + 1 + rng() % (s.written - s.recv);
        for (uint64_t q = s.recv + 1; q <= to; ++q) {
          if (s.gap[q]) s.since = to;  // origin_gap in that batch
        }
        s.recv = to;
        s.got = std::max(s.got, to);
        advertise(o);
      } else if (op < 60) {  // an origin's link drops or comes back
        const std::string& o = origins[rng() % 2];
        Origin& s = os[o];
        s.linked = !s.linked;
        if (s.linked) {  // subscribes from its stored cursor, at or below what P received
          s.recv = s.since = s.recv - rng() % (s.recv + 1);
        }
        advertise(o);
      } else if (op < 72) {  // adverts arrive
        const size_t n = rng() % (in_flight.size() + 1);
        for (size_t i = 0; i < n; ++i) holds.Advertise(in_flight[i]);
        in_flight.erase(in_flight.begin(), in_flight.begin() + n);
      } else if (op < 90) {
        stream(1 + rng() % 6, chance(20));
      } else if (op < 95) {
        clock.now += absl::Milliseconds(rng() % 400);
        holds.Expire();
      } else {  // P resubscribes to R from its stored cursor, adverts follow
        holds.Clear();
        in_flight.clear();
        pos = stored;
        for (const auto& o : origins) advertise(o);
      }
      if (HasFatalFailure()) return;
      // What the relay's log must keep for P (LogSender::Needs) at any time, too.
      const uint64_t keep = std::max(stored, holds.CursorFor(kDb, pos));
      for (uint64_t seq = 1; seq <= keep; ++seq) {
        ASSERT_TRUE(has(log[seq]))
            << "round " << round << " step " << step << ": entry " << seq << " (" << log[seq].origin
            << ":" << log[seq].oseq << ") is behind P's stored cursor and P does not have it";
      }
    }
    // Every origin's link to P ends; the relay sends everything.
    for (const auto& o : origins) {
      os[o].linked = false;
      advertise(o);
    }
    for (const auto& a : in_flight) holds.Advertise(a);
    for (int i = 0; i < 3; ++i) {  // the first call replays and reads to the end
      stream(1000, false);
      if (HasFatalFailure()) return;
    }
    for (uint64_t seq = 1; seq < log.size(); ++seq) {
      ASSERT_TRUE(has(log[seq])) << "round " << round << ": entry " << seq << " ("
                                 << log[seq].origin << ":" << log[seq].oseq << ") never reached P";
    }
  }
}

}  // namespace
}  // namespace cairn::replication
