// Design 0013, P1 and P2: placements stored, merged last-writer-wins, retired by a database
// marker; replica counts resolved by rendezvous hash.
#include "catalog/placement.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/catalog/catalog_fixture.h"

namespace cairn::catalog {
namespace {

using ::cairn::testing::HasErrorCode;
using ::testing::ElementsAre;

class PlacementTest : public CatalogFixture {
 protected:
  const v1::Placement& PlacementOf(const std::string& db) {
    const DatabaseDef* d = snap()->FindDatabase(db);
    EXPECT_NE(d, nullptr) << db;
    static const v1::Placement none;
    return d == nullptr ? none : d->placement;
  }
  static v1::Placement Peer(std::vector<std::string> members, Hlc stamp, std::string origin) {
    v1::Placement p;
    for (const std::string& m : members) p.add_members(m);
    p.set_stamp(stamp);
    p.set_origin(std::move(origin));
    return p;
  }
  absl::Status ApplyPeer(const std::string& db, const v1::Placement& placement) {
    return catalog().ApplyPeerPlacement(db, &placement, 0);
  }
};

TEST_F(PlacementTest, P1_EveryDatabaseIsPlacedAtItsCreation) {
  ASSERT_OK(catalog().CreateDatabase("plain"));
  ASSERT_OK(catalog().CreateTable(Spec("implicit", "t")));  // C14
  ASSERT_OK(catalog().CreateDatabase("placed", PlacementSpec{{"a", "b"}, 0}));
  for (const char* db : {"plain", "implicit"}) {
    const v1::Placement& p = PlacementOf(db);
    EXPECT_TRUE(IsEveryNode(p)) << db;
    EXPECT_EQ(p.stamp(), snap()->FindDatabase(db)->created_time) << db;
    EXPECT_EQ(p.origin(), catalog().options().node_name) << db;
  }
  EXPECT_THAT(PlacementOf("placed").members(), ElementsAre("a", "b"));
  // Durable: the same after a restart.
  const v1::Placement before = PlacementOf("placed");
  ASSERT_OK(Reopen());
  EXPECT_EQ(PlacementOf("placed").SerializeAsString(), before.SerializeAsString());
}

TEST_F(PlacementTest, P1_APlacementMergesLastWriterWinsOnStampAndOrigin) {
  ASSERT_OK(catalog().CreateDatabase("d"));
  const Hlc t = PlacementOf("d").stamp();
  ASSERT_OK(ApplyPeer("d", Peer({"b", "c"}, t + 10, "n2")));
  EXPECT_THAT(PlacementOf("d").members(), ElementsAre("b", "c"));
  // Older: ignored. Same stamp, lower origin: ignored; higher origin: wins.
  ASSERT_OK(ApplyPeer("d", Peer({"a"}, t + 5, "n9")));
  ASSERT_OK(ApplyPeer("d", Peer({"a"}, t + 10, "n1")));
  EXPECT_THAT(PlacementOf("d").members(), ElementsAre("b", "c"));
  ASSERT_OK(ApplyPeer("d", Peer({"a"}, t + 10, "n3")));
  EXPECT_THAT(PlacementOf("d").members(), ElementsAre("a"));
  // A local alter after it is stamped after it, whatever this clock says.
  ASSERT_OK_AND_ASSIGN(v1::Placement mine, catalog().AlterPlacement("d", PlacementSpec{{"z"}, 0}));
  EXPECT_GT(mine.stamp(), t + 10);
  EXPECT_THAT(PlacementOf("d").members(), ElementsAre("z"));
  ASSERT_OK(Reopen());
  EXPECT_THAT(PlacementOf("d").members(), ElementsAre("z"));
}

TEST_F(PlacementTest, P1_APeersPlacementOfAnAbsentDatabaseCreatesIt) {
  ASSERT_OK_AND_ASSIGN(const Hlc now, catalog().options().hlc->Now());
  ASSERT_OK(ApplyPeer("remote", Peer({"n2"}, now, "n2")));
  EXPECT_THAT(PlacementOf("remote").members(), ElementsAre("n2"));
}

TEST_F(PlacementTest, P1_ADatabaseMarkerRetiresEveryOlderPlacement) {
  ASSERT_OK(catalog().CreateDatabase("d", PlacementSpec{{"a", "b"}, 0}));
  const v1::Placement old = PlacementOf("d");
  ASSERT_OK_AND_ASSIGN(DropResult dropped, catalog().DropDatabase("d"));
  ASSERT_GT(dropped.database_marker, old.stamp());
  EXPECT_EQ(snap()->DatabaseMarkerFor("d"), dropped.database_marker);
  // A lagging peer's copy of the dropped incarnation's placement brings nothing back.
  ASSERT_OK(ApplyPeer("d", old));
  EXPECT_EQ(snap()->FindDatabase("d"), nullptr);
  // The marker outlives the database and a restart.
  ASSERT_OK(Reopen());
  EXPECT_EQ(snap()->DatabaseMarkerFor("d"), dropped.database_marker);
  ASSERT_OK(ApplyPeer("d", old));
  EXPECT_EQ(snap()->FindDatabase("d"), nullptr);
  // A database made again is newer than the marker: its placement lives.
  ASSERT_OK(catalog().CreateDatabase("d"));
  EXPECT_GT(PlacementOf("d").stamp(), dropped.database_marker);
}

TEST_F(PlacementTest, P1_APeersDatabaseMarkerKeepsADatabaseATableOutlived) {
  ASSERT_OK(catalog().CreateDatabase("d", PlacementSpec{{"a"}, 0}));
  const Hlc placed = PlacementOf("d").stamp();
  ASSERT_OK(catalog().CreateTable(Spec("d", "newer")));  // created after the drop below
  // A drop_database elsewhere, stamped between the placement and the table.
  const Hlc marker = placed + 1;
  ASSERT_OK(catalog().ApplyPeerPlacement("d", nullptr, marker));
  ASSERT_NE(snap()->FindDatabase("d"), nullptr);
  const v1::Placement& p = PlacementOf("d");
  EXPECT_TRUE(IsEveryNode(p));  // every node, as of the marker, on every node alike
  EXPECT_EQ(p.stamp(), marker);
  EXPECT_EQ(p.origin(), "");
  EXPECT_TRUE(Live("d", "newer") != nullptr);
}

TEST_F(PlacementTest, P1_AMalformedPeerPlacementIsRefusedWithNothingApplied) {
  ASSERT_OK(catalog().CreateDatabase("d"));
  const std::string before = PlacementOf("d").SerializeAsString();
  const Hlc t = PlacementOf("d").stamp() + 1;
  EXPECT_THAT(ApplyPeer("d", Peer({"b", "a"}, t, "n2")),
              HasErrorCode(ErrorCode::kBadRequest));  // not sorted
  EXPECT_THAT(ApplyPeer("d", Peer({"a", "a"}, t, "n2")),
              HasErrorCode(ErrorCode::kBadRequest));  // not distinct
  EXPECT_THAT(ApplyPeer("d", Peer({""}, t, "n2")), HasErrorCode(ErrorCode::kInvalidName));
  EXPECT_THAT(ApplyPeer("d", Peer({"*"}, t, "n2")), HasErrorCode(ErrorCode::kInvalidName));
  EXPECT_THAT(ApplyPeer("d", Peer({std::string("a\x01", 2)}, t, "n2")),
              HasErrorCode(ErrorCode::kInvalidName));
  EXPECT_EQ(PlacementOf("d").SerializeAsString(), before);
}

TEST(RendezvousTest, P2_ACountResolvesToTheSameNodesEverywhere) {
  const std::vector<std::string> nodes{"n1", "n2", "n3", "n4", "n5"};
  const std::vector<std::string> shuffled{"n4", "n2", "n5", "n1", "n3"};
  const std::vector<std::string> three = RendezvousMembers("sales", nodes, 3);
  ASSERT_EQ(three.size(), 3u);
  EXPECT_TRUE(std::is_sorted(three.begin(), three.end()));
  EXPECT_EQ(RendezvousMembers("sales", shuffled, 3), three);  // order of the input is no matter
  // Adding a node moves a database only to the new node, if at all (rendezvous hashing).
  std::vector<std::string> six = nodes;
  six.push_back("n6");
  const std::vector<std::string> after = RendezvousMembers("sales", six, 3);
  int kept = 0;
  for (const std::string& m : after) kept += std::count(three.begin(), three.end(), m);
  EXPECT_GE(kept, 2);
  // Databases spread: over many names, every node is chosen.
  std::set<std::string> chosen;
  for (int i = 0; i < 50; ++i) {
    for (const std::string& m : RendezvousMembers("db" + std::to_string(i), nodes, 1)) {
      chosen.insert(m);
    }
  }
  EXPECT_EQ(chosen.size(), nodes.size());
}

TEST(RendezvousTest, P2_ReplicasAreNormalizedOrRefusedByName) {
  ASSERT_OK_AND_ASSIGN(auto members, NormalizeMembers({"n3", "n1"}));
  EXPECT_THAT(members, ElementsAre("n1", "n3"));
  EXPECT_THAT(NormalizeMembers({}), HasErrorCode(ErrorCode::kBadRequest));
  EXPECT_THAT(NormalizeMembers({"n1", "n1"}), HasErrorCode(ErrorCode::kBadRequest));
  EXPECT_THAT(NormalizeMembers({"n1", ""}), HasErrorCode(ErrorCode::kInvalidName));
}

}  // namespace
}  // namespace cairn::catalog
