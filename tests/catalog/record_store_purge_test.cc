// RecordStore::PurgeRowsBefore: the C8 purge of rows of dropped row generations (SPEC C8, C9,
// D5, D7; decision 103).
#include <future>
#include <map>

#include "absl/cleanup/cleanup.h"
#include "common/fault_points.h"
#include "storage/value_codec.h"
#include "tests/catalog/record_store_fixture.h"

namespace cairn::catalog {
namespace {

using nlohmann::json;
using storage::v1::ChangeEntry;

// C8, D7: a peer apply that holds its keys and schema lock, with a row of an older row
// generation not yet committed, when a marker that keeps the table arrives. The marker's purge
// decision is taken under the exclusive schema lock, after that apply commits, so it sees the
// row and purges it; decided before the lock, it would miss it and the dead row would live on.
TEST_F(RecordStoreTest, C8_MarkerDecidesItsPurgeAfterInFlightAppliesCommit) {
  ASSERT_OK(catalog().ApplyPeerTable({"db", "t", 1000, "id", {{"v", v1::ANY, true}}, false}));
  std::future<absl::StatusOr<ApplyStats>> apply;
  std::future<absl::StatusOr<PeerDropResult>> drop;
  // Declared after the futures, so it runs first: a failed ASSERT releases the parked threads
  // instead of waiting for them for ever.
  auto release_all = absl::MakeCleanup([&] { faults_.ClearAll(); });
  faults_.Set(fault_points::kApplyLocked, FaultAction::Block().OnNth(1));
  apply = std::async(std::launch::async, [&] {
    return Apply({Put("t", "old", 10, "p", 500, {{"id", "old"}, {"v", "relayed"}})});
  });
  ASSERT_TRUE(faults_.WaitUntilBlocked(fault_points::kApplyLocked, absl::Seconds(30)));
  // The marker reaches the fence (the apply holds the schema lock shared) and waits there.
  faults_.Set(fault_points::kSchemaBeforeFence, FaultAction::Block().OnNth(1));
  drop = std::async(std::launch::async, [&] {
    return records().ApplyPeerDrop("db", "t", 800);  // keeps t (1000); row generation 500 dies
  });
  ASSERT_TRUE(faults_.WaitUntilBlocked(fault_points::kSchemaBeforeFence, absl::Seconds(30)));
  faults_.Release(fault_points::kApplyLocked);
  auto applied = apply.get();
  ASSERT_OK(applied);
  EXPECT_EQ(applied->applied, 1u);
  faults_.Release(fault_points::kSchemaBeforeFence);
  auto r = drop.get();
  ASSERT_OK(r);
  EXPECT_EQ(*r, PeerDropResult::kKept);
  EXPECT_TRUE(ById("t", json::array({"old"})).empty());
  EXPECT_TRUE(By("t", "v", "relayed").empty());
  EXPECT_EQ(Count("t"), 0u);
  ExpectIndexConsistent("t");
  ASSERT_OK(Reopen());  // and nothing brings it back
  EXPECT_TRUE(ById("t", json::array({"old"})).empty());
}

// Decision 103 with C8: a marker's purge puts a shadow row back (its newer row of a dead
// generation goes) while a peer declares one of the row's attributes not indexed. The purge
// indexes the restored row by the definition of now, held until its batch commits.
TEST_F(RecordStoreTest, Decision103_APurgeRestoresShadowsByTheDefinitionOfNow) {
  ASSERT_OK(catalog().ApplyPeerTable({"db", "t", 1000, "id", {}, false}));
  ASSERT_OK(Apply({Put("t", "k", 10, "p", 1000, {{"id", "k"}, {"y", "kept"}})}));
  ASSERT_OK(Apply({Put("t", "k", 11, "p", 500, {{"id", "k"}, {"y", "relayed"}})}));  // shadows it
  ASSERT_EQ(Live("db", "t")->FindAttribute("y")->origin, v1::PEER_RECORD);
  auto release_all = absl::MakeCleanup([&] { faults_.ClearAll(); });
  faults_.Set(fault_points::kRefreshBeforeLock, FaultAction::Block().OnNth(1));
  auto drop = std::async(std::launch::async, [&] {
    return records().ApplyPeerDrop("db", "t", 800);  // keeps t (1000); row generation 500 dies
  });
  ASSERT_TRUE(faults_.WaitUntilBlocked(fault_points::kRefreshBeforeLock, absl::Seconds(30)));
  ASSERT_OK(catalog().ApplyPeerTable(
      {"db", "t", 1000, "id", {AttributeSpec("y", v1::STRING, false, 1000)}, false}));
  faults_.Release(fault_points::kRefreshBeforeLock);
  auto r = drop.get();
  ASSERT_OK(r);
  EXPECT_EQ(*r, PeerDropResult::kKept);
  EXPECT_EQ(ById("t", json::array({"k"})), std::vector<json>({{{"id", "k"}, {"y", "kept"}}}));
  EXPECT_FALSE(Live("db", "t")->FindAttribute("y")->indexed);
  ExpectIndexConsistent("t");
}

// D7: every stored row keeps its row generation, the created_time of the generation it was
// written to at its origin, whichever local generation holds it; log entries carry it for
// relay. A row dies with its row generation (a marker newer than it), and one newer than the
// marker survives it, though both live in the same local generation.
TEST_F(RecordStoreTest, D7_RowsKeepTheirRowGenerationAndDieWithIt) {
  ASSERT_OK(catalog().ApplyPeerTable({"db", "t", 1000, "id", {}, false}));
  TableRef def = Live("db", "t");
  ASSERT_OK(Write("t", json::array({{{"id", "local"}}}), WriteMode::kInsert));
  ASSERT_OK(Apply({Put("t", "older", 10, "p", 500, {{"id", "older"}}),      // a relayed old copy
                   Put("t", "newer", 11, "p", 2000, {{"id", "newer"}})}));  // a later recreate
  auto stored_generation = [&](const std::string& id) -> Hlc {
    std::string key;
    EXPECT_OK(storage::AppendPrimaryKey(id, &key));
    std::string value;
    bool found = false;
    EXPECT_OK(node_->engine->Get(storage::Cf::kRecords,
                                 storage::RecordKey(def->generation_id(), key), &value, &found));
    storage::v1::StoredRecord rec;
    return found && rec.ParseFromString(value) ? rec.row_generation() : 0;
  };
  EXPECT_EQ(stored_generation("local"), 1000u);
  EXPECT_EQ(stored_generation("older"), 500u);
  EXPECT_EQ(stored_generation("newer"), 2000u);
  std::map<Hlc, int> logged;  // row generation -> entries, as a relay sends them
  for (const ChangeEntry& e : Log()) logged[e.row_generation()]++;
  EXPECT_EQ(logged, (std::map<Hlc, int>{{500, 1}, {1000, 1}, {2000, 1}}));
  // A marker between 500 and 1000 keeps the local generation: the row of 500 dies with its
  // generation, the others survive.
  auto r = records().ApplyPeerDrop("db", "t", 800);
  ASSERT_OK(r);
  EXPECT_EQ(*r, PeerDropResult::kKept);
  EXPECT_EQ(stored_generation("older"), 0u);
  EXPECT_EQ(stored_generation("local"), 1000u);
  EXPECT_EQ(stored_generation("newer"), 2000u);
  // And a relayed copy of a dead row generation is refused from now on (C6).
  auto again = Apply({Put("t", "older", 12, "p", 500, {{"id", "older"}})});
  ASSERT_OK(again);
  EXPECT_EQ(again->dead_generation, 1u);
  EXPECT_EQ(Count("t"), 2u);
}

// C8, D7: a marker purges, from a generation it keeps, the rows of older row generations.
TEST_F(RecordStoreTest, C8_MarkerPurgesOlderRowGenerationsFromAKeptTable) {
  ASSERT_OK(catalog().ApplyPeerTable({"db", "t", 1000, "id", {{"v", v1::ANY, true}}, false}));
  ASSERT_OK(Apply({Put("t", "old", 10, "p", 500, {{"id", "old"}, {"v", "relayed"}}),
                   Put("t", "new", 11, "p", 1000, {{"id", "new"}, {"v", "ours"}})}));
  EXPECT_EQ(Count("t"), 2u);
  auto r = records().ApplyPeerDrop("db", "t", 800);
  ASSERT_OK(r);
  EXPECT_EQ(*r, PeerDropResult::kKept);
  EXPECT_TRUE(ById("t", json::array({"old"})).empty());
  EXPECT_EQ(ById("t", json::array({"new"})).size(), 1u);
  EXPECT_EQ(Count("t"), 1u);
  ExpectIndexConsistent("t");
}

// C8, D5, D7, found by the random schedule's model (a seed of 2026-12-01): a relayed row of
// an older generation, applied before its marker, beat a row of the kept generation under
// last-writer-wins; the marker's purge then removed the key outright, and the write it had
// replaced (acknowledged, and nowhere else) was gone from every node. The purge now puts back
// the newest replaced row whose generation the marker leaves alive, and logs it for the peers.
TEST_F(RecordStoreTest, C8_APurgedRowGivesBackTheLiveRowItReplaced) {
  ASSERT_OK(catalog().ApplyPeerTable({"db", "t", 1000, "id", {{"v", v1::ANY, true}}, false}));
  // k: a write of the kept generation, then a later one of a generation about to die.
  // d: deleted in the kept generation, then written by the dying one.
  // m: replaced twice, by generation 900 (which survives marker 800, not 950) and by 500.
  // x: only ever written by the dying generation.
  ASSERT_OK(Apply({Put("t", "k", 10, "p", 1000, {{"id", "k"}, {"v", "live"}}),
                   Put("t", "d", 11, "p", 1000, {{"id", "d"}, {"v", "live"}}),
                   Del("t", "d", 12, "p", 1000),
                   Put("t", "m", 13, "p", 1000, {{"id", "m"}, {"v", "a"}})}));
  ASSERT_OK(Apply({Put("t", "k", 20, "q", 500, {{"id", "k"}, {"v", "dead"}}),
                   Put("t", "d", 21, "q", 500, {{"id", "d"}, {"v", "dead"}}),
                   Put("t", "m", 22, "r", 900, {{"id", "m"}, {"v", "b"}}),
                   Put("t", "m", 23, "q", 500, {{"id", "m"}, {"v", "c"}}),
                   Put("t", "x", 24, "q", 500, {{"id", "x"}, {"v", "dead"}})}));
  EXPECT_EQ(ById("t", json::array({"k"}))[0]["v"], "dead");  // LWW, until the marker
  const size_t logged = Log().size();

  auto r = records().ApplyPeerDrop("db", "t", 800);  // keeps t (1000); 500 dies, 900 lives
  ASSERT_OK(r);
  EXPECT_EQ(*r, PeerDropResult::kKept);
  auto value = [&](const char* id) -> json {
    std::vector<json> got = ById("t", json::array({id}));
    return got.empty() ? json() : got[0]["v"];
  };
  EXPECT_EQ(value("k"), "live");
  EXPECT_EQ(value("d"), json()) << "the delete it replaced stands";
  EXPECT_EQ(value("m"), "b") << "the newest surviving row it replaced";
  EXPECT_EQ(value("x"), json());
  EXPECT_EQ(Count("t"), 2u);
  ExpectIndexConsistent("t");
  // The rows put back go to the peers again, under their own stamps.
  std::map<std::string, std::pair<Hlc, std::string>> relogged;
  const std::vector<ChangeEntry> log = Log();
  for (size_t i = logged; i < log.size(); ++i) {
    json pk;
    ASSERT_TRUE(storage::DecodePrimaryKey(log[i].key(), &pk));
    relogged[pk.get<std::string>()] = {log[i].version(), log[i].origin()};
  }
  EXPECT_EQ(relogged, (std::map<std::string, std::pair<Hlc, std::string>>{
                          {"k", {10, "p"}}, {"d", {12, "p"}}, {"m", {22, "r"}}}));

  // A later marker retires 900 as well, and m's first row comes back.
  ASSERT_OK(records().ApplyPeerDrop("db", "t", 950));
  EXPECT_EQ(value("m"), "a");
  EXPECT_EQ(value("k"), "live");
  ExpectIndexConsistent("t");

  // Shadows go with their generation (C9).
  ASSERT_OK(Apply({Put("t", "k", 30, "q", 960, {{"id", "k"}, {"v", "kept aside"}})}));
  const uint64_t generation = Live("db", "t")->generation_id();
  auto shadows = [&] {
    int n = 0;
    auto it = node_->engine->NewIterator(storage::Cf::kMeta);
    const std::string prefix = storage::ShadowKey(generation, "");
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) ++n;
    return n;
  };
  EXPECT_EQ(shadows(), 1);
  ASSERT_OK(catalog().DropTable("db", "t"));
  EXPECT_EQ(shadows(), 0);
}

// C9, C8: a drop cancels a running purge of older row generations; the marker itself stands.
TEST_F(RecordStoreTest, C9_DropCancelsARunningPurge) {
  ASSERT_OK(catalog().ApplyPeerTable({"db", "t", 1000, "id", {}, false}));
  std::vector<ChangeEntry> old_rows;
  for (int i = 0; i < 600; ++i) old_rows.push_back(Put("t", i, 10 + i, "p", 500, {{"id", i}}));
  ASSERT_OK(Apply(old_rows));
  TableRef def = Live("db", "t");
  faults_.Set(fault_points::kScanRow, FaultAction::Block().OnNth(3));
  auto marker =
      std::async(std::launch::async, [&] { return records().ApplyPeerDrop("db", "t", 800); });
  ASSERT_TRUE(faults_.WaitUntilBlocked(fault_points::kScanRow, absl::Seconds(30)));
  auto drop = std::async(std::launch::async, [&] { return catalog().DropTable("db", "t"); });
  WaitUntilDropping(def);
  faults_.Release(fault_points::kScanRow);
  auto kept = marker.get();
  ASSERT_OK(kept);
  EXPECT_EQ(*kept, PeerDropResult::kKept);
  ASSERT_OK(drop.get());
  EXPECT_EQ(KeysOfGeneration(def->generation_id()), 0);
  EXPECT_EQ(StoredMarker("db", "t"), snap()->MarkerFor("db", "t"));
  std::string purge;
  bool found = true;
  ASSERT_OK(node_->engine->Get(storage::Cf::kMeta, storage::PurgeKey(def->generation_id()), &purge,
                               &found));
  EXPECT_FALSE(found);
}

// D5: tombstone age and log age are measured on one clock, the local time a row was logged
// here, and no tombstone is purged while a retained log entry names it. A peer's delete stamped
// long ago but applied now is young here; a local delete older than the retention stays until
// its log entry is trimmed.
TEST_F(RecordStoreTest, D5_NoTombstoneIsPurgedWhileALogEntryNamesIt) {
  testing::ManualClock clock;
  options_.clock = &clock;
  ASSERT_OK(Reopen());
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  const Hlc gen = Live("db", "t")->created_time();
  const absl::Duration retention = absl::Hours(24 * 7);  // the default
  ASSERT_OK(Write("t", json::array({{{"id", "local"}}}), WriteMode::kInsert));
  ASSERT_OK(records().Delete("db", "t", json::array({"local"})));
  const Hlc long_ago =
      HybridClock::Make(absl::ToUnixMillis(clock.Now() - 2 * retention), 0);  // a slow clock
  ASSERT_OK(Apply({Del("t", "peer", long_ago, "p", gen)}));
  auto tombstone = [&](const std::string& id) {
    std::string key;
    EXPECT_OK(storage::AppendPrimaryKey(id, &key));
    std::string value;
    bool found = false;
    EXPECT_OK(node_->engine->Get(storage::Cf::kRecords,
                                 storage::RecordKey(Live("db", "t")->generation_id(), key), &value,
                                 &found));
    return found;
  };
  auto compact = [&] {
    rocksdb::CompactRangeOptions o;
    o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    ASSERT_TRUE(node_->engine->db()
                    ->CompactRange(o, node_->engine->cf(storage::Cf::kRecords), nullptr, nullptr)
                    .ok());
  };
  compact();
  EXPECT_TRUE(tombstone("peer")) << "purged by the age of a peer's version";
  EXPECT_TRUE(tombstone("local"));
  clock.Advance(retention + absl::Hours(1));
  compact();
  EXPECT_TRUE(tombstone("peer")) << "purged while its log entry is retained";
  EXPECT_TRUE(tombstone("local")) << "purged while its log entry is retained";
  // The log's own retention (same age) trims the entries; then the tombstones may go.
  const uint64_t oldest_ms = static_cast<uint64_t>(absl::ToUnixMillis(clock.Now() - retention));
  auto trimmed = node_->log->Trim("db", UINT64_MAX, oldest_ms);
  ASSERT_OK(trimmed);
  EXPECT_EQ(*trimmed, 3u);
  compact();
  EXPECT_FALSE(tombstone("peer"));
  EXPECT_FALSE(tombstone("local"));
}

}  // namespace
}  // namespace cairn::catalog
