// BackgroundPace (decision 156): background work at its full rate while the node is quiet and
// at a share of it while foreground work runs; never above the rate, never stopped.
#include "common/background_pace.h"

#include "tests/testing/testing.h"

namespace cairn {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

BackgroundPaceOptions Options(uint64_t rate, double busy_share,
                              const ForegroundActivity* activity) {
  BackgroundPaceOptions o;
  o.rate = rate;
  o.busy_share = busy_share;
  o.activity = activity;
  o.quiet_after = absl::Milliseconds(100);
  return o;
}

TEST(BackgroundPaceTest, AQuietNodeGetsTheFullRate) {
  ForegroundActivity activity;
  BackgroundPace pace(Options(1000, 0.1, &activity));
  EXPECT_FALSE(pace.Busy(kT0));
  EXPECT_EQ(pace.Reserve(100, kT0, pace.Busy(kT0)), kT0);
  // 100 units at 1,000 a second: the next may start 100 ms later.
  EXPECT_EQ(pace.Reserve(100, kT0, pace.Busy(kT0)), kT0 + absl::Milliseconds(100));
  EXPECT_EQ(pace.units_reserved(), 200u);
}

TEST(BackgroundPaceTest, ABusyNodeGetsItsShare) {
  ForegroundActivity activity;
  BackgroundPace pace(Options(1000, 0.1, &activity));
  activity.Note(kT0);
  EXPECT_TRUE(pace.Busy(kT0 + absl::Milliseconds(99)));
  EXPECT_EQ(pace.Reserve(100, kT0, pace.Busy(kT0)), kT0);
  // 100 units at 100 a second.
  EXPECT_EQ(pace.Reserve(100, kT0, pace.Busy(kT0)), kT0 + absl::Seconds(1));
}

TEST(BackgroundPaceTest, TheNodeIsQuietAgainAfterQuietAfter) {
  ForegroundActivity activity;
  BackgroundPace pace(Options(1000, 0.1, &activity));
  activity.Note(kT0);
  const absl::Time later = kT0 + absl::Milliseconds(100);
  EXPECT_FALSE(pace.Busy(later));
  EXPECT_EQ(pace.Reserve(100, later, pace.Busy(later)), later);
  EXPECT_EQ(pace.Reserve(100, later, pace.Busy(later)), later + absl::Milliseconds(100));
}

TEST(BackgroundPaceTest, NeverAboveTheRate) {  // invariant (1)
  BackgroundPace pace(Options(1000, 0.5, nullptr));
  // A pace idle for an hour does not save the hour up: 10,000 units still take 10 s.
  const absl::Time later = kT0 + absl::Hours(1);
  absl::Time start;
  for (int i = 0; i < 100; ++i) start = pace.Reserve(100, later, pace.Busy(later));
  EXPECT_EQ(start, later + absl::Milliseconds(9900));
}

TEST(BackgroundPaceTest, NeverStoppedByABusyNode) {  // invariant (2)
  ForegroundActivity activity;
  BackgroundPace pace(Options(1000, 0.01, &activity));
  absl::Time now = kT0;
  uint64_t granted = 0;
  // The node stays busy for a minute; every reservation is taken when it may start.
  while (now < kT0 + absl::Minutes(1)) {
    activity.Note(now);
    now = std::max(now, pace.Reserve(10, now, pace.Busy(now)));
    granted += 10;
  }
  // 1 % of 1,000 a second for 60 s, and the reservation that starts at 60 s.
  EXPECT_EQ(granted, 610u);
}

TEST(BackgroundPaceTest, NoRateNeverWaits) {
  ForegroundActivity activity;
  activity.Note(kT0);
  BackgroundPace pace(Options(0, 0.1, &activity));
  EXPECT_EQ(pace.Reserve(1'000'000, kT0, pace.Busy(kT0)), kT0);
  EXPECT_EQ(pace.Reserve(1'000'000, kT0, pace.Busy(kT0)), kT0);
}

TEST(BackgroundPaceTest, WaitStopsAtTheFirstErrorOfCheck) {
  BackgroundPace pace(Options(1, 1.0, nullptr));
  ASSERT_OK(pace.Wait(1, [] { return absl::OkStatus(); }));  // the first starts at once
  // The second would start a second later; the check ends the wait first.
  const absl::Status s = pace.Wait(1, [] { return absl::CancelledError("stop"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled);
}

TEST(ForegroundActivityTest, NoteKeepsTheLatestTimeToAMillisecond) {
  ForegroundActivity activity;
  EXPECT_EQ(activity.last(), absl::UnixEpoch());
  activity.Note(kT0);
  EXPECT_EQ(activity.last(), kT0);
  activity.Note(kT0 + absl::Microseconds(500));  // within the resolution: not stored
  EXPECT_EQ(activity.last(), kT0);
  activity.Note(kT0 + absl::Milliseconds(2));
  EXPECT_EQ(activity.last(), kT0 + absl::Milliseconds(2));
}

}  // namespace
}  // namespace cairn
