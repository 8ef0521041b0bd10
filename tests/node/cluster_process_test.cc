// Three cairnd processes on loopback, wired at run time with add_node (SPEC §6: with port 0
// for the peer port, peers are wired after start), converging on their tables (R3, R4), with
// forwarded drops answered per peer (R9, R10) and added peers surviving a restart (R13).
#include <signal.h>

#include <fstream>
#include <map>

#include "tests/node/cairnd_process.h"
#include "tests/testing/testing.h"

namespace cairn::testing {
namespace {

using nlohmann::json;

class CairndClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_.Sub("secret")) << "cluster-secret\n";
    for (const char* name : {"n1", "n2", "n3"}) StartNode(name);
  }

  void StartNode(const std::string& name) {
    CairndOptions o;
    o.name = name;
    o.data_dir = dir_.Sub(name);
    o.args = {"--cluster-secret-file", dir_.Sub("secret")};
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

}  // namespace
}  // namespace cairn::testing
