#include "common/clock.h"

#include <thread>
#include <vector>

#include "tests/testing/testing.h"

namespace cairn {
namespace {

// HybridClock invariant (1): strictly increasing, and past every observed value.
TEST(HybridClockTest, StrictlyIncreasingAndPastObservedValues) {
  testing::ManualClock wall;
  HybridClock hlc(&wall);
  Hlc a = *hlc.Now();
  Hlc b = *hlc.Now();
  EXPECT_LT(a, b);
  // A peer far ahead: our next stamp is after it even though the wall clock did not move.
  Hlc remote = HybridClock::Make(HybridClock::PhysicalMs(b) + 60'000, 7);
  hlc.Observe(remote);
  EXPECT_GT(*hlc.Now(), remote);
  // Observing an older value changes nothing.
  Hlc c = *hlc.Now();
  hlc.Observe(a);
  EXPECT_GT(*hlc.Now(), c);
}

// Invariant (2): the physical part follows the wall clock.
TEST(HybridClockTest, FollowsWallClock) {
  testing::ManualClock wall;
  HybridClock hlc(&wall);
  Hlc a = *hlc.Now();
  EXPECT_EQ(HybridClock::PhysicalMs(a), static_cast<uint64_t>(absl::ToUnixMillis(wall.Now())));
  wall.Advance(absl::Seconds(5));
  Hlc b = *hlc.Now();
  EXPECT_EQ(HybridClock::PhysicalMs(b), static_cast<uint64_t>(absl::ToUnixMillis(wall.Now())));
  EXPECT_EQ(b & 0xFFFF, 0u);
}

// Invariant (3), SPEC C16: at the end of time the clock refuses instead of repeating or wrapping.
TEST(HybridClockTest, C16_StampsNeverWrap) {
  testing::ManualClock wall;
  HybridClock hlc(&wall);
  EXPECT_EQ(*HlcAfter(41, "x"), 42u);
  auto after_max = HlcAfter(kMaxHlc, "the drop of db.t");
  EXPECT_THAT(after_max, testing::HasErrorCode(ErrorCode::kInternal));
  EXPECT_NE(after_max.status().message().find("the drop of db.t"), std::string::npos);
  hlc.Observe(kMaxHlc - 1);
  EXPECT_EQ(*hlc.Now(), kMaxHlc);  // the last value is still issued once
  EXPECT_THAT(hlc.Now(), testing::HasErrorCode(ErrorCode::kInternal));
  EXPECT_THAT(hlc.Now(), testing::HasErrorCode(ErrorCode::kInternal));  // and stays refused
  EXPECT_EQ(hlc.Last(), kMaxHlc);
}

TEST(HybridClockTest, ConcurrentCallersNeverGetTheSameValue) {
  testing::ManualClock wall;
  HybridClock hlc(&wall);
  constexpr int kThreads = 4, kPer = 20000;
  std::vector<std::vector<Hlc>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPer; ++i) got[t].push_back(*hlc.Now());
    });
  }
  for (auto& t : threads) t.join();
  std::vector<Hlc> all;
  for (auto& g : got) {
    for (size_t i = 1; i < g.size(); ++i) ASSERT_LT(g[i - 1], g[i]);
    all.insert(all.end(), g.begin(), g.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
}

}  // namespace
}  // namespace cairn
