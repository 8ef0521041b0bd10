// RecordStore::ApplyPeerEntries: last-writer-wins apply of peer entries (SPEC D5, C4, C6, C8,
// C15; decision 103), logged for relay (R8).
#include <future>

#include "absl/cleanup/cleanup.h"
#include "common/fault_points.h"
#include "tests/catalog/record_store_fixture.h"

namespace cairn::catalog {
namespace {

using ::cairn::testing::HasErrorCode;
using nlohmann::json;
using storage::v1::ChangeEntry;

// D5: last writer wins on (version, origin name); ties of both are duplicates.
TEST_F(RecordStoreTest, D5_LastWriterWinsOnVersionThenOrigin) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  const Hlc gen = Live("db", "t")->created_time();
  auto value = [&]() { return ById("t", json::array({"k"}))[0]["v"]; };
  auto s = Apply({Put("t", "k", 100, "node-m", gen, {{"id", "k"}, {"v", "m100"}})});
  ASSERT_OK(s);
  EXPECT_EQ(s->applied, 1u);
  s = Apply({Put("t", "k", 99, "node-z", gen, {{"id", "k"}, {"v", "z99"}})});
  EXPECT_EQ(s->older, 1u);  // older version loses whatever its origin
  EXPECT_EQ(value(), "m100");
  s = Apply({Put("t", "k", 100, "node-b", gen, {{"id", "k"}, {"v", "b100"}})});
  EXPECT_EQ(s->older, 1u);  // equal version, smaller origin loses
  EXPECT_EQ(value(), "m100");
  s = Apply({Put("t", "k", 100, "node-z", gen, {{"id", "k"}, {"v", "z100"}})});
  EXPECT_EQ(s->applied, 1u);  // equal version, greater origin wins
  EXPECT_EQ(value(), "z100");
  s = Apply({Put("t", "k", 100, "node-z", gen, {{"id", "k"}, {"v", "other"}})});
  EXPECT_EQ(s->duplicates, 1u);  // identity tie: the same write
  EXPECT_EQ(value(), "z100");
  s = Apply({Put("t", "k", 101, "node-a", gen, {{"id", "k"}, {"v", "a101"}})});
  EXPECT_EQ(s->applied, 1u);
  EXPECT_EQ(value(), "a101");
  ExpectIndexConsistent("t");
  // A local write after all this is newer than every applied version (HLC observed them).
  auto local = Write("t", json::array({{{"id", "k"}, {"v", "local"}}}), WriteMode::kUpsert);
  ASSERT_OK(local);
  EXPECT_GT(local->version, 101u);
}

// D5: a delete leaves a versioned tombstone that blocks older writes.
TEST_F(RecordStoreTest, D5_TombstonesBlockOlderWrites) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  const Hlc gen = Live("db", "t")->created_time();
  ASSERT_OK(
      Apply({Put("t", 1, 100, "b", gen, {{"id", 1}, {"v", "x"}}), Del("t", 1, 200, "b", gen)}));
  EXPECT_TRUE(ById("t", json::array({1})).empty());
  auto s = Apply({Put("t", 1, 150, "z", gen, {{"id", 1}, {"v", "late"}})});
  ASSERT_OK(s);
  EXPECT_EQ(s->older, 1u);
  EXPECT_TRUE(ById("t", json::array({1})).empty());
  EXPECT_EQ(Count("t"), 0u);
  // An older delete does not remove a newer row.
  ASSERT_OK(Apply({Put("t", 2, 300, "b", gen, {{"id", 2}})}));
  s = Apply({Del("t", 2, 250, "b", gen)});
  EXPECT_EQ(s->older, 1u);
  EXPECT_EQ(Count("t"), 1u);
  // A newer write resurrects the key.
  ASSERT_OK(Apply({Put("t", 1, 400, "a", gen, {{"id", 1}, {"v", "back"}})}));
  EXPECT_EQ(ById("t", json::array({1}))[0]["v"], "back");
  EXPECT_EQ(Count("t"), 2u);
  ExpectIndexConsistent("t");
}

// R5/R8: applied peer writes are logged with their true origin and version, for relay.
TEST_F(RecordStoreTest, AppliedPeerWritesAreLoggedForRelay) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  const Hlc gen = Live("db", "t")->created_time();
  ASSERT_OK(Apply({Put("t", 1, 100, "far-node", gen, {{"id", 1}})}));
  auto log = Log();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].origin(), "far-node");
  EXPECT_EQ(log[0].version(), 100u);
  EXPECT_EQ(log[0].row_generation(), gen);
}

// C6, D7, C11, R6: entries of a retired generation, of a node-local table or malformed ones
// are skipped, while the caller's cursor still lands in the same batch.
TEST_F(RecordStoreTest, C6_DeadGenerationEntriesSkippedCursorAdvances) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  ASSERT_OK(catalog().CreateTable(Spec("db", "local", {}, /*replicate=*/false)));
  const Hlc gen = Live("db", "t")->created_time();
  ASSERT_OK(catalog().ApplyPeerDrop("db", "t", gen - 10));  // kept: ours is newer
  ChangeEntry not_object = Put("t", 6, 500, "p", gen, {{"id", 6}});
  not_object.set_json("[1,2]");
  ChangeEntry bad_name = Put("t", 7, 500, "p", gen, {{"id", 7}, {"a/b", 1}});
  ChangeEntry bad_op = Put("t", 8, 500, "p", gen, {{"id", 8}});
  bad_op.set_op(static_cast<storage::v1::ChangeOp>(99));
  auto s = Apply({Put("t", 1, 500, "p", gen - 20, {{"id", 1}}),  // retired row generation
                  Put("t", 2, 500, "p", gen - 10, {{"id", 2}}),  // equal: survives
                  Put("t", 3, 500, "p", gen, {{"id", 3}}),
                  Put("local", 5, 500, "p", gen, {{"id", 5}}), not_object, bad_name, bad_op},
                 [](rocksdb::WriteBatch* b) { ASSERT_TRUE(b->Put("cursor/peer", "42").ok()); });
  ASSERT_OK(s);
  EXPECT_EQ(s->dead_generation, 1u);
  EXPECT_EQ(s->applied, 2u);
  EXPECT_EQ(s->node_local, 1u);
  EXPECT_EQ(s->malformed, 3u);
  EXPECT_EQ(Count("t"), 2u);
  EXPECT_EQ(Count("local"), 0u);
  // All skipped: the cursor still commits.
  ASSERT_OK(Apply({Put("t", 1, 600, "p", gen - 20, {{"id", 1}})},
                  [](rocksdb::WriteBatch* b) { ASSERT_TRUE(b->Put("cursor/peer", "43").ok()); }));
  std::string v;
  ASSERT_TRUE(node_->engine->db()->Get(rocksdb::ReadOptions(), "cursor/peer", &v).ok());
  EXPECT_EQ(v, "43");
}

// A peer is authenticated but its values are input: a key that is not the canonical encoding of
// a primary key, or a table name that breaks C13, is a malformed entry, skipped and counted, and
// the cursor advances past it; it never refuses the batch for good, nor is it stored as is.
TEST_F(RecordStoreTest, PeerEntriesWithBadKeysOrTableNamesAreSkipped) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  const Hlc gen = Live("db", "t")->created_time();
  std::vector<ChangeEntry> entries;
  for (const std::string& key : {std::string("garbage"), std::string("\x10\x00"),
                                 std::string(1, '\x11') + std::string(8, '\x40'),  // a float
                                 std::string(1, '\x03')}) {                        // true
    ChangeEntry e = Put("t", "k", 10, "p", gen, {{"id", "k"}});
    e.set_key(key);
    entries.push_back(e);
  }
  ChangeEntry trailing = Put("t", 7, 10, "p", gen, {{"id", 7}});
  trailing.set_key(trailing.key() + "x");  // a key with bytes after it
  entries.push_back(trailing);
  entries.push_back(Put("../etc", 1, 10, "p", gen, {{"id", 1}}));
  entries.push_back(Put("_system", 1, 10, "p", gen, {{"id", 1}}));
  entries.push_back(Put("t", "good", 10, "p", gen, {{"id", "good"}}));
  auto s =
      Apply(entries, [](rocksdb::WriteBatch* b) { ASSERT_TRUE(b->Put("cursor/peer", "1").ok()); });
  ASSERT_OK(s);
  EXPECT_EQ(s->malformed, 7u);
  EXPECT_EQ(s->applied, 1u);
  EXPECT_EQ(Count("t"), 1u);
  std::string v;
  EXPECT_TRUE(node_->engine->db()->Get(rocksdb::ReadOptions(), "cursor/peer", &v).ok());
}

// R6, R7: entries for a table that is neither live here nor provably dead (its schema has not
// arrived yet) refuse the batch: nothing is written and the cursor does not move, so they are
// applied once the schema is.
TEST_F(RecordStoreTest, EntriesForAnUnknownTableRefuseTheBatch) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  const Hlc gen = Live("db", "t")->created_time();
  auto cursor = [](rocksdb::WriteBatch* b) { ASSERT_TRUE(b->Put("cursor/peer", "9").ok()); };
  auto s =
      Apply({Put("t", 1, 500, "p", gen, {{"id", 1}}), Put("later", 1, 500, "p", 77, {{"id", 1}})},
            cursor);
  EXPECT_THAT(s, HasErrorCode(ErrorCode::kTableNotFound));
  EXPECT_NE(s.status().message().find("later"), std::string::npos);
  EXPECT_EQ(Count("t"), 0u);
  std::string v;
  EXPECT_TRUE(node_->engine->db()->Get(rocksdb::ReadOptions(), "cursor/peer", &v).IsNotFound());
  // Once the peer's schema is applied, the same batch goes through.
  ASSERT_OK(catalog().ApplyPeerTable({"db", "later", 77, "id", {}, false}));
  s = Apply({Put("t", 1, 500, "p", gen, {{"id", 1}}), Put("later", 1, 500, "p", 77, {{"id", 1}})},
            cursor);
  ASSERT_OK(s);
  EXPECT_EQ(s->applied, 2u);
}

// D5 across a restart: a local write must beat a stored row written by a peer whose clock runs
// ahead, even when this process's clock has not heard of that version since it started.
TEST_F(RecordStoreTest, D5_LocalWriteAfterRestartBeatsAFasterPeersRow) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  const Hlc gen = Live("db", "t")->created_time();
  const Hlc ahead = HybridClock::Make(absl::ToUnixMillis(absl::Now() + absl::Minutes(10)), 0);
  ASSERT_OK(Apply({Put("t", "k", ahead, "fast-peer", gen, {{"id", "k"}, {"v", "peer"}})}));
  ASSERT_OK(Reopen());  // a fresh HybridClock
  auto w = Write("t", json::array({{{"id", "k"}, {"v", "local"}}}), WriteMode::kUpsert);
  ASSERT_OK(w);
  EXPECT_GT(w->version, ahead);
  auto d = records().Delete("db", "t", json::array({"k"}));
  ASSERT_OK(d);
  EXPECT_GT(d->version, w->version);
}

// C8, D7: a peer apply that resolved its entries before a marker arrived must not commit a row
// the marker retires after the purge has passed.
TEST_F(RecordStoreTest, C8_ApplyRacingAMarkerCannotLeaveADeadRow) {
  ASSERT_OK(catalog().ApplyPeerTable({"db", "t", 1000, "id", {}, false}));
  faults_.Set(fault_points::kApplyBeforeLock, FaultAction::Block().OnNth(1));
  auto apply = std::async(std::launch::async, [&] {
    return Apply({Put("t", "old", 10, "p", 500, {{"id", "old"}})});
  });
  ASSERT_TRUE(faults_.WaitUntilBlocked(fault_points::kApplyBeforeLock, absl::Seconds(30)));
  auto r = records().ApplyPeerDrop("db", "t", 800);  // keeps t; row generation 500 is dead
  ASSERT_OK(r);
  EXPECT_EQ(*r, PeerDropResult::kKept);
  faults_.Release(fault_points::kApplyBeforeLock);
  auto s = apply.get();
  ASSERT_OK(s);
  EXPECT_EQ(s->dead_generation, 1u);
  EXPECT_TRUE(ById("t", json::array({"old"})).empty());
}

// C15: a peer row whose new field makes the apply add an attribute, while a marker of
// another of its fields lands between the apply's resolution and that add. The definition
// the add returns holds the marker, and is current when checked under the locks, so the
// apply goes on with it; the row is stripped by it before it is stored (else the stored body
// keeps a value older than the marker, unlike every other node's).
TEST_F(RecordStoreTest, C15_AMarkerLandingWhileAnApplyAddsAttributesStripsItsRow) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"y"})));
  const Hlc gen = Live("db", "t")->created_time();
  auto release_all = absl::MakeCleanup([&] { faults_.ClearAll(); });
  faults_.Set(fault_points::kApplyBeforeAttributes, FaultAction::Block().OnNth(1));
  auto apply = std::async(std::launch::async, [&] {
    return Apply({Put("t", "k", gen + 10, "p", gen, {{"id", "k"}, {"y", "old"}, {"z", "new"}})});
  });
  ASSERT_TRUE(faults_.WaitUntilBlocked(fault_points::kApplyBeforeAttributes, absl::Seconds(30)));
  ASSERT_OK(records().ApplyPeerAttributeDrop("db", "t", "y", gen + 20));
  ASSERT_EVENTUALLY([&] { ASSERT_TRUE(Live("db", "t")->stripping().empty()); });
  faults_.Release(fault_points::kApplyBeforeAttributes);
  auto applied = apply.get();
  ASSERT_OK(applied);
  EXPECT_EQ(applied->applied, 1u);
  EXPECT_EQ(applied->values_stripped, 1u);
  std::vector<json> stored;
  ASSERT_OK(records().ScanStored(
      "db", "t", [&](const json&, const storage::v1::StoredRecord& row, const json&) {
        stored.push_back(json::parse(row.json()));
      }));
  EXPECT_EQ(stored, std::vector<json>({{{"id", "k"}, {"z", "new"}}}));
  ExpectIndexConsistent("t");
}

// Peer records with fields the local table lacks add them first, so the index stays exact.
TEST_F(RecordStoreTest, C4_PeerRecordFieldsBecomeAttributes) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"a"})));
  const Hlc gen = Live("db", "t")->created_time();
  ASSERT_OK(Apply({Put("t", 1, 100, "p", gen, {{"id", 1}, {"a", "x"}, {"peer_only", "y"}})}));
  const AttributeDef* added = Live("db", "t")->FindAttribute("peer_only");
  ASSERT_NE(added, nullptr);
  EXPECT_EQ(added->origin, v1::PEER_RECORD);  // provisional (decision 103)
  EXPECT_EQ(By("t", "peer_only", "y").size(), 1u);
  ExpectIndexConsistent("t");
}

// Decision 103: the attribute a peer's record made is decision 5's guess (Any, indexed). The
// first declared peer definition of it gives it its type and index, here and on every node
// (C4 would otherwise keep the guess here and the declared type on the peers for good); a
// provisional peer definition, or a later declared one, changes nothing; it stays so across
// a restart.
TEST_F(RecordStoreTest, Decision103_APeerDefinitionDeclaresAnAttributeAPeerRecordMade) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"a"})));
  const Hlc gen = Live("db", "t")->created_time();
  ASSERT_OK(Apply({Put("t", 1, 100, "p", gen, {{"id", 1}, {"a", "x"}, {"name", "y"}})}));
  ASSERT_EQ(Live("db", "t")->FindAttribute("name")->origin, v1::PEER_RECORD);
  const uint32_t id = Live("db", "t")->FindAttribute("name")->id;

  auto peer_def = [&](AttributeType type, bool indexed, bool provisional) {
    AttributeSpec name("name", type, indexed, gen + 5);
    name.provisional = provisional;
    return PeerTableDef{"db", "t", gen, "id", {AttributeSpec("a"), name}, true};
  };
  ASSERT_OK(catalog().ApplyPeerTable(peer_def(v1::ANY, true, /*provisional=*/true)));
  EXPECT_EQ(Live("db", "t")->FindAttribute("name")->origin, v1::PEER_RECORD);

  ASSERT_OK(catalog().ApplyPeerTable(peer_def(v1::STRING, false, /*provisional=*/false)));
  auto expect_declared = [&] {
    const AttributeDef* name = Live("db", "t")->FindAttribute("name");
    ASSERT_NE(name, nullptr);
    EXPECT_EQ(name->type, v1::STRING);
    EXPECT_FALSE(name->indexed);
    EXPECT_EQ(name->origin, v1::CLUSTER);
    EXPECT_EQ(name->id, id);                     // the same attribute: its values stay
    EXPECT_EQ(By("t", "name", "y").size(), 1u);  // by scan now
    ExpectIndexConsistent("t");                  // its index entries went with the setting
  };
  expect_declared();
  ASSERT_OK(catalog().ApplyPeerTable(peer_def(v1::ANY, true, /*provisional=*/true)));
  ASSERT_OK(catalog().ApplyPeerTable(peer_def(v1::INT, true, /*provisional=*/false)));  // C4
  expect_declared();
  // Local writes are checked against the declared type.
  EXPECT_THAT(Write("t", json::array({{{"id", 2}, {"a", "x"}, {"name", 3}}}), WriteMode::kInsert),
              HasErrorCode(ErrorCode::kTypeMismatch));
  ASSERT_OK(Reopen());
  expect_declared();
}

// Decision 103, the definitions that do not declare: one listing the attribute with a stamp
// older than a marker held here (the peer has not applied the drop yet: it lists the dropped
// attribute), and the peer's primary key (a table of the name created with another key).
TEST_F(RecordStoreTest, Decision103_DroppedCopiesAndPeerKeysDoNotDeclare) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"a"})));
  const Hlc gen = Live("db", "t")->created_time();
  ASSERT_OK(records().ApplyPeerAttributeDrop("db", "t", "y", gen + 20));
  ASSERT_EVENTUALLY([&] { ASSERT_TRUE(Live("db", "t")->stripping().empty()); });
  ASSERT_OK(Apply({Put("t", 1, gen + 30, "p", gen, {{"id", 1}, {"y", "new"}, {"key", "k1"}})}));
  ASSERT_EQ(Live("db", "t")->FindAttribute("y")->origin, v1::PEER_RECORD);
  ASSERT_EQ(Live("db", "t")->FindAttribute("key")->origin, v1::PEER_RECORD);
  ASSERT_OK(catalog().ApplyPeerTable({"db",
                                      "t",
                                      gen,
                                      "key",
                                      {AttributeSpec("key", v1::ID, true, gen + 25),
                                       AttributeSpec("y", v1::STRING, false, gen + 5)},
                                      true}));
  EXPECT_EQ(Live("db", "t")->FindAttribute("y")->origin, v1::PEER_RECORD);
  EXPECT_EQ(Live("db", "t")->FindAttribute("key")->origin, v1::PEER_RECORD);
  EXPECT_EQ(Live("db", "t")->FindAttribute("key")->type, v1::ANY);
  ASSERT_OK(catalog().ApplyPeerTable(
      {"db", "t", gen, "id", {AttributeSpec("y", v1::STRING, false, gen + 25)}, true}));
  EXPECT_EQ(Live("db", "t")->FindAttribute("y")->origin, v1::CLUSTER);
  EXPECT_EQ(Live("db", "t")->FindAttribute("y")->type, v1::STRING);
  ExpectIndexConsistent("t");
}

}  // namespace
}  // namespace cairn::catalog
