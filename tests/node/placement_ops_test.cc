// Design 0013 through the operations API (P2, P6, P11): create_database's `replicas` and
// `replica_count`, alter_database, and where a placement shows (describe_database,
// describe_all, cluster_status), P3's refusal of members without a link, P4/P5's
// forwarding, P7's new member catching up, P8's removed member letting go and P10's
// confirmed writes. A real cairnd n1
// linked to a second, n2, so the nodes it knows are n1 and n2.
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>

#include "absl/strings/escaping.h"
#include "cairn/peer/v1/peer.grpc.pb.h"
#include "catalog/placement.h"
#include "cluster-tests/harness/cairnd_process.h"
#include "grpcpp/grpcpp.h"
#include "tests/testing/hand_call.h"
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
    o2.args = {"--cluster-secret-file", dir_.Sub("secret"), "--enable-test-hooks"};
    auto n2 = CairndProcess::Start(o2);
    ASSERT_OK(n2);
    n2_ = std::move(*n2);
    CairndOptions o;
    o.data_dir = dir_.Sub("n1");
    o.args = {"--peer",
              "n2=" + n2_->peer_address(),
              "--cluster-secret-file",
              dir_.Sub("secret"),
              "--enable-test-hooks",
              "--confirmation-timeout",
              "1s"};
    auto node = CairndProcess::Start(o);
    ASSERT_OK(node);
    node_ = std::move(*node);
    ASSERT_EVENTUALLY([&] { ASSERT_TRUE(LinkedToN2()); });  // item 6 asks for a live link
  }
  // Database "away", placed on n2 only, with table t (key id), once n2 has the table.
  void CreateAwayTable() {
    Ok({{"operation", "create_database"}, {"database", "away"}, {"replicas", {"n2"}}});
    Ok({{"operation", "create_table"},
        {"database", "away"},
        {"table", "t"},
        {"primary_key", "id"}});
    ASSERT_EVENTUALLY([&] {
      ASSERT_EQ(
          n2_->Post({{"operation", "describe_table"}, {"database", "away"}, {"table", "t"}}).status,
          200);
    });
  }
  static json Insert(const json& records) {
    return {{"operation", "insert"}, {"database", "away"}, {"table", "t"}, {"records", records}};
  }
  static json SearchAll() {
    return {{"operation", "search_by_value"}, {"database", "away"},  {"table", "t"},
            {"search_attribute", "id"},       {"search_value", "*"}, {"get_attributes", {"*"}}};
  }
  // The status message of an Operate call made by hand to `to`, as the peer "n3" forwarding
  // `body` for `user` (the rest of the answer read and dropped).
  static peer::v1::OperateReply OperateOn(const CairndProcess& to, const std::string& user,
                                          const json& body) {
    auto client = peer::v1::Peer::NewStub(
        grpc::CreateChannel(to.peer_address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    MustReachNode(context);
    context.AddMetadata("cairn-node", "n3");
    context.AddMetadata("cairn-secret", "cluster-secret");
    peer::v1::OperateRequest request;
    request.set_body(body.dump());
    request.set_user(user);
    request.set_timeout_ms(10'000);
    auto reader = client->Operate(&context, request);
    peer::v1::OperateReply head, rest;
    EXPECT_TRUE(reader->Read(&head));
    while (reader->Read(&rest)) {
    }
    EXPECT_TRUE(reader->Finish().ok());
    return head;
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
  // The database's entry in the cluster_status of `on` (n1 when null).
  json StatusOf(const std::string& db, CairndProcess* on = nullptr) {
    CairndProcess* node = on == nullptr ? node_.get() : on;
    const HttpAnswer status = node->Post({{"operation", "cluster_status"}});
    EXPECT_EQ(status.status, 200) << status.body;
    for (const json& d : status.json["databases"]) {
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

// Design 0013, P4: a node that is not a member of a database forwards operations on its rows
// to a member and relays the answer (streamed through when long); it holds none of the rows
// itself (P3), and schema operations still run on it.
TEST_F(PlacementOpsTest, P4_ANonMemberForwardsOperationsOnRowsToAMember) {
  ASSERT_NO_FATAL_FAILURE(CreateAwayTable());
  json inserted = Ok(Insert(json::array({{{"id", 1}, {"v", "one"}}})));
  EXPECT_EQ(inserted["inserted_hashes"], json({1})) << inserted.dump();
  json found = Ok({{"operation", "search_by_id"},
                   {"database", "away"},
                   {"table", "t"},
                   {"ids", {1}},
                   {"get_attributes", {"*"}}});
  ASSERT_EQ(found.size(), 1u) << found.dump();
  EXPECT_EQ(found[0]["v"], "one");
  // The member holds it; this node does not.
  EXPECT_EQ(n2_->Post(SearchAll()).json.size(), 1u);
  json mine = Ok({{"operation", "read_rows"}, {"database", "away"}, {"table", "t"}});
  EXPECT_EQ(mine["rows"], json::array()) << mine.dump();
  // A long answer (over the 64 KiB read whole) streams through whole.
  json many = json::array();
  for (int id = 2; id <= 301; ++id) many.push_back({{"id", id}, {"v", std::string(500, 'x')}});
  Ok(Insert(many));
  HttpAnswer all = node_->Post(SearchAll());
  ASSERT_EQ(all.status, 200) << all.body.substr(0, 200);
  EXPECT_GT(all.body.size(), 150'000u);
  EXPECT_EQ(all.json.size(), 301u);
  Ok({{"operation", "describe_table"}, {"database", "away"}, {"table", "t"}});
}

// P4: the member runs a forwarded operation under the caller's role as its own catalog has it
// (U4): a role that may only read reads through a non-member and cannot write on the member
// (through n1 the insert is refused by n1 itself, which holds the same role).
TEST_F(PlacementOpsTest, P4_AForwardedOperationRunsUnderTheCallersRole) {
  ASSERT_NO_FATAL_FAILURE(CreateAwayTable());
  const json reads = {{"read", true},
                      {"insert", false},
                      {"update", false},
                      {"delete", false},
                      {"attribute_permissions", json::array()}};
  Ok({{"operation", "add_role"},
      {"role", "reader"},
      {"permission", {{"away", {{"tables", {{"t", reads}}}}}}}});
  Ok({{"operation", "add_user"},
      {"username", "ann"},
      {"password", "pw-ann"},
      {"role", "reader"},
      {"active", true}});
  const std::string ann = "Basic " + absl::Base64Escape("ann:pw-ann");
  ASSERT_EVENTUALLY([&] {  // the user reaches the member with the schema
    ASSERT_EQ(n2_->PostRaw(SearchAll().dump(), true, ann).status, 200);
  });
  HttpAnswer search = node_->PostRaw(SearchAll().dump(), true, ann);
  EXPECT_EQ(search.status, 200) << search.body;
  // The member applies the role it holds for the user a forward names, and knows no other.
  EXPECT_EQ(OperateOn(*n2_, "ann", Insert(json::array({{{"id", 9}}}))).status(), 403u);
  EXPECT_EQ(OperateOn(*n2_, "nobody", SearchAll()).status(), 401u);
  EXPECT_EQ(OperateOn(*n2_, "admin", SearchAll()).status(), 200u);
  EXPECT_EQ(n2_->Post(SearchAll()).json.size(), 0u);
}

// P4: a table created through a non-member can be written through it at once. A member whose
// schema is a moment behind (held back here by a blocking fault point on n2) ran nothing,
// and the forward waits for it instead of answering its 404.
TEST_F(PlacementOpsTest, P4_AWriteRightAfterCreateTableWaitsForTheMembersSchema) {
  Ok({{"operation", "create_database"}, {"database", "away"}, {"replicas", {"n2"}}});
  ASSERT_EVENTUALLY([&] {
    ASSERT_EQ(n2_->Post({{"operation", "describe_database"}, {"database", "away"}}).status, 200);
  });
  ASSERT_EQ(
      n2_->Post({{"operation", "set_fault"}, {"fault", "replication.schema.receive=block"}}).status,
      200);
  Ok({{"operation", "create_table"}, {"database", "away"}, {"table", "t"}, {"primary_key", "id"}});
  auto insert = std::async(std::launch::async, [&] {
    return node_->Post(Insert(json::array({{{"id", 1}}})));
  });
  ASSERT_EVENTUALLY([&] { ASSERT_GE(node_->Metric("cairn_forward_schema_waits_total"), 1); });
  ASSERT_EQ(
      n2_->Post({{"operation", "clear_fault"}, {"name", "replication.schema.receive"}}).status,
      200);
  HttpAnswer a = insert.get();
  EXPECT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(n2_->Post(SearchAll()).json.size(), 1u);
}

// P4: with no member linked, an operation on rows is 503 NO_MEMBER_REACHABLE naming them.
TEST_F(PlacementOpsTest, P4_NoMemberReachableIsAnsweredByName) {
  ASSERT_NO_FATAL_FAILURE(CreateAwayTable());
  ASSERT_EQ(n2_->Stop(SIGTERM), 0);
  ASSERT_EVENTUALLY([&] { ASSERT_FALSE(LinkedToN2()); });
  HttpAnswer a = node_->Post(Insert(json::array({{{"id", 1}}})));
  EXPECT_EQ(a.status, 503) << a.body;
  EXPECT_EQ(a.error_code(), "NO_MEMBER_REACHABLE") << a.body;
  EXPECT_THAT(a.body, HasSubstr("n2")) << a.body;
}

// P5: a forwarded request that reaches a node that is not a member is answered NOT_A_MEMBER
// there and never forwarded again (a peer in another view would otherwise bounce it).
TEST_F(PlacementOpsTest, P5_AForwardedRequestIsNotForwardedAgain) {
  ASSERT_NO_FATAL_FAILURE(CreateAwayTable());
  const peer::v1::OperateReply head =
      OperateOn(*node_, "admin", Insert(json::array({{{"id", 7}}})));
  EXPECT_EQ(head.status(), 503u);
  EXPECT_EQ(head.error_code(), "NOT_A_MEMBER");
  EXPECT_EQ(n2_->Post(SearchAll()).json.size(), 0u) << "the request was forwarded to n2";
}

// P4 with C11: a member whose own table of the name is node-local does not hold the
// replicated table's rows, so it takes no forwarded operation on it (it answers NOT_A_MEMBER
// before anything runs, and the first node tries the next member; here there is none).
TEST_F(PlacementOpsTest, P4_AMemberWhoseTableOfTheNameIsNodeLocalTakesNoForward) {
  Ok({{"operation", "create_database"}, {"database", "away"}, {"replicas", {"n2"}}});
  ASSERT_EVENTUALLY([&] {
    ASSERT_EQ(n2_->Post({{"operation", "describe_database"}, {"database", "away"}}).status, 200);
  });
  // n2's own away.t is node-local (never announced); n1's is the replicated one.
  ASSERT_EQ(n2_->Post({{"operation", "create_table"},
                       {"database", "away"},
                       {"table", "t"},
                       {"primary_key", "id"},
                       {"replicate", false}})
                .status,
            200);
  ASSERT_EQ(n2_->Post(Insert(json::array({{{"id", "mine"}}}))).status, 200);
  Ok({{"operation", "create_table"}, {"database", "away"}, {"table", "t"}, {"primary_key", "id"}});

  HttpAnswer insert = node_->Post(Insert(json::array({{{"id", 1}}})));
  EXPECT_EQ(insert.status, 503) << insert.body;
  EXPECT_EQ(insert.error_code(), "NO_MEMBER_REACHABLE") << insert.body;
  EXPECT_THAT(insert.body, HasSubstr("node-local")) << insert.body;
  HttpAnswer search = node_->Post(SearchAll());
  EXPECT_EQ(search.status, 503) << search.body << ": n2's own rows answered for the table";
  const peer::v1::OperateReply head = OperateOn(*n2_, "admin", SearchAll());
  EXPECT_EQ(head.status(), 503u);
  EXPECT_EQ(head.error_code(), "NOT_A_MEMBER");
  // n2's clients still use its own table.
  const json own = n2_->Post(SearchAll()).json;
  ASSERT_EQ(own.size(), 1u) << own.dump();
  EXPECT_EQ(own[0]["id"], "mine");
}

// Design 0013, P7: a member added to a placement serves the database only once it has caught
// up. Until then it holds part of the rows at most, so its clients' requests are forwarded to a
// ready member; then it announces that it is ready, every node shows it, and it serves them.
TEST_F(PlacementOpsTest, P7_ANewMemberServesTheDatabaseOnlyOnceCaughtUp) {
  Ok({{"operation", "create_database"}, {"database", "away"}, {"replicas", {"n1"}}});
  Ok({{"operation", "create_table"}, {"database", "away"}, {"table", "t"}, {"primary_key", "id"}});
  Ok(Insert(json::array({{{"id", 1}}, {{"id", 2}}, {{"id", 3}}})));
  ASSERT_EVENTUALLY([&] {
    ASSERT_EQ(
        n2_->Post({{"operation", "describe_table"}, {"database", "away"}, {"table", "t"}}).status,
        200);
  });
  // Nobody ready would be left to serve the database.
  ExpectBadRequest({{"operation", "alter_database"}, {"database", "away"}, {"replicas", {"n2"}}},
                   "no ready member");
  // n2 takes the placement, then applies nothing of its copy until the fault is cleared.
  ASSERT_EQ(
      n2_->Post({{"operation", "set_fault"}, {"fault", "replication.apply.before_commit=block"}})
          .status,
      200);
  const json grown =
      Ok({{"operation", "alter_database"}, {"database", "away"}, {"replicas", {"n1", "n2"}}});
  EXPECT_EQ(grown["placement"]["ready"], json({"n1"}));
  EXPECT_EQ(grown["placement"]["catching_up"], json({"n2"}));
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(StatusOf("away", n2_.get())["member"], true); });
  EXPECT_EQ(StatusOf("away", n2_.get())["ready"], false);
  EXPECT_THAT(StatusOf("away", n2_.get())["waiting_for"].get<std::string>(), HasSubstr("n1"));
  // n2 holds none of the rows yet; its client still gets all three, from n1 (a forward goes
  // over a route of the forwarding node, P4).
  ASSERT_EQ(
      n2_->Post({{"operation", "add_node"}, {"name", "n1"}, {"url", node_->peer_address()}}).status,
      200);
  const double forwarded = n2_->Metric("cairn_forwarded_operations_total");
  HttpAnswer search = n2_->Post(SearchAll());
  EXPECT_EQ(search.status, 200) << search.body;
  EXPECT_EQ(search.json.size(), 3u) << search.body;
  EXPECT_EQ(n2_->Metric("cairn_forwarded_operations_total"), forwarded + 1);

  ASSERT_EQ(
      n2_->Post({{"operation", "clear_fault"}, {"name", "replication.apply.before_commit"}}).status,
      200);
  // n2's announcement reaches n1, under the same placement change.
  ASSERT_EVENTUALLY([&] {
    const json p = Ok({{"operation", "describe_database"}, {"database", "away"}})["__placement__"];
    ASSERT_EQ(p["catching_up"], json::array());
    ASSERT_EQ(p["stamp"], grown["placement"]["stamp"]);
  });
  EXPECT_EQ(StatusOf("away", n2_.get())["ready"], true);
  // n2 serves the database itself now.
  search = n2_->Post(SearchAll());
  EXPECT_EQ(search.json.size(), 3u) << search.body;
  EXPECT_EQ(n2_->Metric("cairn_forwarded_operations_total"), forwarded + 1);
}

// P8, P11: a removed member shows `releasing` (and what it waits for) until the remaining
// member has acknowledged its log and holds every row; then it holds none (checked in its
// storage), and forwards the database's operations to the member.
TEST_F(PlacementOpsTest, P8_ARemovedMemberShowsReleasingUntilItLetsGo) {
  Ok({{"operation", "create_database"}, {"database", "away"}, {"replicas", {"n1", "n2"}}});
  Ok({{"operation", "create_table"}, {"database", "away"}, {"table", "t"}, {"primary_key", "id"}});
  Ok(Insert(json::array({{{"id", 1}}, {{"id", 2}}, {{"id", 3}}})));
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(n2_->Post(SearchAll()).json.size(), 3u); });
  // n2 applies nothing more of n1's stream until the fault is cleared.
  ASSERT_EQ(
      n2_->Post({{"operation", "set_fault"}, {"fault", "replication.apply.before_commit=block"}})
          .status,
      200);
  Ok(Insert(json::array({{{"id", 4}}})));
  EXPECT_EQ(StatusOf("away")["releasing"], false);
  Ok({{"operation", "alter_database"}, {"database", "away"}, {"replicas", {"n2"}}});
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(StatusOf("away")["releasing"], true); });
  EXPECT_THAT(StatusOf("away")["waiting_for"].get<std::string>(), HasSubstr("n2 to acknowledge"));
  const json read = {{"operation", "read_rows"}, {"database", "away"}, {"table", "t"}};
  EXPECT_EQ(Ok(read)["rows"].size(), 4u);

  ASSERT_EQ(
      n2_->Post({{"operation", "clear_fault"}, {"name", "replication.apply.before_commit"}}).status,
      200);
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(StatusOf("away")["releasing"], false); });
  EXPECT_EQ(Ok(read)["rows"].size(), 0u);
  EXPECT_EQ(StatusOf("away")["member"], false);
  // Every row is on n2, and n1 forwards to it.
  EXPECT_EQ(n2_->Post(SearchAll()).json.size(), 4u);
  HttpAnswer search = node_->Post(SearchAll());
  EXPECT_EQ(search.status, 200) << search.body;
  EXPECT_EQ(search.json.size(), 4u) << search.body;
}

// P10: a write with replicated_confirmation N is answered once N other members acknowledged
// it; else, after --confirmation-timeout (1 s here), 504 naming who did, the write kept. More
// than the other members is refused before anything is written.
TEST_F(PlacementOpsTest, P10_AConfirmedWriteWaitsForTheOtherMembers) {
  Ok({{"operation", "create_database"}, {"database", "away"}, {"replicas", {"n1", "n2"}}});
  Ok({{"operation", "create_table"}, {"database", "away"}, {"table", "t"}, {"primary_key", "id"}});
  auto confirmed = [](json op, int n) {
    op["replicated_confirmation"] = n;
    return op;
  };
  Ok(confirmed(Insert(json::array({{{"id", 1}}})), 1));
  EXPECT_EQ(n2_->Post(SearchAll()).json.size(), 1u) << "answered before n2 held it";
  ExpectBadRequest(confirmed(Insert(json::array({{{"id", 2}}})), 2), "1 other member(s) (n2)");
  const json read = {{"operation", "read_rows"}, {"database", "away"}, {"table", "t"}};
  EXPECT_EQ(Ok(read)["rows"].size(), 1u);

  ASSERT_EQ(
      n2_->Post({{"operation", "set_fault"}, {"fault", "replication.apply.before_commit=block"}})
          .status,
      200);
  HttpAnswer late = node_->Post(confirmed(Insert(json::array({{{"id", 3}}})), 1));
  EXPECT_EQ(late.status, 504) << late.body;
  EXPECT_EQ(late.error_code(), "CONFIRMATION_TIMEOUT") << late.body;
  EXPECT_EQ(late.json["confirmed_by"], json::array()) << late.body;
  EXPECT_EQ(late.json["written"], json({3})) << late.body;
  EXPECT_EQ(Ok(read)["rows"].size(), 2u) << "the write is not undone";
  ASSERT_EQ(
      n2_->Post({{"operation", "clear_fault"}, {"name", "replication.apply.before_commit"}}).status,
      200);
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(n2_->Post(SearchAll()).json.size(), 2u); });
  // A delete is confirmed the same way.
  Ok(confirmed({{"operation", "delete"}, {"database", "away"}, {"table", "t"}, {"ids", {1}}}, 1));
  EXPECT_EQ(n2_->Post(SearchAll()).json.size(), 1u);
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

// Design 0013, P3: only members hold the rows, so only members compare them. A member's
// verify leaves the non-members out instead of answering each with an error, and a verify on
// a non-member is forwarded to a member (P4).
TEST_F(PlacementOpsTest, P3_OnlyMembersVerifyAPlacedDatabase) {
  ASSERT_NO_FATAL_FAILURE(CreateAwayTable());
  Ok(Insert(json::array({{{"id", 1}, {"v", "one"}}})));
  for (CairndProcess* on : {node_.get(), n2_.get()}) {
    HttpAnswer a = on->Post({{"operation", "verify"}, {"database", "away"}});
    ASSERT_EQ(a.status, 200) << a.body;
    EXPECT_EQ(a.json["peers"], json::array()) << a.body;  // n2 has no other member
    EXPECT_EQ(a.json["in_sync"], true) << a.body;
  }
  // Placed on both, both compare with each other.
  Ok({{"operation", "alter_database"}, {"database", "away"}, {"replicas", {"n1", "n2"}}});
  ASSERT_EVENTUALLY([&] {
    HttpAnswer both = node_->Post({{"operation", "verify"}, {"database", "away"}});
    ASSERT_EQ(both.status, 200) << both.body;
    ASSERT_EQ(both.json["peers"].size(), 1u) << both.body;
    ASSERT_FALSE(both.json["peers"][0].contains("error")) << both.body;
    ASSERT_EQ(both.json["rows_compared"], 1) << both.body;
  });
}

// Design 0013, P12: a node that holds none of a database's rows still takes and receives
// every schema change of it (an attribute marker, C15; a drop, forwarded as R9 says, and its
// marker, C7; the next generation) and every user and role, as a member does.
TEST_F(PlacementOpsTest, P12_ANonMemberKeepsTheCatalogMarkersAndUsers) {
  ASSERT_NO_FATAL_FAILURE(CreateAwayTable());
  Ok(Insert(json::array({{{"id", 1}, {"v", "one"}}})));
  const json table = {{"operation", "describe_table"}, {"database", "away"}, {"table", "t"}};
  // An attribute dropped on the non-member reaches the member, and its value goes there.
  Ok({{"operation", "drop_attribute"}, {"database", "away"}, {"table", "t"}, {"attribute", "v"}});
  ASSERT_EVENTUALLY([&] {
    ASSERT_EQ(n2_->Post(table).json["dropped_attributes"].size(), 1u);
    const json rows = n2_->Post(SearchAll()).json;
    ASSERT_EQ(rows.size(), 1u);
    ASSERT_FALSE(rows[0].contains("v")) << rows.dump();
  });
  EXPECT_EQ(Ok(table)["dropped_attributes"], n2_->Post(table).json["dropped_attributes"]);
  // A role and a user made on the member reach the non-member.
  ASSERT_EQ(n2_->Post({{"operation", "add_role"},
                       {"role", "reader"},
                       {"permission",
                        {{"away",
                          {{"tables",
                            {{"t",
                              {{"read", true},
                               {"insert", false},
                               {"update", false},
                               {"delete", false},
                               {"attribute_permissions", json::array()}}}}}}}}}})
                .status,
            200);
  ASSERT_EQ(n2_->Post({{"operation", "add_user"},
                       {"username", "p12"},
                       {"password", "pw-p12"},
                       {"role", "reader"},
                       {"active", true}})
                .status,
            200);
  ASSERT_EVENTUALLY([&] {
    ASSERT_NE(Ok({{"operation", "list_users"}}).dump().find("\"p12\""), std::string::npos);
  });
  // A drop on the non-member is answered as ever and reaches the member, with its marker on
  // both; the next generation is one table on both.
  json dropped = Ok({{"operation", "drop_table"}, {"database", "away"}, {"table", "t"}});
  ASSERT_EQ(dropped["replicated"].size(), 1u) << dropped.dump();
  EXPECT_EQ(dropped["replicated"][0]["node"], "n2") << dropped.dump();
  EXPECT_FALSE(dropped["replicated"][0].contains("code")) << dropped.dump();
  const json rows = {{"operation", "read_rows"}, {"database", "away"}, {"table", "t"}};
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(n2_->Post(table).status, 404); });
  EXPECT_GT(Ok(rows).value("dropped_time", uint64_t{0}), 0u);
  EXPECT_EQ(n2_->Post(rows).json.value("dropped_time", uint64_t{0}),
            Ok(rows).value("dropped_time", uint64_t{0}));
  Ok({{"operation", "create_table"}, {"database", "away"}, {"table", "t"}, {"primary_key", "id"}});
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(n2_->Post(table).status, 200); });
  EXPECT_EQ(Ok(table)["generation_id"], n2_->Post(table).json["generation_id"]);
  EXPECT_EQ(n2_->Post(SearchAll()).json, json::array());
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
