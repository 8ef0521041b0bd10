// The harness's own ways of breaking a cluster do what they say: a cut link is a partition
// until restored (SPEC §6), a paused node misses nothing once resumed (R12), a restarted
// node comes back where its peers' routes point (R13).
#include <signal.h>

#include "absl/strings/str_cat.h"
#include "cluster-tests/harness/ops.h"
#include "cluster-tests/harness/scenario.h"

namespace cairn::harness {
namespace {

using nlohmann::json;

absl::Status Connected(const Cluster& c, const std::string& on, const std::string& peer,
                       bool want) {
  CAIRN_ASSIGN_OR_RETURN(json status, c.Ok(on, {{"operation", "cluster_status"}}));
  for (const json& link : status["connections"]) {
    if (link["name"] == peer && link.value("connected", false) == want) return absl::OkStatus();
  }
  return absl::UnavailableError(
      absl::StrCat(on, "'s link to ", peer, " is not ", want ? "up" : "down", ": ", status.dump()));
}

TEST_F(ScenarioTest, CutLinkIsAPartitionUntilRestored) {
  ClusterOptions o;
  o.names = {"n1", "n2"};
  ASSERT_OK(StartCluster(o));
  Cluster& c = cluster();
  ASSERT_OK(c.Ok("n1", ops::CreateTable("shop", "kept")));
  ASSERT_OK(c.Ok("n1", ops::CreateTable("shop", "dropped")));
  ASSERT_OK(c.WaitConverged());

  ASSERT_OK(c.Cut("n1", "n2"));
  for (const auto& [a, b] : {std::pair("n1", "n2"), {"n2", "n1"}}) {
    ASSERT_OK(Cluster::WaitFor("the cut", [&, a = a, b = b] { return Connected(c, a, b, false); }));
  }
  ASSERT_OK(c.Ok("n1", ops::Upsert("shop", "kept", ops::Rows("during-cut", 5))));
  CAIRN_ASSIGN_OR_FAIL(json dropped, c.Ok("n1", ops::DropTable("shop", "dropped")));
  ASSERT_EQ(dropped["replicated"].size(), 1u);
  EXPECT_EQ(dropped["replicated"][0]["status"], "failed") << dropped.dump();  // R10
  CAIRN_ASSIGN_OR_FAIL(auto keys, ops::Keys(c, "n2", "shop", "kept"));
  EXPECT_TRUE(keys.empty()) << "a row crossed a cut link";

  ASSERT_OK(c.Restore("n1", "n2"));
  ASSERT_OK(c.WaitConverged());
  CAIRN_ASSIGN_OR_FAIL(keys, ops::Keys(c, "n2", "shop", "kept"));
  EXPECT_EQ(keys.size(), 5u);
  CAIRN_ASSIGN_OR_FAIL(bool has, ops::HasTable(c, "n2", "shop", "dropped"));
  EXPECT_FALSE(has) << "the drop's marker should have reached n2 after the cut";
}

TEST_F(ScenarioTest, PausedNodeMissesNothingOnceResumed) {
  ASSERT_OK(StartCluster());
  Cluster& c = cluster();
  ASSERT_OK(c.Ok("n1", ops::CreateTable("shop", "t")));
  ASSERT_OK(c.WaitConverged());
  ASSERT_OK(c.Pause("n2"));
  for (int i = 0; i < 5; ++i) {  // R12: a stopped peer does not block writes
    ASSERT_OK(c.Ok("n1", ops::Upsert("shop", "t", ops::Rows(absl::StrCat("p", i), 20))));
  }
  ASSERT_OK(c.Resume("n2"));
  ASSERT_OK(c.WaitConverged());
  CAIRN_ASSIGN_OR_FAIL(auto keys, ops::Keys(c, "n2", "shop", "t"));
  EXPECT_EQ(keys.size(), 100u);
}

TEST_F(ScenarioTest, RestartedNodeKeepsItsPortsAndItsPeers) {
  ASSERT_OK(StartCluster());
  Cluster& c = cluster();
  const std::string ops_before = c.node("n2").ops_address();
  const std::string peer_before = c.node("n2").peer_address();
  EXPECT_EQ(c.Kill("n2"), 128 + SIGKILL);
  ASSERT_OK(c.Ok("n1", ops::CreateTable("shop", "while_down")));
  ASSERT_OK(c.Restart("n2"));
  EXPECT_EQ(c.node("n2").ops_address(), ops_before);
  EXPECT_EQ(c.node("n2").peer_address(), peer_before);
  ASSERT_OK(c.WaitConverged());
  CAIRN_ASSIGN_OR_FAIL(bool has, ops::HasTable(c, "n2", "shop", "while_down"));
  EXPECT_TRUE(has);
}

}  // namespace
}  // namespace cairn::harness
