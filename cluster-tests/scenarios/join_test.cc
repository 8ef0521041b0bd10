// Scenario 6: a new node joins a running cluster (SPEC R7, R8, C11).
#include "absl/strings/str_cat.h"
#include "cluster-tests/harness/ops.h"
#include "cluster-tests/harness/scenario.h"

namespace cairn::harness {
namespace {

using nlohmann::json;

// A node added to a cluster that already holds data gets a full copy: every replicated table
// (two databases, one of them schema-defined) with every record, while the node-local table
// on n1 and the table dropped before the join never reach it.
TEST_F(ScenarioTest, NewNodeJoinsWithAFullCopy_NoNodeLocalTable) {
  ASSERT_OK(StartCluster());
  Cluster& c = cluster();
  ASSERT_OK(c.Ok("n1", ops::CreateTable("shop", "orders", {{"id", "ID"}, {"name", "String"}})));
  ASSERT_OK(c.Ok("n2", ops::CreateTable("shop", "items")));
  ASSERT_OK(c.Ok("n3", ops::CreateTable("logs", "events")));
  ASSERT_OK(c.Ok("n1", ops::CreateTable("shop", "scratch", {}, /*replicate=*/false)));
  ASSERT_OK(c.Ok("n1", ops::CreateTable("shop", "gone")));
  ASSERT_OK(c.WaitConverged());
  for (int batch = 0; batch < 5; ++batch) {
    ASSERT_OK(c.Ok("n1", ops::Upsert("shop", "orders", ops::Rows(absl::StrCat("o", batch), 100))));
    ASSERT_OK(c.Ok("n2", ops::Upsert("shop", "items", ops::Rows(absl::StrCat("i", batch), 100))));
    ASSERT_OK(c.Ok("n3", ops::Upsert("logs", "events", ops::Rows(absl::StrCat("e", batch), 100))));
  }
  ASSERT_OK(c.Ok("n1", ops::Upsert("shop", "scratch", ops::Rows("local", 10))));
  ASSERT_OK(c.Ok("n2", ops::Upsert("shop", "gone", ops::Rows("g", 10))));
  ASSERT_OK(c.Ok("n3", ops::DropTable("shop", "gone")));

  ASSERT_OK(c.Add("n4"));
  CheckOptions check;
  check.local_tables = {{"n1", {"shop.scratch"}}, {"n2", {}}, {"n3", {}}, {"n4", {}}};
  ASSERT_OK(c.WaitConverged(check));
  for (const auto& [table, n] : {std::pair("orders", 500), {"items", 500}}) {
    CAIRN_ASSIGN_OR_FAIL(auto keys, ops::Keys(c, "n4", "shop", table));
    EXPECT_EQ(keys.size(), static_cast<size_t>(n)) << table;
  }
  CAIRN_ASSIGN_OR_FAIL(bool gone, ops::HasTable(c, "n4", "shop", "gone"));
  EXPECT_FALSE(gone);
  // The live tail follows the copy.
  ASSERT_OK(c.Ok("n1", ops::Upsert("shop", "orders", ops::Rows("after-join", 3))));
  ASSERT_OK(c.WaitConverged(check));
}

}  // namespace
}  // namespace cairn::harness
