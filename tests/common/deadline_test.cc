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
  EXPECT_OK(d.Check());
  EXPECT_EQ(pauses, 1);
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(GetErrorCode(d.Check()), ErrorCode::kRequestTimeout); });
  d.SetPause(nullptr);
  EXPECT_OK(d.Check());
}

}  // namespace
}  // namespace cairn
