#include "common/fault.h"

#include <algorithm>
#include <future>
#include <iterator>

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

// ---- Buggify (issue 19): seeded, only where safe, reported.

BuggifyOptions QuickBuggify(uint64_t seed) {
  BuggifyOptions o;
  o.seed = seed;
  o.max_delay = absl::Microseconds(1);  // the decisions matter here, not the waiting
  return o;
}

// Hits every listed point `n` times; returns the probes.
std::vector<FaultProbe> HitAll(FaultRegistry& faults, int n) {
  for (const fault_points::PointInfo& p : fault_points::kAll) {
    for (int i = 0; i < n; ++i) faults.Hit(p.name).IgnoreError();
  }
  return faults.Probes();
}

TEST(BuggifyTest, TheSeedDecidesWhichPointsFireAndHowOften) {
  FaultRegistry a, b, c;
  a.EnableBuggify(QuickBuggify(42));
  b.EnableBuggify(QuickBuggify(42));
  c.EnableBuggify(QuickBuggify(43));
  const std::vector<FaultProbe> pa = HitAll(a, 2000), pb = HitAll(b, 2000), pc = HitAll(c, 2000);
  ASSERT_EQ(pa.size(), std::size(fault_points::kAll));
  bool differs = false;
  int active = 0;
  for (size_t i = 0; i < pa.size(); ++i) {
    SCOPED_TRACE(pa[i].point);
    EXPECT_EQ(pa[i].active, pb[i].active);
    EXPECT_EQ(pa[i].fired, pb[i].fired) << "same seed, same hits: the same firings";
    EXPECT_EQ(pa[i].errors, pb[i].errors);
    EXPECT_EQ(pa[i].hits, 2000);
    if (!pa[i].active) {
      EXPECT_EQ(pa[i].fired, 0);
    }
    active += pa[i].active;
    differs |= pa[i].active != pc[i].active || pa[i].fired != pc[i].fired;
  }
  EXPECT_GT(active, 0);
  EXPECT_LT(active, static_cast<int>(pa.size())) << "about half the points, not all";
  EXPECT_TRUE(differs) << "another seed, another run";
}

// Errors only where the code handles them (PointInfo::errors); elsewhere delays only.
TEST(BuggifyTest, ErrorsOnlyAtPointsThatHandleThem) {
  int64_t errors = 0, delays = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    FaultRegistry faults;
    BuggifyOptions o = QuickBuggify(seed);
    o.active_probability = 1;
    faults.EnableBuggify(o);
    for (const FaultProbe& p : HitAll(faults, 3000)) {
      const auto* info =
          std::find_if(std::begin(fault_points::kAll), std::end(fault_points::kAll),
                       [&](const fault_points::PointInfo& i) { return p.point == i.name; });
      ASSERT_NE(info, std::end(fault_points::kAll));
      if (!info->errors) {
        EXPECT_EQ(p.errors, 0) << p.point;
      }
      EXPECT_EQ(p.fired, p.errors + p.delays) << p.point << ": no crash without crashes";
      errors += p.errors;
      delays += p.delays;
    }
  }
  EXPECT_GT(errors, 0);
  EXPECT_GT(delays, errors) << "delays are the common case";
}

TEST(BuggifyTest, InjectedErrorsNameTheirPoint) {
  FaultRegistry faults;
  BuggifyOptions o = QuickBuggify(7);
  o.active_probability = 1;
  faults.EnableBuggify(o);
  absl::Status seen;
  for (int i = 0; i < 20000 && seen.ok(); ++i) seen = faults.Hit(fault_points::kWriteBeforeCommit);
  ASSERT_FALSE(seen.ok());
  EXPECT_EQ(seen.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(seen.message()), ::testing::HasSubstr(fault_points::kWriteBeforeCommit));
}

TEST(BuggifyTest, AnArmedPointActsAsArmed) {
  FaultRegistry faults;
  BuggifyOptions o = QuickBuggify(9);
  o.active_probability = 1;
  faults.EnableBuggify(o);
  faults.Set(fault_points::kCreateBeforeCommit, FaultAction::ReturnError(absl::DataLossError("x")));
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(faults.Hit(fault_points::kCreateBeforeCommit).code(), absl::StatusCode::kDataLoss);
  }
}

// ClearAll (clear_fault without a name) ends buggify, so a run can heal quietly; the probes
// keep what the run did.
TEST(BuggifyTest, ClearAllTurnsItOffAndKeepsTheProbes) {
  FaultRegistry faults;
  BuggifyOptions o = QuickBuggify(11);
  o.active_probability = 1;
  faults.EnableBuggify(o);
  const std::vector<FaultProbe> during = HitAll(faults, 1000);
  faults.ClearAll();
  EXPECT_FALSE(faults.buggify());
  const std::vector<FaultProbe> after = HitAll(faults, 1000);
  ASSERT_EQ(during.size(), after.size());
  for (size_t i = 0; i < during.size(); ++i) {
    EXPECT_EQ(during[i].fired, after[i].fired) << during[i].point;
    EXPECT_EQ(during[i].hits, after[i].hits) << "hits count only while buggify is on";
  }
  EXPECT_OK(faults.Hit(fault_points::kWriteBeforeCommit));
}

TEST(BuggifyTest, CrashesOnlyWhenAllowed) {
  const int status = testing::RunInChildProcess([] {
    FaultRegistry faults;
    BuggifyOptions o = QuickBuggify(3);
    o.active_probability = 1;
    o.crashes = true;
    o.crash_one_in = 1;
    faults.EnableBuggify(o);
    for (int i = 0; i < 100000; ++i) faults.Hit(fault_points::kWriteBeforeCommit).IgnoreError();
    std::_Exit(0);
  });
  EXPECT_EQ(status, kInjectedCrashExitCode);
}

}  // namespace
}  // namespace cairn
