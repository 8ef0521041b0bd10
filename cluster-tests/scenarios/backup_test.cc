// Backup and restore of a node (create_backup; decision 51; docs/operations.md).
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cluster-tests/harness/ops.h"
#include "cluster-tests/harness/scenario.h"

namespace cairn::harness {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// n1 is restored from a backup taken before it wrote more, dropped a table and deleted a
// row. After the restore it holds everything again (its own later writes come back from its
// peers' full copies, decision 51), the dropped table stays dropped (C8), the deleted row
// stays deleted (D5), and what it writes next reaches its peers.
TEST_F(ScenarioTest, RestoredNodeGetsBackItsOwnLaterWrites) {
  ASSERT_OK(StartCluster());
  Cluster& c = cluster();
  ASSERT_OK(c.Ok("n1", ops::CreateTable("shop", "orders")));
  ASSERT_OK(c.Ok("n1", ops::CreateTable("shop", "scratch")));
  ASSERT_OK(c.Ok("n1", ops::Upsert("shop", "orders", ops::Rows("before", 50))));
  ASSERT_OK(c.WaitConverged());

  CAIRN_ASSIGN_OR_FAIL(json backup, c.Ok("n1", {{"operation", "create_backup"}, {"name", "b1"}}));
  const std::string path = backup["path"];
  EXPECT_TRUE(fs::exists(path + "/db/CURRENT")) << backup.dump();
  EXPECT_TRUE(fs::exists(path + "/backup.json")) << backup.dump();

  ASSERT_OK(c.Ok("n1", ops::Upsert("shop", "orders", ops::Rows("after", 40))));
  ASSERT_OK(c.Ok("n2", ops::Upsert("shop", "orders", ops::Rows("peer", 20))));
  ASSERT_OK(c.Ok(
      "n1",
      {{"operation", "delete"}, {"database", "shop"}, {"table", "orders"}, {"ids", {"before-0"}}}));
  ASSERT_OK(c.Ok("n1", ops::DropTable("shop", "scratch")));
  ASSERT_OK(c.WaitConverged());

  c.Kill("n1");
  ops::ReplaceDataDir(c.node("n1").options().data_dir, path);
  ASSERT_OK(c.Restart("n1"));
  EXPECT_TRUE(absl::StrContains(c.node("n1").log(), "restoring it with a new log identity"));
  ASSERT_OK(c.WaitConverged());

  std::set<std::string> expected = ops::RowIds({{"before", 50}, {"after", 40}, {"peer", 20}});
  expected.erase("before-0");
  for (const std::string& n : c.names()) {
    CAIRN_ASSIGN_OR_FAIL(auto keys, ops::Keys(c, n, "shop", "orders"));
    EXPECT_EQ(keys, expected) << n;
    CAIRN_ASSIGN_OR_FAIL(bool scratch, ops::HasTable(c, n, "shop", "scratch"));
    EXPECT_FALSE(scratch) << n;
  }
  ASSERT_OK(c.Ok("n1", ops::Upsert("shop", "orders", ops::Rows("restored", 5))));
  ASSERT_OK(c.WaitConverged());
  for (const char* n : {"n2", "n3"}) {
    CAIRN_ASSIGN_OR_FAIL(auto keys, ops::Keys(c, n, "shop", "orders"));
    EXPECT_EQ(keys.count("restored-4"), 1u) << n;
  }
  // The next start is an ordinary one.
  const std::string data_dir = c.node("n1").options().data_dir;
  EXPECT_FALSE(fs::exists(data_dir + "/backup.json"));
  EXPECT_TRUE(fs::exists(data_dir + "/restored-from.json"));

  // A crash after the new identity but before the manifest's rename repeats the restore at
  // the next start: another identity, more full copies, the same data.
  c.Kill("n1");
  fs::rename(data_dir + "/restored-from.json", data_dir + "/backup.json");
  ASSERT_OK(c.Restart("n1"));
  ASSERT_OK(c.WaitConverged());
  for (int i = 0; i < 5; ++i) expected.insert(absl::StrCat("restored-", i));
  for (const std::string& n : c.names()) {
    CAIRN_ASSIGN_OR_FAIL(auto keys, ops::Keys(c, n, "shop", "orders"));
    EXPECT_EQ(keys, expected) << n;
  }
}

// A backup older than the tombstone retention could bring deleted rows back everywhere: the
// node refuses to start on it, saying why, unless told to accept that.
TEST_F(ScenarioTest, RestoreRefusesABackupOlderThanDeletesAreRemembered) {
  ClusterOptions options;
  options.names = {"n1"};
  ASSERT_OK(StartCluster(options));
  Cluster& c = cluster();
  ASSERT_OK(c.Ok("n1", ops::CreateTable("shop", "orders")));
  ASSERT_OK(c.Ok("n1", ops::Upsert("shop", "orders", ops::Rows("kept", 3))));
  CAIRN_ASSIGN_OR_FAIL(json backup, c.Ok("n1", {{"operation", "create_backup"}}));
  c.Kill("n1");
  const std::string data_dir = c.node("n1").options().data_dir;
  ops::ReplaceDataDir(data_dir, backup["path"]);
  // Eight days old: one more than the 168 h tombstone retention.
  std::ifstream in(data_dir + "/backup.json");
  json manifest = json::parse(in);
  manifest["created"] =
      absl::FormatTime(absl::RFC3339_sec, absl::Now() - absl::Hours(24 * 8), absl::UTCTimeZone());
  std::ofstream(data_dir + "/backup.json") << manifest.dump();

  absl::Status refused = c.Restart("n1");
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::StrContains(refused.message(), "--restore-stale-backup")) << refused;
  ASSERT_OK(c.Restart("n1", {"--restore-stale-backup"}));
  CAIRN_ASSIGN_OR_FAIL(auto keys, ops::Keys(c, "n1", "shop", "orders"));
  EXPECT_EQ(keys.size(), 3u);
}

TEST_F(ScenarioTest, CreateBackupRefusesABadOrTakenName) {
  ClusterOptions options;
  options.names = {"n1"};
  ASSERT_OK(StartCluster(options));
  Cluster& c = cluster();
  CAIRN_ASSIGN_OR_FAIL(json first, c.Ok("n1", {{"operation", "create_backup"}}));
  EXPECT_TRUE(fs::exists(first["path"].get<std::string>() + "/db/CURRENT")) << first.dump();

  HttpAnswer again = c.Op("n1", {{"operation", "create_backup"}, {"name", first["name"]}});
  EXPECT_EQ(again.status, 400) << again.body;
  EXPECT_EQ(again.error_code(), "BAD_REQUEST");
  for (const json& bad : {json("../escape"), json(""), json(7)}) {
    HttpAnswer a = c.Op("n1", {{"operation", "create_backup"}, {"name", bad}});
    EXPECT_EQ(a.status, 400) << bad << " " << a.body;
  }
  EXPECT_FALSE(fs::exists(c.node("n1").options().data_dir + "/escape"));
}

}  // namespace
}  // namespace cairn::harness
