#include "common/deadline.h"

#include "common/status.h"
#include "tests/testing/testing.h"

namespace cairn {
namespace {

TEST(DeadlineTest, ThePauseRunsAtAProbeAndItsErrorStopsTheWork) {
  Deadline d(absl::Now() + absl::Seconds(60));
  int pauses = 0;
  d.SetPause([&] {
    ++pauses;
    return pauses == 1 ? absl::OkStatus() : Error(ErrorCode::kRequestTimeout, "no slot");
  });
  ASSERT_EVENTUALLY([&] {
    ASSERT_OK(d.Check());
    ASSERT_EQ(pauses, 1);
  });
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(GetErrorCode(d.Check()), ErrorCode::kRequestTimeout); });
  d.SetPause(nullptr);
  EXPECT_OK(d.Check());
}

// Decision 134: a stream that waited for its turn in the pause gets a whole probe interval of
// work before it pauses again (before the fix the wait counted as work, so a stream that had
// waited paused again at its next row and the longest task kept the CPU).
TEST(DeadlineTest, TheTimeAPauseBlocksIsNotTheWorks) {
  Deadline d(absl::Now() + absl::Seconds(60), nullptr, /*probe_every=*/absl::Milliseconds(500));
  int pauses = 0;
  d.SetPause([&] {
    ++pauses;
    absl::SleepFor(absl::Seconds(1));  // waiting for a turn, longer than the interval
    return absl::OkStatus();
  });
  EXPECT_OK(d.Check());
  EXPECT_EQ(pauses, 0) << "paused at once: a fresh pause waits one interval";
  ASSERT_EVENTUALLY([&] {
    ASSERT_OK(d.Check());
    ASSERT_EQ(pauses, 1);
  });
  EXPECT_OK(d.Check());
  EXPECT_EQ(pauses, 1) << "paused again right after a pause";
}

}  // namespace
}  // namespace cairn
