// Design 0013 through the operations API (P2, P6, P11): create_database's `replicas` and
// `replica_count`, alter_database, and where a placement shows (describe_database,
// describe_all, cluster_status), and P3's refusals. A real cairnd n1 linked to a second, n2,
// so the nodes it knows are n1 and n2.
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include "catalog/placement.h"
#include "cluster-tests/harness/cairnd_process.h"
#include "tests/testing/testing.h"

namespace cairn::testing {
namespace {

using ::cairn::harness::CairndOptions;
using ::cairn::harness::CairndProcess;
using ::cairn::harness::HttpAnswer;
using nlohmann::json;
using ::testing::HasSubstr;

class PlacementOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_.Sub("secret")) << "cluster-secret\n";
    std::filesystem::permissions(
        dir_.Sub("secret"),
        std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
        std::filesystem::perm_options::replace);
    CairndOptions o2;
    o2.name = "n2";
    o2.data_dir = dir_.Sub("n2");
    o2.args = {"--cluster-secret-file", dir_.Sub("secret")};
    auto n2 = CairndProcess::Start(o2);
    ASSERT_OK(n2);
    n2_ = std::move(*n2);
    CairndOptions o;
    o.data_dir = dir_.Sub("n1");
    o.args = {"--peer", "n2=" + n2_->peer_address(), "--cluster-secret-file", dir_.Sub("secret")};
    auto node = CairndProcess::Start(o);
    ASSERT_OK(node);
    node_ = std::move(*node);
    ASSERT_EVENTUALLY([&] { ASSERT_TRUE(LinkedToN2()); });  // item 6 asks for a live link
  }
  bool LinkedToN2() {
    const json status = Ok({{"operation", "cluster_status"}});
    for (const json& c : status["connections"]) {
      if (c["name"] == "n2") return c["connected"] == true;
    }
    return false;
  }
  json Ok(const json& op) {
    HttpAnswer a = node_->Post(op);
    EXPECT_EQ(a.status, 200) << op.dump() << " -> " << a.body;
    return a.json;
  }
  // `op` is refused with a 400 naming `mention`.
  void ExpectBadRequest(const json& op, const std::string& mention) {
    HttpAnswer a = node_->Post(op);
    EXPECT_EQ(a.status, 400) << op.dump() << " -> " << a.body;
    ASSERT_TRUE(a.json.is_object() && a.json.contains("error")) << a.body;
    EXPECT_THAT(a.json["error"].get<std::string>(), HasSubstr(mention)) << op.dump();
  }
  // The `databases` entry of cluster_status for `db`, or null.
  json StatusOf(const std::string& db) {
    const json status = Ok({{"operation", "cluster_status"}});
    for (const json& d : status["databases"]) {
      if (d["database"] == db) return d;
    }
    return nullptr;
  }

  TempDir dir_;
  std::unique_ptr<CairndProcess> n2_;
  std::unique_ptr<CairndProcess> node_;  // n1, the node the tests talk to
};

TEST_F(PlacementOpsTest, P11_APlacedDatabaseShowsItsMembersWhereverItIsDescribed) {
  Ok({{"operation", "create_database"}, {"database", "sales"}, {"replicas", {"n2", "n1"}}});
  Ok({{"operation", "create_database"}, {"database", "plain"}});
  json d = Ok({{"operation", "describe_database"}, {"database", "sales"}});
  ASSERT_TRUE(d.contains("__placement__")) << d.dump();
  EXPECT_EQ(d["__placement__"]["members"], json({"n1", "n2"}));  // sorted
  EXPECT_EQ(d["__placement__"]["origin"], "n1");
  EXPECT_EQ(Ok({{"operation", "describe_all"}})["sales"]["__placement__"]["members"],
            json({"n1", "n2"}));
  // A database on every node looks as it always did.
  EXPECT_FALSE(
      Ok({{"operation", "describe_database"}, {"database", "plain"}}).contains("__placement__"));
  EXPECT_EQ(StatusOf("sales")["placement"]["members"], json({"n1", "n2"}));
  EXPECT_EQ(StatusOf("sales")["member"], true);
  EXPECT_EQ(StatusOf("plain")["placement"]["members"], "*");

  // Placed away from this node, then back on every node.
  json moved = Ok({{"operation", "alter_database"}, {"database", "sales"}, {"replicas", {"n2"}}});
  EXPECT_EQ(moved["placement"]["members"], json({"n2"}));
  EXPECT_EQ(StatusOf("sales")["member"], false);
  Ok({{"operation", "alter_database"}, {"database", "sales"}, {"replicas", "*"}});
  EXPECT_FALSE(
      Ok({{"operation", "describe_database"}, {"database", "sales"}}).contains("__placement__"));
}

TEST_F(PlacementOpsTest, P2_AReplicaCountIsResolvedOnceByRendezvousHash) {
  for (const char* db : {"sales", "stock", "hr"}) {
    Ok({{"operation", "create_database"}, {"database", db}, {"replica_count", 1}});
    const json p = Ok({{"operation", "describe_database"}, {"database", db}})["__placement__"];
    EXPECT_EQ(p["members"], json(catalog::RendezvousMembers(db, {"n1", "n2"}, 1))) << db;
    EXPECT_EQ(p["replica_count"], 1) << db;
  }
  // Every node known: the count is every node, named.
  Ok({{"operation", "alter_database"}, {"database", "sales"}, {"replica_count", 2}});
  EXPECT_EQ(
      Ok({{"operation", "describe_database"}, {"database", "sales"}})["__placement__"]["members"],
      json({"n1", "n2"}));
}

TEST_F(PlacementOpsTest, P3_ANonMemberAnswersNotAMemberForRows) {
  Ok({{"operation", "create_database"}, {"database", "away"}, {"replicas", {"n2"}}});
  Ok({{"operation", "create_table"}, {"database", "away"}, {"table", "t"}, {"primary_key", "id"}});
  for (const json& op : {json{{"operation", "insert"},
                              {"database", "away"},
                              {"table", "t"},
                              {"records", {{{"id", 1}}}}},
                         json{{"operation", "search_by_value"},
                              {"database", "away"},
                              {"table", "t"},
                              {"search_attribute", "id"},
                              {"search_value", "*"}}}) {
    HttpAnswer a = node_->Post(op);
    EXPECT_EQ(a.status, 503) << a.body;
    EXPECT_EQ(a.error_code(), "NOT_A_MEMBER") << a.body;
    EXPECT_THAT(a.body, HasSubstr("n2")) << a.body;
  }
  // Schema operations run on every node (P4).
  Ok({{"operation", "describe_table"}, {"database", "away"}, {"table", "t"}});
}

// Design 0013, P3 item 6: a non-member relays no rows, so a placement may add only members
// linked to the node that takes it; a member that is down may stay or be placed away.
TEST_F(PlacementOpsTest, P3_APlacementAddsOnlyMembersThisNodeIsLinkedTo) {
  Ok({{"operation", "create_database"}, {"database", "sales"}, {"replicas", {"n1", "n2"}}});
  ASSERT_EQ(n2_->Stop(SIGTERM), 0);
  ASSERT_EVENTUALLY([&] { ASSERT_FALSE(LinkedToN2()); });
  // A member that is down is not added: it may stay, and it may be placed away.
  Ok({{"operation", "alter_database"}, {"database", "sales"}, {"replicas", {"n2", "n1"}}});
  Ok({{"operation", "alter_database"}, {"database", "sales"}, {"replicas", {"n1"}}});
  ExpectBadRequest(
      {{"operation", "alter_database"}, {"database", "sales"}, {"replicas", {"n1", "n2"}}},
      "no live link to n2");
  ExpectBadRequest({{"operation", "alter_database"}, {"database", "sales"}, {"replica_count", 2}},
                   "no live link to n2");
  ExpectBadRequest({{"operation", "create_database"}, {"database", "more"}, {"replicas", {"n2"}}},
                   "no live link to n2");
  EXPECT_EQ(
      Ok({{"operation", "describe_database"}, {"database", "sales"}})["__placement__"]["members"],
      json({"n1"}));
  EXPECT_FALSE(Ok({{"operation", "describe_all"}}).contains("more"));
  // Every node needs no link: a node that is down gets the rows when it is back.
  Ok({{"operation", "alter_database"}, {"database", "sales"}, {"replicas", "*"}});
}

TEST_F(PlacementOpsTest, P11_BadPlacementsAreRefusedByNameWithNothingWritten) {
  const json create = {{"operation", "create_database"}, {"database", "bad"}};
  auto with = [&](const char* field, const json& value) {
    json op = create;
    op[field] = value;
    return op;
  };
  ExpectBadRequest(with("replicas", "n1"), "'replicas' must be an array");
  ExpectBadRequest(with("replicas", {1}), "'replicas' must be an array of node names");
  ExpectBadRequest(with("replicas", {"n9"}), "'n9'");
  ExpectBadRequest(with("replicas", json::array()), "replicas");
  ExpectBadRequest(with("replica_count", 0), "'replica_count' must be 1..2");
  ExpectBadRequest(with("replica_count", 3), "'replica_count' must be 1..2");
  json both = with("replicas", {"n1"});
  both["replica_count"] = 1;
  ExpectBadRequest(both, "not both");
  EXPECT_FALSE(Ok({{"operation", "describe_all"}}).contains("bad"));
  Ok(create);
  ExpectBadRequest({{"operation", "alter_database"}, {"database", "bad"}},
                   "'replicas' or 'replica_count' is required");
  ExpectBadRequest({{"operation", "alter_database"}, {"database", "bad"}, {"replicas", {"n9"}}},
                   "'n9'");
  EXPECT_FALSE(
      Ok({{"operation", "describe_database"}, {"database", "bad"}}).contains("__placement__"));
  HttpAnswer missing =
      node_->Post({{"operation", "alter_database"}, {"database", "nope"}, {"replicas", "*"}});
  EXPECT_EQ(missing.status, 404) << missing.body;
}

}  // namespace
}  // namespace cairn::testing
