#include "common/fault.h"

#include <future>

#include "common/fault_points.h"
#include "tests/testing/testing.h"

namespace cairn {
namespace {

TEST(FaultRegistryTest, UnarmedPointsPass) {
  FaultRegistry faults;
  EXPECT_OK(faults.Hit("a.b.c"));
  EXPECT_EQ(faults.HitCount("a.b.c"), 0);
  FaultRegistry* none = nullptr;
  EXPECT_OK(CAIRN_FAULT(none, "a.b.c"));
}

TEST(FaultRegistryTest, ReturnErrorAndCount) {
  FaultRegistry faults;
  faults.Set("p", FaultAction::ReturnError(absl::DataLossError("disk")));
  EXPECT_EQ(faults.Hit("p").code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(faults.Hit("p").code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(faults.HitCount("p"), 2);
  faults.Clear("p");
  EXPECT_OK(faults.Hit("p"));
}

TEST(FaultRegistryTest, NthAndOnce) {
  FaultRegistry faults;
  faults.Set("n", FaultAction::ReturnError(absl::InternalError("x")).OnNth(3));
  EXPECT_OK(faults.Hit("n"));
  EXPECT_OK(faults.Hit("n"));
  EXPECT_FALSE(faults.Hit("n").ok());
  EXPECT_OK(faults.Hit("n"));
  // Armed again, a point counts its hits afresh: OnNth counts from the new Set.
  faults.Set("n", FaultAction::ReturnError(absl::InternalError("x")).OnNth(1));
  EXPECT_FALSE(faults.Hit("n").ok());
  EXPECT_EQ(faults.HitCount("n"), 1);
  faults.Set("o", FaultAction::ReturnError(absl::InternalError("x")).Once());
  EXPECT_FALSE(faults.Hit("o").ok());
  EXPECT_OK(faults.Hit("o"));
}

TEST(FaultRegistryTest, ProbabilityIsSeeded) {
  auto pattern = [](uint64_t seed) {
    FaultRegistry faults(seed);
    faults.Set("p", FaultAction::ReturnError(absl::InternalError("x")).WithProbability(0.5));
    std::string out;
    for (int i = 0; i < 64; ++i) out.push_back(faults.Hit("p").ok() ? '.' : 'X');
    return out;
  };
  EXPECT_EQ(pattern(7), pattern(7));
  EXPECT_NE(pattern(7).find('X'), std::string::npos);
  EXPECT_NE(pattern(7).find('.'), std::string::npos);
}

TEST(FaultRegistryTest, BlockParksUntilRelease) {
  FaultRegistry faults;
  faults.Set("b", FaultAction::Block());
  auto hit = std::async(std::launch::async, [&] { return faults.Hit("b"); });
  ASSERT_TRUE(faults.WaitUntilBlocked("b", absl::Seconds(30)));
  EXPECT_EQ(hit.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  faults.Release("b");
  EXPECT_OK(hit.get());
  EXPECT_OK(faults.Hit("b"));  // released points are disarmed
}

TEST(FaultRegistryDeathTest, CrashExitsWithDistinctiveCode) {
  FaultRegistry faults;
  faults.Set("c", FaultAction::Crash());
  EXPECT_EXIT(faults.Hit("c").IgnoreError(), ::testing::ExitedWithCode(kInjectedCrashExitCode), "");
}

TEST(FaultSpecTest, Parses) {
  std::string name;
  FaultAction a;
  ASSERT_OK(ParseFaultSpec("catalog.drop.after_tombstone=crash", &name, &a));
  EXPECT_EQ(name, fault_points::kDropAfterTombstone);
  EXPECT_EQ(a.kind, FaultAction::Kind::kCrash);
  ASSERT_OK(ParseFaultSpec("x=delay:150ms@0.25", &name, &a));
  EXPECT_EQ(a.kind, FaultAction::Kind::kDelay);
  EXPECT_EQ(a.delay, absl::Milliseconds(150));
  EXPECT_EQ(a.trigger, FaultAction::Trigger::kProbability);
  ASSERT_OK(ParseFaultSpec("x=error:disk full@#2", &name, &a));
  EXPECT_EQ(a.kind, FaultAction::Kind::kError);
  EXPECT_EQ(a.error.message(), "disk full");
  EXPECT_EQ(a.nth, 2);
  ASSERT_OK(ParseFaultSpec("x=block", &name, &a));
  EXPECT_EQ(a.kind, FaultAction::Kind::kBlock);
  for (const char* bad :
       {"", "=crash", "x", "x=explode", "x=delay:soon", "x=crash@2", "x=crash@#0"}) {
    EXPECT_FALSE(ParseFaultSpec(bad, &name, &a).ok()) << bad;
  }
}

}  // namespace
}  // namespace cairn
