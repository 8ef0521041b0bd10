// Anti-entropy across real processes (SPEC R18, issue 20 tests 4 and 5): a node restored from
// a backup is brought back to the cluster's data by verify alone while replication is
// paused, and a node killed in the middle of a repair finishes it with the next verify.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "cluster-tests/harness/ops.h"
#include "cluster-tests/harness/scenario.h"
#include "common/fault.h"
#include "common/fault_points.h"
#include "gmock/gmock.h"

namespace cairn::harness {
namespace {

using nlohmann::json;

json Verify(const std::string& db) { return {{"operation", "verify"}, {"database", db}}; }

uint64_t Repaired(const json& answer) { return answer.value("rows_repaired", uint64_t{0}); }

// Every peer of `node` is connected and speaks verify.v1 (after a restart, its links redial).
absl::Status WaitVerifiable(const Cluster& c, const std::string& node) {
  return Cluster::WaitFor(
      absl::StrCat(node, "'s links"),
      [&]() -> absl::Status {
        CAIRN_ASSIGN_OR_RETURN(json s, c.Ok(node, {{"operation", "cluster_status"}}));
        for (const json& p : s["connections"]) {
          const json caps = p.value("capabilities", json::array());
          if (!p.value("connected", false) ||
              std::find(caps.begin(), caps.end(), "verify.v1") == caps.end()) {
            return absl::UnavailableError(p.dump());
          }
        }
        return absl::OkStatus();
      },
      absl::Seconds(60));
}

// Test 4 (decision 51's stale restore) and test 5's kill during a repair: n1 is restored from
// a backup taken before the cluster wrote more and deleted a row. Every sender is held
// (replication.send.batch blocks), so only verify can bring n1 back. The first verify is
// killed at its first repair (the crash point); after the restart a verify repairs
// everything, and the next one nothing — also once replication flows again.
TEST_F(ScenarioTest, R18_VerifyAloneBringsBackARestoredNode) {
  expect_repairs_ = true;
  ASSERT_OK(StartCluster());
  Cluster& c = cluster();
  ASSERT_OK(c.Ok("n1", ops::CreateTable("shop", "orders")));
  ASSERT_OK(c.Ok("n1", ops::Upsert("shop", "orders", ops::Rows("before", 50))));
  ASSERT_OK(c.WaitConverged());
  CAIRN_ASSIGN_OR_FAIL(json backup, c.Ok("n1", {{"operation", "create_backup"}, {"name", "b1"}}));

  ASSERT_OK(c.Ok("n2", ops::Upsert("shop", "orders", ops::Rows("after", 40))));
  ASSERT_OK(c.Ok(
      "n3",
      {{"operation", "delete"}, {"database", "shop"}, {"table", "orders"}, {"ids", {"before-0"}}}));
  ASSERT_OK(c.WaitConverged());

  // Replication pauses: no sender of n2 or n3 sends a batch from now on.
  for (const char* n : {"n2", "n3"}) {
    ASSERT_OK(c.SetFault(n, absl::StrCat(fault_points::kReplSendBatch, "=block")));
  }
  c.Kill("n1");
  ops::ReplaceDataDir(c.node("n1").options().data_dir, backup["path"].get<std::string>());
  ASSERT_OK(
      c.Restart("n1", {"--fault", absl::StrCat(fault_points::kVerifyBeforeRepair, "=crash")}));
  CAIRN_ASSIGN_OR_FAIL(auto stale, ops::Keys(c, "n1", "shop", "orders"));
  EXPECT_EQ(stale, ops::RowIds({{"before", 50}})) << "the restore holds only what the backup did";

  // Killed at the first repair.
  ASSERT_OK(WaitVerifiable(c, "n1"));
  HttpAnswer killed = c.Op("n1", Verify("shop"));
  EXPECT_NE(killed.status, 200) << killed.body;
  CAIRN_ASSIGN_OR_FAIL(int status, c.WaitExit("n1", absl::Seconds(60)));
  EXPECT_EQ(status, kInjectedCrashExitCode);
  ASSERT_OK(c.Restart("n1"));
  ASSERT_OK(WaitVerifiable(c, "n1"));

  CAIRN_ASSIGN_OR_FAIL(json repaired, c.Ok("n1", Verify("shop")));
  EXPECT_GT(Repaired(repaired), 0u) << repaired.dump();
  EXPECT_TRUE(repaired.value("in_sync", false)) << repaired.dump();
  std::set<std::string> expected = ops::RowIds({{"before", 50}, {"after", 40}});
  expected.erase("before-0");
  for (const std::string& n : c.names()) {
    CAIRN_ASSIGN_OR_FAIL(auto keys, ops::Keys(c, n, "shop", "orders"));
    EXPECT_EQ(keys, expected) << n << ", with replication still paused";
  }
  CAIRN_ASSIGN_OR_FAIL(json again, c.Ok("n1", Verify("shop")));
  EXPECT_EQ(Repaired(again), 0u) << again.dump();

  // cluster_status keeps what the last verify found, per peer and database.
  CAIRN_ASSIGN_OR_FAIL(json cluster_status, c.Ok("n1", {{"operation", "cluster_status"}}));
  for (const json& peer : cluster_status["connections"]) {
    ASSERT_TRUE(peer["verified"].contains("shop")) << peer.dump();
    EXPECT_EQ(peer["verified"]["shop"]["rows_repaired"], 0) << peer.dump();
    EXPECT_TRUE(peer["verified"]["shop"]["in_sync"].get<bool>()) << peer.dump();
  }

  for (const char* n : {"n2", "n3"}) ASSERT_OK(c.ClearFaults(n));
  ASSERT_OK(c.WaitConverged());
  CAIRN_ASSIGN_OR_FAIL(json after, c.Ok("n2", Verify("shop")));
  EXPECT_EQ(Repaired(after), 0u) << after.dump();
}

// The operation's answers to bad requests: what is missing is named.
TEST_F(ScenarioTest, R18_VerifyNamesWhatIsMissing) {
  ASSERT_OK(StartCluster());
  Cluster& c = cluster();
  ASSERT_OK(c.Ok("n1", ops::CreateTable("shop", "orders")));
  ASSERT_OK(c.WaitConverged());
  ASSERT_OK(WaitVerifiable(c, "n1"));
  EXPECT_EQ(c.Op("n1", {{"operation", "verify"}}).status, 400);
  EXPECT_EQ(c.Op("n1", Verify("nowhere")).status, 404);
  EXPECT_EQ(c.Op("n1", {{"operation", "verify"}, {"database", "shop"}, {"table", "none"}}).status,
            404);
  EXPECT_EQ(c.Op("n1", {{"operation", "verify"}, {"database", "shop"}, {"node", "n9"}}).status,
            404);
  CAIRN_ASSIGN_OR_FAIL(
      json one,
      c.Ok("n1",
           {{"operation", "verify"}, {"database", "shop"}, {"table", "orders"}, {"node", "n2"}}));
  ASSERT_EQ(one["peers"].size(), 1u) << one.dump();
  EXPECT_EQ(one["peers"][0]["node"], "n2");
  EXPECT_TRUE(one["in_sync"].get<bool>()) << one.dump();

  // A peer it cannot reach is listed with the reason, and nothing is "in sync".
  ASSERT_OK(c.Cut("n1", "n3"));
  ASSERT_OK(Cluster::WaitFor(
      "n1 to see n3 gone",
      [&]() -> absl::Status {
        CAIRN_ASSIGN_OR_RETURN(json s, c.Ok("n1", {{"operation", "cluster_status"}}));
        for (const json& p : s["connections"]) {
          if (p["name"] == "n3" && p["connected"].get<bool>()) {
            return absl::UnavailableError("still connected");
          }
        }
        return absl::OkStatus();
      },
      absl::Seconds(30)));
  CAIRN_ASSIGN_OR_FAIL(json cut, c.Ok("n1", Verify("shop")));
  EXPECT_FALSE(cut["in_sync"].get<bool>()) << cut.dump();
  bool listed = false;
  for (const json& p : cut["peers"]) {
    if (p["node"] == "n3") listed = p.value("error", "").find("not connected") != std::string::npos;
  }
  EXPECT_TRUE(listed) << cut.dump();
  ASSERT_OK(c.Restore("n1", "n3"));
}

// `cairn verify` prints a line per table as it goes and exits 0 when everything is in sync;
// after the verb, --node names the peer (decision 95).
TEST_F(ScenarioTest, R18_CliVerifyPrintsALinePerTable) {
  ASSERT_OK(StartCluster());
  Cluster& c = cluster();
  ASSERT_OK(c.Ok("n1", ops::CreateTable("shop", "orders")));
  ASSERT_OK(c.Ok("n1", ops::CreateTable("shop", "items")));
  ASSERT_OK(c.Ok("n1", ops::Upsert("shop", "orders", ops::Rows("o", 30))));
  ASSERT_OK(c.WaitConverged());
  ASSERT_OK(WaitVerifiable(c, "n1"));
  const auto [rc, printed] =
      ops::RunCli(c.node("n1").endpoint(), "verify shop --node n2", c.dir() + "/cli.out");
  EXPECT_EQ(rc, 0) << printed;
  EXPECT_THAT(printed, ::testing::HasSubstr("shop.items"));
  EXPECT_THAT(printed, ::testing::HasSubstr("shop.orders"));
  EXPECT_THAT(printed, ::testing::HasSubstr("30 rows compared, 0 repaired"));
  EXPECT_THAT(printed, ::testing::Not(::testing::HasSubstr("n3"))) << "only the peer named";
}

}  // namespace
}  // namespace cairn::harness
