// Design 0013, P10: a write is confirmed by a member once the member has acknowledged this
// node's log through the write's sequence number: after it applied the batch, never before.
// Two TestNodes linked over real gRPC on loopback.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "catalog/placement.h"
#include "common/fault.h"
#include "common/fault_points.h"
#include "tests/replication/test_node.h"
#include "tests/testing/testing.h"

namespace cairn::replication {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;

class ConfirmationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = std::make_unique<TestNode>("a", dir_.Sub("a"), "s3cret");
    b_ = std::make_unique<TestNode>("b", dir_.Sub("b"), "s3cret");
    a_->Start();
    b_->Start();
    a_->Route(*b_);
    b_->Route(*a_);
    ASSERT_OK(a_->catalog().CreateDatabase("sales", catalog::PlacementSpec{{"a", "b"}, 0}));
    ASSERT_OK(a_->catalog().CreateTable(Spec("sales", "orders", {"name"})));
  }
  // The log position of a's write of key `id`.
  uint64_t Write(const std::string& id) {
    absl::StatusOr<catalog::WriteResult> w = a_->records().Write(
        "sales", "orders", json::array({{{"id", id}, {"name", "x"}}}), catalog::WriteMode::kUpsert);
    EXPECT_OK(w.status());
    return w.ok() ? w->log_seq : 0;
  }

  testing::TempDir dir_;
  std::unique_ptr<TestNode> a_, b_;
};

TEST_F(ConfirmationTest, P10_AMemberConfirmsAWriteOnlyOnceItAppliedIt) {
  Cluster::ConfirmScope confirming(&a_->cluster(), "sales");
  const uint64_t first = Write("k1");
  ASSERT_GT(first, 0u);
  EXPECT_THAT(
      a_->cluster().WaitForConfirmations("sales", first, 1, {"b"}, absl::Now() + absl::Seconds(30)),
      ElementsAre("b"));
  EXPECT_EQ(TableRows(*b_, "sales", "orders").size(), 1u);

  // b holds the next write's batch unapplied: nobody confirms it.
  b_->faults().Set(fault_points::kReplApplyBeforeCommit, FaultAction::Block());
  const uint64_t second = Write("k2");
  ASSERT_GT(second, first);
  ASSERT_TRUE(
      b_->faults().WaitUntilBlocked(fault_points::kReplApplyBeforeCommit, absl::Seconds(10)));
  EXPECT_TRUE(
      a_->cluster()
          .WaitForConfirmations("sales", second, 1, {"b"}, absl::Now() + absl::Milliseconds(200))
          .empty());
  b_->faults().Release(fault_points::kReplApplyBeforeCommit);
  EXPECT_THAT(a_->cluster().WaitForConfirmations("sales", second, 1, {"b"},
                                                 absl::Now() + absl::Seconds(30)),
              ElementsAre("b"));
  EXPECT_EQ(TableRows(*b_, "sales", "orders").size(), 2u);
}

// P10 with one copy of each write (design 0004): a member that gets another origin's writes
// directly makes this node hold its relays of them for that member, and the member's stored
// cursor stays behind the first held entry until its advert moves. This node's own write,
// sent after it, is applied there all the same, and is confirmed at once: c confirms a's
// write while it still lacks b's row (c's apply of b's batch is blocked, and a's hold limit
// is raised so that a keeps holding its relay of the row).
TEST(ConfirmationMeshTest, P10_HeldRelaysOfAnotherOriginDoNotHoldAConfirmationBack) {
  testing::TempDir dir;
  TestNode a("a", dir.Sub("a"), "s3cret"), b("b", dir.Sub("b"), "s3cret"),
      c("c", dir.Sub("c"), "s3cret");
  for (TestNode* n : {&a, &b, &c}) {
    n->set_hold_limit(absl::Minutes(5));
    n->Start();
  }
  for (TestNode* from : {&a, &b, &c}) {
    for (TestNode* to : {&a, &b, &c}) {
      if (from != to) from->Route(*to);
    }
  }
  ASSERT_OK(a.catalog().CreateDatabase("sales", catalog::PlacementSpec{{"a", "b", "c"}, 0}));
  ASSERT_OK(a.catalog().CreateTable(Spec("sales", "orders", {"name"})));
  auto write = [](TestNode& n, const std::string& id) {
    absl::StatusOr<catalog::WriteResult> w = n.records().Write(
        "sales", "orders", json::array({{{"id", id}, {"name", "x"}}}), catalog::WriteMode::kUpsert);
    EXPECT_OK(w.status());
    return w.ok() ? w->log_seq : 0;
  };
  ASSERT_EVENTUALLY([&] { ASSERT_NE(b.Table("sales", "orders"), nullptr); });
  write(b, "w0");
  // c took w0 from b directly, and a owes c nothing more (its relay of w0 was held for c
  // until c's advert covered it): the next batch c applies is b's.
  auto acked_all = [](TestNode& from, const std::string& to) {
    const std::optional<uint64_t> acked = from.cluster().AckedCursor(to, "sales");
    return acked.has_value() && *acked >= from.local().log->CommittedSeq("sales");
  };
  ASSERT_EVENTUALLY([&] {
    ASSERT_EQ(TableRows(a, "sales", "orders").size(), 1u);
    ASSERT_EQ(TableRows(c, "sales", "orders").size(), 1u);
    ASSERT_TRUE(acked_all(b, "c"));
    ASSERT_TRUE(acked_all(a, "c"));
  });

  c.faults().Set(fault_points::kReplApplyBeforeCommit, FaultAction::Block().Once());
  write(b, "r1");
  ASSERT_TRUE(c.faults().WaitUntilBlocked(fault_points::kReplApplyBeforeCommit, absl::Seconds(10)));
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(TableRows(a, "sales", "orders").size(), 2u); });  // relayed

  Cluster::ConfirmScope confirming(&a.cluster(), "sales");
  const uint64_t own = write(a, "k1");
  ASSERT_GT(own, 0u);
  EXPECT_THAT(
      a.cluster().WaitForConfirmations("sales", own, 1, {"c"}, absl::Now() + absl::Seconds(10)),
      ElementsAre("c"));
  EXPECT_EQ(TableRows(c, "sales", "orders").size(), 2u) << "w0 and k1; b's r1 still blocked";
  c.faults().Release(fault_points::kReplApplyBeforeCommit);
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(TableRows(c, "sales", "orders").size(), 3u); });
}

}  // namespace
}  // namespace cairn::replication
