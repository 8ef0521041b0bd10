// Catalog rules C1-C14 at the catalog level: create, peer definitions, drops, recovery.
#include "catalog/catalog.h"

#include <algorithm>
#include <atomic>
#include <future>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/fault_points.h"
#include "tests/catalog/catalog_fixture.h"

namespace cairn::catalog {
namespace {

using ::cairn::testing::HasErrorCode;
using nlohmann::json;

class CatalogTest : public CatalogFixture {};

std::vector<std::string> AttributeNames(const TableDef& def) {
  std::vector<std::string> out;
  for (const auto& a : def.attributes()) out.push_back(a.name);
  return out;
}

TEST_F(CatalogTest, CreateTablePublishesTheWholeDefinition) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"name", "tag"})));
  TableRef t = Live("db", "t");
  ASSERT_NE(t, nullptr);
  EXPECT_THAT(AttributeNames(*t), ::testing::ElementsAre("id", "name", "tag"));
  EXPECT_TRUE(t->schema_defined());
  EXPECT_TRUE(t->replicate());
  EXPECT_EQ(t->origin(), v1::LOCAL);
  EXPECT_NE(snap()->FindDatabase("db"), nullptr);  // C14: created with its first table
  ASSERT_OK(Reopen());
  t = Live("db", "t");
  ASSERT_NE(t, nullptr);
  EXPECT_THAT(AttributeNames(*t), ::testing::ElementsAre("id", "name", "tag"));
}

TEST_F(CatalogTest, DynamicTablesHaveTimeAttributes) {  // D2
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "dyn")));
  TableRef t = Live("db", "dyn");
  ASSERT_NE(t, nullptr);
  EXPECT_FALSE(t->schema_defined());
  EXPECT_THAT(AttributeNames(*t),
              ::testing::ElementsAre("id", "__createdtime__", "__updatedtime__"));
}

TEST_F(CatalogTest, C3_CreateOfALiveNameIsTableExists) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t")));
  EXPECT_THAT(catalog().CreateTable(Spec("db", "t")), HasErrorCode(ErrorCode::kTableExists));
}

TEST_F(CatalogTest, C13_BadNamesAreInvalidName) {
  for (const char* bad : {"", "_sys", "has space", "sl/ash", "dot.ted", "\x01",
                          "x2345678901234567890123456789012345678901234567890123456789012345"}) {
    EXPECT_THAT(catalog().CreateTable(Spec(bad, "t")), HasErrorCode(ErrorCode::kInvalidName))
        << bad;
    EXPECT_THAT(catalog().CreateTable(Spec("db", bad)), HasErrorCode(ErrorCode::kInvalidName))
        << bad;
    EXPECT_THAT(catalog().CreateDatabase(bad), HasErrorCode(ErrorCode::kInvalidName)) << bad;
  }
  for (const char* good : {"a", "A-b_9", "0"}) {
    EXPECT_OK(catalog().CreateTable(Spec("db", good))) << good;
  }
  for (std::string bad :
       {std::string(), std::string("a/b"), std::string("tab\tbed"), std::string(251, 'x'),
        std::string("\xff\xfe"), std::string("\xc2\x85")}) {
    EXPECT_THAT(catalog().CreateTable(Spec("db", "attrs", {bad})),
                HasErrorCode(ErrorCode::kInvalidName));
  }
  EXPECT_OK(catalog().CreateTable(Spec("db", "attrs", {"naïve name", std::string(250, 'y')})));
  auto s = catalog().CreateTable(Spec("db", "has space"));
  EXPECT_NE(s.status().message().find("'has space'"), std::string::npos) << s.status();
}

TEST_F(CatalogTest, DuplicateAttributeIsBadRequest) {
  EXPECT_THAT(catalog().CreateTable(Spec("db", "t", {"a", "a"})),
              HasErrorCode(ErrorCode::kBadRequest));
  EXPECT_EQ(Live("db", "t"), nullptr);
}

// C1: a reader that snapshots in a tight loop while creates run never sees a table with
// fewer attributes than it was created with.
TEST_F(CatalogTest, C1_ConcurrentReaderNeverSeesAPartialTable) {
  constexpr int kTables = 150;
  std::atomic<bool> done{false};
  std::atomic<int> violations{0}, tables_seen{0};
  std::thread reader([&] {
    // One last pass after the creates finished, so the reader looks at least once even when
    // a loaded machine never schedules it during them.
    for (bool last = false; !last;) {
      last = done.load();
      SnapshotRef s = snap();
      const DatabaseDef* d = s->FindDatabase("db");
      if (d == nullptr) continue;
      for (const auto& [name, def] : d->tables) {
        int i = std::stoi(name.substr(1));
        if (def->attributes().size() != static_cast<size_t>(2 + i % 9)) ++violations;
        ++tables_seen;
      }
    }
  });
  for (int i = 0; i < kTables; ++i) {
    std::vector<std::string> attrs;
    for (int a = 0; a <= i % 9; ++a) attrs.push_back("a" + std::to_string(a));
    ASSERT_OK(catalog().CreateTable(Spec("db", "t" + std::to_string(i), attrs)));
  }
  done = true;
  reader.join();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_GT(tables_seen.load(), 0);
}

// Keys in the catalog family.
int CatalogKeys(storage::Engine* engine) {
  int n = 0;
  auto it = engine->NewIterator(storage::Cf::kCatalog);
  for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
  return n;
}

// C1 with the create parked mid-way: before its batch commits nothing of it is visible or
// stored; after the commit but before the publish it is durable yet still invisible.
TEST_F(CatalogTest, C1_CreateBlockedMidWayIsInvisible) {
  for (const char* point : {fault_points::kCreateBeforeCommit, fault_points::kCreateAfterCommit}) {
    SCOPED_TRACE(point);
    const int keys_before = CatalogKeys(node_->engine.get());
    const std::string table =
        std::string("t_") + (point == fault_points::kCreateBeforeCommit ? "before" : "after");
    faults_.Set(point, FaultAction::Block());
    auto create = std::async(std::launch::async, [&] {
      return catalog().CreateTable(Spec("db", table, {"x", "y"}));
    });
    ASSERT_TRUE(faults_.WaitUntilBlocked(point, absl::Seconds(30)));
    for (int i = 0; i < 100; ++i) {
      EXPECT_FALSE(snap()->FindTable("db", table).ok());
    }
    // Stored: nothing before the commit; the whole batch (database row on the first create,
    // primary row, three attribute rows) after it.
    const int added = CatalogKeys(node_->engine.get()) - keys_before;
    if (point == fault_points::kCreateBeforeCommit) {
      EXPECT_EQ(added, 0);
    } else {
      EXPECT_EQ(added, 4);  // "db" exists by now: primary row + id, x, y
    }
    faults_.Release(point);
    auto created = create.get();
    ASSERT_OK(created);
    TableRef t = Live("db", table);
    ASSERT_NE(t, nullptr);
    EXPECT_THAT(AttributeNames(*t), ::testing::ElementsAre("id", "x", "y"));
  }
}

// C2: a create crashed at each of its fault points leaves the whole table or nothing.
class CreateCrashTest : public CatalogFixture,
                        public ::testing::WithParamInterface<std::pair<const char*, bool>> {};

TEST_P(CreateCrashTest, C2_CrashedCreateLeavesAllOrNothing) {
  const auto [point, survives] = GetParam();
  EXPECT_EQ(CrashAt(point,
                    [](testing::LocalNode& n) {
                      n.catalog->CreateTable(Spec("db", "t", {"a", "b", "c"})).IgnoreError();
                    }),
            kInjectedCrashExitCode);
  ASSERT_OK(Reopen());
  TableRef t = Live("db", "t");
  if (survives) {
    ASSERT_NE(t, nullptr);
    EXPECT_THAT(AttributeNames(*t), ::testing::ElementsAre("id", "a", "b", "c"));
  } else {
    EXPECT_EQ(t, nullptr);
    EXPECT_EQ(KeysOfGeneration(1), 0);
    // And the name is free: a create now succeeds whole.
    ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"a"})));
  }
}

std::string PointName(const std::string& point) {
  std::string out;
  for (char c : point) out.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return out;
}

INSTANTIATE_TEST_SUITE_P(AtEachPoint, CreateCrashTest,
                         ::testing::Values(std::make_pair(fault_points::kCreateBeforeCommit, false),
                                           std::make_pair(fault_points::kCreateAfterCommit, true)),
                         [](const auto& info) { return PointName(info.param.first); });

// C3: a local recreate is stamped after every drop of its name this node knows, even a drop
// stamped in the future by a peer's faster clock.
TEST_F(CatalogTest, C3_LocalCreateIsNewerThanEveryKnownDrop) {
  const Hlc future = HybridClock::Make(absl::ToUnixMillis(absl::Now() + absl::Hours(1)), 0);
  ASSERT_OK(catalog().ApplyPeerDrop("db", "t", future));
  auto t = catalog().CreateTable(Spec("db", "t"));
  ASSERT_OK(t);
  EXPECT_GT((*t)->created_time(), future);
}

// Generation ids whose low byte is 0xFF (255, 511, ...) reload whole: attribute rows are found
// by a prefix scan whose bound must not wrap.
TEST_F(CatalogTest, C1_EveryGenerationReloadsWithAllItsAttributes) {
  for (int i = 0; i < 260; ++i) {
    ASSERT_OK(catalog().CreateTable(Spec("db", "t" + std::to_string(i), {"a", "b"})));
  }
  ASSERT_EQ(Live("db", "t254")->generation_id(), 255u);
  ASSERT_OK(Reopen());
  for (int i = 0; i < 260; ++i) {
    TableRef t = Live("db", "t" + std::to_string(i));
    ASSERT_NE(t, nullptr);
    EXPECT_THAT(AttributeNames(*t), ::testing::ElementsAre("id", "a", "b")) << t->generation_id();
  }
}

TEST_F(CatalogTest, PrimaryKeyIsAStringOrAnInteger) {  // D1
  TableSpec spec = Spec("db", "t");
  spec.attributes->push_back({"id", v1::FLOAT, true});
  EXPECT_THAT(catalog().CreateTable(spec), HasErrorCode(ErrorCode::kBadRequest));
  spec.attributes->back().type = v1::INT;
  auto t = catalog().CreateTable(spec);
  ASSERT_OK(t);
  EXPECT_EQ((*t)->FindAttribute("id")->type, v1::INT);
}

TEST_F(CatalogTest, GenerationIdsAreNeverReused) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t")));
  uint64_t first = Live("db", "t")->generation_id();
  ASSERT_OK(catalog().DropTable("db", "t"));
  ASSERT_OK(Reopen());
  ASSERT_OK(catalog().CreateTable(Spec("db", "t")));
  EXPECT_GT(Live("db", "t")->generation_id(), first);
}

// ---- Attribute markers (C15) and their table's marker.

// Issue 41, point 13: markers of dropped attributes never went: a table whose 300 attributes
// were dropped kept 300 markers after its own drop, in storage, in every snapshot and in every
// DB_SCHEMA of its database. A table marker subsumes the attribute markers at or before it
// (internal::SubsumedAttributeMarkers): they go in its batch, a late one is not recorded, and
// a load removes those an older binary kept. On the parent commit the first count after the
// drop is 300.
TEST_F(CatalogTest, Issue41_AttributeMarkersGoWithTheirTablesMarker) {
  auto stored = [&] {
    size_t n = 0;
    const std::string prefix(storage::kAttributeMarkerPrefix);
    auto it = node_->engine->NewIterator(storage::Cf::kCatalog, nullptr,
                                         storage::PrefixSuccessor(prefix));
    for (it->Seek(prefix); it->Valid(); it->Next()) ++n;
    return n;
  };
  ASSERT_OK(catalog().CreateTable(Spec("db", "t")));
  for (int i = 0; i < 300; ++i) {
    const std::string name = absl::StrCat("a", i);
    ASSERT_OK(catalog().CreateAttribute("db", "t", AttributeSpec{name, v1::STRING, true}));
    ASSERT_OK(records().DropAttribute("db", "t", name));
  }
  ASSERT_EQ(stored(), 300u);
  ASSERT_EQ(snap()->AttributeMarkersFor("db", "t").size(), 300u);
  ASSERT_OK(catalog().DropTable("db", "t"));
  const Hlc dropped = snap()->MarkerFor("db", "t");
  ASSERT_NE(dropped, 0u);
  EXPECT_EQ(stored(), 0u);
  EXPECT_TRUE(snap()->AttributeMarkersFor("db", "t").empty());
  // A peer's marker at or before the table's is not recorded; a newer one is.
  ASSERT_OK(catalog().ApplyPeerAttributeMarker("db", "t", "late", dropped));
  EXPECT_EQ(stored(), 0u);
  ASSERT_OK(catalog().ApplyPeerAttributeMarker("db", "t", "newer", dropped + 1));
  EXPECT_EQ(snap()->AttributeMarkerFor("db", "t", "newer"), dropped + 1);

  // A kept generation (C8): a peer's drop older than it subsumes "newer" and keeps the table
  // and its own attribute's marker. The wall clock passes the first drop's millisecond first,
  // so that the table is created more than two stamps after it.
  ASSERT_EVENTUALLY([&] {
    ASSERT_GT(static_cast<uint64_t>(absl::ToUnixMillis(absl::Now())),
              HybridClock::PhysicalMs(dropped) + 1);
  });
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"b"})));
  ASSERT_OK(records().DropAttribute("db", "t", "b"));
  const Hlc b_marker = snap()->AttributeMarkerFor("db", "t", "b");
  ASSERT_GT(Live("db", "t")->created_time(), dropped + 2);
  auto kept = catalog().ApplyPeerDrop("db", "t", dropped + 2);
  ASSERT_OK(kept);
  EXPECT_EQ(*kept, PeerDropResult::kKept);
  EXPECT_EQ(snap()->AttributeMarkerFor("db", "t", "newer"), 0u);
  EXPECT_EQ(snap()->AttributeMarkerFor("db", "t", "b"), b_marker);
  EXPECT_EQ(Live("db", "t")->attribute_markers().count("newer"), 0u);
  EXPECT_EQ(stored(), 1u);

  // What an older binary kept: removed at the next load.
  rocksdb::WriteBatch batch;
  v1::AttributeMarker old;
  old.set_dropped_time(dropped);
  ASSERT_TRUE(batch
                  .Put(node_->engine->cf(storage::Cf::kCatalog),
                       storage::AttributeMarkerKey("db", "t", "old"), old.SerializeAsString())
                  .ok());
  ASSERT_OK(node_->engine->Write(&batch));
  ASSERT_OK(Reopen());
  EXPECT_EQ(stored(), 1u);
  EXPECT_EQ(snap()->AttributeMarkersFor("db", "t").size(), 1u);
  EXPECT_EQ(snap()->AttributeMarkerFor("db", "t", "b"), b_marker);
}

// ---- Peer definitions (C4, C5, C6).

PeerTableDef Peer(const std::string& table, Hlc created, std::vector<AttributeSpec> attrs,
                  bool schema_defined = true) {
  PeerTableDef d;
  d.database = "db";
  d.table = table;
  d.created_time = created;
  d.primary_key = "id";
  d.attributes = std::move(attrs);
  d.schema_defined = schema_defined;
  return d;
}

TEST_F(CatalogTest, C4_PartialPeerSnapshotKeepsLocalAttributesAndIndexes) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"name", "tag"})));
  ASSERT_OK(Upsert("db", "t", json::array({{{"id", 1}, {"name", "n1"}, {"tag", "red"}}})));
  const Hlc created = Live("db", "t")->created_time();
  // A partial snapshot: only the primary key.
  ASSERT_OK(catalog().ApplyPeerTable(Peer("t", created, {{"id", v1::ID, true}})));
  EXPECT_THAT(AttributeNames(*Live("db", "t")), ::testing::ElementsAre("id", "name", "tag"));
  EXPECT_EQ(Search("db", "t", "tag", "red").size(), 1u);  // the index survived
  // A peer-only attribute is added; differing types and index flags are ignored.
  ASSERT_OK(catalog().ApplyPeerTable(Peer(
      "t", created, {{"id", v1::ID, true}, {"extra", v1::INT, false}, {"name", v1::INT, false}},
      /*schema_defined=*/false)));
  TableRef t = Live("db", "t");
  EXPECT_THAT(AttributeNames(*t), ::testing::ElementsAre("id", "name", "tag", "extra"));
  EXPECT_EQ(t->FindAttribute("name")->type, v1::STRING);
  EXPECT_TRUE(t->FindAttribute("name")->indexed);
  EXPECT_EQ(t->FindAttribute("extra")->origin, v1::CLUSTER);
  EXPECT_TRUE(t->schema_defined());  // never flips
  ASSERT_OK(Reopen());
  t = Live("db", "t");
  EXPECT_THAT(AttributeNames(*t), ::testing::ElementsAre("id", "name", "tag", "extra"));
  EXPECT_TRUE(t->schema_defined());
  EXPECT_EQ(Search("db", "t", "tag", "red").size(), 1u);
}

TEST_F(CatalogTest, C4_DynamicLocalStaysDynamic) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  ASSERT_OK(catalog().ApplyPeerTable(
      Peer("t", Live("db", "t")->created_time(), {{"id", v1::ID, true}}, true)));
  EXPECT_FALSE(Live("db", "t")->schema_defined());
}

TEST_F(CatalogTest, C4_ApplyingTheSameSnapshotTwiceChangesNothing) {  // R4
  auto def = Peer("t", 42, {{"id", v1::ID, true}, {"a", v1::STRING, true}});
  ASSERT_OK(catalog().ApplyPeerTable(def));
  const uint64_t version = snap()->version;
  ASSERT_OK(catalog().ApplyPeerTable(def));
  EXPECT_EQ(snap()->version, version);
}

TEST_F(CatalogTest, C5_PeerCreateKeepsThePeerStamp) {
  ASSERT_OK(catalog().ApplyPeerTable(Peer("stamped", 12345, {{"a", v1::STRING, true}})));
  ASSERT_OK(catalog().ApplyPeerTable(Peer("unstamped", 0, {{"a", v1::STRING, true}})));
  EXPECT_EQ(Live("db", "stamped")->created_time(), 12345u);
  EXPECT_EQ(Live("db", "stamped")->origin(), v1::CLUSTER);
  EXPECT_EQ(Live("db", "unstamped")->created_time(), 0u);  // never "now"
  ASSERT_OK(Reopen());
  EXPECT_EQ(Live("db", "unstamped")->created_time(), 0u);
}

TEST_F(CatalogTest, C6_DeadPeerGenerationIsRefused) {
  const Hlc dropped = HybridClock::Make(absl::ToUnixMillis(absl::Now()), 0);
  ASSERT_OK(catalog().ApplyPeerDrop("db", "t", dropped));
  EXPECT_THAT(catalog().ApplyPeerTable(Peer("t", dropped - 1, {})),
              HasErrorCode(ErrorCode::kTableGenerationDropped));
  EXPECT_EQ(Live("db", "t"), nullptr);
  // Unstamped (0) is older than any drop.
  EXPECT_THAT(catalog().ApplyPeerTable(Peer("t", 0, {})),
              HasErrorCode(ErrorCode::kTableGenerationDropped));
  // Equal survives.
  ASSERT_OK(catalog().ApplyPeerTable(Peer("t", dropped, {})));
  EXPECT_NE(Live("db", "t"), nullptr);
}

TEST_F(CatalogTest, C6_StaleDefinitionOfALiveNewerGenerationIsRefusedBeforeMerging) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  ASSERT_OK(catalog().DropTable("db", "t"));
  auto t = catalog().CreateTable(DynamicSpec("db", "t"));
  ASSERT_OK(t);
  const Hlc marker = snap()->MarkerFor("db", "t");
  ASSERT_GT(marker, 0u);
  EXPECT_THAT(catalog().ApplyPeerTable(Peer("t", marker - 1, {{"retired_only", v1::ANY, true}})),
              HasErrorCode(ErrorCode::kTableGenerationDropped));
  EXPECT_EQ(Live("db", "t")->FindAttribute("retired_only"), nullptr);
}

TEST_F(CatalogTest, C6_UnstampedPeerCreateIsStoredAtZeroAndRefusedAfterAnyDrop) {
  ASSERT_OK(catalog().ApplyPeerTable(Peer("t", 0, {})));
  EXPECT_EQ(Live("db", "t")->created_time(), 0u);
  // Any drop retires it: a peer drop at time 1 is newer than 0.
  auto r = catalog().ApplyPeerDrop("db", "t", 1);
  ASSERT_OK(r);
  EXPECT_EQ(*r, PeerDropResult::kDropped);
  EXPECT_THAT(catalog().ApplyPeerTable(Peer("t", 0, {})),
              HasErrorCode(ErrorCode::kTableGenerationDropped));
}

// ---- Drops (C7, C8, C9, C11, C14).

TEST_F(CatalogTest, C7_LocalDropStampsAfterCreatedTimeAndRecordsAMarker) {
  // A peer's generation stamped by a faster clock.
  const Hlc future = HybridClock::Make(absl::ToUnixMillis(absl::Now() + absl::Hours(1)), 0);
  ASSERT_OK(catalog().ApplyPeerTable(Peer("t", future, {})));
  auto dropped = catalog().DropTable("db", "t");
  ASSERT_OK(dropped);
  EXPECT_TRUE(dropped->timed);
  EXPECT_GT(dropped->dropped_time, future);
  EXPECT_EQ(StoredMarker("db", "t"), dropped->dropped_time);
  EXPECT_EQ(Live("db", "t"), nullptr);
  EXPECT_THAT(catalog().DropTable("db", "t"), HasErrorCode(ErrorCode::kTableNotFound));
}

TEST_F(CatalogTest, C7_UnreplicatedDropLeavesNoMarker) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t")));
  auto dropped = catalog().DropTable("db", "t", /*timed=*/false);
  ASSERT_OK(dropped);
  EXPECT_FALSE(dropped->timed);
  EXPECT_EQ(StoredMarker("db", "t"), 0u);
  EXPECT_EQ(snap()->MarkerFor("db", "t"), 0u);
}

TEST_F(CatalogTest, C8_PeerDropRetiresAnOlderGeneration) {
  ASSERT_OK(catalog().ApplyPeerTable(Peer("t", 100, {})));
  const uint64_t gen = Live("db", "t")->generation_id();
  auto r = catalog().ApplyPeerDrop("db", "t", 101);
  ASSERT_OK(r);
  EXPECT_EQ(*r, PeerDropResult::kDropped);
  EXPECT_EQ(Live("db", "t"), nullptr);
  EXPECT_EQ(StoredMarker("db", "t"), 101u);
  EXPECT_EQ(KeysOfGeneration(gen), 0);
}

TEST_F(CatalogTest, C8_PeerDropKeepsANewerGenerationButRecordsTheMarker) {
  ASSERT_OK(catalog().ApplyPeerTable(Peer("t", 200, {})));
  for (Hlc t : {Hlc{150}, Hlc{200}}) {  // older, and equal (equal survives)
    auto r = catalog().ApplyPeerDrop("db", "t", t);
    ASSERT_OK(r);
    EXPECT_EQ(*r, PeerDropResult::kKept);
    EXPECT_NE(Live("db", "t"), nullptr);
    EXPECT_EQ(StoredMarker("db", "t"), t);
  }
  // A marker never moves back.
  ASSERT_OK(catalog().ApplyPeerDrop("db", "t", 120));
  EXPECT_EQ(StoredMarker("db", "t"), 200u);
}

TEST_F(CatalogTest, C8_PeerDropOfAnAbsentTableRecordsTheMarker) {
  auto r = catalog().ApplyPeerDrop("db", "never", 77);
  ASSERT_OK(r);
  EXPECT_EQ(*r, PeerDropResult::kAbsent);
  EXPECT_EQ(StoredMarker("db", "never"), 77u);
  ASSERT_OK(Reopen());
  EXPECT_EQ(snap()->MarkerFor("db", "never"), 77u);
}

TEST_F(CatalogTest, C11_PeerDropKeepsANodeLocalTableButRecordsTheMarker) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "local", {}, /*replicate=*/false)));
  const Hlc after = HybridClock::Make(absl::ToUnixMillis(absl::Now() + absl::Hours(1)), 0);
  auto r = catalog().ApplyPeerDrop("db", "local", after);
  ASSERT_OK(r);
  EXPECT_EQ(*r, PeerDropResult::kKept);
  EXPECT_NE(Live("db", "local"), nullptr);
  EXPECT_EQ(StoredMarker("db", "local"), after);
}

TEST_F(CatalogTest, C11_NodeLocalDropIsUntimedAndKeepsAnEarlierMarker) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t")));
  auto first = catalog().DropTable("db", "t");  // replicated generation: timed
  ASSERT_OK(first);
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {}, /*replicate=*/false)));
  auto second = catalog().DropTable("db", "t");
  ASSERT_OK(second);
  EXPECT_FALSE(second->timed);
  EXPECT_EQ(StoredMarker("db", "t"), first->dropped_time);
}

TEST_F(CatalogTest, C11_PeerDefinitionDoesNotTouchANodeLocalTable) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "local", {"a"}, /*replicate=*/false)));
  ASSERT_OK(catalog().ApplyPeerTable(Peer("local", 1, {{"peer_attr", v1::ANY, true}})));
  TableRef t = Live("db", "local");
  EXPECT_FALSE(t->replicate());
  EXPECT_EQ(t->FindAttribute("peer_attr"), nullptr);
}

// C9: the drop waits for an in-flight write on its table, and refuses new ones meanwhile.
TEST_F(CatalogTest, C9_DropWaitsForInFlightWriteAndRejectsNewOnes) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"v"})));
  const uint64_t gen = Live("db", "t")->generation_id();
  auto writer = HoldWrite("db", "t", json::array({{{"id", "k"}, {"v", "x"}}}));
  auto drop = std::async(std::launch::async, [&] { return catalog().DropTable("db", "t"); });
  // Step 1 done: the table left the snapshot; new writes and reads are refused.
  ASSERT_EVENTUALLY(
      [&] { ASSERT_THAT(snap()->FindTable("db", "t"), HasErrorCode(ErrorCode::kTableDropping)); });
  EXPECT_THAT(Upsert("db", "t", json::array({{{"id", "k2"}}})),
              HasErrorCode(ErrorCode::kTableDropping));
  EXPECT_EQ(drop.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  faults_.Release(fault_points::kWriteBeforeCommit);
  EXPECT_OK(writer.get());  // it was admitted before the drop: it completes
  ASSERT_OK(drop.get());
  EXPECT_EQ(KeysOfGeneration(gen), 0);  // nothing landed under the dropped prefix
  EXPECT_THAT(snap()->FindTable("db", "t"), HasErrorCode(ErrorCode::kTableNotFound));
}

// C9: the drain is per table. A write held on one table neither delays the drop of another
// nor is delayed by it, and writes to other tables proceed during a drain.
TEST_F(CatalogTest, C9_DropIsolatedFromOtherTables) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "a", {"v"})));
  ASSERT_OK(catalog().CreateTable(Spec("db", "b", {"v"})));
  ASSERT_OK(catalog().CreateTable(Spec("db", "c", {"v"})));
  auto held = HoldWrite("db", "a", json::array({{{"id", 1}}}));
  // Another table drops while a's write is parked.
  ASSERT_OK(catalog().DropTable("db", "b"));
  // a's drop drains (waits for the parked write) while c keeps taking writes.
  auto drop_a = std::async(std::launch::async, [&] { return catalog().DropTable("db", "a"); });
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(Live("db", "a"), nullptr); });
  ASSERT_OK(Upsert("db", "c", json::array({{{"id", 1}, {"v", "ok"}}})));
  EXPECT_EQ(Search("db", "c", "v", "ok").size(), 1u);
  EXPECT_EQ(drop_a.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  faults_.Release(fault_points::kWriteBeforeCommit);
  EXPECT_OK(held.get());
  EXPECT_OK(drop_a.get());
}

// C9: a drain that runs out of budget leaves the tombstone, deletes nothing, keeps the table
// unavailable; a retry of the drop completes it.
TEST_F(CatalogTest, C9_DrainTimeoutLeavesTombstoneAndRetryCompletes) {
  options_.drop_drain_timeout = absl::Milliseconds(50);
  ASSERT_OK(Reopen());
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"v"})));
  ASSERT_OK(Upsert("db", "t", json::array({{{"id", "before"}, {"v", "x"}}})));
  const uint64_t gen = Live("db", "t")->generation_id();
  auto writer = HoldWrite("db", "t", json::array({{{"id", "during"}, {"v", "y"}}}));
  EXPECT_THAT(catalog().DropTable("db", "t"), HasErrorCode(ErrorCode::kTableDropping));
  auto row = StoredRow(gen);
  ASSERT_TRUE(row.has_value());
  EXPECT_TRUE(row->has_tombstone());
  EXPECT_EQ(row->tombstone().incarnation(), catalog().incarnation());
  EXPECT_GT(KeysOfGeneration(gen), 1);  // nothing deleted
  EXPECT_THAT(Upsert("db", "t", json::array({{{"id", "new"}}})),
              HasErrorCode(ErrorCode::kTableDropping));
  faults_.Release(fault_points::kWriteBeforeCommit);
  EXPECT_OK(writer.get());
  auto retried = catalog().DropTable("db", "t");
  ASSERT_OK(retried);
  EXPECT_TRUE(retried->timed);
  EXPECT_EQ(KeysOfGeneration(gen), 0);
  EXPECT_THAT(snap()->FindTable("db", "t"), HasErrorCode(ErrorCode::kTableNotFound));
  EXPECT_EQ(StoredMarker("db", "t"), retried->dropped_time);
}

// C9, C14: a drop_database retried after a drain timeout completes the pending drop of its
// table (whose name is no longer live), answers as the timed drop it completes (so the node
// forwards it, R9), and only then removes the database.
TEST_F(CatalogTest, C9_DropDatabaseRetryCompletesAPendingDrop) {
  options_.drop_drain_timeout = absl::Milliseconds(50);
  ASSERT_OK(Reopen());
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"v"})));
  ASSERT_OK(Upsert("db", "t", json::array({{{"id", "before"}, {"v", "x"}}})));
  const uint64_t gen = Live("db", "t")->generation_id();
  auto writer = HoldWrite("db", "t", json::array({{{"id", "during"}, {"v", "y"}}}));
  EXPECT_THAT(catalog().DropDatabase("db"), HasErrorCode(ErrorCode::kTableDropping));
  EXPECT_NE(snap()->FindDatabase("db"), nullptr);  // kept while a drop of it is pending
  faults_.Release(fault_points::kWriteBeforeCommit);
  EXPECT_OK(writer.get());
  auto retried = catalog().DropDatabase("db");
  ASSERT_OK(retried);
  EXPECT_TRUE(retried->timed);
  EXPECT_EQ(retried->dropped_time, StoredMarker("db", "t"));
  EXPECT_EQ(KeysOfGeneration(gen), 0);
  EXPECT_EQ(snap()->FindDatabase("db"), nullptr);
  EXPECT_EQ(catalog().drop_stats().in_progress, 0u);
  EXPECT_THAT(catalog().DropDatabase("db"), HasErrorCode(ErrorCode::kDatabaseNotFound));
}

// C8, C9: a peer's drop of a name whose local drop timed out re-runs the drain and completes
// it, answering "dropped"; so does a peer's drop of the database.
TEST_F(CatalogTest, C9_PeerDropRetryCompletesAPendingDrop) {
  options_.drop_drain_timeout = absl::Milliseconds(50);
  ASSERT_OK(Reopen());
  for (const bool whole_database : {false, true}) {
    SCOPED_TRACE(whole_database ? "drop_database" : "drop_table");
    const std::string db = whole_database ? "db2" : "db";
    ASSERT_OK(catalog().CreateTable(Spec(db, "t", {"v"})));
    const uint64_t gen = Live(db, "t")->generation_id();
    auto writer = HoldWrite(db, "t", json::array({{{"id", "during"}, {"v", "y"}}}));
    auto first = catalog().DropTable(db, "t");
    EXPECT_THAT(first, HasErrorCode(ErrorCode::kTableDropping));
    const Hlc dropped = snap()->MarkerFor(db, "t");
    faults_.Release(fault_points::kWriteBeforeCommit);
    EXPECT_OK(writer.get());
    if (whole_database) {
      auto r = catalog().ApplyPeerDropDatabase(db, dropped);
      ASSERT_OK(r);
      ASSERT_EQ(r->size(), 1u);
      EXPECT_EQ((*r)[0].second, PeerDropResult::kDropped);
      EXPECT_EQ(snap()->FindDatabase(db), nullptr);
    } else {
      auto r = catalog().ApplyPeerDrop(db, "t", dropped);
      ASSERT_OK(r);
      EXPECT_EQ(*r, PeerDropResult::kDropped);
    }
    EXPECT_EQ(KeysOfGeneration(gen), 0);
    EXPECT_THAT(snap()->FindTable(db, "t"),
                ::testing::AnyOf(HasErrorCode(ErrorCode::kTableNotFound),
                                 HasErrorCode(ErrorCode::kDatabaseNotFound)));
    EXPECT_EQ(StoredMarker(db, "t"), dropped);
  }
}

// C14, C9: a peer's drop_database goes on past a table whose drain times out: the others are
// retired, the database stays while that drop is pending, and a retry completes both.
TEST_F(CatalogTest, C14_PeerDropDatabaseGoesOnPastATableThatDoesNotDrain) {
  options_.drop_drain_timeout = absl::Milliseconds(50);
  ASSERT_OK(Reopen());
  ASSERT_OK(catalog().ApplyPeerTable(Peer("a", 100, {{"v", v1::STRING, true}})));
  ASSERT_OK(catalog().ApplyPeerTable(Peer("b", 100, {{"v", v1::STRING, true}})));
  const uint64_t gen_a = Live("db", "a")->generation_id();
  const uint64_t gen_b = Live("db", "b")->generation_id();
  auto writer = HoldWrite("db", "a", json::array({{{"id", 1}, {"v", "y"}}}));
  EXPECT_THAT(catalog().ApplyPeerDropDatabase("db", 200), HasErrorCode(ErrorCode::kTableDropping));
  EXPECT_EQ(KeysOfGeneration(gen_b), 0);  // b went
  EXPECT_NE(snap()->FindDatabase("db"), nullptr);
  // Nor does a concurrent local drop_database remove it while a's drop is pending.
  EXPECT_THAT(catalog().DropDatabase("db"), HasErrorCode(ErrorCode::kTableDropping));
  EXPECT_NE(snap()->FindDatabase("db"), nullptr);
  faults_.Release(fault_points::kWriteBeforeCommit);
  EXPECT_OK(writer.get());
  ASSERT_OK(catalog().ApplyPeerDropDatabase("db", 200));
  EXPECT_EQ(KeysOfGeneration(gen_a), 0);
  EXPECT_EQ(snap()->FindDatabase("db"), nullptr);
}

// C9: the name is free right after step 1; a recreate during the drain is a new generation
// that the old drop never touches.
TEST_F(CatalogTest, C9_RecreateDuringDrainIsUntouched) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"v"})));
  auto writer = HoldWrite("db", "t", json::array({{{"id", 1}}}));
  auto drop = std::async(std::launch::async, [&] { return catalog().DropTable("db", "t"); });
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(Live("db", "t"), nullptr); });
  auto recreated = catalog().CreateTable(Spec("db", "t", {"v"}));
  ASSERT_OK(recreated);
  ASSERT_OK(Upsert("db", "t", json::array({{{"id", "new"}, {"v", "fresh"}}})));
  faults_.Release(fault_points::kWriteBeforeCommit);
  writer.get().status().IgnoreError();
  auto dropped = drop.get();
  ASSERT_OK(dropped);
  EXPECT_LT(dropped->dropped_time, (*recreated)->created_time());  // C3
  EXPECT_EQ(Search("db", "t", "v", "fresh").size(), 1u);
  ASSERT_OK(Reopen());
  EXPECT_EQ(Search("db", "t", "v", "fresh").size(), 1u);
}

// C10: a drop crashed at each step is completed at the next start; no key of the dropped
// generation survives, and the marker is recorded.
void DropT(testing::LocalNode& n) { n.catalog->DropTable("db", "t").status().IgnoreError(); }

class DropCrashTest : public CatalogFixture, public ::testing::WithParamInterface<const char*> {};

TEST_P(DropCrashTest, C10_CrashedDropIsCompletedAtNextStart) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"v"})));
  ASSERT_OK(Upsert("db", "t", json::array({{{"id", 1}, {"v", "a"}}, {{"id", 2}, {"v", "b"}}})));
  const uint64_t gen = Live("db", "t")->generation_id();
  ASSERT_GT(KeysOfGeneration(gen), 0);
  EXPECT_EQ(CrashAt(GetParam(), DropT), kInjectedCrashExitCode);
  ASSERT_OK(Reopen());
  EXPECT_EQ(Live("db", "t"), nullptr);
  EXPECT_EQ(KeysOfGeneration(gen), 0);
  EXPECT_GT(StoredMarker("db", "t"), 0u);
  // Recovery is idempotent.
  ASSERT_OK(Reopen());
  EXPECT_EQ(KeysOfGeneration(gen), 0);
}

INSTANTIATE_TEST_SUITE_P(AtEachStep, DropCrashTest,
                         ::testing::Values(fault_points::kDropAfterTombstone,
                                           fault_points::kDropAfterDrain,
                                           fault_points::kDropBeforeFinalCommit,
                                           fault_points::kDropAfterFinalCommit),
                         [](const auto& info) { return PointName(info.param); });

// C10: a crash during recovery itself is recovered by the next start.
TEST_F(CatalogTest, C10_CrashDuringRecoveryIsRecoveredNextStart) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"v"})));
  ASSERT_OK(Upsert("db", "t", json::array({{{"id", 1}, {"v", "a"}}})));
  const uint64_t gen = Live("db", "t")->generation_id();
  // The first crash leaves a tombstone; the second start crashes while completing it.
  EXPECT_EQ(CrashAt(fault_points::kDropAfterTombstone, DropT), kInjectedCrashExitCode);
  EXPECT_EQ(CrashAt(fault_points::kDropBeforeFinalCommit, [](testing::LocalNode&) {}),
            kInjectedCrashExitCode);
  ASSERT_OK(Reopen());
  EXPECT_EQ(KeysOfGeneration(gen), 0);
}

// C10: a tombstone is never loaded, whatever state its rows are in.
TEST_F(CatalogTest, C10_TombstonedTableIsNeverLoaded) {
  options_.drop_drain_timeout = absl::Milliseconds(20);
  ASSERT_OK(Reopen());
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"v"})));
  const uint64_t gen = Live("db", "t")->generation_id();
  faults_.Set(fault_points::kDropAfterDrain, FaultAction::ReturnError(absl::InternalError("x")));
  EXPECT_FALSE(catalog().DropTable("db", "t").ok());
  ASSERT_TRUE(StoredRow(gen).has_value());
  faults_.ClearAll();
  ASSERT_OK(Reopen());
  EXPECT_EQ(Live("db", "t"), nullptr);
  EXPECT_EQ(KeysOfGeneration(gen), 0);
}

// C16: a stamp derived as x + 1 from the largest HLC value is refused with a clear error, never
// wrapped to 0 (a drop stamped 0 would retire nothing on peers; a generation created at 0
// would be dead at birth).
TEST_F(CatalogTest, C16_StampsAfterTheLargestValueAreRefusedNotWrapped) {
  ASSERT_OK(catalog().CreateDatabase("db"));  // a database needs a stamp of its own
  // A marker at the end of time: no generation of the name can be newer than it (C3).
  ASSERT_OK(catalog().ApplyPeerDrop("db", "u", kMaxHlc));
  auto created = catalog().CreateTable(Spec("db", "u"));
  EXPECT_THAT(created, HasErrorCode(ErrorCode::kInternal));
  EXPECT_NE(created.status().message().find("C16"), std::string::npos) << created.status();
  EXPECT_EQ(Live("db", "u"), nullptr);
  // A generation stamped at the end of time: its drop cannot be stamped after it (C7).
  ASSERT_OK(catalog().ApplyPeerTable(Peer("t", kMaxHlc, {})));
  auto dropped = catalog().DropTable("db", "t");
  EXPECT_THAT(dropped, HasErrorCode(ErrorCode::kInternal));
  EXPECT_NE(Live("db", "t"), nullptr);  // nothing was done
  EXPECT_EQ(StoredMarker("db", "t"), 0u);
  // A local-only drop needs no stamp and still works.
  auto local = catalog().DropTable("db", "t", /*timed=*/false);
  ASSERT_OK(local);
  EXPECT_FALSE(local->timed);
  EXPECT_EQ(Live("db", "t"), nullptr);
}

// ---- Databases (C14).

TEST_F(CatalogTest, C14_CreateDatabase) {
  ASSERT_OK(catalog().CreateDatabase("db"));
  EXPECT_THAT(catalog().CreateDatabase("db"), HasErrorCode(ErrorCode::kDatabaseExists));
  ASSERT_OK(Reopen());
  EXPECT_NE(snap()->FindDatabase("db"), nullptr);
}

TEST_F(CatalogTest, C14_DropDatabaseDropsEveryTableAndTheirMarkersOutliveIt) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "a")));
  ASSERT_OK(catalog().CreateTable(Spec("db", "b")));
  ASSERT_OK(catalog().CreateTable(Spec("other", "c")));
  auto r = catalog().DropDatabase("db");
  ASSERT_OK(r);
  EXPECT_TRUE(r->timed);
  EXPECT_EQ(snap()->FindDatabase("db"), nullptr);
  EXPECT_NE(Live("other", "c"), nullptr);
  EXPECT_GT(StoredMarker("db", "a"), 0u);
  EXPECT_GT(StoredMarker("db", "b"), 0u);
  ASSERT_OK(Reopen());
  EXPECT_EQ(snap()->FindDatabase("db"), nullptr);
  EXPECT_GT(snap()->MarkerFor("db", "a"), 0u);
  EXPECT_THAT(catalog().DropDatabase("db"), HasErrorCode(ErrorCode::kDatabaseNotFound));
}

TEST_F(CatalogTest, C14_PeerDropDatabaseKeepsNewerAndNodeLocalTables) {
  ASSERT_OK(catalog().ApplyPeerTable(Peer("old", 100, {})));
  ASSERT_OK(catalog().ApplyPeerTable(Peer("newer", 300, {})));
  ASSERT_OK(catalog().CreateTable(Spec("db", "local", {}, /*replicate=*/false)));
  auto r = catalog().ApplyPeerDropDatabase("db", 200);
  ASSERT_OK(r);
  EXPECT_EQ(Live("db", "old"), nullptr);
  EXPECT_NE(Live("db", "newer"), nullptr);
  EXPECT_NE(Live("db", "local"), nullptr);
  EXPECT_NE(snap()->FindDatabase("db"), nullptr);
  EXPECT_EQ(StoredMarker("db", "old"), 200u);
}

TEST_F(CatalogTest, C14_PeerDropDatabaseRemovesAnEmptiedDatabase) {
  ASSERT_OK(catalog().ApplyPeerTable(Peer("old", 100, {})));
  ASSERT_OK(catalog().ApplyPeerDropDatabase("db", 200));
  EXPECT_EQ(snap()->FindDatabase("db"), nullptr);
}

// C12: catalog mutations are serialized by one lock. Threads that add attributes to one table
// (each publish copies the definition it read), create one name, and create and drop other
// tables all at once lose nothing: every attribute is there, exactly one create of the name
// wins, and the restart loads the same catalog.
TEST_F(CatalogTest, C12_ConcurrentCatalogMutationsLoseNothing) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  constexpr int kThreads = 8, kEach = 12;
  std::atomic<int> created{0}, exists{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        EXPECT_OK(catalog().CreateAttribute("db", "t",
                                            {absl::StrCat("a", t, "_", i), v1::ANY, i % 2 == 0}));
      }
      auto dup = catalog().CreateTable(Spec("db", "dup"));
      (dup.ok() ? created : exists)++;
      if (!dup.ok()) {
        EXPECT_THAT(dup, HasErrorCode(ErrorCode::kTableExists));
      }
      const std::string own = absl::StrCat("own", t);
      EXPECT_OK(catalog().CreateTable(Spec("db", own)));
      EXPECT_OK(catalog().DropTable("db", own));
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(created.load(), 1);
  EXPECT_EQ(exists.load(), kThreads - 1);
  auto check = [&] {
    TableRef t = Live("db", "t");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->attributes().size(), 3u + kThreads * kEach);
    for (int th = 0; th < kThreads; ++th) {
      for (int i = 0; i < kEach; ++i) {
        EXPECT_NE(t->FindAttribute(absl::StrCat("a", th, "_", i)), nullptr);
      }
    }
    EXPECT_NE(Live("db", "dup"), nullptr);
    EXPECT_EQ(snap()->FindDatabase("db")->tables.size(), 2u);
  };
  check();
  ASSERT_OK(Reopen());
  check();
}

// C12 (with C9): the catalog lock is not held while a drop drains, so the drop of one table
// waiting for an in-flight write never holds up the catalog: creates, attribute changes and
// other drops in the same database complete meanwhile.
TEST_F(CatalogTest, C12_TheCatalogLockIsFreeWhileADropDrains) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"v"})));
  ASSERT_OK(catalog().CreateTable(Spec("db", "u", {"v"})));
  auto writer = HoldWrite("db", "t", json::array({{{"id", 1}, {"v", "x"}}}));
  TableRef draining = Live("db", "t");
  auto drop = std::async(std::launch::async, [&] { return catalog().DropTable("db", "t"); });
  WaitUntilDropping(draining);  // step 2 begun: the drop waits for the writer
  ASSERT_OK(catalog().CreateTable(Spec("db", "other")));
  ASSERT_OK(catalog().CreateAttribute("db", "u", {"w", v1::ANY, true}));
  ASSERT_OK(catalog().DropTable("db", "u"));
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"v"})));  // the name is free already
  EXPECT_EQ(drop.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  faults_.Release(fault_points::kWriteBeforeCommit);
  EXPECT_OK(writer.get());
  EXPECT_OK(drop.get());
}

// C12 says "of a database": a schema change parked mid-way in one database (under its lock,
// before the fence) holds up the next mutation of that database only. Creates, attribute
// changes, drops and peer definitions of another database complete meanwhile, and once the
// parked change is released nothing of either database is lost (invariant (2)).
TEST_F(CatalogTest, C12_MutationsOfOneDatabaseDoNotWaitForAnother) {
  ASSERT_OK(catalog().CreateTable(Spec("a", "t", {"v"})));
  ASSERT_OK(catalog().CreateTable(Spec("b", "t", {"v"})));
  faults_.Set(fault_points::kSchemaBeforeFence, FaultAction::Block().OnNth(1));
  auto parked = std::async(std::launch::async, [&] {
    return catalog().CreateAttribute("a", "t", {"w", v1::ANY, true});
  });
  ASSERT_TRUE(faults_.WaitUntilBlocked(fault_points::kSchemaBeforeFence, absl::Seconds(30)));
  auto same_database =
      std::async(std::launch::async, [&] { return catalog().CreateTable(Spec("a", "u")); });
  auto other_database = std::async(std::launch::async, [&]() -> absl::Status {
    CAIRN_RETURN_IF_ERROR(catalog().CreateTable(Spec("b", "u", {"v"})).status());
    CAIRN_RETURN_IF_ERROR(catalog().CreateAttribute("b", "u", {"w", v1::ANY, true}).status());
    CAIRN_RETURN_IF_ERROR(catalog().DropTable("b", "t").status());
    PeerTableDef peer = Peer("p", 0, {{"id", v1::ID, true}});
    peer.database = "b";
    CAIRN_RETURN_IF_ERROR(catalog().ApplyPeerTable(peer));
    return catalog().CreateDatabase("c");
  });
  // Without a lock per database these wait for the parked change: release it then, so the
  // test fails instead of hanging.
  const bool other_done =
      other_database.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  const bool same_waited =
      same_database.wait_for(std::chrono::milliseconds(0)) == std::future_status::timeout;
  faults_.Release(fault_points::kSchemaBeforeFence);
  EXPECT_TRUE(other_done) << "a mutation of database b waited for one of database a";
  EXPECT_TRUE(same_waited) << "two mutations of database a ran at once (C12)";
  EXPECT_OK(other_database.get());
  EXPECT_OK(parked.get());
  EXPECT_OK(same_database.get());

  auto check = [&] {
    TableRef at = Live("a", "t");
    ASSERT_NE(at, nullptr);
    EXPECT_NE(at->FindAttribute("w"), nullptr);
    EXPECT_NE(Live("a", "u"), nullptr);
    TableRef bu = Live("b", "u");
    ASSERT_NE(bu, nullptr);
    EXPECT_NE(bu->FindAttribute("w"), nullptr);
    EXPECT_EQ(Live("b", "t"), nullptr);
    EXPECT_NE(Live("b", "p"), nullptr);
    EXPECT_NE(snap()->FindDatabase("c"), nullptr);
  };
  check();
  ASSERT_OK(Reopen());
  check();
}

// Invariant (3) of Catalog: generation ids are never reused, even when creates in two
// databases commit out of the order their ids were handed out in and the newer one is
// dropped before the restart (a single "next id" row would then go back to the lower id).
TEST_F(CatalogTest, GenerationIdsAreNeverReusedAcrossOutOfOrderCreates) {
  faults_.Set(fault_points::kCreateBeforeCommit, FaultAction::Block().OnNth(1));
  auto slow = std::async(std::launch::async, [&] { return catalog().CreateTable(Spec("a", "t")); });
  ASSERT_TRUE(faults_.WaitUntilBlocked(fault_points::kCreateBeforeCommit, absl::Seconds(30)));
  auto fast = std::async(std::launch::async, [&] { return catalog().CreateTable(Spec("b", "t")); });
  const bool fast_done = fast.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  faults_.Release(fault_points::kCreateBeforeCommit);
  ASSERT_TRUE(fast_done) << "a create in database b waited for one in database a";
  auto newer = fast.get();
  auto older = slow.get();
  ASSERT_OK(newer);
  ASSERT_OK(older);
  ASSERT_LT((*older)->generation_id(), (*newer)->generation_id());
  const uint64_t highest = (*newer)->generation_id();
  ASSERT_OK(catalog().DropTable("b", "t"));  // its rows, primary row and all are gone
  ASSERT_OK(Reopen());
  auto next = catalog().CreateTable(Spec("b", "again"));
  ASSERT_OK(next);
  EXPECT_GT((*next)->generation_id(), highest);
}

// Many threads mutating several databases at once: each publish applies its own database's
// change to the latest snapshot, so nothing of another database is lost, and versions are
// unique.
TEST_F(CatalogTest, C12_ConcurrentMutationsOfManyDatabasesLoseNothing) {
  constexpr int kThreads = 8, kEach = 10;
  absl::Mutex seen_mu;
  std::vector<uint64_t> seen;
  catalog().SetListener([&](const SnapshotRef& s) {
    absl::MutexLock lock(&seen_mu);
    seen.push_back(s->version);
  });
  const uint64_t first = snap()->version;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string db = absl::StrCat("d", t % 4);
      const std::string table = absl::StrCat("t", t);
      EXPECT_OK(catalog().CreateTable(DynamicSpec(db, table)));
      for (int i = 0; i < kEach; ++i) {
        EXPECT_OK(catalog().CreateAttribute(db, table, {absl::StrCat("a", i), v1::ANY, true}));
      }
      const std::string gone = absl::StrCat("gone", t);
      EXPECT_OK(catalog().CreateTable(Spec(db, gone)));
      EXPECT_OK(catalog().DropTable(db, gone));
    });
  }
  for (auto& th : threads) th.join();
  auto check = [&] {
    for (int t = 0; t < kThreads; ++t) {
      TableRef def = Live(absl::StrCat("d", t % 4), absl::StrCat("t", t));
      ASSERT_NE(def, nullptr) << t;
      EXPECT_EQ(def->attributes().size(), 3u + kEach);
      EXPECT_EQ(Live(absl::StrCat("d", t % 4), absl::StrCat("gone", t)), nullptr);
    }
  };
  check();
  // Every thread: 1 + kEach + 1 + 2 (drop step 1, step 3) publishes.
  const uint64_t publishes = kThreads * (kEach + 4);
  EXPECT_EQ(snap()->version, first + publishes);
  {
    absl::MutexLock lock(&seen_mu);
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen.size(), publishes);
    EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end()) << "a version repeated";
  }
  catalog().SetListener(nullptr);
  ASSERT_OK(Reopen());
  check();
}

// The listener sees every publish, outside the catalog lock (it may call back in).
TEST_F(CatalogTest, ListenerSeesPublishesOutsideTheLock) {
  std::vector<uint64_t> versions;
  catalog().SetListener([&](const SnapshotRef& s) {
    versions.push_back(s->version);
    EXPECT_EQ(catalog().Snapshot()->version, s->version);  // would deadlock under mu_
  });
  ASSERT_OK(catalog().CreateTable(Spec("db", "t")));
  ASSERT_OK(catalog().DropTable("db", "t"));
  EXPECT_GE(versions.size(), 3u);  // create, drop step 1, drop done
  EXPECT_TRUE(std::is_sorted(versions.begin(), versions.end()));
}

}  // namespace
}  // namespace cairn::catalog
