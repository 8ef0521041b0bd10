// Users and roles replicated between in-process nodes over real gRPC (SPEC U6, U7): they
// travel in the system database's DB_SCHEMA, whole at link-up and as deltas after, merge by
// stamp with markers, and keep an active super user across partitions.
#include <functional>
#include <memory>
#include <string>

#include "catalog/user_catalog.h"
#include "replication/clock_bound.h"
#include "replication/link_session.h"
#include "replication/schema_sync.h"
#include "replication/user_sync.h"
#include "tests/replication/test_node.h"
#include "tests/testing/testing.h"

namespace cairn::replication {
namespace {

constexpr char kSuper[] = R"({"super_user":true})";
constexpr char kReader[] = R"({"super_user":false})";
constexpr char kStructure[] = R"({"structure_user":true})";

class UserReplicationTest : public ::testing::Test {
 protected:
  std::unique_ptr<TestNode> NewNode(const std::string& name) {
    auto n = std::make_unique<TestNode>(name, dir_.Sub(name), "s3cret");
    n->Start();
    return n;
  }
  static void Link(TestNode* a, TestNode* b) {
    a->Route(*b);
    b->Route(*a);
  }
  // n1, n2, n3 in a full mesh, with n1's bootstrap admin and a role `name` everywhere.
  void StartMeshWithRole(const std::string& name) {
    n1_ = NewNode("n1");
    n2_ = NewNode("n2");
    n3_ = NewNode("n3");
    Link(n1_.get(), n2_.get());
    Link(n2_.get(), n3_.get());
    Link(n1_.get(), n3_.get());
    ASSERT_OK(Users(n1_.get()).Bootstrap("admin", "hash").status());
    ASSERT_OK(Users(n1_.get()).AddRole({"", name, kReader}).status());
  }
  static catalog::UserCatalog& Users(TestNode* n) { return *n->local().users; }
  static catalog::PrincipalsRef Principals(TestNode* n) {
    return n->catalog().Snapshot()->principals;
  }
  static const catalog::v1::UserRow* User(TestNode* n, const std::string& name) {
    return Principals(n)->FindUser(name);
  }
  // Polls until every node holds the same users, roles, markers and key.
  static void ExpectConverged(const std::vector<TestNode*>& nodes) {
    ASSERT_EVENTUALLY([&] {
      for (TestNode* n : nodes) {
        ASSERT_EQ(Principals(n)->digest, Principals(nodes[0])->digest)
            << n->name() << " and " << nodes[0]->name() << " differ";
      }
    });
  }

  testing::TempDir dir_;
  std::unique_ptr<TestNode> n1_, n2_, n3_;
};

TEST_F(UserReplicationTest, U6_AUserAndARoleMadeOnOneNodeReachEveryNode) {
  auto n1 = NewNode("n1"), n2 = NewNode("n2"), n3 = NewNode("n3");
  Link(n1.get(), n2.get());
  Link(n2.get(), n3.get());  // n3 hears of n1's changes through n2 only
  ASSERT_OK(Users(n1.get()).Bootstrap("admin", "hash").status());
  ASSERT_OK(Users(n1.get()).EnsureSigningKey(std::string(32, 'k')));
  ASSERT_OK(Users(n1.get()).AddRole({"", "reader", kReader}).status());
  ASSERT_OK(Users(n1.get()).AddUser({"ann", "hash-ann", "reader", true}));
  ASSERT_EVENTUALLY([&] {
    for (TestNode* n : {n2.get(), n3.get()}) {
      const catalog::v1::UserRow* ann = User(n, "ann");
      ASSERT_NE(ann, nullptr) << n->name();
      EXPECT_EQ(ann->password_hash(), "hash-ann");
      ASSERT_NE(Principals(n)->RoleOf(*ann), nullptr);
      EXPECT_EQ(Principals(n)->signing_key->key(), std::string(32, 'k'));
    }
  });
  ExpectConverged({n1.get(), n2.get(), n3.get()});
  ASSERT_EVENTUALLY([&] { ASSERT_TRUE(n1->StatusOf("n2").schema_in_sync); });
}

TEST_F(UserReplicationTest, U6_ARoleAlteredWhileANodeIsPartitionedConvergesAfterTheHeal) {
  ASSERT_NO_FATAL_FAILURE(StartMeshWithRole("app"));
  TestNode *n1 = n1_.get(), *n2 = n2_.get(), *n3 = n3_.get();
  ExpectConverged({n1, n2, n3});
  n3->Isolate();
  ASSERT_OK(Users(n2).AlterRole({"app", "", kStructure}).status());
  ASSERT_EVENTUALLY(
      [&] { ASSERT_TRUE(Principals(n1)->FindRole("app")->permission.structure_all); });
  EXPECT_FALSE(Principals(n3)->FindRole("app")->permission.structure_all);
  n3->Start();
  ExpectConverged({n1, n2, n3});
  EXPECT_TRUE(Principals(n3)->FindRole("app")->permission.structure_all);
}

TEST_F(UserReplicationTest, U6_AUserDroppedWhileANodeIsOfflineNeverComesBack) {
  ASSERT_NO_FATAL_FAILURE(StartMeshWithRole("reader"));
  TestNode *n1 = n1_.get(), *n2 = n2_.get(), *n3 = n3_.get();
  ASSERT_OK(Users(n1).AddUser({"ann", "hash-ann", "reader", true}));
  ExpectConverged({n1, n2, n3});
  n3->Stop();
  ASSERT_OK(Users(n1).DropUser("ann"));
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(User(n2, "ann"), nullptr); });
  // n3 comes back holding ann, and sends her first thing: nobody takes her back.
  n3->Start();
  ExpectConverged({n1, n2, n3});
  for (TestNode* n : {n1, n2, n3}) EXPECT_EQ(User(n, "ann"), nullptr);
}

TEST_F(UserReplicationTest, U6_ConcurrentAltersOfOneRoleConvergeToOneValueEverywhere) {
  ASSERT_NO_FATAL_FAILURE(StartMeshWithRole("app"));
  TestNode *n1 = n1_.get(), *n2 = n2_.get(), *n3 = n3_.get();
  ExpectConverged({n1, n2, n3});
  for (TestNode* n : {n1, n2, n3}) n->Isolate();
  ASSERT_OK(Users(n1).AlterRole({"app", "", kStructure}).status());
  ASSERT_OK(Users(n2).AlterRole({"app", "", R"({"structure_user":["x"]})"}).status());
  ASSERT_OK(Users(n3).AlterRole({"app", "", kReader}).status());
  for (TestNode* n : {n1, n2, n3}) n->Start();
  ExpectConverged({n1, n2, n3});
  const std::string winner = Principals(n1)->FindRole("app")->row.permission();
  for (TestNode* n : {n2, n3}) {
    EXPECT_EQ(Principals(n)->FindRole("app")->row.permission(), winner);
  }
}

// U7 across a partition: each side drops one of the two super users (each drop leaves the
// other, so each is allowed); merged, the one whose drop has the lower stamp stays active.
TEST_F(UserReplicationTest, U7_ConcurrentDropsOfTheLastTwoSuperUsersKeepOne) {
  auto n1 = NewNode("n1"), n2 = NewNode("n2");
  Link(n1.get(), n2.get());
  ASSERT_OK(Users(n1.get()).AddRole({"", "root", kSuper}).status());
  ASSERT_OK(Users(n1.get()).AddUser({"ann", "hash-ann", "root", true}));
  ASSERT_OK(Users(n1.get()).AddUser({"bob", "hash-bob", "root", true}));
  ExpectConverged({n1.get(), n2.get()});
  n1->Isolate();
  n2->Isolate();
  ASSERT_OK(Users(n1.get()).DropUser("ann"));
  ASSERT_OK(Users(n2.get()).DropUser("bob"));
  n1->Start();
  n2->Start();
  ExpectConverged({n1.get(), n2.get()});
  for (TestNode* n : {n1.get(), n2.get()}) {
    ASSERT_EQ(Principals(n)->ActiveSuperUsers(), 1) << n->name();
    ASSERT_NE(User(n, "ann"), nullptr) << "ann's drop has the lower stamp: she stays";
    EXPECT_EQ(User(n, "bob"), nullptr);
  }
}

// R1: a peer that did not advertise schema.users.v1 is sent nothing of the system database.
TEST_F(UserReplicationTest, R1_NoUsersGoToAPeerThatDidNotAskForThem) {
  auto n1 = NewNode("n1");
  ASSERT_OK(Users(n1.get()).Bootstrap("admin", "hash").status());
  SchemaOptions old_peer;
  old_peer.users = false;
  EXPECT_FALSE(SendsDatabase(old_peer, catalog::kSystemDatabase));
  EXPECT_TRUE(SendsDatabase(old_peer, "shop"));
  std::vector<catalog::SchemaChange> changes = {{1, "system", "user/admin"}};
  EXPECT_TRUE(BuildDeltas(*n1->catalog().Snapshot(), changes, {}, old_peer).empty());
  EXPECT_EQ(BuildDeltas(*n1->catalog().Snapshot(), changes, {}, SchemaOptions()).size(), 1u);
}

// R16 for U6: every stamp of a user, a role, a marker and the key in a peer's DbSchema of the
// system database is a stamp like a table's; one from the future refuses the snapshot before
// anything of it is applied or observed.
TEST(UserSchemaTest, R16_UserAndRoleStampsFromTheFutureAreRefused) {
  HybridClock hlc(SystemClock::Default());
  ClockBound bound(&hlc, absl::Seconds(1));
  const Hlc now = HybridClock::Make(static_cast<uint64_t>(absl::ToUnixMillis(absl::Now())), 0);
  const Hlc future =
      HybridClock::Make(static_cast<uint64_t>(absl::ToUnixMillis(absl::Now() + absl::Hours(1))), 0);
  peer::v1::DbSchema schema;
  schema.set_database(std::string(catalog::kSystemDatabase));
  catalog::v1::UserRow* user = schema.add_users();
  user->set_username("ann");
  user->set_created_time(now);
  user->set_stamp(now);
  user->set_password_time(now);
  catalog::v1::RoleRow* role = schema.add_roles();
  role->set_id("app");
  role->set_stamp(now);
  peer::v1::PrincipalMarker* marker = schema.add_principal_markers();
  marker->set_name("user/bob");
  marker->mutable_marker()->set_dropped_time(now);
  schema.mutable_signing_key()->set_created_time(now);
  EXPECT_OK(bound.CheckSchema(schema, "b"));
  auto refused = [&](const std::function<void(Hlc)>& set) {
    set(future);
    const bool out = bound.CheckSchema(schema, "b").code() == absl::StatusCode::kFailedPrecondition;
    set(now);
    return out;
  };
  EXPECT_TRUE(refused([&](Hlc t) { user->set_stamp(t); }));
  EXPECT_TRUE(refused([&](Hlc t) { user->set_password_time(t); }));
  EXPECT_TRUE(refused([&](Hlc t) { role->set_stamp(t); }));
  EXPECT_TRUE(refused([&](Hlc t) { marker->mutable_marker()->set_dropped_time(t); }));
  EXPECT_TRUE(refused([&](Hlc t) { schema.mutable_signing_key()->set_created_time(t); }));
  EXPECT_EQ(bound.refusals(), 5u);
}

}  // namespace
}  // namespace cairn::replication
