// Design 0013, P3: only members hold rows. A sender serves a database's rows only to its
// members (and starts over with a full copy when a peer becomes one), a receiver drops a
// peer's entries of a database it is not a member of whatever the sender thought, a
// non-member refuses clients' rows (503 NOT_A_MEMBER) but serves its node-local tables, and
// Verify compares only members. LogSender and RecordStore driven by hand, on TestNodes.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "catalog/placement.h"
#include "replication/record_stream.h"
#include "tests/replication/test_node.h"
#include "tests/testing/testing.h"

namespace cairn::replication {
namespace {

using ::cairn::testing::HasErrorCode;
using nlohmann::json;

class PlacementRowsTest : public ::testing::Test {
 protected:
  std::unique_ptr<TestNode> NewNode(const std::string& name) {
    auto n = std::make_unique<TestNode>(name, dir_.Sub(name), "s3cret");
    n->Start();
    return n;
  }
  // `n` holds database `db` placed on `members`, with table `orders` and `rows` rows.
  static void PlacedOrders(TestNode* n, const std::string& db, std::vector<std::string> members,
                           int rows) {
    ASSERT_OK(n->catalog().CreateDatabase(db, catalog::PlacementSpec{std::move(members), 0}));
    ASSERT_OK(n->catalog().CreateTable(Spec(db, "orders", {"name"})));
    if (rows > 0) Write(n, db, 0, rows);
  }
  static void Write(TestNode* n, const std::string& db, int from, int to) {
    json records = json::array();
    for (int i = from; i < to; ++i)
      records.push_back({{"id", absl::StrCat("k", i)}, {"name", "x"}});
    ASSERT_OK(n->records().Write(db, "orders", records, catalog::WriteMode::kUpsert));
  }
  static void Place(TestNode* n, const std::string& db, std::vector<std::string> members) {
    ASSERT_OK(n->catalog().AlterPlacement(db, catalog::PlacementSpec{std::move(members), 0}));
  }
  // Every batch `sender` has now, against the node's current snapshot.
  static std::vector<peer::v1::ChangeBatch> Drain(TestNode* n, LogSender* sender) {
    std::vector<peer::v1::ChangeBatch> out;
    const catalog::SnapshotRef snap = n->catalog().Snapshot();
    for (int i = 0; i < 100; ++i) {
      peer::v1::ChangeBatch b;
      absl::StatusOr<bool> produced = sender->Next(*snap, &b);
      EXPECT_OK(produced.status());
      if (!produced.ok() || !*produced) break;
      out.push_back(std::move(b));
    }
    return out;
  }
  static int EntriesOf(const std::vector<peer::v1::ChangeBatch>& batches, const std::string& db) {
    int n = 0;
    for (const auto& b : batches) n += b.database() == db ? b.entries_size() : 0;
    return n;
  }

  testing::TempDir dir_;
};

TEST_F(PlacementRowsTest, P3_ASenderServesADatabaseOnlyToItsMembers) {
  auto a = NewNode("a");
  PlacedOrders(a.get(), "sales", {"a", "b"}, 5);
  PlacedOrders(a.get(), "open", {}, 3);  // every node
  LogSender to_b(&a->local(), "b", Exclusions());
  LogSender to_c(&a->local(), "c", Exclusions());
  to_b.Subscribe({});
  to_c.Subscribe({});
  EXPECT_EQ(EntriesOf(Drain(a.get(), &to_b), "sales"), 5);
  const std::vector<peer::v1::ChangeBatch> c_batches = Drain(a.get(), &to_c);
  EXPECT_EQ(EntriesOf(c_batches, "sales"), 0);
  EXPECT_EQ(EntriesOf(c_batches, "open"), 3);
  EXPECT_EQ(to_c.Needs().count("sales"), 0u);  // the log is not kept for a non-member
  // c becomes a member: it gets a full copy.
  Place(a.get(), "sales", {"a", "b", "c"});
  const std::vector<peer::v1::ChangeBatch> joined = Drain(a.get(), &to_c);
  EXPECT_EQ(EntriesOf(joined, "sales"), 5);
}

TEST_F(PlacementRowsTest, P3_AFormerMemberPinsNoLogAndComesBackByAFullCopy) {
  auto a = NewNode("a");
  PlacedOrders(a.get(), "sales", {"a", "b"}, 4);
  LogSender to_b(&a->local(), "b", Exclusions());
  to_b.Subscribe({});
  ASSERT_EQ(EntriesOf(Drain(a.get(), &to_b), "sales"), 4);
  EXPECT_EQ(to_b.Needs().count("sales"), 1u);
  // b leaves: a write goes by that b is not sent, and a's log is not kept for b.
  Place(a.get(), "sales", {"a"});
  Write(a.get(), "sales", 4, 6);
  EXPECT_EQ(EntriesOf(Drain(a.get(), &to_b), "sales"), 0);
  EXPECT_EQ(to_b.Needs().count("sales"), 0u) << "a non-member would hold back log trimming";
  // b comes back: the log it needs may be gone, so it gets everything by a full copy.
  Place(a.get(), "sales", {"a", "b"});
  Write(a.get(), "sales", 6, 7);
  const std::vector<peer::v1::ChangeBatch> back = Drain(a.get(), &to_b);
  ASSERT_FALSE(back.empty());
  EXPECT_TRUE(back.front().has_copy());
  EXPECT_EQ(EntriesOf(back, "sales"), 7);
}

TEST_F(PlacementRowsTest, P3_ANonMemberDropsAPeersEntriesWhateverTheSenderThought) {
  auto a = NewNode("a"), c = NewNode("c");
  PlacedOrders(a.get(), "sales", {"a", "c"}, 5);  // a thinks c is a member ...
  PlacedOrders(c.get(), "sales", {"a"}, 0);       // ... c knows it is not
  LogSender to_c(&a->local(), "c", Exclusions());
  to_c.Subscribe({});
  bool extra_ran = false;
  auto extra = [&](rocksdb::WriteBatch* wb) {  // what the receiver writes: its cursor
    extra_ran = true;
    wb->Put(c->local().engine->cf(storage::Cf::kMeta), storage::CursorKey("a", "sales"), "")
        .PermitUncheckedError();
  };
  uint64_t dropped = 0;
  for (const peer::v1::ChangeBatch& b : Drain(a.get(), &to_c)) {
    std::vector<storage::v1::ChangeEntry> entries(b.entries().begin(), b.entries().end());
    ASSERT_OK_AND_ASSIGN(catalog::ApplyStats stats,
                         c->records().ApplyPeerEntries(b.database(), entries, extra));
    EXPECT_EQ(stats.applied, 0u);
    dropped += stats.not_member;
  }
  EXPECT_EQ(dropped, 5u);
  EXPECT_TRUE(extra_ran);  // the caller's cursor and parked keys move as for any skip
  EXPECT_TRUE(TableRows(*c, "sales", "orders").empty());
  EXPECT_EQ(c->local().log->CommittedSeq("sales"), 0u);  // nothing logged for relay either

  // Design 0013, "Who sends what" (3): once c is a member, it asks a (whose entries it
  // dropped) for every table again, in the placement's own batch.
  const std::string refetch = storage::RefetchKey("sales", "orders", "a");
  std::string value;
  bool found = true;
  ASSERT_OK(c->local().engine->Get(storage::Cf::kMeta, refetch, &value, &found));
  EXPECT_FALSE(found);
  const std::string cursor = storage::CursorKey("a", "sales");
  ASSERT_OK(c->local().engine->Get(storage::Cf::kMeta, cursor, &value, &found));
  ASSERT_TRUE(found) << "the dropped batch moved c's cursor";
  Place(c.get(), "sales", {"a", "c"});
  ASSERT_OK(c->local().engine->Get(storage::Cf::kMeta, refetch, &value, &found));
  EXPECT_TRUE(found);
  // P7: the same batch drops that cursor; c is ready only on one written since it joined.
  ASSERT_OK(c->local().engine->Get(storage::Cf::kMeta, cursor, &value, &found));
  EXPECT_FALSE(found);
}

TEST_F(PlacementRowsTest, P3_ANonMemberRefusesClientRowsButServesItsNodeLocalTables) {
  auto c = NewNode("c");
  PlacedOrders(c.get(), "sales", {"a", "b"}, 0);
  absl::StatusOr<catalog::WriteResult> w = c->records().Write(
      "sales", "orders", json::array({{{"id", 1}, {"name", "x"}}}), catalog::WriteMode::kInsert);
  EXPECT_THAT(w.status(), HasErrorCode(ErrorCode::kNotAMember));
  EXPECT_THAT(w.status().message(), ::testing::HasSubstr("a,b"));
  EXPECT_THAT(c->records().Delete("sales", "orders", json::array({1})).status(),
              HasErrorCode(ErrorCode::kNotAMember));
  auto none = [](const json&) { return true; };
  EXPECT_THAT(c->records().SearchByValue("sales", "orders", "id", "*", {}, none),
              HasErrorCode(ErrorCode::kNotAMember));
  EXPECT_THAT(c->records().SearchById("sales", "orders", json::array({1}), {}, none),
              HasErrorCode(ErrorCode::kNotAMember));
  EXPECT_TRUE(TableRows(*c, "sales", "orders").empty());
  // C11: a node-local table is served where it is.
  ASSERT_OK(c->catalog().CreateTable(Spec("sales", "scratch", {"name"}, /*replicate=*/false)));
  EXPECT_OK(c->records()
                .Write("sales", "scratch", json::array({{{"id", 1}, {"name", "x"}}}),
                       catalog::WriteMode::kInsert)
                .status());
  // A member still catching up refuses them too (P7); a ready member serves them.
  Place(c.get(), "sales", {"a", "b", "c"});
  w = c->records().Write("sales", "orders", json::array({{{"id", 1}, {"name", "x"}}}),
                         catalog::WriteMode::kInsert);
  EXPECT_THAT(w.status(), HasErrorCode(ErrorCode::kNotAMember));
  EXPECT_THAT(w.status().message(), ::testing::HasSubstr("catching up"));
  catalog::v1::Placement ready = c->catalog().Snapshot()->FindDatabase("sales")->placement;
  ready.clear_catching_up();
  ASSERT_OK(c->catalog().ApplyPeerPlacement("sales", &ready, 0));
  EXPECT_OK(c->records()
                .Write("sales", "orders", json::array({{{"id", 1}, {"name", "x"}}}),
                       catalog::WriteMode::kInsert)
                .status());
}

TEST_F(PlacementRowsTest, P3_VerifyComparesOnlyMembers) {
  auto a = NewNode("a");
  PlacedOrders(a.get(), "sales", {"a", "b"}, 1);
  PeerVerify r = a->cluster().anti_entropy()->Verify("c", "sales");
  EXPECT_THAT(r.status, HasErrorCode(ErrorCode::kNotAMember));
  EXPECT_THAT(r.status.message(), ::testing::HasSubstr("not on both a and c"));
}

TEST_F(PlacementRowsTest, P3_ACommitWakesOnlyTheWritersOfPeersThatHoldTheDatabase) {
  // A commit wakes a link's writer to read the log for the peer; a non-member is sent none of
  // a placed database's entries, so its writer sleeps through that database's commits.
  auto a = NewNode("a"), b = NewNode("b"), c = NewNode("c");
  a->Route(*b);
  a->Route(*c);
  ASSERT_EVENTUALLY([&] {
    ASSERT_TRUE(a->cluster().CommitWakes("b").has_value());
    ASSERT_TRUE(a->cluster().CommitWakes("c").has_value());
  });
  PlacedOrders(a.get(), "sales", {"a", "b"}, 0);
  PlacedOrders(a.get(), "open", {}, 0);  // every node
  // One link per peer (routes from a only), so the counts are one session's.
  auto wakes = [&](const std::string& peer) {
    std::optional<uint64_t> n = a->cluster().CommitWakes(peer);
    EXPECT_TRUE(n.has_value()) << "no link with " << peer;
    return n.value_or(0);
  };
  const uint64_t b_before = wakes("b"), c_before = wakes("c");
  constexpr uint64_t kWrites = 20;
  for (uint64_t i = 0; i < kWrites; ++i) {
    Write(a.get(), "sales", static_cast<int>(i), static_cast<int>(i) + 1);  // one commit each
  }
  EXPECT_EQ(wakes("b"), b_before + kWrites);
  EXPECT_EQ(wakes("c"), c_before);
  // A database on every node wakes every writer.
  Write(a.get(), "open", 0, 1);
  EXPECT_EQ(wakes("c"), c_before + 1);
  // c becomes a member: the commits wake its writer, and it gets the rows (a full copy).
  Place(a.get(), "sales", {"a", "b", "c"});
  const uint64_t c_member = wakes("c");
  Write(a.get(), "sales", static_cast<int>(kWrites), static_cast<int>(kWrites) + 1);
  EXPECT_EQ(wakes("c"), c_member + 1);
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(TableRows(*c, "sales", "orders").size(), kWrites + 1u); });
}

}  // namespace
}  // namespace cairn::replication
