// Design 0013, P1 and P12 through DB_SCHEMA: a placement travels in DbSchema, is in the schema
// digest, and a database marker keeps a dropped database dropped on a node that lagged.
// Two nodes' catalogs, their DbSchemas passed by hand (no link).
#include <memory>
#include <string>

#include "catalog/local_node.h"
#include "catalog/placement.h"
#include "gtest/gtest.h"
#include "replication/schema_sync.h"
#include "tests/testing/testing.h"

namespace cairn::replication {
namespace {

using ::testing::ElementsAre;

class PlacementSyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    catalog::LocalNodeOptions a;
    a.name = "n1";
    ASSERT_OK_AND_ASSIGN(a_, catalog::LocalNode::Open(dir_a_.path(), a));
    catalog::LocalNodeOptions b;
    b.name = "n2";
    ASSERT_OK_AND_ASSIGN(b_, catalog::LocalNode::Open(dir_b_.path(), b));
  }
  // What `from` sends of `db`, applied by `to`.
  static void Send(catalog::LocalNode& from, catalog::LocalNode& to, const std::string& db,
                   bool placement = true) {
    SchemaOptions options;
    options.placement = placement;
    const peer::v1::DbSchema schema = BuildDbSchema(*from.catalog->Snapshot(), db, options);
    SchemaApplyStats stats;
    ASSERT_OK(ApplyDbSchema(to.catalog.get(), to.records.get(), schema, &stats));
  }
  static uint64_t Digest(catalog::LocalNode& n, const std::string& db) {
    return SchemaDigest(*n.catalog->Snapshot(), db);
  }

  testing::TempDir dir_a_, dir_b_;
  std::unique_ptr<catalog::LocalNode> a_, b_;
};

TEST_F(PlacementSyncTest, P1_APlacementTravelsInDbSchemaAndTheDigest) {
  ASSERT_OK(a_->catalog->CreateDatabase("d", catalog::PlacementSpec{{"n1", "n2"}, 2}));
  EXPECT_NE(Digest(*a_, "d"), Digest(*b_, "d"));  // placed on one node only: apart
  Send(*a_, *b_, "d");
  const catalog::DatabaseDef* d = b_->catalog->Snapshot()->FindDatabase("d");
  ASSERT_NE(d, nullptr);  // P12: the (empty) database is on every node
  EXPECT_THAT(d->placement.members(), ElementsAre("n1", "n2"));
  EXPECT_EQ(d->placement.count(), 2u);
  EXPECT_EQ(d->placement.origin(), "n1");
  EXPECT_EQ(Digest(*a_, "d"), Digest(*b_, "d"));
  // A change on the other node comes back, and wins (newer).
  ASSERT_OK(b_->catalog->AlterPlacement("d", catalog::PlacementSpec{{"n2"}, 0}).status());
  EXPECT_NE(Digest(*a_, "d"), Digest(*b_, "d"));
  Send(*b_, *a_, "d");
  EXPECT_THAT(a_->catalog->Snapshot()->FindDatabase("d")->placement.members(), ElementsAre("n2"));
  EXPECT_EQ(Digest(*a_, "d"), Digest(*b_, "d"));
}

TEST_F(PlacementSyncTest, P1_ADroppedDatabaseStaysDroppedOnANodeThatHeldAnOlderPlacement) {
  ASSERT_OK(a_->catalog->CreateDatabase("d", catalog::PlacementSpec{{"n1"}, 0}));
  Send(*a_, *b_, "d");
  ASSERT_OK(a_->catalog->DropDatabase("d").status());
  // n2 missed the forwarded drop: its DbSchema still places "d"; n1 does not take it back.
  Send(*b_, *a_, "d");
  EXPECT_EQ(a_->catalog->Snapshot()->FindDatabase("d"), nullptr);
  // n1's DbSchema carries the database marker: n2 lets go of the database.
  Send(*a_, *b_, "d");
  EXPECT_EQ(b_->catalog->Snapshot()->FindDatabase("d"), nullptr);
  EXPECT_EQ(Digest(*a_, "d"), Digest(*b_, "d"));
}

TEST_F(PlacementSyncTest, P1_APeerWithoutPlacementSeesTheDigestItComputes) {
  // A database on every node and no marker digests as before placement; a placed one is in
  // the digest only for a peer that advertised placement.v1.
  ASSERT_OK(a_->catalog->CreateDatabase("plain"));
  EXPECT_EQ(SchemaDigest(*a_->catalog->Snapshot(), "plain", {}, /*placement=*/true),
            SchemaDigest(*a_->catalog->Snapshot(), "plain", {}, /*placement=*/false));
  ASSERT_OK(a_->catalog->CreateDatabase("placed", catalog::PlacementSpec{{"n1"}, 0}));
  EXPECT_NE(SchemaDigest(*a_->catalog->Snapshot(), "placed", {}, true),
            SchemaDigest(*a_->catalog->Snapshot(), "placed", {}, false));
  SchemaOptions without;
  without.placement = false;
  const peer::v1::DbSchema old = BuildDbSchema(*a_->catalog->Snapshot(), "placed", without);
  EXPECT_FALSE(old.has_placement());
}

}  // namespace
}  // namespace cairn::replication
