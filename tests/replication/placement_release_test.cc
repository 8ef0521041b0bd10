// Design 0013, P8: a node removed from a database's members keeps its rows until every member
// ready under the new placement has acknowledged its log and, by a digest comparison this node
// pushes, holds every row it holds; then it removes them, keeping the definitions. Two
// TestNodes linked over real gRPC on loopback.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "catalog/placement.h"
#include "common/clock.h"
#include "common/fault.h"
#include "common/fault_points.h"
#include "replication/releaser.h"
#include "storage/keys.h"
#include "storage/value_codec.h"
#include "tests/replication/test_node.h"
#include "tests/testing/testing.h"

namespace cairn::replication {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class PlacementReleaseTest : public ::testing::Test {
 protected:
  // a and b, linked both ways, with database "sales" placed on both.
  void StartPair() {
    a_ = std::make_unique<TestNode>("a", dir_.Sub("a"), "s3cret");
    b_ = std::make_unique<TestNode>("b", dir_.Sub("b"), "s3cret");
    a_->Start();
    b_->Start();
    a_->Route(*b_);
    b_->Route(*a_);
    ASSERT_OK(a_->catalog().CreateDatabase("sales", catalog::PlacementSpec{{"a", "b"}, 0}));
  }
  // StartPair, and `rows` rows written on a that b holds.
  void SetUpPair(int rows) {
    StartPair();
    ASSERT_OK(a_->catalog().CreateTable(Spec("sales", "orders", {"name"})));
    Write(0, rows);
    ASSERT_EVENTUALLY(
        [&] { ASSERT_EQ(TableRows(*b_, "sales", "orders").size(), static_cast<size_t>(rows)); });
  }
  void Write(int from, int to) {
    json records = json::array();
    for (int i = from; i < to; ++i)
      records.push_back({{"id", absl::StrCat("k", i)}, {"name", "x"}});
    ASSERT_OK(a_->records().Write("sales", "orders", records, catalog::WriteMode::kUpsert));
  }
  // b blocks applying a's stream (kReplApplyBeforeCommit) once a wrote rows [from, to).
  void StallB(int from, int to) {
    b_->faults().Set(fault_points::kReplApplyBeforeCommit, FaultAction::Block());
    Write(from, to);
    ASSERT_TRUE(
        b_->faults().WaitUntilBlocked(fault_points::kReplApplyBeforeCommit, absl::Seconds(10)));
  }
  // a is removed: "sales" lives on b alone.
  void RemoveA() {
    ASSERT_OK(a_->catalog().AlterPlacement("sales", catalog::PlacementSpec{{"b"}, 0}).status());
  }
  static bool Pending(TestNode& n) {
    absl::StatusOr<std::vector<catalog::Catalog::PendingRelease>> p = n.catalog().PendingReleases();
    EXPECT_OK(p.status());
    return p.ok() && !p->empty();
  }

  testing::TempDir dir_;
  std::unique_ptr<TestNode> a_, b_;
};

TEST_F(PlacementReleaseTest, P8_ARemovedMemberLetsGoAfterTheOthersConfirm) {
  SetUpPair(5);
  // b stops applying a's stream: what a writes now, b does not hold.
  StallB(5, 8);
  RemoveA();
  EXPECT_TRUE(Pending(*a_));
  // a holds rows b has not acknowledged: it keeps them, and says what it waits for.
  const auto waiting = a_->cluster().releaser()->RunOnce();
  ASSERT_EQ(waiting.count("sales"), 1u);
  EXPECT_THAT(waiting.at("sales"), HasSubstr("b to acknowledge this node's log"));
  EXPECT_EQ(TableRows(*a_, "sales", "orders").size(), 8u);
  // Clients' rows are refused (forwarded by the ops API, P4) from the removal on.
  EXPECT_THAT(a_->records()
                  .Write("sales", "orders", json::array({{{"id", "late"}, {"name", "x"}}}),
                         catalog::WriteMode::kUpsert)
                  .status(),
              testing::HasErrorCode(ErrorCode::kNotAMember));

  b_->faults().Release(fault_points::kReplApplyBeforeCommit);
  ASSERT_EVENTUALLY([&] {
    a_->cluster().releaser()->RunOnce();
    ASSERT_FALSE(Pending(*a_));
  });
  EXPECT_TRUE(TableRows(*a_, "sales", "orders").empty());
  EXPECT_EQ(TableRows(*b_, "sales", "orders").size(), 8u);
  // The definitions stay (P12), the log and the cursors go.
  EXPECT_NE(a_->Table("sales", "orders"), nullptr);
  EXPECT_EQ(a_->local().log->TrimmedThrough("sales"), a_->local().log->CommittedSeq("sales"));
  std::string value;
  bool found = true;
  ASSERT_OK(a_->local().engine->Get(storage::Cf::kMeta, storage::CursorKey("b", "sales"), &value,
                                    &found));
  EXPECT_FALSE(found);
  EXPECT_TRUE(a_->cluster().releaser()->Waiting().empty());
}

TEST_F(PlacementReleaseTest, P8_ARemovedMemberPushesWhatTheOthersLackBeforeItLetsGo) {
  SetUpPair(5);
  // b loses k0 behind replication's back: its cursor on a's log is past it, so only a
  // digest comparison can find it missing.
  catalog::TableRef def = b_->Table("sales", "orders");
  ASSERT_NE(def, nullptr);
  std::string pk;
  ASSERT_OK(storage::AppendPrimaryKey(json("k0"), &pk));
  rocksdb::WriteBatch lose;
  ASSERT_TRUE(lose.Delete(b_->local().engine->cf(storage::Cf::kRecords),
                          storage::RecordKey(def->generation_id(), pk))
                  .ok());
  ASSERT_OK(b_->local().engine->Write(&lose));
  ASSERT_EQ(TableRows(*b_, "sales", "orders").size(), 4u);

  RemoveA();
  ASSERT_EVENTUALLY([&] {
    a_->cluster().releaser()->RunOnce();
    ASSERT_FALSE(Pending(*a_));
  });
  EXPECT_TRUE(TableRows(*a_, "sales", "orders").empty());
  EXPECT_EQ(TableRows(*b_, "sales", "orders").size(), 5u) << "k0 was released without b holding it";
}

TEST_F(PlacementReleaseTest, P8_AMemberAgainBeforeTheReleaseKeepsItsRows) {
  SetUpPair(3);
  StallB(3, 4);
  RemoveA();
  EXPECT_TRUE(Pending(*a_));
  ASSERT_OK(a_->catalog().AlterPlacement("sales", catalog::PlacementSpec{{"a", "b"}, 0}).status());
  EXPECT_FALSE(Pending(*a_)) << "the placement's own batch cancels the release";
  ASSERT_OK_AND_ASSIGN(catalog::Catalog::ReleaseOutcome outcome,
                       a_->catalog().ReleaseRows("sales", 0));
  EXPECT_EQ(outcome, catalog::Catalog::ReleaseOutcome::kCancelled);
  b_->faults().Release(fault_points::kReplApplyBeforeCommit);
  EXPECT_EQ(TableRows(*a_, "sales", "orders").size(), 4u);
}

// P9: two members that both leave (each in the other's view still a member, their
// placements apart) never confirm each other: a node compares its rows only while it is a
// member in its own view, so neither takes the other for a holder and neither releases.
TEST_F(PlacementReleaseTest, P9_TwoLeavingMembersNeverConfirmEachOther) {
  SetUpPair(2);
  // b's view of the placement is now "a alone", as a placement b has not passed on yet.
  catalog::v1::Placement only_a = b_->catalog().Snapshot()->FindDatabase("sales")->placement;
  only_a.clear_members();
  only_a.add_members("a");
  only_a.set_stamp(only_a.stamp() + 1);
  a_->cluster().CutLink("b");  // so that it is not passed on
  b_->cluster().CutLink("a");
  ASSERT_OK(b_->catalog().ApplyPeerPlacement("sales", &only_a, 0));
  EXPECT_TRUE(Pending(*b_));
  // The comparison a would run to confirm b holds its rows, answered by b itself.
  peer::v1::VerifyRequest request;
  request.mutable_table()->set_database("sales");
  request.mutable_table()->set_table("orders");
  request.mutable_table()->set_created_time(b_->Table("sales", "orders")->created_time());
  request.mutable_digest()->set_depth(1);
  peer::v1::VerifyResponse response;
  ASSERT_OK(b_->cluster().anti_entropy()->Serve("a", request, &response));
  EXPECT_THAT(response.skipped(), HasSubstr("not a member"));
  EXPECT_FALSE(response.schema_differs());
  EXPECT_EQ(TableRows(*b_, "sales", "orders").size(), 2u);
}

// P8 with C11: a remaining member whose own table of the name is node-local never holds the
// replicated rows, so it is not asked for them; another member that holds them confirms.
TEST_F(PlacementReleaseTest, P8_AMemberWithANodeLocalTableOfTheNameIsNotAskedForItsRows) {
  a_ = std::make_unique<TestNode>("a", dir_.Sub("a"), "s3cret");
  b_ = std::make_unique<TestNode>("b", dir_.Sub("b"), "s3cret");
  auto c = std::make_unique<TestNode>("c", dir_.Sub("c"), "s3cret");
  for (TestNode* n : {a_.get(), b_.get(), c.get()}) n->Start();
  for (TestNode* from : {a_.get(), b_.get(), c.get()}) {
    for (TestNode* to : {a_.get(), b_.get(), c.get()}) {
      if (from != to) from->Route(*to);
    }
  }
  ASSERT_OK(a_->catalog().CreateDatabase("sales", catalog::PlacementSpec{{"a", "b", "c"}, 0}));
  ASSERT_EVENTUALLY([&] { ASSERT_NE(b_->catalog().Snapshot()->FindDatabase("sales"), nullptr); });
  ASSERT_OK(b_->catalog().CreateTable(Spec("sales", "orders", {"name"}, /*replicate=*/false)));
  ASSERT_OK(a_->catalog().CreateTable(Spec("sales", "orders", {"name"})));
  Write(0, 3);
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(TableRows(*c, "sales", "orders").size(), 3u); });
  ASSERT_FALSE(b_->Table("sales", "orders")->replicate());

  ASSERT_OK(a_->catalog().AlterPlacement("sales", catalog::PlacementSpec{{"b", "c"}, 0}).status());
  ASSERT_EVENTUALLY([&] {
    const auto waiting = a_->cluster().releaser()->RunOnce();
    ASSERT_FALSE(Pending(*a_)) << (waiting.empty() ? "" : waiting.begin()->second);
  });
  EXPECT_TRUE(TableRows(*a_, "sales", "orders").empty());
  EXPECT_EQ(TableRows(*c, "sales", "orders").size(), 3u);
  EXPECT_TRUE(TableRows(*b_, "sales", "orders").empty()) << "b's own table took nothing (C11)";
}

// P8 with C8: two nodes that created a name while apart (no marker between them) hold one
// table under two generations, whose rows flow both ways; a release compares it by name
// rather than waiting for ever on "another generation".
TEST_F(PlacementReleaseTest, P8_ConcurrentGenerationsOfANameAreOneTableToARelease) {
  StartPair();
  ASSERT_EVENTUALLY([&] { ASSERT_NE(b_->catalog().Snapshot()->FindDatabase("sales"), nullptr); });
  b_->Isolate();
  ASSERT_OK(a_->catalog().CreateTable(Spec("sales", "orders", {"name"})));
  Write(0, 3);
  // b creates its own in a later millisecond than a's, so its stamp is another (both HLCs
  // can give the same stamp within one millisecond).
  const uint64_t a_ms = HybridClock::PhysicalMs(a_->Table("sales", "orders")->created_time());
  ASSERT_EVENTUALLY(
      [&] { ASSERT_GT(static_cast<uint64_t>(absl::ToUnixMillis(absl::Now())), a_ms); });
  ASSERT_OK(b_->catalog().CreateTable(Spec("sales", "orders", {"name"})));
  ASSERT_OK(b_->records().Write("sales", "orders", json::array({{{"id", "b0"}, {"name", "y"}}}),
                                catalog::WriteMode::kUpsert));
  b_->Start();
  ASSERT_EVENTUALLY([&] {
    ASSERT_EQ(TableRows(*a_, "sales", "orders").size(), 4u);
    ASSERT_EQ(TableRows(*b_, "sales", "orders").size(), 4u);
  });
  ASSERT_NE(a_->Table("sales", "orders")->created_time(),
            b_->Table("sales", "orders")->created_time());

  RemoveA();
  ASSERT_EVENTUALLY([&] {
    const auto waiting = a_->cluster().releaser()->RunOnce();
    ASSERT_FALSE(Pending(*a_)) << (waiting.empty() ? "" : waiting.begin()->second);
  });
  EXPECT_TRUE(TableRows(*a_, "sales", "orders").empty());
  EXPECT_EQ(TableRows(*b_, "sales", "orders").size(), 4u);
}

}  // namespace
}  // namespace cairn::replication
