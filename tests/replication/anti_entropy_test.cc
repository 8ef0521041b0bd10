// Anti-entropy between in-process nodes (SPEC R18): divergence made by hand behind
// replication's back is found and repaired on both sides without losing anything (D5), while
// rows replication is still delivering are left to it.
#include "replication/anti_entropy.h"

#include <atomic>
#include <future>
#include <thread>

#include "common/fault_points.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "storage/value_codec.h"
#include "tests/replication/test_node.h"

namespace cairn::replication {
namespace {

using json = nlohmann::json;
using storage::v1::StoredRecord;

class AntiEntropyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = std::make_unique<TestNode>("a", dir_.Sub("a"), "s3cret");
    b_ = std::make_unique<TestNode>("b", dir_.Sub("b"), "s3cret");
    a_->Start();
    b_->Start();
    a_->Route(*b_);
  }

  void CreateAndFill(int rows) {
    ASSERT_OK(a_->catalog().CreateTable(Spec("shop", "orders", {"name"})));
    json batch = json::array();
    for (int i = 0; i < rows; ++i) batch.push_back({{"id", absl::StrCat("k", i)}, {"name", "x"}});
    ASSERT_OK(a_->records().Write("shop", "orders", batch, catalog::WriteMode::kUpsert));
    ExpectConverged();
  }
  void ExpectConverged() {
    ASSERT_EVENTUALLY([&] {
      ASSERT_FALSE(TableRows(*a_, "shop", "orders").empty());
      ASSERT_EQ(TableRows(*a_, "shop", "orders"), TableRows(*b_, "shop", "orders"));
    });
  }
  // The link is up and speaks verify.v1 from a's side.
  void WaitVerifiable() {
    ASSERT_EVENTUALLY(
        [&] { ASSERT_THAT(a_->cluster().VerifyPeers(), ::testing::ElementsAre("b")); });
  }
  PeerVerify Verify() { return a_->cluster().anti_entropy()->Verify("b", "shop", "orders"); }

  // Raw edits of a node's stored rows, behind the change log's back: what a bug, a lost WAL
  // tail or a restored disk leaves. Nothing is logged, so replication never carries them.
  static std::string RecordKey(TestNode& n, const std::string& id) {
    std::string pk;
    EXPECT_OK(storage::AppendPrimaryKey(json(id), &pk));
    return storage::RecordKey(n.Table("shop", "orders")->generation_id(), pk);
  }
  static void RawPut(TestNode& n, const std::string& id, const StoredRecord& row) {
    rocksdb::WriteBatch batch;
    ASSERT_TRUE(batch
                    .Put(n.local().engine->cf(storage::Cf::kRecords), RecordKey(n, id),
                         row.SerializeAsString())
                    .ok());
    ASSERT_OK(n.local().engine->Write(&batch));
  }
  static void RawDelete(TestNode& n, const std::string& id) {
    rocksdb::WriteBatch batch;
    ASSERT_TRUE(batch.Delete(n.local().engine->cf(storage::Cf::kRecords), RecordKey(n, id)).ok());
    ASSERT_OK(n.local().engine->Write(&batch));
  }
  static StoredRecord Row(TestNode& n, Hlc version, const std::string& origin, const json& body,
                          bool deleted = false) {
    StoredRecord r;
    r.set_version(version);
    r.set_origin(origin);
    r.set_row_generation(n.Table("shop", "orders")->created_time());
    r.set_deleted(deleted);
    if (!deleted) r.set_json(body.dump());
    return r;
  }
  static uint64_t Repaired(const PeerVerify& r) {
    uint64_t n = 0;
    for (const TableVerify& t : r.tables) n += t.rows_repaired();
    return n;
  }

  testing::TempDir dir_;
  std::unique_ptr<TestNode> a_, b_;
};

// Test 1: a row changed, a row removed, a tombstone removed, an extra row, a whole leaf
// missing — all on b, by hand — are found and repaired on both sides; a second verify
// repairs nothing.
TEST_F(AntiEntropyTest, R18_FindsAndRepairsDivergenceOnBothSides) {
  CreateAndFill(300);
  ASSERT_OK(a_->records().Delete("shop", "orders", json::array({"k3"})));
  ExpectConverged();
  WaitVerifiable();
  PeerVerify clean = Verify();
  ASSERT_OK(clean.status);
  ASSERT_EQ(clean.tables.size(), 1u);
  EXPECT_TRUE(clean.tables[0].in_sync());
  EXPECT_EQ(clean.tables[0].rows_compared, 300u);
  EXPECT_EQ(clean.tables[0].differing_leaves, 0u);

  const std::vector<std::string> before = TableRows(*a_, "shop", "orders");
  b_->Isolate();
  // Changed on b: a newer write b never logged (a must take it).
  RawPut(*b_, "k1", Row(*b_, b_->node_hlc_now(), "b", {{"id", "k1"}, {"name", "changed"}}));
  RawDelete(*b_, "k2");                                                        // removed
  RawDelete(*b_, "k3");                                                        // its tombstone
  RawPut(*b_, "extra", Row(*b_, b_->node_hlc_now(), "b", {{"id", "extra"}}));  // extra
  // Every row of one leaf of a depth-2 tree (300 rows: DepthFor gives 2).
  auto leaf_of = [](const std::string& id) {
    std::string pk;
    EXPECT_OK(storage::AppendPrimaryKey(json(id), &pk));
    return catalog::LeafOf(pk, 2);
  };
  int removed_leaf = 0;
  for (int i = 4; i < 300; ++i) {
    const std::string id = absl::StrCat("k", i);
    if (leaf_of(id) == leaf_of("k10")) {
      RawDelete(*b_, id);
      ++removed_leaf;
    }
  }
  b_->Start();
  WaitVerifiable();

  PeerVerify r = Verify();
  ASSERT_OK(r.status);
  ASSERT_EQ(r.tables.size(), 1u);
  const TableVerify& t = r.tables[0];
  EXPECT_EQ(t.repaired_here, 2u) << "k1 changed and the extra row, from b";
  EXPECT_EQ(t.repaired_there, 2u + removed_leaf) << "k2, k3's tombstone and the leaf, to b";
  EXPECT_EQ(t.unsettled, 0u);
  EXPECT_TRUE(t.in_sync());
  ExpectConverged();
  EXPECT_NE(TableRows(*a_, "shop", "orders"), before);

  PeerVerify again = Verify();
  ASSERT_OK(again.status);
  EXPECT_EQ(Repaired(again), 0u);
  EXPECT_EQ(again.tables[0].differing_leaves, 0u);

  // cluster_status's record of the last verify.
  const PeerStatus status = a_->StatusOf("b");
  ASSERT_EQ(status.verified.count("shop"), 1u);
  EXPECT_TRUE(status.verified.at("shop").in_sync);
  EXPECT_EQ(status.verified.at("shop").rows_repaired, 0u);
  EXPECT_GE(a_->cluster().anti_entropy()->rows_repaired_total(), 2u);
  // Every scan asked the pace (--verify-rate) for its rows.
  EXPECT_GE(a_->cluster().anti_entropy()->rows_paced(), 300u);
  EXPECT_GE(b_->cluster().anti_entropy()->rows_paced(), 250u);
}

// Test 2: repair never loses (D5). A newer row only b holds survives and reaches a; a newer
// tombstone beats an older row; an older row never replaces a newer one.
TEST_F(AntiEntropyTest, R18_RepairNeverLoses) {
  CreateAndFill(50);
  ASSERT_OK(a_->records().Delete("shop", "orders", json::array({"k2"})));
  ExpectConverged();
  b_->Isolate();
  const Hlc old_version = 1000;  // older than every write of the test
  RawPut(*b_, "k1", Row(*b_, b_->node_hlc_now(), "b", {{"id", "k1"}, {"name", "newest"}}));
  // b lost the delete of k2: a holds a newer tombstone, b the older row.
  RawPut(*b_, "k2", Row(*b_, old_version, "a", {{"id", "k2"}, {"name", "old"}}));
  // b holds an older version of k4 than a.
  RawPut(*b_, "k4", Row(*b_, old_version, "a", {{"id", "k4"}, {"name", "old"}}));
  b_->Start();
  WaitVerifiable();

  PeerVerify r = Verify();
  ASSERT_OK(r.status);
  EXPECT_EQ(r.tables[0].repaired_here, 1u);   // k1
  EXPECT_EQ(r.tables[0].repaired_there, 2u);  // k2's tombstone, k4
  ExpectConverged();
  std::vector<json> k1;
  ASSERT_OK(a_->records().SearchById("shop", "orders", json::array({"k1", "k2", "k4"}), {},
                                     [&](const json& rec) {
                                       k1.push_back(rec);
                                       return true;
                                     }));
  ASSERT_EQ(k1.size(), 2u) << "k2 stays deleted";
  EXPECT_EQ(k1[0]["name"], "newest");
  EXPECT_EQ(k1[1]["name"], "x");
}

// Test 2, retired generations (C6, D7): a row b holds of a generation a drop retired is a
// difference, but no apply takes it: it never reaches a, and the table is not "in sync".
TEST_F(AntiEntropyTest, R18_RowsOfARetiredGenerationAreNotBroughtBack) {
  CreateAndFill(30);
  const Hlc old_generation = a_->Table("shop", "orders")->created_time();
  ASSERT_OK(a_->catalog().DropTable("shop", "orders"));
  ASSERT_OK(a_->catalog().CreateTable(Spec("shop", "orders", {"name"})));
  ASSERT_OK(a_->records().Write("shop", "orders", json::array({{{"id", "new"}, {"name", "n"}}}),
                                catalog::WriteMode::kUpsert));
  ExpectConverged();
  ASSERT_EVENTUALLY([&] {
    ASSERT_EQ(b_->Table("shop", "orders")->created_time(),
              a_->Table("shop", "orders")->created_time());
  });
  WaitVerifiable();
  b_->Isolate();
  StoredRecord dead = Row(*b_, b_->node_hlc_now(), "b", {{"id", "k3"}, {"name", "dead"}});
  dead.set_row_generation(old_generation);  // written to the generation the drop retired
  RawPut(*b_, "k3", dead);
  b_->Start();
  WaitVerifiable();
  PeerVerify r = Verify();
  ASSERT_OK(r.status);
  EXPECT_EQ(r.tables[0].repaired_here, 0u);
  EXPECT_EQ(r.tables[0].unrepaired, 1u);
  EXPECT_FALSE(r.tables[0].in_sync());
  EXPECT_THAT(LiveKeys(*a_, "shop", "orders"), ::testing::ElementsAre("\"new\""));
}

// Test 2, concurrent generations (C8): two nodes that created a name while apart, with no
// marker between them, hold one table under two generations. Verify compares it by name and
// finds it in sync, rather than skipping it as another generation.
TEST_F(AntiEntropyTest, R18_TwoGenerationsNoMarkerPartsAreOneTable) {
  b_->Route(*a_);  // b's rows reach a over b's own link
  b_->Isolate();
  ASSERT_OK(a_->catalog().CreateTable(Spec("shop", "orders", {"name"})));
  ASSERT_OK(a_->records().Write("shop", "orders", json::array({{{"id", "a0"}, {"name", "x"}}}),
                                catalog::WriteMode::kUpsert));
  ASSERT_OK(b_->catalog().CreateTable(Spec("shop", "orders", {"name"})));
  ASSERT_OK(b_->records().Write("shop", "orders", json::array({{{"id", "b0"}, {"name", "y"}}}),
                                catalog::WriteMode::kUpsert));
  b_->Start();
  ASSERT_EVENTUALLY([&] {
    ASSERT_EQ(TableRows(*a_, "shop", "orders").size(), 2u);
    ASSERT_EQ(TableRows(*a_, "shop", "orders"), TableRows(*b_, "shop", "orders"));
  });
  ASSERT_NE(a_->Table("shop", "orders")->created_time(),
            b_->Table("shop", "orders")->created_time());
  WaitVerifiable();
  PeerVerify r = Verify();
  ASSERT_OK(r.status);
  ASSERT_EQ(r.tables.size(), 1u);
  EXPECT_EQ(r.tables[0].skipped, "");
  EXPECT_EQ(r.tables[0].rows_compared, 2u);
  EXPECT_TRUE(r.tables[0].in_sync());
}

// Test 3: verify while writers run on both nodes repairs nothing: rows replication is still
// delivering are not divergence.
TEST_F(AntiEntropyTest, R18_InFlightRowsAreNotRepaired) {
  CreateAndFill(200);
  WaitVerifiable();
  std::atomic<bool> stop{false};
  auto writer = [&](TestNode* n, const std::string& prefix) {
    for (int i = 0; !stop.load(); ++i) {
      json batch = json::array();
      for (int j = 0; j < 20; ++j) {
        batch.push_back(
            {{"id", absl::StrCat(prefix, (i * 20 + j) % 500)}, {"name", absl::StrCat(i)}});
      }
      ASSERT_OK(n->records().Write("shop", "orders", batch, catalog::WriteMode::kUpsert));
    }
  };
  std::thread wa(writer, a_.get(), "a"), wb(writer, b_.get(), "b");
  // Until some verify has met rows in flight (differing leaves), a few rounds at least.
  uint64_t compared_differences = 0;
  for (int round = 0; round < 3 || (compared_differences == 0 && round < 30); ++round) {
    PeerVerify r = Verify();
    ASSERT_OK(r.status);
    // A repair is allowed only when replication stalled for seconds (a loaded machine); the
    // rows in flight themselves are never repaired.
    EXPECT_TRUE(Repaired(r) == 0 || r.tables[0].repaired_behind_replication)
        << "round " << round << ": " << Repaired(r);
    compared_differences += r.tables[0].differing_leaves;
  }
  stop = true;
  wa.join();
  wb.join();
  EXPECT_GT(compared_differences, 0u) << "the verifies never saw rows in flight";
  ExpectConverged();
  PeerVerify last = Verify();
  ASSERT_OK(last.status);
  EXPECT_EQ(Repaired(last), 0u);
  EXPECT_EQ(last.tables[0].differing_leaves, 0u);
}

// Test 4's core (the process-level restore test is cluster-tests' anti_entropy_test): with
// replication paused, verify alone brings a node the rows it lacks, once the cursor that
// would deliver them has stopped moving.
TEST_F(AntiEntropyTest, R18_RepairsWhileReplicationIsPaused) {
  CreateAndFill(100);
  WaitVerifiable();
  a_->faults().Set(fault_points::kReplSendBatch, FaultAction::Block());
  json batch = json::array();
  for (int i = 0; i < 10; ++i) batch.push_back({{"id", absl::StrCat("late", i)}, {"name", "y"}});
  ASSERT_OK(a_->records().Write("shop", "orders", batch, catalog::WriteMode::kUpsert));
  ASSERT_TRUE(a_->faults().WaitUntilBlocked(fault_points::kReplSendBatch, absl::Seconds(30)));
  PeerVerify r = Verify();
  ASSERT_OK(r.status);
  EXPECT_EQ(r.tables[0].repaired_there, 10u);
  EXPECT_TRUE(r.tables[0].repaired_behind_replication);
  EXPECT_EQ(TableRows(*a_, "shop", "orders"), TableRows(*b_, "shop", "orders"));
  a_->faults().Release(fault_points::kReplSendBatch);
  ExpectConverged();
  PeerVerify again = Verify();
  ASSERT_OK(again.status);
  EXPECT_EQ(Repaired(again), 0u);
}

// Test 5: node-local and excluded tables are skipped; a drop during a verify ends that
// table's comparison cleanly (C9); a failed repair is finished by the next verify.
TEST_F(AntiEntropyTest, R18_SkipsLocalTablesAndStopsAtADrop) {
  CreateAndFill(100);
  ASSERT_OK(a_->catalog().CreateTable(Spec("shop", "mine", {"name"}, /*replicate=*/false)));
  WaitVerifiable();
  PeerVerify all = a_->cluster().anti_entropy()->Verify("b", "shop");
  ASSERT_OK(all.status);
  ASSERT_EQ(all.tables.size(), 2u);
  EXPECT_EQ(all.tables[0].table, "mine");
  EXPECT_THAT(all.tables[0].skipped, ::testing::HasSubstr("node-local"));
  EXPECT_TRUE(all.tables[1].skipped.empty());

  // A failed repair (injected) leaves the difference for the next verify.
  b_->Isolate();
  RawDelete(*b_, "k5");
  b_->Start();
  WaitVerifiable();
  a_->faults().Set(fault_points::kVerifyBeforeRepair,
                   FaultAction::ReturnError(absl::InternalError("injected")));
  PeerVerify failed = Verify();
  EXPECT_FALSE(failed.status.ok());
  EXPECT_EQ(Repaired(failed), 0u);
  a_->faults().ClearAll();
  PeerVerify fixed = Verify();
  ASSERT_OK(fixed.status);
  EXPECT_EQ(Repaired(fixed), 1u);
  ExpectConverged();

  // A drop while b scans for a's digest request: the table's comparison ends, no error.
  // Released once the drop closed the generation's gate (its step 2), which is what the scan
  // polls: the snapshot loses the table a step earlier, and a scan released between the two
  // could finish its 100 rows before the gate closes.
  catalog::TableRef orders = b_->Table("shop", "orders");
  ASSERT_NE(orders, nullptr);
  b_->faults().Set(fault_points::kScanRow, FaultAction::Block().OnNth(5));
  auto verify = std::async(std::launch::async, [&] { return Verify(); });
  ASSERT_TRUE(b_->faults().WaitUntilBlocked(fault_points::kScanRow, absl::Seconds(30)));
  auto drop =
      std::async(std::launch::async, [&] { return b_->catalog().DropTable("shop", "orders"); });
  ASSERT_EVENTUALLY([&] { ASSERT_TRUE(orders->state()->dropping()); });
  b_->faults().Release(fault_points::kScanRow);
  PeerVerify dropped = verify.get();
  ASSERT_OK(dropped.status);
  ASSERT_EQ(dropped.tables.size(), 1u);
  EXPECT_THAT(dropped.tables[0].skipped, ::testing::HasSubstr("dropped"));
  b_->faults().ClearAll();
  ASSERT_OK(drop.get());
}

// C9 with decision 156: a drop does not wait for a verify's pace. b's scans may read 8 rows a
// second, so the second chunk of its digest scan waits 32 s in the pace, holding the
// generation's admission token, past the drop's 10 s drain budget; a drop of the table on b
// still drains at once.
TEST_F(AntiEntropyTest, C9_ADropDoesNotWaitForAVerifysPace) {
  CreateAndFill(3 * static_cast<int>(catalog::DigestScanOptions::kPaceRows));
  b_->Isolate();
  b_->set_verify_rate(8);
  b_->Start();
  WaitVerifiable();
  catalog::TableRef orders = b_->Table("shop", "orders");
  ASSERT_NE(orders, nullptr);
  auto verify = std::async(std::launch::async, [&] { return Verify(); });
  // b's scan has taken its first chunk (granted at once) and waits for its second.
  ASSERT_EVENTUALLY([&] {
    ASSERT_GE(b_->cluster().anti_entropy()->rows_paced(),
              2 * catalog::DigestScanOptions::kPaceRows);
  });
  ASSERT_OK(b_->catalog().DropTable("shop", "orders"));  // the drain budget is 10 s
  PeerVerify dropped = verify.get();
  ASSERT_OK(dropped.status);
  ASSERT_EQ(dropped.tables.size(), 1u);
  EXPECT_THAT(dropped.tables[0].skipped, ::testing::HasSubstr("dropped"));
}

// Resumable: a verify of a database that failed at one table (here an injected failure of
// its repair) starts there the next time, then goes round the others.
TEST_F(AntiEntropyTest, R18_AFailedRunResumesAtItsTable) {
  CreateAndFill(20);
  ASSERT_OK(a_->catalog().CreateTable(Spec("shop", "aardvarks", {"name"})));
  ASSERT_OK(a_->catalog().CreateTable(Spec("shop", "zebras", {"name"})));
  ASSERT_EVENTUALLY([&] { ASSERT_NE(b_->Table("shop", "zebras"), nullptr); });
  WaitVerifiable();
  b_->Isolate();
  RawDelete(*b_, "k7");  // shop.orders differs
  b_->Start();
  WaitVerifiable();
  a_->faults().Set(fault_points::kVerifyBeforeRepair,
                   FaultAction::ReturnError(absl::InternalError("injected")));
  PeerVerify failed = a_->cluster().anti_entropy()->Verify("b", "shop");
  EXPECT_FALSE(failed.status.ok());
  ASSERT_EQ(failed.tables.size(), 3u) << "aardvarks, orders fails, zebras all the same";
  EXPECT_EQ(failed.resume_from, "orders");
  EXPECT_TRUE(failed.tables[2].in_sync());
  a_->faults().ClearAll();
  PeerVerify resumed = a_->cluster().anti_entropy()->Verify("b", "shop");
  ASSERT_OK(resumed.status);
  ASSERT_EQ(resumed.tables.size(), 3u);
  EXPECT_EQ(resumed.tables[0].table, "orders");
  EXPECT_EQ(resumed.tables[0].repaired_there, 1u);
  EXPECT_EQ(resumed.tables[1].table, "zebras");
  EXPECT_EQ(resumed.tables[2].table, "aardvarks");
  EXPECT_TRUE(resumed.resume_from.empty());
}

// R11: a table the route excludes is neither compared nor repaired, from either side.
TEST_F(AntiEntropyTest, R18_SkipsExcludedTables) {
  TestNode c("c", dir_.Sub("c"), "s3cret"), d("d", dir_.Sub("d"), "s3cret");
  c.Start();
  d.Start();
  Exclusions exclude;
  exclude.Add("shop", "private");
  c.Route(d, exclude);
  ASSERT_OK(c.catalog().CreateTable(Spec("shop", "orders", {"name"})));
  ASSERT_OK(c.catalog().CreateTable(Spec("shop", "private", {"name"})));
  ASSERT_OK(d.catalog().CreateTable(Spec("shop", "private", {"name"})));
  ASSERT_OK(c.records().Write("shop", "private", json::array({{{"id", "p1"}, {"name", "c"}}}),
                              catalog::WriteMode::kUpsert));
  ASSERT_EVENTUALLY([&] {
    ASSERT_THAT(c.cluster().VerifyPeers(), ::testing::ElementsAre("d"));
    ASSERT_NE(d.Table("shop", "orders"), nullptr);
  });
  PeerVerify r = c.cluster().anti_entropy()->Verify("d", "shop");
  ASSERT_OK(r.status);
  ASSERT_EQ(r.tables.size(), 2u);
  EXPECT_EQ(r.tables[0].table, "orders");
  EXPECT_TRUE(r.tables[0].skipped.empty());
  EXPECT_EQ(r.tables[1].table, "private");
  EXPECT_THAT(r.tables[1].skipped, ::testing::HasSubstr("excluded"));
  EXPECT_TRUE(LiveKeys(d, "shop", "private").empty()) << "nothing of it reached d";

  // The callee's side: e's route to f excludes nothing, f's route to e excludes the table.
  TestNode e("e", dir_.Sub("e"), "s3cret"), f("f", dir_.Sub("f"), "s3cret");
  e.Start();
  f.Start();
  e.Route(f);
  f.Route(e, exclude);
  ASSERT_OK(e.catalog().CreateTable(Spec("shop", "private", {"name"})));
  ASSERT_OK(f.catalog().CreateTable(Spec("shop", "private", {"name"})));
  ASSERT_OK(e.records().Write("shop", "private", json::array({{{"id", "p1"}, {"name", "e"}}}),
                              catalog::WriteMode::kUpsert));
  ASSERT_EVENTUALLY([&] { ASSERT_THAT(e.cluster().VerifyPeers(), ::testing::Contains("f")); });
  PeerVerify theirs = e.cluster().anti_entropy()->Verify("f", "shop", "private");
  ASSERT_OK(theirs.status);
  ASSERT_EQ(theirs.tables.size(), 1u);
  EXPECT_THAT(theirs.tables[0].skipped, ::testing::HasSubstr("excluded by its route"));
  EXPECT_TRUE(LiveKeys(f, "shop", "private").empty()) << "nothing of it reached f";
}

}  // namespace
}  // namespace cairn::replication
