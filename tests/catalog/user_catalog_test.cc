// Users and roles in the catalog (SPEC §7): local changes (U2), bootstrap (U1), peers'
// changes merged by stamp with markers (U6), and the active super user kept (U7). Two
// in-process nodes stand for a cluster; what one holds reaches the other as PeerPrincipals,
// as replication's DbSchema of the system database carries it.
#include "catalog/user_catalog.h"

#include <memory>
#include <string>

#include "common/clock.h"
#include "gtest/gtest.h"
#include "tests/testing/local_node.h"
#include "tests/testing/testing.h"

namespace cairn::catalog {
namespace {

constexpr char kSuper[] = R"({"super_user":true})";
constexpr char kReader[] = R"({"super_user":false})";

// Everything `p` holds, as a peer would send it whole.
PeerPrincipals Everything(const Principals& p) {
  PeerPrincipals out;
  for (const auto& [name, user] : p.users) out.users.push_back(*user);
  for (const auto& [id, role] : p.roles) out.roles.push_back(role->row);
  for (const auto& [name, m] : p.user_markers) out.user_markers.emplace_back(name, m);
  for (const auto& [id, m] : p.role_markers) out.role_markers.emplace_back(id, m);
  out.signing_key = p.signing_key;
  return out;
}

class Node {
 public:
  Node(const std::string& name, testing::ManualClock* clock) {
    testing::LocalNodeOptions o;
    o.name = name;
    o.clock = clock;
    Open(o);
  }
  void Open(const testing::LocalNodeOptions& o) {
    options_ = o;
    auto n = testing::LocalNode::Open(dir_.path(), o);
    CAIRN_CHECK(n.ok()) << n.status();
    node_ = std::move(*n);
  }
  void Reopen() {
    node_.reset();
    Open(options_);
  }
  UserCatalog& users() { return *node_->users; }
  PrincipalsRef principals() { return node_->catalog->Snapshot()->principals; }
  const v1::UserRow* User(const std::string& name) { return principals()->FindUser(name); }
  // Takes in everything `other` holds.
  PrincipalApplyStats Learn(Node& other) {
    auto stats = users().ApplyPeer(Everything(*other.principals()));
    CAIRN_CHECK(stats.ok()) << stats.status();
    return *stats;
  }
  void AddRole(const std::string& name, const char* permission) {
    ASSERT_OK(users().AddRole({"", name, permission}).status());
  }
  void AddUser(const std::string& name, const std::string& role, bool active = true) {
    ASSERT_OK(users().AddUser({name, "hash-of-" + name, role, active}));
  }

 private:
  testing::TempDir dir_;
  testing::LocalNodeOptions options_;
  std::unique_ptr<testing::LocalNode> node_;
};

class UserCatalogTest : public ::testing::Test {
 protected:
  void Tick() { clock_.Advance(absl::Milliseconds(1)); }
  testing::ManualClock clock_{absl::FromUnixMillis(1'700'000'000'000)};
  Node a_{"a", &clock_};
  Node b_{"b", &clock_};
};

TEST_F(UserCatalogTest, U1_BootstrapMakesASuperUserOnceAndStampsItOldest) {
  ASSERT_OK_AND_ASSIGN(bool made, a_.users().Bootstrap("admin", "hash"));
  EXPECT_TRUE(made);
  const v1::UserRow* admin = a_.User("admin");
  ASSERT_NE(admin, nullptr);
  EXPECT_TRUE(a_.principals()->IsActiveSuperUser(*admin));
  EXPECT_EQ(admin->stamp(), kBootstrapStamp);
  EXPECT_EQ(a_.principals()->FindRole(kSuperUserRole)->row.stamp(), kBootstrapStamp);
  // From then on the users table is the only authority: the flags create nothing more.
  ASSERT_OK_AND_ASSIGN(made, a_.users().Bootstrap("other", "hash"));
  EXPECT_FALSE(made);
  EXPECT_EQ(a_.User("other"), nullptr);
  // Survives a restart.
  a_.Reopen();
  ASSERT_NE(a_.User("admin"), nullptr);
  EXPECT_EQ(a_.User("admin")->password_hash(), "hash");
}

TEST_F(UserCatalogTest, U1_ABootstrapNeverReplacesTheClusterAdmin) {
  ASSERT_OK(a_.users().Bootstrap("admin", "cluster-password").status());
  ASSERT_OK(a_.users().AlterUser({"admin", "changed-password", {}, {}}).status());
  // b starts later with the old password: its admin is older than every change.
  Tick();
  ASSERT_OK(b_.users().Bootstrap("admin", "old-password").status());
  b_.Learn(a_);
  a_.Learn(b_);
  EXPECT_EQ(a_.User("admin")->password_hash(), "changed-password");
  EXPECT_EQ(b_.User("admin")->password_hash(), "changed-password");
}

TEST_F(UserCatalogTest, U2_LocalChangesAndTheirErrors) {
  ASSERT_OK(a_.users().Bootstrap("admin", "hash").status());
  a_.AddRole("reader", kReader);
  EXPECT_THAT(a_.users().AddRole({"", "reader", kReader}).status(),
              testing::HasErrorCode(ErrorCode::kRoleExists));
  a_.AddUser("ann", "reader");
  EXPECT_THAT(a_.users().AddUser({"ann", "h", "reader", true}),
              testing::HasErrorCode(ErrorCode::kUserExists));
  EXPECT_THAT(a_.users().AddUser({"bob", "h", "no_such_role", true}),
              testing::HasErrorCode(ErrorCode::kRoleNotFound));
  EXPECT_EQ(a_.principals()->FindRole("reader")->row.name(), "reader");  // id defaults to name
  // A role with an active user cannot go; an inactive one does not hold it.
  EXPECT_THAT(a_.users().DropRole("reader").status(), testing::HasErrorCode(ErrorCode::kRoleInUse));
  ASSERT_OK(a_.users().AlterUser({"ann", {}, {}, false}).status());
  ASSERT_OK_AND_ASSIGN(std::string dropped, a_.users().DropRole("reader"));
  EXPECT_EQ(dropped, "reader");
  EXPECT_THAT(a_.users().DropRole("reader").status(),
              testing::HasErrorCode(ErrorCode::kRoleNotFound));
  ASSERT_OK(a_.users().DropUser("ann"));
  EXPECT_THAT(a_.users().DropUser("ann"), testing::HasErrorCode(ErrorCode::kUserNotFound));
  EXPECT_THAT(a_.users().AddUser({"system", "h", "super_user", true}),
              testing::HasErrorCode(ErrorCode::kBadRequest));
  EXPECT_THAT(a_.users().AddUser({"a:b", "h", "super_user", true}),
              testing::HasErrorCode(ErrorCode::kBadRequest));
}

TEST_F(UserCatalogTest, U5_APasswordChangeMovesThePasswordTime) {
  ASSERT_OK(a_.users().Bootstrap("admin", "hash").status());
  const uint64_t before = a_.User("admin")->password_time();
  ASSERT_OK(a_.users().AlterUser({"admin", {}, {}, true}).status());
  EXPECT_EQ(a_.User("admin")->password_time(), before);
  ASSERT_OK(a_.users().AlterUser({"admin", "new", {}, {}}).status());
  EXPECT_GT(a_.User("admin")->password_time(), before);
}

TEST_F(UserCatalogTest, U7_TheLastActiveSuperUserCannotGo) {
  ASSERT_OK(a_.users().Bootstrap("admin", "hash").status());
  a_.AddRole("reader", kReader);
  const auto last = testing::HasErrorCode(ErrorCode::kLastSuperUser);
  EXPECT_THAT(a_.users().DropUser("admin"), last);
  EXPECT_THAT(a_.users().AlterUser({"admin", {}, {}, false}).status(), last);
  EXPECT_THAT(a_.users().AlterUser({"admin", {}, "reader", {}}).status(), last);
  EXPECT_THAT(a_.users().AlterRole({"super_user", "", kReader}).status(), last);
  ASSERT_NE(a_.User("admin"), nullptr);
  EXPECT_TRUE(a_.principals()->IsActiveSuperUser(*a_.User("admin")));
  // With a second super user, either may go.
  a_.AddUser("root2", "super_user");
  ASSERT_OK(a_.users().DropUser("admin"));
  EXPECT_THAT(a_.users().DropUser("root2"), last);
  // A node with no user at all takes a super user first, nothing else.
  b_.AddRole("reader", kReader);
  EXPECT_THAT(b_.users().AddUser({"ann", "h", "reader", true}), last);
  b_.AddRole("root", kSuper);
  b_.AddUser("ann", "root");
}

TEST_F(UserCatalogTest, U6_TheNewerChangeWinsEverywhere) {
  ASSERT_OK(a_.users().Bootstrap("admin", "hash").status());
  a_.AddRole("reader", kReader);
  a_.AddUser("ann", "reader");
  b_.Learn(a_);
  ASSERT_NE(b_.User("ann"), nullptr);
  // Concurrent alters of one user: the later stamp wins on both, whatever the order.
  ASSERT_OK(a_.users().AlterUser({"ann", "from-a", {}, {}}).status());
  Tick();
  ASSERT_OK(b_.users().AlterUser({"ann", "from-b", {}, {}}).status());
  a_.Learn(b_);
  b_.Learn(a_);
  EXPECT_EQ(a_.User("ann")->password_hash(), "from-b");
  EXPECT_EQ(b_.User("ann")->password_hash(), "from-b");
  EXPECT_EQ(a_.principals()->digest, b_.principals()->digest);
  // Learning the same again changes nothing.
  EXPECT_EQ(b_.Learn(a_).applied, 0u);
}

TEST_F(UserCatalogTest, U6_ConcurrentAltersOfOneRoleConvergeOnTheOriginTieBreak) {
  ASSERT_OK(a_.users().Bootstrap("admin", "hash").status());
  a_.AddRole("reader", kReader);
  b_.Learn(a_);
  // The same stamp on both (a manual clock): the greater origin name wins.
  ASSERT_OK(a_.users().AlterRole({"reader", "", R"({"structure_user":true})"}).status());
  ASSERT_OK(b_.users().AlterRole({"reader", "", R"({"super_user":false})"}).status());
  ASSERT_EQ(a_.principals()->FindRole("reader")->row.stamp(),
            b_.principals()->FindRole("reader")->row.stamp());
  a_.Learn(b_);
  b_.Learn(a_);
  EXPECT_EQ(a_.principals()->FindRole("reader")->row.origin(), "b");
  EXPECT_EQ(b_.principals()->FindRole("reader")->row.origin(), "b");
  EXPECT_FALSE(a_.principals()->FindRole("reader")->permission.structure_all);
  EXPECT_EQ(a_.principals()->digest, b_.principals()->digest);
}

TEST_F(UserCatalogTest, U6_ADroppedUserNeverComesBack) {
  ASSERT_OK(a_.users().Bootstrap("admin", "hash").status());
  a_.AddRole("reader", kReader);
  a_.AddUser("ann", "reader");
  b_.Learn(a_);
  // b is offline while a drops ann; b still holds her (and even changed her meanwhile).
  Tick();
  ASSERT_OK(a_.users().DropUser("ann"));
  EXPECT_EQ(a_.principals()->UserMarker("ann") != 0, true);
  // b's copy was created before the drop: a refuses it, and b retires it on the marker.
  PrincipalApplyStats stats = a_.Learn(b_);
  EXPECT_EQ(stats.refused, 1u);
  EXPECT_EQ(a_.User("ann"), nullptr);
  b_.Learn(a_);
  EXPECT_EQ(b_.User("ann"), nullptr);
  a_.Reopen();
  EXPECT_EQ(a_.User("ann"), nullptr);
  // A re-created name is a new object, newer than the marker, and lives everywhere.
  a_.AddUser("ann", "reader");
  EXPECT_GE(a_.User("ann")->created_time(), a_.principals()->UserMarker("ann"));
  b_.Learn(a_);
  ASSERT_NE(b_.User("ann"), nullptr);
  EXPECT_EQ(a_.principals()->digest, b_.principals()->digest);
}

TEST_F(UserCatalogTest, U6_ADroppedRoleNeverComesBack) {
  ASSERT_OK(a_.users().Bootstrap("admin", "hash").status());
  a_.AddRole("reader", kReader);
  b_.Learn(a_);
  ASSERT_OK(a_.users().DropRole("reader").status());
  b_.Learn(a_);
  a_.Learn(b_);
  EXPECT_EQ(a_.principals()->FindRole("reader"), nullptr);
  EXPECT_EQ(b_.principals()->FindRole("reader"), nullptr);
}

TEST_F(UserCatalogTest, U5_TheOldestSigningKeyStays) {
  ASSERT_OK(a_.users().EnsureSigningKey(std::string(32, 'a')));
  Tick();
  ASSERT_OK(b_.users().EnsureSigningKey(std::string(32, 'b')));
  ASSERT_OK(b_.users().EnsureSigningKey(std::string(32, 'c')));  // kept: b holds one
  EXPECT_EQ(b_.principals()->signing_key->key(), std::string(32, 'b'));
  b_.Learn(a_);
  a_.Learn(b_);
  EXPECT_EQ(a_.principals()->signing_key->key(), std::string(32, 'a'));
  EXPECT_EQ(b_.principals()->signing_key->key(), std::string(32, 'a'));
  // A key of the wrong size is not taken.
  PeerPrincipals bad;
  bad.signing_key.emplace();
  bad.signing_key->set_key("short");
  bad.signing_key->set_created_time(1);
  ASSERT_OK_AND_ASSIGN(PrincipalApplyStats stats, a_.users().ApplyPeer(bad));
  EXPECT_EQ(stats.invalid, 1u);
  EXPECT_EQ(a_.principals()->signing_key->key(), std::string(32, 'a'));
}

// U7: two nodes each drop one of the last two super users while apart. Each drop was allowed
// where it was made; merged, they would leave none. Both nodes keep the super user whose drop
// has the lower stamp, and agree on it.
TEST_F(UserCatalogTest, U7_ConcurrentDropsOfTheLastTwoSuperUsersKeepTheLowerStamp) {
  a_.AddRole("root", kSuper);
  a_.AddUser("ann", "root");
  a_.AddUser("bob", "root");
  b_.Learn(a_);
  Tick();
  ASSERT_OK(a_.users().DropUser("ann"));  // the lower stamp
  Tick();
  ASSERT_OK(b_.users().DropUser("bob"));
  // Each learns what the other did (before either repaired): both repair, alike.
  const PeerPrincipals from_a = Everything(*a_.principals());
  const PeerPrincipals from_b = Everything(*b_.principals());
  ASSERT_OK_AND_ASSIGN(PrincipalApplyStats on_a, a_.users().ApplyPeer(from_b));
  ASSERT_OK_AND_ASSIGN(PrincipalApplyStats on_b, b_.users().ApplyPeer(from_a));
  EXPECT_EQ(on_a.restored, 1u);
  EXPECT_EQ(on_b.restored, 1u);
  for (Node* n : {&a_, &b_}) {
    ASSERT_NE(n->User("ann"), nullptr);
    EXPECT_TRUE(n->principals()->IsActiveSuperUser(*n->User("ann")));
    EXPECT_EQ(n->User("bob"), nullptr);
    EXPECT_EQ(n->User("ann")->password_hash(), "hash-of-ann");
  }
  EXPECT_EQ(a_.principals()->digest, b_.principals()->digest);
  // Settled: learning again repairs nothing more.
  EXPECT_EQ(a_.Learn(b_).restored, 0u);
  EXPECT_EQ(b_.Learn(a_).applied, 0u);
}

TEST_F(UserCatalogTest, U7_ConcurrentDeactivationsKeepTheLowerStamp) {
  a_.AddRole("root", kSuper);
  a_.AddRole("reader", kReader);
  a_.AddUser("ann", "root");
  a_.AddUser("bob", "root");
  b_.Learn(a_);
  Tick();
  ASSERT_OK(a_.users().AlterUser({"ann", {}, {}, false}).status());
  Tick();
  ASSERT_OK(b_.users().AlterUser({"bob", {}, "reader", {}}).status());
  a_.Learn(b_);
  b_.Learn(a_);
  a_.Learn(b_);
  for (Node* n : {&a_, &b_}) {
    EXPECT_TRUE(n->principals()->IsActiveSuperUser(*n->User("ann")));
    EXPECT_FALSE(n->principals()->IsActiveSuperUser(*n->User("bob")));
  }
  EXPECT_EQ(a_.principals()->digest, b_.principals()->digest);
}

// U1: two bootstraps of one name with the same node name (a node rebuilt under its name, a
// second password) are two versions, not one version with two passwords: they converge.
TEST_F(UserCatalogTest, U1_TwoBootstrapsOfOneNameAreTwoVersionsAndConverge) {
  Node again("a", &clock_);
  ASSERT_OK(a_.users().Bootstrap("admin", "first").status());
  ASSERT_OK(again.users().Bootstrap("admin", "second").status());
  ASSERT_NE(a_.principals()->digest, again.principals()->digest);
  a_.Learn(again);
  again.Learn(a_);
  EXPECT_EQ(a_.User("admin")->password_hash(), again.User("admin")->password_hash());
  EXPECT_EQ(a_.principals()->digest, again.principals()->digest);
}

// U5, U6: a password merges on its own stamp. A role change made on b after a password change
// on a (neither seeing the other) keeps a's new password everywhere: the old one, and tokens
// tied to it, never come back.
TEST_F(UserCatalogTest, U6_AConcurrentChangeNeverBringsAnOldPasswordBack) {
  ASSERT_OK(a_.users().Bootstrap("admin", "hash").status());
  a_.AddRole("reader", kReader);
  a_.AddRole("writer", kReader);
  a_.AddUser("ann", "reader");
  b_.Learn(a_);
  ASSERT_OK(a_.users().AlterUser({"ann", "new-password", {}, {}}).status());
  Tick();
  ASSERT_OK(b_.users().AlterUser({"ann", {}, "writer", {}}).status());  // the newer row
  a_.Learn(b_);
  b_.Learn(a_);
  for (Node* n : {&a_, &b_}) {
    EXPECT_EQ(n->User("ann")->password_hash(), "new-password") << "an old password came back";
    EXPECT_EQ(n->User("ann")->role(), "writer");
  }
  EXPECT_EQ(a_.principals()->digest, b_.principals()->digest);
}

// U7: the merge gives back one of the super users the concurrent changes took, never one
// dropped long before (its loss is not concurrent with them).
TEST_F(UserCatalogTest, U7_AUserDroppedLongAgoIsNeverGivenBack) {
  a_.AddRole("root", kSuper);
  a_.AddUser("old", "root");
  a_.AddUser("ann", "root");
  a_.AddUser("bob", "root");
  Tick();
  ASSERT_OK(a_.users().DropUser("old"));  // long ago: ann and bob were there
  b_.Learn(a_);
  Tick();
  ASSERT_OK(a_.users().DropUser("ann"));
  Tick();
  ASSERT_OK(b_.users().DropUser("bob"));
  a_.Learn(b_);
  b_.Learn(a_);
  for (Node* n : {&a_, &b_}) {
    EXPECT_EQ(n->User("old"), nullptr) << "a user dropped long ago came back";
    ASSERT_NE(n->User("ann"), nullptr);
    EXPECT_TRUE(n->principals()->IsActiveSuperUser(*n->User("ann")));
    EXPECT_EQ(n->User("bob"), nullptr);
  }
  EXPECT_EQ(a_.principals()->digest, b_.principals()->digest);
}

// U7: a role demoted on one node while the only other super user is dropped on another: the
// lower-stamped change (the demotion) is undone.
TEST_F(UserCatalogTest, U7_AConcurrentRoleChangeAndDropKeepASuperUser) {
  a_.AddRole("root", kSuper);
  a_.AddRole("ops", kSuper);
  a_.AddUser("ann", "root");
  a_.AddUser("bob", "ops");
  b_.Learn(a_);
  Tick();
  ASSERT_OK(a_.users().AlterRole({"root", "", kReader}).status());
  Tick();
  ASSERT_OK(b_.users().DropUser("bob"));
  a_.Learn(b_);
  b_.Learn(a_);
  for (Node* n : {&a_, &b_}) {
    EXPECT_EQ(n->principals()->ActiveSuperUsers(), 1) << "no super user on one node";
    EXPECT_TRUE(n->principals()->FindRole("root")->permission.super_user);
    EXPECT_EQ(n->User("bob"), nullptr);
  }
  EXPECT_EQ(a_.principals()->digest, b_.principals()->digest);
}

}  // namespace
}  // namespace cairn::catalog
