#include "common/cpu_slots.h"

#include <future>

#include "tests/testing/testing.h"

namespace cairn {
namespace {

Deadline InSeconds(int s) { return Deadline(absl::Now() + absl::Seconds(s)); }

TEST(CpuSlotsTest, AtMostSlotsAreHeld) {  // invariant (1)
  CpuSlots cpus(1);
  Deadline d = InSeconds(60);
  ASSERT_OK(cpus.Acquire(d));
  auto second = std::async(std::launch::async, [&] { return cpus.Acquire(d); });
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(cpus.waiting(), 1); });
  EXPECT_EQ(cpus.held(), 1);
  cpus.Release();
  EXPECT_OK(second.get());
  EXPECT_EQ(cpus.held(), 1);
  EXPECT_EQ(cpus.waiting(), 0);
  cpus.Release();
}

TEST(CpuSlotsTest, YieldHandsTheSlotToTheLongestWaiting) {  // invariant (2)
  CpuSlots cpus(1);
  Deadline d = InSeconds(60);
  EXPECT_OK(cpus.Yield(d));  // nobody waits: nothing to hand over
  ASSERT_OK(cpus.Acquire(d));
  EXPECT_OK(cpus.Yield(d));  // still nobody: kept
  EXPECT_EQ(cpus.held(), 1);
  std::atomic<int> order{0};
  std::atomic<int> waiter_turn{0};
  auto waiter = std::async(std::launch::async, [&] {
    absl::Status s = cpus.Acquire(d);
    waiter_turn = ++order;
    cpus.Release();
    return s;
  });
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(cpus.waiting(), 1); });
  ASSERT_OK(cpus.Yield(d));  // returns once the waiter has had its turn
  const int my_turn = ++order;
  EXPECT_OK(waiter.get());
  EXPECT_LT(waiter_turn.load(), my_turn);
  cpus.Release();
  EXPECT_EQ(cpus.held(), 0);
}

TEST(CpuSlotsTest, AWaitEndsAtTheDeadlineOrACancelHoldingNothing) {
  CpuSlots cpus(1);
  Deadline long_one = InSeconds(60);
  ASSERT_OK(cpus.Acquire(long_one));
  Deadline past(absl::Now() - absl::Seconds(1));
  EXPECT_EQ(GetErrorCode(cpus.Acquire(past)), ErrorCode::kRequestTimeout);
  Deadline cancelled = InSeconds(60);
  auto waiting = std::async(std::launch::async, [&] { return cpus.Acquire(cancelled); });
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(cpus.waiting(), 1); });
  cancelled.Cancel();
  EXPECT_EQ(GetErrorCode(waiting.get()), ErrorCode::kRequestTimeout);
  EXPECT_EQ(cpus.waiting(), 0);
  cpus.Release();
  EXPECT_EQ(cpus.held(), 0);  // the ones that gave up hold nothing
}

// A stream queued for a slot asks whether its client is still there (nothing else would
// tell it before its turn: the review found it waiting for its 60 s deadline).
TEST(CpuSlotsTest, AQueuedTaskNoticesItsClientLeaving) {
  CpuSlots cpus(1);
  Deadline holder = InSeconds(60);
  ASSERT_OK(cpus.Acquire(holder));
  std::atomic<bool> present{true};
  Deadline queued(absl::Now() + absl::Seconds(60), [&] { return present.load(); });
  auto waiting = std::async(std::launch::async, [&] { return cpus.Acquire(queued); });
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(cpus.waiting(), 1); });
  present = false;
  EXPECT_EQ(GetErrorCode(waiting.get()), ErrorCode::kRequestTimeout);
  EXPECT_TRUE(queued.cancelled());
  EXPECT_EQ(cpus.waiting(), 0);
  cpus.Release();
}

TEST(CpuSlotsTest, ZeroMeansOneFewerThanTheCpus) {
  CpuSlots cpus(0);
  EXPECT_EQ(cpus.slots(), std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - 1));
}

}  // namespace
}  // namespace cairn
