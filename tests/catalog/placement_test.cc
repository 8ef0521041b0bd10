// Design 0013, P1 and P2: placements stored, merged last-writer-wins, retired by a database
// marker; replica counts resolved by rendezvous hash. P7: new members catching up, and this
// node announcing that it is ready.
#include "catalog/placement.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "cairn/storage/v1/records.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rocksdb/write_batch.h"
#include "storage/keys.h"
#include "tests/catalog/catalog_fixture.h"

namespace cairn::catalog {
namespace {

using ::cairn::testing::HasErrorCode;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

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
  // What keeps this node from being ready for `db` (P7).
  std::string Blocker(const std::string& db) {
    absl::StatusOr<std::string> why = catalog().CatchUpBlocker(*snap()->FindDatabase(db));
    EXPECT_OK(why.status());
    return why.value_or("");
  }
  // This node's cursor into `peer`'s log of `db`: at `seq`, or mid full copy (R7).
  void PutCursor(const std::string& peer, const std::string& db, uint64_t seq, bool copying) {
    storage::v1::ReplicaCursor cursor;
    cursor.set_seq(seq);
    if (copying) cursor.mutable_copy()->set_target_seq(seq);
    PutMeta(storage::CursorKey(peer, db), cursor.SerializeAsString());
  }
  void PutMeta(const std::string& key, const std::string& value) {
    rocksdb::WriteBatch batch;
    ASSERT_TRUE(batch.Put(node_->engine->cf(storage::Cf::kMeta), key, value).ok());
    ASSERT_OK(node_->engine->Write(&batch));
  }
  void DeleteMeta(const std::string& key) {
    rocksdb::WriteBatch batch;
    ASSERT_TRUE(batch.Delete(node_->engine->cf(storage::Cf::kMeta), key).ok());
    ASSERT_OK(node_->engine->Write(&batch));
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
  ASSERT_OK_AND_ASSIGN(v1::Placement mine,
                       catalog().AlterPlacement("d", PlacementSpec{{"a", "z"}, 0}));
  EXPECT_GT(mine.stamp(), t + 10);
  EXPECT_THAT(PlacementOf("d").members(), ElementsAre("a", "z"));
  ASSERT_OK(Reopen());
  EXPECT_THAT(PlacementOf("d").members(), ElementsAre("a", "z"));
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

// Design 0013, P7: members a placement adds are catching up; copies of one placement merge by
// intersection (an announcement only makes members ready); a newer placement starts from what
// the one it replaces had ready; a placement with no ready member is refused.
TEST_F(PlacementTest, P7_NewMembersAreCatchingUpUntilTheyAnnounceReady) {
  ASSERT_OK(catalog().CreateDatabase("d", PlacementSpec{{"a", "b"}, 0}));
  EXPECT_EQ(PlacementOf("d").catching_up_size(), 0);  // a new database has nothing to catch up
  ASSERT_OK_AND_ASSIGN(const v1::Placement grown,
                       catalog().AlterPlacement("d", PlacementSpec{{"a", "b", "c"}, 0}));
  EXPECT_THAT(grown.catching_up(), ElementsAre("c"));
  EXPECT_TRUE(IsReady(grown, "a"));
  EXPECT_FALSE(IsReady(grown, "c"));
  EXPECT_THAT(ReadyMembers(grown), ElementsAre("a", "b"));
  // Not ready under one placement, not ready under the next.
  ASSERT_OK_AND_ASSIGN(const v1::Placement shrunk,
                       catalog().AlterPlacement("d", PlacementSpec{{"b", "c"}, 0}));
  EXPECT_THAT(shrunk.catching_up(), ElementsAre("c"));
  // c's announcement: the same change with c ready. A copy still holding c back changes nothing.
  v1::Placement announced = shrunk;
  announced.clear_catching_up();
  ASSERT_OK(ApplyPeer("d", announced));
  EXPECT_EQ(PlacementOf("d").catching_up_size(), 0);
  ASSERT_OK(ApplyPeer("d", shrunk));
  EXPECT_EQ(PlacementOf("d").catching_up_size(), 0);
  EXPECT_EQ(PlacementOf("d").stamp(), shrunk.stamp());
  // Only new members: nobody would hold every row. Refused, with nothing written.
  EXPECT_THAT(catalog().AlterPlacement("d", PlacementSpec{{"x", "y"}, 0}),
              HasErrorCode(ErrorCode::kBadRequest));
  EXPECT_THAT(PlacementOf("d").members(), ElementsAre("b", "c"));
  // A peer's list is input: catching up must name members.
  v1::Placement stray = Peer({"b", "c"}, shrunk.stamp() + 1, "n2");
  stray.add_catching_up("z");
  EXPECT_THAT(ApplyPeer("d", stray), HasErrorCode(ErrorCode::kBadRequest));
  // Nor may every member be catching up: nobody would serve, nor be copied from.
  v1::Placement nobody = Peer({"b", "c"}, shrunk.stamp() + 1, "n2");
  nobody.add_catching_up("b");
  nobody.add_catching_up("c");
  EXPECT_THAT(ApplyPeer("d", nobody), HasErrorCode(ErrorCode::kBadRequest));
  ASSERT_OK(Reopen());
  EXPECT_EQ(PlacementOf("d").catching_up_size(), 0);
}

// Design 0013, P7: this node, added to a placement, is ready only once it has copied the
// database from every ready member (a cursor written since it joined, with no copy in
// progress, R7) and no live table is being copied again from one of them (R14); then it
// announces it under the same change.
TEST_F(PlacementTest, P7_ThisNodeIsReadyOnlyOnceItHasCopiedFromEveryReadyMember) {
  const std::string self = catalog().options().node_name;
  ASSERT_OK(catalog().CreateDatabase("d", PlacementSpec{{"p", "q"}, 0}));
  ASSERT_OK(catalog().CreateTable(Spec("d", "t")));
  // Cursors from before the join (an earlier membership, say) prove nothing: the join drops
  // them.
  PutCursor("p", "d", 3, /*copying=*/false);
  PutCursor("q", "d", 3, /*copying=*/false);
  std::vector<std::string> members{"p", "q", self};
  std::sort(members.begin(), members.end());
  v1::Placement joined = Peer(members, PlacementOf("d").stamp() + 1, "p");
  joined.add_catching_up(self);
  ASSERT_OK(ApplyPeer("d", joined));
  EXPECT_FALSE(IsReady(PlacementOf("d"), self));
  EXPECT_THAT(Blocker("d"), HasSubstr("waiting for p"));

  PutCursor("p", "d", 10, /*copying=*/true);
  PutCursor("q", "d", 7, /*copying=*/false);
  ASSERT_OK(catalog().MarkReadyIfCaughtUp("d"));
  EXPECT_FALSE(IsReady(PlacementOf("d"), self));
  EXPECT_THAT(Blocker("d"), HasSubstr("copying the database from p"));

  // The join asked p and q (their cursors) for t again (P3 item 3); p's answer is done.
  PutCursor("p", "d", 10, /*copying=*/false);
  DeleteMeta(storage::RefetchKey("d", "t", "p"));
  ASSERT_OK(catalog().MarkReadyIfCaughtUp("d"));
  EXPECT_FALSE(IsReady(PlacementOf("d"), self));
  EXPECT_THAT(Blocker("d"), HasSubstr("copying table t again from q"));

  DeleteMeta(storage::RefetchKey("d", "t", "q"));
  // A refetch left by a local drop of a table not live here is never served (decision 44):
  // it holds nothing back.
  PutMeta(storage::RefetchKey("d", "gone", "q"), std::string(8, '\0'));
  EXPECT_EQ(Blocker("d"), "");
  ASSERT_OK(catalog().MarkReadyIfCaughtUp("d"));
  EXPECT_TRUE(IsReady(PlacementOf("d"), self));
  EXPECT_TRUE(SamePlacementChange(PlacementOf("d"), joined));  // an announcement, no new change
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
