// Anti-entropy digests (SPEC R18): the tree, the stamp diff, and the scans that fill them.
#include "catalog/table_digest.h"

#include <algorithm>
#include <atomic>
#include <future>
#include <random>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/value_codec.h"
#include "tests/catalog/catalog_fixture.h"

namespace cairn::catalog {
namespace {

using ::cairn::testing::HasErrorCode;
using nlohmann::json;
using storage::v1::ChangeEntry;

std::string Key(const json& pk) {
  std::string key;
  EXPECT_OK(storage::AppendPrimaryKey(pk, &key));
  return key;
}

RowStamp Stamp(int id, Hlc version, const std::string& origin = "a", bool deleted = false) {
  RowStamp s;
  s.key = Key(id);
  s.version = version;
  s.origin = origin;
  s.row_generation = 100;
  s.deleted = deleted;
  return s;
}

std::vector<RowStamp> Sorted(std::vector<RowStamp> v) {
  std::sort(v.begin(), v.end(), [](const RowStamp& a, const RowStamp& b) { return a.key < b.key; });
  return v;
}

std::vector<std::string> Keys(const std::vector<RowStamp>& v) {
  std::vector<std::string> out;
  for (const RowStamp& s : v) out.push_back(s.key);
  return out;
}

// Every node and every build must compute the same hashes, or digests never match: the values
// are pinned (SHA-256, catalog/table_digest.h).
TEST(TableDigestTest, HashesArePinned) {
  RowStamp s;
  s.key = "k";
  s.version = 1;
  s.origin = "a";
  s.row_generation = 2;
  // python3: sha256(BE32(1) 'k' BE64(1) BE32(1) 'a' BE64(2) 0x00)[:8], sha256('k')[:2]
  EXPECT_EQ(RowHash(s), 0x4ba98b03c6f26bc2u);
  EXPECT_EQ(LeafOf("k", 4), 0x8254u);
}

TEST(TableDigestTest, EveryFieldOfTheStampCounts) {
  const RowStamp base = Stamp(1, 10);
  RowStamp s = base;
  s.key = Key(2);
  EXPECT_NE(RowHash(s), RowHash(base));
  s = base;
  s.version = 11;
  EXPECT_NE(RowHash(s), RowHash(base));
  s = base;
  s.origin = "b";
  EXPECT_NE(RowHash(s), RowHash(base));
  s = base;
  s.row_generation = 101;
  EXPECT_NE(RowHash(s), RowHash(base));
  s = base;
  s.deleted = true;
  EXPECT_NE(RowHash(s), RowHash(base));
}

// A deeper tree refines a shallower one: a key's leaf at depth d is the parent of its leaf at
// depth d + 1, so levels of one tree are the trees of smaller depths.
TEST(TableDigestTest, LevelsAreSumsOfLeavesInAnyOrder) {
  const uint64_t seed = testing::TestSeed();
  std::mt19937_64 rng(seed);
  std::vector<RowStamp> rows;
  for (int i = 0; i < 500; ++i) rows.push_back(Stamp(i, rng() % 1000 + 1));
  DigestTree forward(3), backward(3), shallow(2);
  for (const RowStamp& r : rows) forward.Add(r);
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) backward.Add(*it);
  for (const RowStamp& r : rows) shallow.Add(r);
  EXPECT_EQ(forward.leaves(), backward.leaves());
  EXPECT_EQ(forward.rows(), 500u);
  EXPECT_EQ(forward.Level(3), forward.leaves());
  EXPECT_EQ(forward.Level(2), shallow.leaves());
  EXPECT_EQ(forward.Level(0), std::vector<uint64_t>{forward.root()});
  EXPECT_EQ(forward.root(), shallow.root());
  for (const RowStamp& r : rows) EXPECT_EQ(LeafOf(r.key, 3) >> 4, LeafOf(r.key, 2));
}

TEST(TableDigestTest, DepthKeepsLeavesSmallUpToItsBound) {
  EXPECT_EQ(DepthFor(0), 1);
  EXPECT_EQ(DepthFor(16 * 16), 1);
  EXPECT_EQ(DepthFor(16 * 16 + 1), 2);
  EXPECT_EQ(DepthFor(1'000'000), 4);
  EXPECT_EQ(DepthFor(1'000'000'000), kMaxDigestDepth);
  EXPECT_EQ(DigestTree(kMaxDigestDepth).leaf_count(), 65536u);
}

// D5 decides which way each differing key moves.
TEST(TableDigestTest, DiffMovesTheNewerRowEachWay) {
  std::vector<RowStamp> local =
      Sorted({Stamp(1, 10), Stamp(2, 20), Stamp(3, 30), Stamp(4, 40), Stamp(6, 60, "a")});
  std::vector<RowStamp> remote = Sorted(
      {Stamp(2, 25), Stamp(3, 30), Stamp(4, 35, "b", true), Stamp(5, 50), Stamp(6, 60, "b")});
  StampDiff d = DiffStamps(local, remote, /*settled_before=*/0);
  // 1 only here; 4 newer here (a newer row beats an older tombstone).
  EXPECT_EQ(Keys(d.push), Keys(Sorted({Stamp(1, 10), Stamp(4, 40)})));
  // 2 newer there; 5 only there; 6: same version, origin "b" > "a" (the D5 tie-break).
  EXPECT_EQ(Keys(d.pull), Keys(Sorted({Stamp(2, 25), Stamp(5, 50), Stamp(6, 60)})));
  EXPECT_EQ(d.conflicts, 0u);
}

TEST(TableDigestTest, SameWriteWithOtherStampsIsAConflictNotAMove) {
  RowStamp other = Stamp(1, 10);
  other.row_generation = 99;
  StampDiff d = DiffStamps({Stamp(1, 10)}, {other}, 0);
  EXPECT_TRUE(d.push.empty());
  EXPECT_TRUE(d.pull.empty());
  EXPECT_EQ(d.conflicts, 1u);
}

// D5: tombstones are purged by each node's own clock, so an old one may be gone on one node
// and not the other. Gone and old tombstone are the same; but an old tombstone still beats an
// older live row (never resurrect).
TEST(TableDigestTest, SettledTombstonesAreNotMovedUnlessTheyBeatALiveRow) {
  const Hlc settled = 1000;
  StampDiff d = DiffStamps({Stamp(1, 10, "a", true)}, {}, settled);
  EXPECT_TRUE(d.push.empty());
  d = DiffStamps({}, {Stamp(1, 10, "a", true)}, settled);
  EXPECT_TRUE(d.pull.empty());
  d = DiffStamps({Stamp(1, 10, "a", true)}, {Stamp(1, 5, "a", true)}, settled);
  EXPECT_TRUE(d.push.empty());
  d = DiffStamps({Stamp(1, 10, "a", true)}, {Stamp(1, 5)}, settled);
  EXPECT_EQ(d.push.size(), 1u);
  d = DiffStamps({Stamp(1, 5)}, {Stamp(1, 10, "a", true)}, settled);
  EXPECT_EQ(d.pull.size(), 1u);
  // Not settled yet: it moves.
  d = DiffStamps({Stamp(1, 2000, "a", true)}, {}, settled);
  EXPECT_EQ(d.push.size(), 1u);
}

class DigestScanTest : public CatalogFixture {
 protected:
  void SetUp() override {
    CatalogFixture::SetUp();
    LocalNodeOptions o;
    o.name = "node-b";
    auto b = testing::LocalNode::Open(dir_b_.path(), o);
    ASSERT_OK(b);
    b_ = std::move(*b);
    ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
    ASSERT_OK(b_->catalog->CreateTable(DynamicSpec("db", "t")));
  }
  TableRef LiveOn(LocalNode& node) {
    auto t = node.catalog->Snapshot()->FindTable("db", "t");
    return t.ok() ? *t : nullptr;
  }
  // Every stored row of a's table as peer entries, bodies included.
  std::vector<ChangeEntry> RowsOfA() {
    std::vector<ChangeEntry> out;
    EXPECT_OK(records().ScanStored(
        "db", "t", [&](const json& key, const storage::v1::StoredRecord& row, const json&) {
          ChangeEntry e;
          e.set_table("t");
          e.set_op(row.deleted() ? storage::v1::DELETE : storage::v1::PUT);
          e.set_key(Key(key));
          e.set_version(row.version());
          e.set_origin(row.origin());
          e.set_row_generation(row.row_generation());
          e.set_json(row.json());
          out.push_back(e);
        }));
    return out;
  }
  absl::StatusOr<DigestTree> DigestOf(LocalNode& node, int depth = 2) {
    return node.records->Digest(LiveOn(node), depth, {});
  }

  testing::TempDir dir_b_;
  std::unique_ptr<LocalNode> b_;
};

// The same rows give the same digest on two nodes, whatever order they arrived in and however
// their bodies' keys are ordered; one newer row changes exactly one leaf.
TEST_F(DigestScanTest, SameRowsSameDigestOneRowOneLeaf) {
  json batch = json::array();
  for (int i = 0; i < 300; ++i) batch.push_back({{"id", i}, {"x", i}, {"y", "v"}});
  ASSERT_OK(records().Write("db", "t", batch, WriteMode::kInsert));
  ASSERT_OK(records().Delete("db", "t", json::array({3, 4, 5})));
  std::vector<ChangeEntry> rows = RowsOfA();
  std::reverse(rows.begin(), rows.end());
  for (ChangeEntry& e : rows) {
    if (e.op() == storage::v1::PUT) {  // same fields, other order
      json body = json::parse(e.json());
      e.set_json(absl::StrCat(R"({"y":)", body["y"].dump(), R"(,"x":)", body["x"].dump(),
                              R"(,"id":)", body["id"].dump(), "}"));
    }
  }
  ASSERT_OK(b_->records->ApplyPeerEntries("db", rows, nullptr));

  auto da = DigestOf(*node_);
  auto db = DigestOf(*b_);
  ASSERT_OK(da);
  ASSERT_OK(db);
  EXPECT_EQ(da->rows(), 300u);
  EXPECT_EQ(da->root(), db->root());
  EXPECT_EQ(da->leaves(), db->leaves());

  ASSERT_OK(records().Write("db", "t", json::array({{{"id", 7}, {"x", 70}}}), WriteMode::kUpsert));
  da = DigestOf(*node_);
  ASSERT_OK(da);
  std::vector<uint32_t> differing;
  for (uint32_t i = 0; i < da->leaf_count(); ++i) {
    if (da->leaves()[i] != db->leaves()[i]) differing.push_back(i);
  }
  ASSERT_EQ(differing, std::vector<uint32_t>{LeafOf(Key(7), 2)});

  // The stamps of that leaf say which key moves, and which way.
  auto here = records().LeafStamps(LiveOn(*node_), 2, differing, {}, 1000, {});
  auto there = b_->records->LeafStamps(LiveOn(*b_), 2, differing, {}, 1000, {});
  ASSERT_OK(here);
  ASSERT_OK(there);
  StampDiff d = DiffStamps(here->stamps, there->stamps, 0);
  EXPECT_TRUE(d.pull.empty());
  ASSERT_EQ(d.push.size(), 1u);
  EXPECT_EQ(d.push[0].key, Key(7));
}

// Settled tombstones are left out of the digest (D5 purges them per node).
TEST_F(DigestScanTest, SettledTombstonesAreLeftOut) {
  ASSERT_OK(
      records().Write("db", "t", json::array({{{"id", 1}}, {{"id", 2}}}), WriteMode::kInsert));
  ASSERT_OK(records().Delete("db", "t", json::array({2})));
  auto all = records().Digest(LiveOn(*node_), 1, {});
  ASSERT_OK(all);
  EXPECT_EQ(all->rows(), 2u);
  DigestScanOptions o;
  o.settled_before = kMaxHlc;
  auto settled = records().Digest(LiveOn(*node_), 1, o);
  ASSERT_OK(settled);
  EXPECT_EQ(settled->rows(), 1u);
}

// Pages of leaf stamps resume after their last key and together give every stamp of the
// leaves, in key order, settled tombstones included.
TEST_F(DigestScanTest, LeafStampsPageInKeyOrder) {
  json batch = json::array();
  for (int i = 0; i < 200; ++i) batch.push_back({{"id", i}});
  ASSERT_OK(records().Write("db", "t", batch, WriteMode::kInsert));
  ASSERT_OK(records().Delete("db", "t", json::array({10, 11})));
  const std::vector<uint32_t> leaves = {0, 3, 5, 8, 13};
  DigestScanOptions o;
  o.settled_before = kMaxHlc;
  std::vector<std::string> paged;
  std::string after;
  for (int pages = 0;; ++pages) {
    ASSERT_LT(pages, 100);
    auto page = records().LeafStamps(LiveOn(*node_), 1, leaves, after, 7, o);
    ASSERT_OK(page);
    ASSERT_LE(page->stamps.size(), 7u);
    for (const RowStamp& s : page->stamps) paged.push_back(s.key);
    if (!page->more) break;
    after = page->stamps.back().key;
  }
  std::vector<std::string> expected;
  for (int i = 0; i < 200; ++i) {
    const std::string k = Key(i);
    if (std::find(leaves.begin(), leaves.end(), LeafOf(k, 1)) != leaves.end()) {
      expected.push_back(k);
    }
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(paged, expected);
}

// C9: a drop cancels a running digest scan; the scan never holds the drop's drain.
TEST_F(DigestScanTest, C9_DropCancelsADigestScan) {
  json batch = json::array();
  for (int i = 0; i < 2000; ++i) batch.push_back({{"id", i}});
  ASSERT_OK(records().Write("db", "t", batch, WriteMode::kInsert));
  TableRef def = LiveOn(*node_);
  std::promise<void> entered, resume;
  std::shared_future<void> resumed = resume.get_future().share();
  std::atomic<int> paces{0};
  auto let_go = absl::MakeCleanup([&] { resume.set_value(); });
  DigestScanOptions o;
  o.pace = [&](uint64_t, absl::FunctionRef<absl::Status()>) {
    if (paces++ == 0) {
      entered.set_value();
      resumed.wait();
    }
    return absl::OkStatus();
  };
  auto scan = std::async(std::launch::async, [&] { return records().Digest(def, 2, o); });
  ASSERT_EQ(entered.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  auto drop = std::async(std::launch::async, [&] { return catalog().DropTable("db", "t"); });
  WaitUntilDropping(def);
  std::move(let_go).Invoke();
  EXPECT_THAT(scan.get(), HasErrorCode(ErrorCode::kTableDropping));
  EXPECT_EQ(paces.load(), 1);
  ASSERT_OK(drop.get());
  EXPECT_THAT(records().Digest(def, 2, {}), HasErrorCode(ErrorCode::kTableDropping));
}

// The pace callback can end a scan (a cancelled call, a node shutting down).
TEST_F(DigestScanTest, PaceCanCancelAScan) {
  json batch = json::array();
  for (int i = 0; i < 1000; ++i) batch.push_back({{"id", i}});
  ASSERT_OK(records().Write("db", "t", batch, WriteMode::kInsert));
  DigestScanOptions o;
  uint64_t paced = 0;
  o.pace = [&](uint64_t rows, absl::FunctionRef<absl::Status()>) {
    paced += rows;
    return paced > 300 ? absl::CancelledError("enough") : absl::OkStatus();
  };
  EXPECT_THAT(records().Digest(LiveOn(*node_), 2, o),
              testing::StatusIsCode(absl::StatusCode::kCancelled));
  EXPECT_EQ(paced, 2 * DigestScanOptions::kPaceRows);
}

// Point reads of a repair: bodies included, nothing for an absent key.
TEST_F(DigestScanTest, ReadStoredReadsBodies) {
  ASSERT_OK(records().Write("db", "t", json::array({{{"id", 1}, {"x", 2}}}), WriteMode::kInsert));
  auto rows = records().ReadStored(LiveOn(*node_), {Key(1), Key(2)});
  ASSERT_OK(rows);
  ASSERT_EQ(rows->size(), 2u);
  ASSERT_TRUE((*rows)[0].has_value());
  EXPECT_EQ(json::parse((*rows)[0]->json())["x"], 2);
  EXPECT_FALSE((*rows)[1].has_value());
}

}  // namespace
}  // namespace cairn::catalog
