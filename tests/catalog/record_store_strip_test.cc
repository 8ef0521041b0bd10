// RecordStore: strips of dropped attributes (decision 4; SPEC C9, D2; decisions 103, 105).
#include <future>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "common/fault_points.h"
#include "tests/catalog/record_store_fixture.h"

namespace cairn::catalog {
namespace {

using ::cairn::testing::HasErrorCode;
using nlohmann::json;

// Decision 103 with C15: a strip found a value newer than its marker, to index under the
// name's attribute (decision 98), when a peer declared that attribute not indexed. The
// strip indexes by the definition it holds locked and current, not the one it read before
// the lock: no index entry outlives the declaration's delete of the range.
TEST_F(RecordStoreTest, Decision103_AStripIndexesByTheDefinitionOfNow) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"a"})));
  const Hlc gen = Live("db", "t")->created_time();
  ASSERT_OK(Apply({Put("t", "k", gen + 30, "p", gen, {{"id", "k"}, {"y", "new"}})}));
  ASSERT_EQ(Live("db", "t")->FindAttribute("y")->origin, v1::PEER_RECORD);
  auto release_all = absl::MakeCleanup([&] { faults_.ClearAll(); });
  faults_.Set(fault_points::kRefreshBeforeLock, FaultAction::Block().OnNth(1));
  // A marker older than y (made after it) keeps it and strips (decision 101): the row's
  // value is newer than the marker, so the strip indexes it.
  ASSERT_OK(records().ApplyPeerAttributeDrop("db", "t", "y", gen + 20));
  ASSERT_TRUE(faults_.WaitUntilBlocked(fault_points::kRefreshBeforeLock, absl::Seconds(30)));
  ASSERT_OK(catalog().ApplyPeerTable(
      {"db", "t", gen, "id", {AttributeSpec("y", v1::STRING, false, gen + 40)}, true}));
  faults_.Release(fault_points::kRefreshBeforeLock);
  ASSERT_EVENTUALLY([&] { ASSERT_TRUE(Live("db", "t")->stripping().empty()); });
  EXPECT_FALSE(Live("db", "t")->FindAttribute("y")->indexed);
  EXPECT_EQ(By("t", "y", "new").size(), 1u);
  ExpectIndexConsistent("t");
}

// C9: a drop cancels a running drop_attribute strip; the strip's pending record goes with the
// generation.
TEST_F(RecordStoreTest, C9_DropCancelsARunningStrip) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  json batch = json::array();
  for (int i = 0; i < 600; ++i) batch.push_back({{"id", i}, {"x", "old"}});
  ASSERT_OK(Write("t", batch, WriteMode::kInsert));
  TableRef def = Live("db", "t");
  faults_.Set(fault_points::kScanRow, FaultAction::Block().OnNth(3));
  auto strip =
      std::async(std::launch::async, [&] { return records().DropAttribute("db", "t", "x"); });
  ASSERT_TRUE(faults_.WaitUntilBlocked(fault_points::kScanRow, absl::Seconds(30)));
  auto drop = std::async(std::launch::async, [&] { return catalog().DropTable("db", "t"); });
  WaitUntilDropping(def);
  faults_.Release(fault_points::kScanRow);
  EXPECT_THAT(strip.get(), HasErrorCode(ErrorCode::kTableDropping));
  ASSERT_OK(drop.get());
  EXPECT_EQ(KeysOfGeneration(def->generation_id()), 0);
}

// A crash between the catalog change and the end of the strip: the next start finishes it.
TEST_F(RecordStoreTest, DropAttributeStripResumesAfterACrash) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  json batch = json::array();
  for (int i = 0; i < 600; ++i) batch.push_back({{"id", i}, {"x", "old"}, {"y", i}});
  ASSERT_OK(Write("t", batch, WriteMode::kInsert));
  EXPECT_EQ(CrashAt(fault_points::kStripAfterCatalog,
                    [](testing::LocalNode& n) {
                      n.records->DropAttribute("db", "t", "x").IgnoreError();
                    }),
            kInjectedCrashExitCode);
  ASSERT_OK(Reopen());
  EXPECT_EQ(Live("db", "t")->FindAttribute("x"), nullptr);
  ASSERT_OK(catalog().CreateAttribute("db", "t", {"x", v1::ANY, true}));
  EXPECT_TRUE(By("t", "x", "old").empty());
  for (const json& r : By("t", "y", "*")) EXPECT_FALSE(r.contains("x")) << r.dump();
  ExpectIndexConsistent("t");
}

TEST_F(RecordStoreTest, DropAttributeStripsValuesAndARecreateStartsEmpty) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  ASSERT_OK(Write("t", json::array({{{"id", 1}, {"x", "old"}, {"y", 1}}}), WriteMode::kInsert));
  ASSERT_OK(records().DropAttribute("db", "t", "x"));
  EXPECT_EQ(Live("db", "t")->FindAttribute("x"), nullptr);
  json rec = ById("t", json::array({1}))[0];
  EXPECT_FALSE(rec.contains("x"));
  EXPECT_EQ(rec["y"], 1);
  ASSERT_OK(catalog().CreateAttribute("db", "t", {"x", v1::ANY, true}));
  EXPECT_TRUE(By("t", "x", "old").empty());
  EXPECT_FALSE(ById("t", json::array({1}))[0].contains("x"));
  ExpectIndexConsistent("t");
  EXPECT_THAT(records().DropAttribute("db", "t", "id"), HasErrorCode(ErrorCode::kBadRequest));
  EXPECT_THAT(records().DropAttribute("db", "t", "zzz"),
              HasErrorCode(ErrorCode::kUnknownAttribute));
  EXPECT_THAT(catalog().CreateAttribute("db", "t", {"x", v1::ANY, true}),
              HasErrorCode(ErrorCode::kAttributeExists));
}

// Decision 105: create_attribute of an attribute a write made declares it in place: its type
// and index, the values kept, the index range gone when it is not indexed; then it exists.
TEST_F(RecordStoreTest, Decision105_CreateAttributeDeclaresAnAttributeAWriteMade) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  ASSERT_OK(Write("t", json::array({{{"id", 1}, {"x", "a"}}, {{"id", 2}, {"x", "b"}}}),
                  WriteMode::kInsert));
  ASSERT_EQ(Live("db", "t")->FindAttribute("x")->origin, v1::PEER_RECORD);
  ASSERT_OK(catalog().CreateAttribute("db", "t", {"x", v1::STRING, false}));
  const AttributeDef* x = Live("db", "t")->FindAttribute("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->type, v1::STRING);
  EXPECT_FALSE(x->indexed);
  EXPECT_EQ(x->origin, v1::LOCAL);
  EXPECT_EQ(By("t", "x", "b").size(), 1u);  // by a scan now
  ExpectIndexConsistent("t");
  EXPECT_THAT(catalog().CreateAttribute("db", "t", {"x", v1::STRING, false}),
              HasErrorCode(ErrorCode::kAttributeExists));
}

// Decision 4: a re-created attribute starts empty. The strip of a dropped attribute goes by the
// drop's stamp, not by whether the name exists again when it reaches a row: neither the strip,
// nor a merge, nor a read brings an old value back under the new attribute, while values
// written after the re-create stay.
TEST_F(RecordStoreTest, D2_ARecreatedAttributeStartsEmptyWhileItsStripRuns) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  json batch = json::array();
  for (int i = 0; i < 600; ++i) batch.push_back({{"id", i}, {"x", "old"}, {"y", i}});
  ASSERT_OK(Write("t", batch, WriteMode::kInsert));
  faults_.Set(fault_points::kStripAfterCatalog, FaultAction::Block().OnNth(1));
  auto strip =
      std::async(std::launch::async, [&] { return records().DropAttribute("db", "t", "x"); });
  ASSERT_TRUE(faults_.WaitUntilBlocked(fault_points::kStripAfterCatalog, absl::Seconds(30)));
  // Re-created with another type before the strip touched a row.
  ASSERT_OK(catalog().CreateAttribute("db", "t", {"x", v1::INT, true}));
  EXPECT_FALSE(ById("t", json::array({1}))[0].contains("x"));  // a read
  EXPECT_TRUE(By("t", "x", "old").empty());
  ASSERT_OK(Write("t", json::array({{{"id", 2}, {"y", -2}}}), WriteMode::kUpdate));  // a merge
  ASSERT_OK(Write("t", json::array({{{"id", 3}, {"x", 33}}}), WriteMode::kUpdate));  // a new value
  faults_.Release(fault_points::kStripAfterCatalog);
  ASSERT_OK(strip.get());
  auto check = [&] {
    for (const json& r : By("t", "y", "*")) {
      if (r["id"] == 3) {
        EXPECT_EQ(r["x"], 33) << r.dump();
      } else {
        EXPECT_FALSE(r.contains("x")) << r.dump();
      }
    }
    EXPECT_TRUE(By("t", "x", "old").empty());
    EXPECT_EQ(By("t", "x", 33).size(), 1u);
    EXPECT_EQ(By("t", "x", "*").size(), 600u);  // every row, with or without the attribute
    EXPECT_TRUE(Live("db", "t")->stripping().empty());
    ExpectIndexConsistent("t");
  };
  check();
  ASSERT_OK(Reopen());
  check();
}

// Decision 57: the drop's stamp is newer than every stored row of the generation, even rows from
// a peer whose clock ran ahead and that this process (a fresh clock after a restart) has never
// seen: their values of the dropped attribute go too.
TEST_F(RecordStoreTest, DropAttributeStripsRowsNewerThanThisProcessKnows) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  const Hlc gen = Live("db", "t")->created_time();
  const Hlc ahead = HybridClock::Make(absl::ToUnixMillis(absl::Now() + absl::Minutes(10)), 0);
  ASSERT_OK(Write("t", json::array({{{"id", "local"}, {"x", "old"}}}), WriteMode::kInsert));
  ASSERT_OK(Apply({Put("t", "fast", ahead, "fast-peer", gen, {{"id", "fast"}, {"x", "old"}})}));
  ASSERT_OK(Reopen());  // a fresh HybridClock, behind the peer's row
  ASSERT_OK(records().DropAttribute("db", "t", "x"));
  for (const char* id : {"local", "fast"}) {
    auto rec = ById("t", json::array({id}));
    ASSERT_EQ(rec.size(), 1u);
    EXPECT_FALSE(rec[0].contains("x")) << rec[0].dump();
  }
  // Re-created, the attribute starts empty there too.
  ASSERT_OK(catalog().CreateAttribute("db", "t", {"x", v1::ANY, true}));
  EXPECT_TRUE(By("t", "x", "old").empty());
  ExpectIndexConsistent("t");
}

// Decision 18 with decision 4: a strip interrupted by a crash resumes with the drop's stamp, so
// a value written under a re-created attribute before the restart survives it.
TEST_F(RecordStoreTest, DropAttributeStripResumesWithItsStampAfterACrash) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  ASSERT_OK(Write("t", json::array({{{"id", 1}, {"x", "old"}}, {{"id", 2}, {"x", "old"}}}),
                  WriteMode::kInsert));
  // The process dies after the attribute was dropped, re-created and written again, before
  // its strip touched a row.
  Close();
  EXPECT_EQ(
      testing::RunInChildProcess([&] {
        FaultRegistry faults;
        faults.Set(fault_points::kStripAfterCatalog, FaultAction::Block());
        testing::LocalNodeOptions o = options_;
        o.faults = &faults;
        auto node = testing::LocalNode::Open(dir_.path(), o);
        if (!node.ok()) std::_Exit(1);
        std::thread([&] {
          (*node)->records->DropAttribute("db", "t", "x").IgnoreError();
        }).detach();
        if (!faults.WaitUntilBlocked(fault_points::kStripAfterCatalog, absl::Seconds(30))) {
          std::_Exit(2);
        }
        if (!(*node)->catalog->CreateAttribute("db", "t", {"x", v1::ANY, true}).ok() ||
            !(*node)
                 ->records
                 ->Write("db", "t", json::array({{{"id", 2}, {"x", "new"}}}), WriteMode::kUpdate)
                 .ok()) {
          std::_Exit(3);
        }
        std::_Exit(kInjectedCrashExitCode);
      }),
      kInjectedCrashExitCode);
  ASSERT_OK(Reopen());  // resumes the strip
  EXPECT_FALSE(ById("t", json::array({1}))[0].contains("x"));
  EXPECT_EQ(ById("t", json::array({2}))[0]["x"], "new");
  EXPECT_TRUE(Live("db", "t")->stripping().empty());
  ExpectIndexConsistent("t");
}

}  // namespace
}  // namespace cairn::catalog
