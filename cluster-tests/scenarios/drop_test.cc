// Scenarios 2-5 and 8: drops racing with restarts, partitions, node-local tables and writers
// (SPEC C6-C11, R9, R10, R14).
#include <signal.h>

#include <atomic>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cluster-tests/harness/ops.h"
#include "cluster-tests/harness/scenario.h"
#include "common/status.h"

namespace cairn::harness {
namespace {

using nlohmann::json;
using Keys = std::set<std::string>;

Keys KeySet(const json& rows) {
  Keys keys;
  for (const json& r : rows) keys.insert(r["id"].get<std::string>());
  return keys;
}

// Waits until `node` has (or lacks) db.table.
absl::Status WaitTable(const Cluster& c, const std::string& node, const std::string& db,
                       const std::string& table, bool present) {
  return Cluster::WaitFor(absl::StrCat(node, present ? " has " : " lacks ", db, ".", table),
                          [&]() -> absl::Status {
                            CAIRN_ASSIGN_OR_RETURN(bool has, ops::HasTable(c, node, db, table));
                            if (has == present) return absl::OkStatus();
                            return absl::UnavailableError(has ? "still there" : "not there yet");
                          });
}

// shop.t created on n1, with 20 records written on n1 and 20 on n2, everywhere.
absl::Status SeedSharedTable(Cluster& c) {
  CAIRN_RETURN_IF_ERROR(c.Ok("n1", ops::CreateTable("shop", "t")).status());
  CAIRN_RETURN_IF_ERROR(WaitTable(c, "n2", "shop", "t", true));
  CAIRN_RETURN_IF_ERROR(c.Ok("n1", ops::Upsert("shop", "t", ops::Rows("a", 20))).status());
  CAIRN_RETURN_IF_ERROR(c.Ok("n2", ops::Upsert("shop", "t", ops::Rows("b", 20))).status());
  return c.WaitConverged();
}

// The drop status each peer answered (R10).
std::map<std::string, std::string> PeerStatuses(const json& drop) {
  std::map<std::string, std::string> out;
  for (const json& r : drop["replicated"]) out[r["node"]] = r["status"];
  return out;
}

// Scenario 2. A peer is stopped (gracefully, or by SIGKILL) while its table is dropped: the
// drop answers `failed` for it (R10); after both nodes restart the table is gone on both (C7,
// C8 through the marker in the snapshot), and a recreate of the name is empty on both: none
// of the old generation's rows comes back (C6).
class DropWithPeerDownTest : public ScenarioTest, public ::testing::WithParamInterface<int> {};

TEST_P(DropWithPeerDownTest, TableGoneOnBothAfterRestarts_RecreateIsEmpty) {
  ClusterOptions o;
  o.names = {"n1", "n2"};
  ASSERT_OK(StartCluster(o));
  Cluster& c = cluster();
  ASSERT_OK(SeedSharedTable(c));

  const int sig = GetParam();
  EXPECT_EQ(sig == SIGTERM ? c.Stop("n2") : c.Kill("n2"), sig == SIGTERM ? 0 : 128 + SIGKILL);
  CAIRN_ASSIGN_OR_FAIL(json dropped, c.Ok("n1", ops::DropTable("shop", "t")));
  EXPECT_EQ(PeerStatuses(dropped)["n2"], "failed") << dropped.dump();
  EXPECT_EQ(c.Stop("n1"), 0);
  ASSERT_OK(c.Restart("n1"));
  ASSERT_OK(c.Restart("n2"));
  for (const char* n : {"n1", "n2"}) ASSERT_OK(WaitTable(c, n, "shop", "t", false));

  ASSERT_OK(c.Ok("n1", ops::CreateTable("shop", "t")));
  ASSERT_OK(WaitTable(c, "n2", "shop", "t", true));
  ASSERT_OK(c.WaitConverged());
  for (const char* n : {"n1", "n2"}) {
    CAIRN_ASSIGN_OR_FAIL(Keys keys, ops::Keys(c, n, "shop", "t"));
    EXPECT_TRUE(keys.empty()) << n << " brought back " << keys.size() << " old records";
  }
  ASSERT_OK(c.Ok("n2", ops::Upsert("shop", "t", ops::Rows("new", 1))));
  ASSERT_OK(c.WaitConverged());
  CAIRN_ASSIGN_OR_FAIL(Keys keys, ops::Keys(c, "n1", "shop", "t"));
  EXPECT_EQ(keys, Keys({"new-0"}));
}

INSTANTIATE_TEST_SUITE_P(Stopped, DropWithPeerDownTest, ::testing::Values(SIGTERM, SIGKILL),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == SIGTERM ? "Gracefully" : "Killed";
                         });

// Scenario 3. n3 is cut off, writes rows of its own to the table, and is killed; meanwhile
// the table is dropped and recreated, and the new generation gets rows. When n3 returns, its
// old rows (written while away, so no peer has them) never reach the new generation (C6,
// C8, D7); the new generation's rows reach n3; n3's new writes reach everyone.
TEST_F(ScenarioTest, DropWhilePeerDownThenRecreate_OldRowsNeverReachNewGeneration) {
  ASSERT_OK(StartCluster());
  Cluster& c = cluster();
  ASSERT_OK(c.Ok("n1", ops::CreateTable("shop", "t", {{"id", "ID"}, {"name", "String"}})));
  for (const char* n : {"n2", "n3"}) ASSERT_OK(WaitTable(c, n, "shop", "t", true));
  for (const char* n : {"n1", "n2", "n3"}) {
    ASSERT_OK(c.Ok(n, ops::Upsert("shop", "t", ops::Rows(absl::StrCat("old-", n), 10))));
  }
  ASSERT_OK(c.WaitConverged());
  ASSERT_OK(c.Cut("n3", "n1"));
  ASSERT_OK(c.Cut("n3", "n2"));
  ASSERT_OK(c.Ok("n3", ops::Upsert("shop", "t", ops::Rows("away-n3", 10))));
  EXPECT_EQ(c.Kill("n3"), 128 + SIGKILL);

  CAIRN_ASSIGN_OR_FAIL(json dropped, c.Ok("n1", ops::DropTable("shop", "t")));
  EXPECT_EQ(PeerStatuses(dropped)["n2"], "dropped") << dropped.dump();
  EXPECT_EQ(PeerStatuses(dropped)["n3"], "failed") << dropped.dump();
  ASSERT_OK(c.Ok("n1", ops::CreateTable("shop", "t", {{"id", "ID"}, {"name", "String"}})));
  ASSERT_OK(WaitTable(c, "n2", "shop", "t", true));
  ASSERT_OK(c.Ok("n1", ops::Upsert("shop", "t", ops::Rows("new-n1", 5))));
  ASSERT_OK(c.Ok("n2", ops::Upsert("shop", "t", ops::Rows("new-n2", 5))));

  ASSERT_OK(c.Restart("n3"));
  ASSERT_OK(c.Restore("n3", "n1"));
  ASSERT_OK(c.Restore("n3", "n2"));
  ASSERT_OK(c.WaitConverged());
  Keys expected = KeySet(ops::Rows("new-n1", 5));
  for (const std::string& k : KeySet(ops::Rows("new-n2", 5))) expected.insert(k);
  for (const char* n : {"n1", "n2", "n3"}) {
    CAIRN_ASSIGN_OR_FAIL(Keys keys, ops::Keys(c, n, "shop", "t"));
    EXPECT_EQ(keys, expected) << n;
  }
  ASSERT_OK(c.Ok("n3", ops::Upsert("shop", "t", ops::Rows("new-n3", 5))));
  ASSERT_OK(c.WaitConverged());
  CAIRN_ASSIGN_OR_FAIL(Keys keys, ops::Keys(c, "n1", "shop", "t"));
  EXPECT_EQ(keys.size(), 15u);
}

// Scenario 4. A drop with `replicated: false` is local (C7): only the node that ran it loses
// the table; the others keep it with every record, also after they restart. It is not
// forwarded and leaves no marker, so the peers' table comes back to that node whole with
// their next snapshots (decision 44).
TEST_F(ScenarioTest, LocalOnlyDrop_OnlyThatNodeLosesTheTable) {
  ASSERT_OK(StartCluster());
  Cluster& c = cluster();
  ASSERT_OK(SeedSharedTable(c));

  CAIRN_ASSIGN_OR_FAIL(json dropped, c.Ok("n1", ops::DropTable("shop", "t", false)));
  EXPECT_EQ(dropped["replicated"], json::array()) << "a local-only drop is not forwarded";
  CAIRN_ASSIGN_OR_FAIL(bool has, ops::HasTable(c, "n1", "shop", "t"));
  EXPECT_FALSE(has);
  for (const char* n : {"n2", "n3"}) {
    CAIRN_ASSIGN_OR_FAIL(Keys keys, ops::Keys(c, n, "shop", "t"));
    EXPECT_EQ(keys.size(), 40u) << n;
    EXPECT_EQ(c.Stop(n), 0);
    ASSERT_OK(c.Restart(n));
  }
  for (const char* n : {"n2", "n3"}) {
    CAIRN_ASSIGN_OR_FAIL(Keys keys, ops::Keys(c, n, "shop", "t"));
    EXPECT_EQ(keys.size(), 40u) << n << " after a restart";
  }
  // No marker was left, so nothing retires the peers' generation: n1 takes the table back
  // from the snapshots its restarted peers sent, with every record (decision 44).
  ASSERT_OK(c.WaitConverged());
  CAIRN_ASSIGN_OR_FAIL(Keys back, ops::Keys(c, "n1", "shop", "t"));
  EXPECT_EQ(back.size(), 40u);
}

// Scenario 5. n2's node-local table has the name of n1's replicated table (C11). The
// replicated table's drops (while n2 is down, and forwarded while it is up) never retire
// n2's table, through restarts; n2's own drop of it is not forwarded.
TEST_F(ScenarioTest, NodeLocalTableSurvivesPeerDrops_AndItsOwnDropIsNotForwarded) {
  ClusterOptions o;
  o.names = {"n1", "n2"};
  ASSERT_OK(StartCluster(o));
  Cluster& c = cluster();
  ASSERT_OK(c.Ok("n2", ops::CreateTable("app", "nl", {}, /*replicate=*/false)));
  ASSERT_OK(c.Ok("n2", ops::Upsert("app", "nl", ops::Rows("b-local", 3))));
  ASSERT_OK(c.Ok("n1", ops::CreateTable("app", "nl")));
  ASSERT_OK(c.Ok("n1", ops::Upsert("app", "nl", ops::Rows("a", 2))));
  ASSERT_OK(c.Ok("n1", ops::CreateTable("app", "control")));
  ASSERT_OK(c.Ok("n1", ops::Upsert("app", "control", ops::Rows("c", 5))));
  CheckOptions local;
  local.local_tables = {{"n1", {}}, {"n2", {"app.nl"}}};
  ASSERT_OK(c.WaitConverged(local));
  const Keys b_local = KeySet(ops::Rows("b-local", 3));
  auto n2_keeps_its_table = [&] {
    auto keys = ops::Keys(c, "n2", "app", "nl");
    ASSERT_OK(keys);
    EXPECT_EQ(*keys, b_local);
  };
  n2_keeps_its_table();
  CAIRN_ASSIGN_OR_FAIL(Keys n1_keys, ops::Keys(c, "n1", "app", "nl"));
  EXPECT_EQ(n1_keys, KeySet(ops::Rows("a", 2))) << "node-local rows left their node";

  // Dropped while n2 is down: n2 learns the markers from n1's snapshot.
  EXPECT_EQ(c.Stop("n2"), 0);
  ASSERT_OK(c.Ok("n1", ops::DropTable("app", "nl")));
  ASSERT_OK(c.Ok("n1", ops::DropTable("app", "control")));
  ASSERT_OK(c.Restart("n2"));
  ASSERT_OK(WaitTable(c, "n2", "app", "control", false));
  n2_keeps_its_table();
  EXPECT_EQ(c.Stop("n2"), 0);
  ASSERT_OK(c.Restart("n2"));
  ASSERT_OK(Cluster::WaitFor("links up", [&] { return c.LinksSettled(); }));
  n2_keeps_its_table();

  // Recreated and dropped while n2 is up: the forwarded drop is answered "kept" (C8).
  ASSERT_OK(c.Ok("n1", ops::CreateTable("app", "nl")));
  CAIRN_ASSIGN_OR_FAIL(json dropped, c.Ok("n1", ops::DropTable("app", "nl")));
  EXPECT_EQ(PeerStatuses(dropped)["n2"], "kept") << dropped.dump();
  n2_keeps_its_table();

  // n2 drops its own node-local table: not forwarded (C11), so n1's table of that name stays.
  ASSERT_OK(c.Ok("n1", ops::CreateTable("app", "nl")));
  ASSERT_OK(c.Ok("n1", ops::Upsert("app", "nl", ops::Rows("a-late", 1))));
  CAIRN_ASSIGN_OR_FAIL(json own, c.Ok("n2", ops::DropTable("app", "nl")));
  EXPECT_EQ(own["replicated"], json::array()) << own.dump();
  CAIRN_ASSIGN_OR_FAIL(Keys late, ops::Keys(c, "n1", "app", "nl"));
  EXPECT_EQ(late, KeySet(ops::Rows("a-late", 1)));
  // With its own table gone, n2 takes n1's from n1's next snapshot (here: after the next
  // catalog change on n1), with the rows it skipped while the name was its own (decision 44).
  ASSERT_OK(c.Ok("n1", ops::CreateTable("app", "later")));
  local.local_tables = {{"n1", {}}, {"n2", {}}};
  EXPECT_OK(c.WaitConverged(local));
  CAIRN_ASSIGN_OR_FAIL(Keys adopted, ops::Keys(c, "n2", "app", "nl"));
  EXPECT_EQ(adopted, KeySet(ops::Rows("a-late", 1)));
}

// Scenario 8. Eight writers on a table and eight on another; the first is dropped under them
// (C9): the drop completes, every write to the other table succeeds, and nothing of the
// dropped generation is left anywhere: a recreate of the name is empty on every node.
TEST_F(ScenarioTest, DropUnderLoad_OtherTableUnaffected_NothingLeft) {
  ASSERT_OK(StartCluster());
  Cluster& c = cluster();
  ASSERT_OK(c.Ok("n1", ops::CreateTable("load", "doomed")));
  ASSERT_OK(c.Ok("n1", ops::CreateTable("load", "other")));
  ASSERT_OK(c.WaitConverged());
  std::atomic<int> doomed_ok{0}, other_ok{0};
  std::mutex mu;
  std::vector<std::string> errors;
  Workers writers;
  for (int w = 0; w < 16; ++w) {
    writers.Run([&, w](const std::atomic<bool>& stopping) {
      const bool doomed = w < 8;
      for (int i = 0; !stopping.load(); ++i) {
        const std::string prefix = absl::StrCat("w", w, "-", i);
        HttpAnswer a =
            c.Op("n1", ops::Upsert("load", doomed ? "doomed" : "other", ops::Rows(prefix, 10)));
        if (a.status == 200) {
          (doomed ? doomed_ok : other_ok).fetch_add(1);
          continue;
        }
        // The dropped table answers TABLE_DROPPING while it drains, then TABLE_NOT_FOUND.
        if (doomed && (a.error_code() == "TABLE_DROPPING" || a.error_code() == "TABLE_NOT_FOUND")) {
          continue;
        }
        std::lock_guard<std::mutex> lock(mu);
        errors.push_back(absl::StrCat(doomed ? "doomed" : "other", ": ", a.status, " ", a.body));
      }
    });
  }
  ASSERT_OK(Cluster::WaitFor("writers running", [&]() -> absl::Status {
    if (doomed_ok.load() >= 40 && other_ok.load() >= 40) return absl::OkStatus();
    return absl::UnavailableError("not yet");
  }));
  CAIRN_ASSIGN_OR_FAIL(json dropped, c.Ok("n1", ops::DropTable("load", "doomed")));
  const int other_at_drop = other_ok.load();
  ASSERT_OK(Cluster::WaitFor("the other table's writers go on", [&]() -> absl::Status {
    if (other_ok.load() >= other_at_drop + 40) return absl::OkStatus();
    return absl::UnavailableError("not yet");
  }));
  writers.Stop();
  EXPECT_TRUE(errors.empty()) << absl::StrJoin(errors, "\n");
  EXPECT_EQ(PeerStatuses(dropped)["n2"], "dropped") << dropped.dump();
  EXPECT_EQ(PeerStatuses(dropped)["n3"], "dropped") << dropped.dump();
  ASSERT_OK(c.WaitConverged());
  for (const char* n : {"n1", "n2", "n3"}) {
    CAIRN_ASSIGN_OR_FAIL(bool has, ops::HasTable(c, n, "load", "doomed"));
    EXPECT_FALSE(has) << n;
    CAIRN_ASSIGN_OR_FAIL(Keys other, ops::Keys(c, n, "load", "other"));
    EXPECT_EQ(other.size(), static_cast<size_t>(other_ok.load()) * 10) << n;
  }
  ASSERT_OK(c.Ok("n2", ops::CreateTable("load", "doomed")));
  ASSERT_OK(c.WaitConverged());
  for (const char* n : {"n1", "n2", "n3"}) {
    CAIRN_ASSIGN_OR_FAIL(Keys keys, ops::Keys(c, n, "load", "doomed"));
    EXPECT_TRUE(keys.empty()) << n << " holds " << keys.size() << " rows of the dropped table";
  }
}

}  // namespace
}  // namespace cairn::harness
