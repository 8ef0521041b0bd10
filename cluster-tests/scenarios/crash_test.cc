// Scenario 7: a node crashes at each fault point of create, drop and apply (SPEC C2, C9, C10,
// R6); after a restart the cluster converges.
#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cluster-tests/harness/ops.h"
#include "cluster-tests/harness/scenario.h"
#include "common/fault.h"
#include "common/fault_points.h"

namespace cairn::harness {
namespace {

using nlohmann::json;

class CrashAtFaultPointTest : public ScenarioTest,
                              public ::testing::WithParamInterface<const char*> {};

// n2 crashes (exit code 85) at the point, in the middle of the operation the point belongs
// to, is restarted on its data, and the three nodes converge:
//   create: the table exists whole or not at all (C2); created again if not, it replicates.
//   drop: the drop completes at restart (C10), and its marker retires the table everywhere.
//   apply: the rows n1 wrote arrive on n2 exactly once (R6; the checker compares records).
TEST_P(CrashAtFaultPointTest, RestartedNodeConverges) {
  const std::string point = GetParam();
  ASSERT_OK(StartCluster());
  Cluster& c = cluster();
  ASSERT_OK(c.Ok("n1", ops::CreateTable("app", "base", {{"id", "ID"}, {"name", "String"}})));
  ASSERT_OK(c.Ok("n1", ops::Upsert("app", "base", ops::Rows("before", 50))));
  ASSERT_OK(c.WaitConverged());
  ASSERT_OK(c.SetFault("n2", point + "=crash"));

  if (absl::StartsWith(point, "catalog.create.")) {
    HttpAnswer a = c.Op("n2", ops::CreateTable("app", "fresh", {{"id", "ID"}, {"name", "String"}}));
    EXPECT_EQ(a.status, 0) << "the create should have crashed n2: " << a.body;
  } else if (absl::StartsWith(point, "catalog.drop.")) {
    HttpAnswer a = c.Op("n2", ops::DropTable("app", "base"));
    EXPECT_EQ(a.status, 0) << "the drop should have crashed n2: " << a.body;
  } else {
    for (int i = 0; i < 5; ++i) {
      ASSERT_OK(c.Ok("n1", ops::Upsert("app", "base", ops::Rows(absl::StrCat("during", i), 100))));
    }
  }
  CAIRN_ASSIGN_OR_FAIL(int code, c.WaitExit("n2", absl::Seconds(60)));
  EXPECT_EQ(code, kInjectedCrashExitCode);
  ASSERT_OK(c.Restart("n2"));

  if (absl::StartsWith(point, "catalog.create.")) {
    CAIRN_ASSIGN_OR_FAIL(bool has, ops::HasTable(c, "n2", "app", "fresh"));
    if (!has) {
      ASSERT_OK(c.Ok("n2", ops::CreateTable("app", "fresh", {{"id", "ID"}, {"name", "String"}})));
    }
    ASSERT_OK(c.Ok("n2", ops::Upsert("app", "fresh", ops::Rows("fresh", 10))));
  }
  ASSERT_OK(c.WaitConverged());
  if (absl::StartsWith(point, "catalog.drop.")) {
    for (const std::string& n : c.names()) {
      CAIRN_ASSIGN_OR_FAIL(bool has, ops::HasTable(c, n, "app", "base"));
      EXPECT_FALSE(has) << n << " still has the table n2 dropped";
    }
  } else if (absl::StartsWith(point, "catalog.create.")) {
    CAIRN_ASSIGN_OR_FAIL(auto keys, ops::Keys(c, "n1", "app", "fresh"));
    EXPECT_EQ(keys.size(), 10u);
  } else {
    CAIRN_ASSIGN_OR_FAIL(auto keys, ops::Keys(c, "n2", "app", "base"));
    EXPECT_EQ(keys.size(), 550u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    EachPoint, CrashAtFaultPointTest,
    ::testing::Values(fault_points::kCreateBeforeCommit, fault_points::kCreateAfterCommit,
                      fault_points::kDropAfterTombstone, fault_points::kDropAfterDrain,
                      fault_points::kDropBeforeFinalCommit, fault_points::kDropAfterFinalCommit,
                      fault_points::kReplApplyBeforeCommit, fault_points::kReplApplyAfterCommit),
    [](const ::testing::TestParamInfo<const char*>& info) {
      std::string name = info.param;
      std::replace(name.begin(), name.end(), '.', '_');
      return name;
    });

}  // namespace
}  // namespace cairn::harness
