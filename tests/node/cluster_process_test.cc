// Three cairnd processes on loopback, wired at run time with add_node (SPEC §6: with port 0
// for the peer port, peers are wired after start), converging on their tables (R3, R4), with
// forwarded drops answered per peer (R9, R10) and added peers surviving a restart (R13).
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "cairn/storage/v1/records.pb.h"
#include "catalog/local_node.h"
#include "cluster-tests/harness/cairnd_process.h"
#include "common/fault.h"
#include "storage/keys.h"
#include "tests/testing/testing.h"

namespace cairn::testing {
namespace {

using ::cairn::harness::CairndOptions;
using ::cairn::harness::CairndProcess;
using ::cairn::harness::HttpAnswer;

using nlohmann::json;

class CairndClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_.Sub("secret")) << "cluster-secret\n";
    std::filesystem::permissions(
        dir_.Sub("secret"),
        std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
        std::filesystem::perm_options::replace);
    for (const char* name : {"n1", "n2", "n3"}) StartNode(name);
  }

  void StartNode(const std::string& name) {
    CairndOptions o;
    o.name = name;
    o.data_dir = dir_.Sub(name);
    o.args = {"--cluster-secret-file", dir_.Sub("secret"), "--enable-test-hooks"};
    auto node = CairndProcess::Start(o);
    ASSERT_OK(node);
    nodes_[name] = std::move(*node);
  }

  json Ok(const std::string& node, const json& op) {
    HttpAnswer a = nodes_[node]->Post(op);
    EXPECT_EQ(a.status, 200) << node << ": " << op.dump() << " -> " << a.body;
    return a.json;
  }

  void AddNode(const std::string& on, const std::string& peer) {
    Ok(on, {{"operation", "add_node"}, {"name", peer}, {"url", nodes_[peer]->peer_address()}});
  }

  // True for 200, false for 404; anything else (a node not serving) fails the check.
  bool HasTable(const std::string& node, const std::string& db, const std::string& table) {
    HttpAnswer a =
        nodes_[node]->Post({{"operation", "describe_table"}, {"database", db}, {"table", table}});
    EXPECT_TRUE(a.status == 200 || a.status == 404) << node << ": " << a.body;
    return a.status == 200;
  }
  json Connection(const std::string& on, const std::string& peer) {
    json s = Ok(on, {{"operation", "cluster_status"}});
    for (const json& c : s["connections"]) {
      if (c["name"] == peer) return c;
    }
    return json::object();
  }

  TempDir dir_;
  std::map<std::string, std::unique_ptr<CairndProcess>> nodes_;
};

TEST_F(CairndClusterTest, R3_ATableAppearsOnEveryNodeThroughAChainOfLinks) {
  AddNode("n1", "n2");  // n1 - n2 - n3: n3 learns n1's table from n2's snapshot (relay)
  AddNode("n2", "n3");
  Ok("n1",
     {{"operation", "create_table"},
      {"database", "shop"},
      {"table", "orders"},
      {"primary_key", "id"},
      {"attributes", {{{"name", "id"}, {"type", "ID"}}, {{"name", "item"}, {"type", "String"}}}}});
  ASSERT_EVENTUALLY([&] {
    ASSERT_TRUE(HasTable("n2", "shop", "orders"));
    ASSERT_TRUE(HasTable("n3", "shop", "orders"));
  });
  ASSERT_EVENTUALLY([&] {
    json c = Connection("n1", "n2");
    ASSERT_EQ(c.value("connected", false), true) << c.dump();
    ASSERT_EQ(c.value("schema_in_sync", false), true) << c.dump();
    ASSERT_EQ(c.value("authenticated", false), true) << c.dump();
  });
  // The same, per peer, for Prometheus (docs/operations.md "Watch").
  ASSERT_EVENTUALLY([&] {
    const std::string metrics = nodes_["n2"]->Get("/metrics").body;
    for (const char* peer : {"n1", "n3"}) {
      ASSERT_THAT(metrics, ::testing::HasSubstr(
                               absl::StrCat("cairn_peer_connected{peer=\"", peer, "\"} 1\n")));
      ASSERT_THAT(metrics, ::testing::HasSubstr(
                               absl::StrCat("cairn_peer_lag_entries{peer=\"", peer, "\"} 0\n")));
    }
  });
}

TEST_F(CairndClusterTest, R10_DropAnswersEachPeerAndReachesIt) {
  AddNode("n1", "n2");
  AddNode("n1", "n3");
  Ok("n1",
     {{"operation", "create_table"}, {"database", "shop"}, {"table", "t"}, {"primary_key", "id"}});
  ASSERT_EVENTUALLY([&] {
    ASSERT_TRUE(HasTable("n2", "shop", "t"));
    ASSERT_TRUE(HasTable("n3", "shop", "t"));
  });
  nodes_["n3"]->Stop(SIGTERM);
  json dropped = Ok("n1", {{"operation", "drop_table"}, {"database", "shop"}, {"table", "t"}});
  ASSERT_EQ(dropped["replicated"].size(), 2u) << dropped.dump();
  std::map<std::string, std::string> status;
  for (const json& r : dropped["replicated"]) status[r["node"]] = r["status"];
  EXPECT_EQ(status["n2"], "dropped");
  EXPECT_EQ(status["n3"], "failed");
  EXPECT_FALSE(HasTable("n2", "shop", "t"));
  // n3 comes back (new peer port: wire it again) and learns the drop from the marker.
  StartNode("n3");
  Ok("n1", {{"operation", "remove_node"}, {"name", "n3"}});
  AddNode("n1", "n3");
  ASSERT_EVENTUALLY([&] { ASSERT_FALSE(HasTable("n3", "shop", "t")); });
  EXPECT_FALSE(HasTable("n1", "shop", "t"));
}

TEST_F(CairndClusterTest, R13_AddedPeersSurviveARestartAndRemoveNodeForgetsThem) {
  AddNode("n1", "n2");
  HttpAnswer again =
      nodes_["n1"]->Post({{"operation", "add_node"}, {"name", "n2"}, {"url", "127.0.0.1:1"}});
  EXPECT_EQ(again.status, 400) << again.body;
  EXPECT_EQ(again.error_code(), "NODE_EXISTS") << again.body;
  HttpAnswer self =
      nodes_["n1"]->Post({{"operation", "add_node"}, {"name", "n1"}, {"url", "127.0.0.1:1"}});
  EXPECT_EQ(self.status, 400) << self.body;
  EXPECT_EQ(nodes_["n1"]->Stop(SIGTERM), 0);
  StartNode("n1");
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(Connection("n1", "n2").value("connected", false), true); });
  Ok("n1", {{"operation", "remove_node"}, {"name", "n2"}});
  HttpAnswer missing = nodes_["n1"]->Post({{"operation", "remove_node"}, {"name", "n2"}});
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.error_code(), "NODE_NOT_FOUND");
  EXPECT_EQ(nodes_["n1"]->Stop(SIGTERM), 0);
  StartNode("n1");
  EXPECT_EQ(Ok("n1", {{"operation", "cluster_status"}})["connections"], json::array());
}

// Every stored row of db.table in a stopped node's directory, with version, origin and row
// generation; and every change-log entry of `db` as (table, key, version, origin).
struct Stored {
  std::vector<std::string> rows;
  std::vector<std::string> log;
};
Stored ReadStopped(const std::string& dir, const std::string& db, const std::string& table) {
  Stored out;
  auto node = catalog::LocalNode::Open(dir + "/db");
  EXPECT_OK(node);
  if (!node.ok()) return out;
  auto def = (*node)->catalog->Snapshot()->FindTable(db, table);
  EXPECT_OK(def);
  if (!def.ok()) return out;
  const uint64_t generation = (*def)->generation_id();
  auto it = (*node)->engine->NewIterator(storage::Cf::kRecords, nullptr,
                                         storage::GenerationPrefix(generation + 1));
  for (it->Seek(storage::GenerationPrefix(generation)); it->Valid(); it->Next()) {
    storage::v1::StoredRecord rec;
    rec.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()));
    out.rows.push_back(absl::StrCat(absl::CEscape(it->key().ToString().substr(8)), "|",
                                    rec.version(), "|", rec.origin(), "|", rec.row_generation(),
                                    "|", rec.json()));
  }
  const std::string prefix = storage::LogPrefix(db);
  auto log = (*node)->engine->NewIterator(storage::Cf::kChangeLog, nullptr,
                                          storage::PrefixSuccessor(prefix));
  for (log->Seek(prefix); log->Valid(); log->Next()) {
    storage::v1::ChangeEntry e;
    e.ParseFromArray(log->value().data(), static_cast<int>(log->value().size()));
    out.log.push_back(
        absl::StrCat(e.table(), "|", absl::CEscape(e.key()), "|", e.version(), "|", e.origin()));
  }
  return out;
}

// R6: the receiver is killed between receiving a batch and committing it, right after
// committing it (before its ack), or at a random moment; after a restart it resumes from its
// stored cursor: every record arrives with the origin's version, and its change log holds
// each applied entry exactly once.
class ApplyCrashTest : public CairndClusterTest,
                       public ::testing::WithParamInterface<const char*> {};

TEST_P(ApplyCrashTest, R6_KilledReceiverResumesWithNothingMissingOrTwice) {
  const std::string point = GetParam();
  const uint64_t seed = TestSeed();
  std::mt19937_64 rng(seed);
  AddNode("n1", "n2");
  AddNode("n2", "n1");  // n2 comes back on a new peer port: it dials n1 (persisted, R13)
  Ok("n1", {{"operation", "create_table"},
            {"database", "shop"},
            {"table", "orders"},
            {"primary_key", "id"}});
  ASSERT_EVENTUALLY([&] { ASSERT_TRUE(HasTable("n2", "shop", "orders")); });
  const bool at_fault_point = point != "random";
  if (at_fault_point) {
    Ok("n2", {{"operation", "set_fault"}, {"fault", point + "=crash@#2"}});
  }
  const int kill_after = static_cast<int>(rng() % 40) + 1;  // "random": SIGKILL after this
  constexpr int kRequests = 50, kPerRequest = 100;
  bool killed = false;
  for (int r = 0; r < kRequests; ++r) {
    json records = json::array();
    for (int i = 0; i < kPerRequest; ++i) {
      records.push_back({{"id", r * kPerRequest + i}, {"v", absl::StrCat("r", r)}});
    }
    Ok("n1",
       {{"operation", "insert"}, {"database", "shop"}, {"table", "orders"}, {"records", records}});
    if (!at_fault_point && r + 1 == kill_after) {
      EXPECT_EQ(nodes_["n2"]->Stop(SIGKILL), 128 + SIGKILL);
      killed = true;
    }
  }
  if (at_fault_point) {
    // The second batch n2 applies crashes it (exit code 85), whenever that comes.
    ASSERT_EVENTUALLY([&] { ASSERT_EQ(nodes_["n2"]->Get("/health").status, 0); });
    EXPECT_EQ(nodes_["n2"]->Stop(SIGKILL), kInjectedCrashExitCode) << nodes_["n2"]->log();
    killed = true;
  }
  ASSERT_TRUE(killed);
  StartNode("n2");
  ASSERT_EVENTUALLY([&] {
    json d = Ok("n2", {{"operation", "describe_table"}, {"database", "shop"}, {"table", "orders"}});
    ASSERT_EQ(d.value("record_count", json(0)), kRequests * kPerRequest);
    ASSERT_EQ(Connection("n2", "n1").value("lag_entries", json(-1)), 0);
  });
  EXPECT_EQ(nodes_["n1"]->Stop(SIGTERM), 0);
  EXPECT_EQ(nodes_["n2"]->Stop(SIGTERM), 0);
  const Stored n1 = ReadStopped(dir_.Sub("n1"), "shop", "orders");
  const Stored n2 = ReadStopped(dir_.Sub("n2"), "shop", "orders");
  EXPECT_EQ(n2.rows, n1.rows);  // same keys, versions, origins, row generations, bodies
  std::vector<std::string> entries = n2.log;
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(std::adjacent_find(entries.begin(), entries.end()), entries.end())
      << "an entry was applied twice (R6)";
  EXPECT_EQ(entries.size(), static_cast<size_t>(kRequests * kPerRequest));
}

INSTANTIATE_TEST_SUITE_P(AtEachPoint, ApplyCrashTest,
                         ::testing::Values("replication.apply.before_commit",
                                           "replication.apply.after_commit", "random"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '.', '_');
                           return name;
                         });

}  // namespace
}  // namespace cairn::testing
