// Record replication between in-process nodes over gRPC on loopback (SPEC R5-R8, R11, R12,
// R14, D5, C6, C11): change streams with durable cursors, full copy, relay and catch-up.
// Nodes converge when every node holds the same rows — key, version, origin, row generation
// and body — of every replicated table (TableRows).
#include <functional>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fault_points.h"
#include "replication/record_stream.h"
#include "replication/schema_sync.h"
#include "tests/replication/test_node.h"
#include "tests/testing/testing.h"

namespace cairn::replication {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using json = nlohmann::json;

class RecordReplicationTest : public ::testing::Test {
 protected:
  std::unique_ptr<TestNode> NewNode(const std::string& name) {
    auto n = std::make_unique<TestNode>(name, dir_.Sub(name), "s3cret");
    n->Start();
    return n;
  }
  // One route, a to b: the link is symmetric, so records flow both ways.
  static void Link(TestNode* a, TestNode* b, Exclusions exclude = {}) {
    a->Route(*b, std::move(exclude));
  }
  static void Upsert(TestNode* n, const std::string& db, const std::string& table,
                     const json& records) {
    ASSERT_OK(n->records().Write(db, table, records, catalog::WriteMode::kUpsert));
  }
  static json Rows(const std::string& prefix, int from, int to, const std::string& value) {
    json out = json::array();
    for (int i = from; i < to; ++i) {
      out.push_back({{"id", absl::StrCat(prefix, i)}, {"name", value}});
    }
    return out;
  }
  // Every node holds exactly what the first holds of db.table, and `count` live rows.
  static void ExpectConverged(const std::vector<TestNode*>& nodes, const std::string& db,
                              const std::string& table, size_t count) {
    ASSERT_EVENTUALLY([&] {
      const std::vector<std::string> want = TableRows(*nodes[0], db, table);
      for (TestNode* n : nodes) {
        ASSERT_EQ(LiveKeys(*n, db, table).size(), count) << n->name();
        ASSERT_EQ(TableRows(*n, db, table), want)
            << n->name() << " differs from " << nodes[0]->name();
      }
    });
  }
  // `a` links to `b`, creates shop.orders and writes keys k<from>..k<to - 1>; both hold them.
  static void LinkWithOrders(TestNode* a, TestNode* b, int from, int to) {
    Link(a, b);
    ASSERT_OK(a->catalog().CreateTable(Spec("shop", "orders", {"name"})));
    Upsert(a, "shop", "orders", Rows("k", from, to, "x"));
    ExpectConverged({a, b}, "shop", "orders", static_cast<size_t>(to - from));
  }
  // Waits until the wall clock is past `t` (an HLC): a stamp taken afterwards on any node of
  // this process is greater, whatever the nodes' logical counters.
  static void WaitPast(Hlc t) {
    ASSERT_EVENTUALLY([&] {
      ASSERT_GT(static_cast<uint64_t>(absl::ToUnixMillis(absl::Now())),
                HybridClock::PhysicalMs(t) + 1);
    });
  }
  // (table, key, version, origin) of every entry of the node's log of `db`.
  static std::vector<std::string> LogEntries(TestNode& n, const std::string& db) {
    std::vector<std::string> out;
    const std::string prefix = storage::LogPrefix(db);
    auto it = n.local().engine->NewIterator(storage::Cf::kChangeLog, nullptr,
                                            storage::PrefixSuccessor(prefix));
    for (it->Seek(prefix); it->Valid(); it->Next()) {
      storage::v1::ChangeEntry e;
      e.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()));
      out.push_back(
          absl::StrCat(e.table(), "|", absl::CEscape(e.key()), "|", e.version(), "|", e.origin()));
    }
    return out;
  }
  // Links every pair of the three, creates shop.orders {name} on `a` and waits until the
  // others have it.
  void LinkAllAndCreateOrders(TestNode* a, TestNode* b, TestNode* c) {
    Link(a, b);
    Link(b, c);
    Link(c, a);
    ASSERT_OK(a->catalog().CreateTable(Spec("shop", "orders", {"name"})));
    ASSERT_EVENTUALLY([&] {
      ASSERT_NE(b->Table("shop", "orders"), nullptr);
      ASSERT_NE(c->Table("shop", "orders"), nullptr);
    });
  }
  // R14's setting: A creates shop.orders and writes 20 rows that B takes, then drops it while
  // B is away (`spread`, if given, runs while A is up with the marker); C, which never saw
  // either, creates the name again after the drop with 30 rows and links to B. B and C merge
  // (no marker between their generations): B's old generation holds C's newer rows, and C
  // holds B's old ones. A is left isolated; the marker's stamp is returned in `dropped`.
  void MergeAGenerationOlderThanADrop(TestNode* a, TestNode* b, TestNode* c, Hlc* dropped,
                                      const std::function<void()>& spread = {}) {
    c->Isolate();
    Link(a, b);
    ASSERT_OK(a->catalog().CreateTable(Spec("shop", "orders", {"name"})));
    Upsert(a, "shop", "orders", Rows("old-", 0, 20, "a"));
    ExpectConverged({a, b}, "shop", "orders", 20);

    b->Isolate();
    ASSERT_OK(a->catalog().DropTable("shop", "orders"));
    *dropped = a->catalog().Snapshot()->MarkerFor("shop", "orders");
    ASSERT_GT(*dropped, 0u);
    if (spread) {
      ASSERT_NO_FATAL_FAILURE(spread());
    }
    a->Isolate();
    WaitPast(*dropped);

    c->Start();
    ASSERT_OK(c->catalog().CreateTable(Spec("shop", "orders", {"name"})));  // newer than it
    Upsert(c, "shop", "orders", Rows("new-", 0, 30, "c"));
    Link(b, c);
    b->Start();
    ASSERT_EVENTUALLY([&] {
      ASSERT_EQ(LiveKeys(*b, "shop", "orders").size(), 50u);
      ASSERT_EQ(LiveKeys(*c, "shop", "orders").size(), 50u);
    });
    ASSERT_LT(b->Table("shop", "orders")->created_time(), *dropped);
  }
  static void ExpectNoDuplicateEntries(TestNode& n, const std::string& db) {
    std::vector<std::string> entries = LogEntries(n, db);
    std::sort(entries.begin(), entries.end());
    EXPECT_EQ(std::adjacent_find(entries.begin(), entries.end()), entries.end())
        << n.name() << " logged an entry twice (R6)";
  }

  testing::TempDir dir_;
};

// Decision 156: a peer's batch applied is foreground work, which the node's verifies and strips
// give way to as they do to its clients' requests.
TEST_F(RecordReplicationTest, APeersBatchAppliedMarksTheNodeBusy) {
  auto a = NewNode("a"), b = NewNode("b");
  ASSERT_NO_FATAL_FAILURE(LinkWithOrders(a.get(), b.get(), 0, 10));
  const absl::Time before = b->local().activity.last();
  EXPECT_GT(before, absl::UnixEpoch()) << "b applied a's first rows";
  // Each round writes on a again, so that one of b's applies falls past the 1 ms resolution.
  int next = 10;
  ASSERT_EVENTUALLY([&] {
    Upsert(a.get(), "shop", "orders", Rows("k", next, next + 1, "x"));
    ++next;
    ASSERT_GT(b->local().activity.last(), before);
  });
}

// R5, R8, D5: every node of three writes, deletes and overwrites a shared key space at once;
// all end with the same rows, versions and origins.
TEST_F(RecordReplicationTest, R5_WritesOnEveryNodeOfThreeConverge) {
  const uint64_t seed = testing::TestSeed();
  auto a = NewNode("a"), b = NewNode("b"), c = NewNode("c");
  ASSERT_NO_FATAL_FAILURE(LinkAllAndCreateOrders(a.get(), b.get(), c.get()));
  auto writer = [&](TestNode* n, uint64_t s) {
    std::mt19937_64 rng(s);
    for (int round = 0; round < 60; ++round) {
      json batch = json::array();
      for (int i = 0; i < 10; ++i) {
        batch.push_back({{"id", absl::StrCat("k", rng() % 200)},
                         {"name", absl::StrCat(n->name(), "-", round)}});
      }
      EXPECT_OK(n->records().Write("shop", "orders", batch, catalog::WriteMode::kUpsert));
      if (round % 7 == 0) {
        EXPECT_OK(
            n->records().Delete("shop", "orders", json::array({absl::StrCat("k", rng() % 200)})));
      }
    }
  };
  std::thread ta(writer, a.get(), seed), tb(writer, b.get(), seed + 1),
      tc(writer, c.get(), seed + 2);
  ta.join();
  tb.join();
  tc.join();
  ASSERT_EVENTUALLY([&] {
    const std::vector<std::string> want = TableRows(*a, "shop", "orders");
    ASSERT_FALSE(want.empty());
    ASSERT_EQ(TableRows(*b, "shop", "orders"), want);
    ASSERT_EQ(TableRows(*c, "shop", "orders"), want);
  });
  for (TestNode* n : {a.get(), b.get(), c.get()}) {
    ExpectNoDuplicateEntries(*n, "shop");
    for (const char* peer : {"a", "b", "c"}) {
      if (n->name() == peer) continue;
      ASSERT_EVENTUALLY([&] { ASSERT_EQ(n->StatusOf(peer).lag_entries, 0u) << n->name(); });
    }
  }
}

// R5, R8: a node's writes reach its peers, and the relays do not send them back to it: the
// log stream skips the entries the receiving peer wrote itself (LogSender::peer_). Nor, in a
// full mesh, does the relay between the two others send them what each gets from the origin
// directly (design 0004): each write reaches each node once.
TEST_F(RecordReplicationTest, R8_InAFullMeshEachWriteReachesEachNodeOnceAndNeverItsOrigin) {
  auto a = NewNode("a"), b = NewNode("b"), c = NewNode("c");
  ASSERT_NO_FATAL_FAILURE(LinkAllAndCreateOrders(a.get(), b.get(), c.get()));
  std::vector<TestNode*> nodes = {a.get(), b.get(), c.get()};
  // Every link streams the database's log (a first subscription may start with a full copy,
  // which carries every row, the receiver's own too).
  ASSERT_EVENTUALLY([&] {
    for (TestNode* n : nodes) {
      for (TestNode* peer : nodes) {
        if (n == peer) continue;
        const PeerStatus s = n->StatusOf(peer->name());
        ASSERT_FALSE(s.full_copy_active) << n->name() << " from " << peer->name();
        ASSERT_EQ(s.cursors.count("shop"), 1u) << n->name() << " from " << peer->name();
      }
    }
  });
  auto received = [&](TestNode* n, TestNode* from) {
    return n->StatusOf(from->name()).entries_received;
  };
  const uint64_t a_from_b = received(a.get(), b.get()), a_from_c = received(a.get(), c.get());
  // Every link's stream has read its sender's whole log of "shop" (b and c relayed or held
  // everything they applied).
  auto settled = [&] {
    for (TestNode* n : nodes) {
      for (TestNode* peer : nodes) {
        if (n == peer) continue;
        ASSERT_GE(n->StatusOf(peer->name()).cursors["shop"],
                  peer->local().log->CommittedSeq("shop"))
            << n->name() << " from " << peer->name();
      }
    }
  };
  // Design 0004: once b has told c that it gets a's writes from a (an advert after b's first
  // log batch from a), c no longer relays them to b: each of a's writes reaches b once. The
  // adverts travel on their own, so rounds of 50 writes go until one shows it (or the
  // deadline passes: then the relays never stopped).
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  uint64_t b_got = 0, b_from_c_got = 0, b_duplicates = 0;
  for (int round = 0;; ++round) {
    const uint64_t b_from_c = received(b.get(), c.get());
    const uint64_t b_received = b->cluster().entries_received();
    const uint64_t b_applied = b->cluster().entries_applied();
    const uint64_t b_duplicate = b->cluster().entries_duplicate();
    json batch = json::array();
    for (int i = 0; i < 50; ++i) {
      batch.push_back({{"id", absl::StrCat("r", round, "k", i)}, {"name", "a"}});
    }
    ASSERT_OK(a->records().Write("shop", "orders", batch, catalog::WriteMode::kInsert));
    ASSERT_EVENTUALLY([&] {
      ASSERT_EQ(TableRows(*b, "shop", "orders").size(), 50u * (round + 1));
      ASSERT_EQ(TableRows(*c, "shop", "orders").size(), 50u * (round + 1));
      settled();
    });
    EXPECT_EQ(b->cluster().entries_applied() - b_applied, 50u);
    b_got = b->cluster().entries_received() - b_received;
    b_from_c_got = received(b.get(), c.get()) - b_from_c;
    b_duplicates = b->cluster().entries_duplicate() - b_duplicate;
    if (b_got == 50 && b_from_c_got == 0 && b_duplicates == 0) break;
    ASSERT_LT(absl::Now(), deadline)
        << "b still receives a's writes through c: " << b_got << " entries for 50 writes, "
        << b_from_c_got << " from c, " << b_duplicates << " duplicates";
  }
  // And nothing went back to a (decision 49).
  EXPECT_EQ(received(a.get(), b.get()), a_from_b);
  EXPECT_EQ(received(a.get(), c.get()), a_from_c);
}

// R8, R6, R7: a node that was down catches up from its stored cursors without applying
// anything twice; then, with the origin gone, a new node gets everything from a peer that
// only relayed it.
TEST_F(RecordReplicationTest, R8_OfflineNodeCatchesUpAndANewNodeCopiesFromARelay) {
  auto a = NewNode("a"), b = NewNode("b"), c = NewNode("c");
  Link(a.get(), b.get());
  Link(b.get(), c.get());
  Link(c.get(), a.get());
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "orders", {"name"})));
  Upsert(a.get(), "shop", "orders", Rows("early-", 0, 100, "x"));
  ExpectConverged({a.get(), b.get(), c.get()}, "shop", "orders", 100);

  c->Stop();
  for (int i = 0; i < 10'000; i += 500)
    Upsert(a.get(), "shop", "orders", Rows("k", i, i + 500, "y"));
  c->Start();
  ExpectConverged({a.get(), b.get(), c.get()}, "shop", "orders", 10'100);
  ExpectNoDuplicateEntries(*c, "shop");
  EXPECT_FALSE(c->StatusOf("a").full_copy_active);

  a->Stop();
  auto d = NewNode("d");
  Link(d.get(), b.get());
  ExpectConverged({b.get(), d.get()}, "shop", "orders", 10'100);
  ASSERT_EVENTUALLY([&] {
    PeerStatus s = d->StatusOf("b");
    ASSERT_FALSE(s.full_copy_active);
    ASSERT_EQ(s.lag_entries, 0u);
    ASSERT_GT(s.cursors["shop"], 0u);
  });
  // Rows keep their true origin through the relay and the copy (R7, D4).
  for (const std::string& row : TableRows(*d, "shop", "orders")) {
    EXPECT_NE(row.find("|a|"), std::string::npos) << row;
  }
}

// D5: both nodes overwrite the same keys at once; every node ends with the same winner, the
// greater (version, origin).
TEST_F(RecordReplicationTest, D5_ConflictingWritesEndWithTheSameWinnerEverywhere) {
  auto a = NewNode("a"), b = NewNode("b");
  Link(a.get(), b.get());
  Link(b.get(), a.get());  // two links: one of them applies each direction (R6)
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "orders", {"name"})));
  ASSERT_EVENTUALLY([&] { ASSERT_NE(b->Table("shop", "orders"), nullptr); });
  auto writer = [&](TestNode* n) {
    for (int round = 0; round < 20; ++round) {
      EXPECT_OK(n->records().Write("shop", "orders",
                                   Rows("k", 0, 50, absl::StrCat(n->name(), round)),
                                   catalog::WriteMode::kUpsert));
    }
  };
  std::thread ta(writer, a.get()), tb(writer, b.get());
  ta.join();
  tb.join();
  ExpectConverged({a.get(), b.get()}, "shop", "orders", 50);
  ExpectNoDuplicateEntries(*a, "shop");
  ExpectNoDuplicateEntries(*b, "shop");
}

// C6, C8, D7: a table dropped and recreated while a peer is away. The peer's rows of the old
// generation — including those it wrote while away — never reach the new generation, and the
// new generation's rows reach the peer.
TEST_F(RecordReplicationTest, C6_DropAndRecreateWhileAPeerIsAwayKeepsOnlyTheNewRows) {
  auto a = NewNode("a"), b = NewNode("b");
  Link(a.get(), b.get());
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "orders", {"name"})));
  Upsert(a.get(), "shop", "orders", Rows("old-", 0, 50, "x"));
  ExpectConverged({a.get(), b.get()}, "shop", "orders", 50);

  b->Isolate();
  Upsert(b.get(), "shop", "orders", Rows("away-", 0, 20, "b"));  // into the old generation
  ASSERT_OK(a->catalog().DropTable("shop", "orders"));
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "orders", {"name"})));
  Upsert(a.get(), "shop", "orders", Rows("new-", 0, 30, "y"));
  b->Start();
  ExpectConverged({a.get(), b.get()}, "shop", "orders", 30);
  EXPECT_EQ(b->Table("shop", "orders")->created_time(), a->Table("shop", "orders")->created_time());
  for (const std::string& key : LiveKeys(*b, "shop", "orders")) {
    EXPECT_EQ(key.rfind("\"new-", 0), 0u) << key;
  }
}

// C11, R11: rows of a node-local table and of an excluded table never reach another node,
// neither by the stream nor by a full copy to a new node; an excluding subscriber never
// asks for them.
TEST_F(RecordReplicationTest, C11_R11_NodeLocalAndExcludedRowsStayHome) {
  auto a = NewNode("a"), b = NewNode("b");
  Exclusions secret;
  secret.Add("shop", "secret");
  Link(a.get(), b.get(), secret);  // a neither sends nor accepts shop.secret on this route
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "local", {"name"}, /*replicate=*/false)));
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "secret", {"name"})));
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "orders", {"name"})));
  Upsert(a.get(), "shop", "local", Rows("l", 0, 10, "x"));
  Upsert(a.get(), "shop", "secret", Rows("s", 0, 10, "x"));
  Upsert(a.get(), "shop", "orders", Rows("o", 0, 10, "x"));  // logged after the others
  ExpectConverged({a.get(), b.get()}, "shop", "orders", 10);
  EXPECT_EQ(b->Table("shop", "local"), nullptr);
  EXPECT_EQ(b->Table("shop", "secret"), nullptr);

  auto c = NewNode("c");
  Link(c.get(), a.get(), secret);  // c, the subscriber, does not ask for shop.secret
  ExpectConverged({a.get(), c.get()}, "shop", "orders", 10);
  EXPECT_EQ(c->Table("shop", "local"), nullptr);
  EXPECT_THAT(LiveKeys(*c, "shop", "secret"), IsEmpty());
}

// R7, D5: a full copy merges. The receiver keeps its newer versions and the rows only it
// has; the sender gets them in turn.
TEST_F(RecordReplicationTest, R7_FullCopyKeepsNewerRowsAndRowsOnlyTheReceiverHas) {
  auto a = NewNode("a"), b = NewNode("b");
  // The same table created on both before they ever talk: one table (C8, no marker).
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "orders", {"name"})));
  ASSERT_OK(b->catalog().CreateTable(Spec("shop", "orders", {"name"})));
  Upsert(a.get(), "shop", "orders", Rows("k", 0, 50, "from-a"));
  WaitPast(a->node_hlc_now());
  Upsert(b.get(), "shop", "orders", Rows("k", 0, 10, "from-b"));  // newer
  Upsert(b.get(), "shop", "orders", Rows("only-b-", 0, 5, "from-b"));
  Link(a.get(), b.get());
  ExpectConverged({a.get(), b.get()}, "shop", "orders", 55);
  for (TestNode* n : {a.get(), b.get()}) {
    int from_b = 0;
    ASSERT_OK(n->records().SearchByValue("shop", "orders", "name", "from-b", {},
                                         [&](const json&) { return ++from_b, true; }));
    EXPECT_EQ(from_b, 15) << n->name();
  }
}

// R12, R7: a peer whose cursor fell out of the log's retention gets a full copy instead.
TEST_F(RecordReplicationTest, R12_APeerBehindTheRetainedLogGetsAFullCopy) {
  auto a = std::make_unique<TestNode>("a", dir_.Sub("a"), "s3cret");
  a->set_log_retention_entries(100);
  a->Start();
  auto b = NewNode("b");
  Link(a.get(), b.get());
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "orders", {"name"})));
  Upsert(a.get(), "shop", "orders", Rows("k", 0, 50, "x"));
  ExpectConverged({a.get(), b.get()}, "shop", "orders", 50);
  b->Isolate();
  for (int i = 50; i < 1050; i += 100)
    Upsert(a.get(), "shop", "orders", Rows("k", i, i + 100, "y"));
  ASSERT_EVENTUALLY([&] { ASSERT_GE(a->local().log->TrimmedThrough("shop"), 900u); });
  b->Start();
  ExpectConverged({a.get(), b.get()}, "shop", "orders", 1050);
}

// R14 (and C8's converse): a drop seen by one node (A), a recreate on a second (C) that never
// saw it, relayed through a third (B) that missed both. B's old generation, holding C's newer
// rows, is retired by A's marker: B must fetch C's rows again. C purges the old generation's
// rows it received from B. Every node ends with C's generation and exactly C's rows.
TEST_F(RecordReplicationTest, R14_NothingNewerDiesWithARetiredGeneration) {
  auto a = NewNode("a"), b = NewNode("b"), c = NewNode("c");
  Hlc dropped = 0;
  ASSERT_NO_FATAL_FAILURE(MergeAGenerationOlderThanADrop(a.get(), b.get(), c.get(), &dropped));

  Link(a.get(), c.get());
  a->Start();
  ExpectConverged({a.get(), b.get(), c.get()}, "shop", "orders", 30);
  for (TestNode* n : {a.get(), b.get(), c.get()}) {
    EXPECT_EQ(n->Table("shop", "orders")->created_time(),
              c->Table("shop", "orders")->created_time())
        << n->name();
    for (const std::string& key : LiveKeys(*n, "shop", "orders")) {
      EXPECT_EQ(key.rfind("\"new-", 0), 0u) << n->name() << " " << key;
    }
  }
}

// R14 when the sender held the marker already: B's old generation, holding C's newer rows,
// is retired by A's marker, and C, which has the newer generation, knew that marker before B
// did (from D; B lost C's message of it). C's catalog does not change again, so no delta
// follows from C: B's refetch from C must bring C's definitions before the rows. (The digest
// check would ask for them seconds later; the test loses every such request, fault point
// replication.schema.resync.)
TEST_F(RecordReplicationTest, R14_ARefetchBringsTheDefinitionsTheSenderHeldAlready) {
  auto a = NewNode("a"), b = NewNode("b"), c = NewNode("c"), d = NewNode("d");
  Hlc dropped = 0;
  ASSERT_NO_FATAL_FAILURE(MergeAGenerationOlderThanADrop(a.get(), b.get(), c.get(), &dropped, [&] {
    Link(a.get(), d.get());  // D has the marker from A, and is away until C links to it
    ASSERT_EVENTUALLY(
        [&] { ASSERT_EQ(d->catalog().Snapshot()->MarkerFor("shop", "orders"), dropped); });
    d->Isolate();
  }));

  for (TestNode* n : {a.get(), b.get(), c.get(), d.get()}) {
    n->faults().Set(fault_points::kReplSchemaResync,
                    FaultAction::ReturnError(absl::UnavailableError("lost")));
  }
  // C gets the marker from D and tells B, which applies nothing of it.
  b->faults().Set(fault_points::kReplSchemaReceive,
                  FaultAction::ReturnError(absl::UnavailableError("lost")));
  Link(d.get(), c.get());
  d->Start();
  ASSERT_EVENTUALLY(
      [&] { ASSERT_EQ(c->catalog().Snapshot()->MarkerFor("shop", "orders"), dropped); });
  const uint64_t told = SchemaDigest(*c->catalog().Snapshot(), "shop");
  ASSERT_EVENTUALLY([&] {
    uint64_t heard = 0;  // C's last digest of shop as B recorded it, applied or not
    for (const PeerStatus& p : b->cluster().Status()) {
      if (auto it = p.digests.find("shop"); p.name == "c" && it != p.digests.end()) {
        heard = it->second;
      }
    }
    ASSERT_EQ(heard, told);
  });
  d->Isolate();
  b->faults().Clear(fault_points::kReplSchemaReceive);
  ASSERT_EQ(b->catalog().Snapshot()->MarkerFor("shop", "orders"), 0u);

  // A, which never saw C's generation, brings B the marker: B's generation dies and B asks A
  // and C for their rows again.
  a->Start();
  ExpectConverged({b.get(), c.get()}, "shop", "orders", 30);
  EXPECT_EQ(b->Table("shop", "orders")->created_time(), c->Table("shop", "orders")->created_time());
}

// R15: an entry whose table is newer than the sender's snapshot of the round is sent after a
// newer DB_SCHEMA, not skipped. A's writer is parked after reading a batch of t1; meanwhile t2
// is created and written; the same round then reads t2's entry against its old snapshot.
TEST_F(RecordReplicationTest, R15_RowsOfATableCreatedDuringASendRoundAreSent) {
  auto a = NewNode("a"), b = NewNode("b");
  Link(a.get(), b.get());
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "t1", {"name"})));
  Upsert(a.get(), "shop", "t1", Rows("k", 0, 1, "x"));
  ExpectConverged({a.get(), b.get()}, "shop", "t1", 1);

  a->faults().Set(fault_points::kReplSendBatch, FaultAction::Block());
  Upsert(a.get(), "shop", "t1", Rows("k", 1, 2, "x"));
  ASSERT_TRUE(a->faults().WaitUntilBlocked(fault_points::kReplSendBatch, absl::Seconds(10)));
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "t2", {"name"})));
  Upsert(a.get(), "shop", "t2", Rows("k", 42, 43, "y"));
  a->faults().Release(fault_points::kReplSendBatch);
  Upsert(a.get(), "shop", "t2", Rows("k", 43, 44, "y"));

  ExpectConverged({a.get(), b.get()}, "shop", "t2", 2);
  ExpectConverged({a.get(), b.get()}, "shop", "t1", 2);
}

// R5: a sender round that fails (a log read or a send; here an injected error before a batch
// goes out) ends the link, so it is dialed again and resumes from the peer's cursor. Found by
// the buggified random schedule (seed 1796127316251673017): the writer stopped, the stream
// stayed open, and the peer, "connected" with lag 0, never got another row.
TEST_F(RecordReplicationTest, R5_AFailedSenderRoundEndsTheLinkAndTheRowsStillArrive) {
  auto a = NewNode("a"), b = NewNode("b");
  ASSERT_NO_FATAL_FAILURE(LinkWithOrders(a.get(), b.get(), 1, 2));
  a->faults().Set(fault_points::kReplSendBatch,
                  FaultAction::ReturnError(absl::InternalError("injected")).Once());
  Upsert(a.get(), "shop", "orders", Rows("k", 2, 3, "after"));
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(a->faults().HitCount(fault_points::kReplSendBatch), 1); });
  ExpectConverged({a.get(), b.get()}, "shop", "orders", 2);
}

// Decisions 44 and 49: a table back from a local-only drop gets back this node's own writes
// that were still on their way to a peer when it was dropped. The refetch copies the peer's
// rows as they are; a write of this node the peer applies later enters the peer's log with
// this node's origin, which a log stream does not send back to its origin. Found by the
// buggified random schedule (seed 1796127829290826512: n1 kept load0-2372, the others
// load0-2397, every cursor caught up).
class OwnWriteInFlightTest : public RecordReplicationTest,
                             public ::testing::WithParamInterface<bool> {};

TEST_P(OwnWriteInFlightTest, Decision44_AnOwnWriteInFlightAtALocalDropComesBack) {
  const bool restart = GetParam();  // a new link (Subscribe), or the same one (Refetch)
  auto a = NewNode("a"), b = NewNode("b");
  ASSERT_NO_FATAL_FAILURE(LinkWithOrders(a.get(), b.get(), 1, 2));
  Upsert(b.get(), "shop", "orders", Rows("k", 9, 10, "b"));  // A holds a cursor in B's log
  ExpectConverged({a.get(), b.get()}, "shop", "orders", 2);
  // B is through A's whole log (A's relay of k9 included), so the next batch B's applier
  // takes is the one that carries A's write below.
  ASSERT_EVENTUALLY(
      [&] { ASSERT_EQ(b->StatusOf("a").cursors["shop"], a->local().log->CommittedSeq("shop")); });

  // A's next write reaches B and waits in B's applier.
  b->faults().Set(fault_points::kReplApplyBeforeCommit, FaultAction::Block().Once());
  Upsert(a.get(), "shop", "orders", Rows("k", 1, 2, "newer"));
  ASSERT_TRUE(
      b->faults().WaitUntilBlocked(fault_points::kReplApplyBeforeCommit, absl::Seconds(10)));
  // A drops its copy (and restarts: a new link, while the old one waits for B's applier) and
  // gets the table back from B's next snapshot, with B's rows as they are: k1 is still "x".
  ASSERT_OK(a->catalog().DropTable("shop", "orders", /*timed=*/false));
  if (restart) {
    a->Stop();
    a->Start();
  }
  ASSERT_OK(b->catalog().CreateTable(Spec("shop", "later", {"name"})));
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(LiveKeys(*a, "shop", "orders").size(), 2u); });
  // B applies A's write now.
  b->faults().Release(fault_points::kReplApplyBeforeCommit);
  auto holds_newer = [](TestNode& n) {
    return absl::StrJoin(TableRows(n, "shop", "orders"), " ").find("\"newer\"") !=
           std::string::npos;
  };
  ASSERT_EVENTUALLY([&] { ASSERT_TRUE(holds_newer(*b)); });
  // The write B applied last is A's own: it must come back to A.
  ExpectConverged({a.get(), b.get()}, "shop", "orders", 2);
  EXPECT_TRUE(holds_newer(*a));
}

INSTANTIATE_TEST_SUITE_P(Link, OwnWriteInFlightTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "AfterARestart" : "OnTheSameLink";
                         });

// R1 with decision 86: the tables a node dropped locally are named in its Subscribe only to a
// peer that advertised records.echo.v1; an older peer is sent nothing it does not know.
TEST_F(RecordReplicationTest, R1_EchoTablesGoOnlyToAPeerThatAdvertisedThem) {
  auto a = NewNode("a"), b = NewNode("b");
  ASSERT_NO_FATAL_FAILURE(LinkWithOrders(a.get(), b.get(), 1, 2));
  ASSERT_OK(a->catalog().DropTable("shop", "orders", /*timed=*/false));
  for (const bool speaks_echo : {false, true}) {
    SCOPED_TRACE(speaks_echo);
    ReceiverState receiver(&a->local(), "b", b->local().log->log_id(), Exclusions());
    receiver.set_echo(speaks_echo);
    auto sub = receiver.BuildSubscribe();
    ASSERT_OK(sub);
    ASSERT_EQ(sub->echo_size(), speaks_echo ? 1 : 0);
    if (speaks_echo) {
      EXPECT_EQ(sub->echo(0).database(), "shop");
      EXPECT_EQ(sub->echo(0).table(), "orders");
    }
  }
}

// Decision 44: the rows of a table dropped locally come back when a peer's table takes the
// name again, even when the drop failed after its first step: the name is free from that
// step on. The refetch is recorded with the tombstone, not in the final batch, which a
// failure (or a drain timeout) never wrote. Found by the buggified schedule: n3's local drop
// failed at catalog.drop.after_drain, n2's table came back there, and 35 rows never did.
class FailedLocalDropTest : public RecordReplicationTest,
                            public ::testing::WithParamInterface<const char*> {};

TEST_P(FailedLocalDropTest, Decision44_RowsComeBackAfterALocalDropThatFailedMidWay) {
  auto a = NewNode("a"), b = NewNode("b");
  ASSERT_NO_FATAL_FAILURE(LinkWithOrders(a.get(), b.get(), 10, 13));
  Upsert(b.get(), "shop", "orders", Rows("k", 1, 10, "b"));  // A holds a cursor in B's log
  ExpectConverged({a.get(), b.get()}, "shop", "orders", 12);

  a->faults().Set(GetParam(), FaultAction::ReturnError(absl::InternalError("injected")).Once());
  EXPECT_FALSE(a->catalog().DropTable("shop", "orders", /*timed=*/false).ok());
  // B's next snapshot gives A the table again: a new generation, the old one still pending.
  ASSERT_OK(b->catalog().CreateTable(Spec("shop", "later", {"name"})));
  ASSERT_EVENTUALLY([&] { ASSERT_NE(a->Table("shop", "orders"), nullptr); });
  Upsert(b.get(), "shop", "orders", Rows("k", 20, 21, "b"));
  ExpectConverged({a.get(), b.get()}, "shop", "orders", 13);
}

INSTANTIATE_TEST_SUITE_P(Step, FailedLocalDropTest,
                         ::testing::Values(fault_points::kDropAfterTombstone,
                                           fault_points::kDropAfterDrain,
                                           fault_points::kDropBeforeFinalCommit),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           std::string name = p.param;
                           for (char& ch : name) {
                             if (ch == '.') ch = '_';
                           }
                           return name;
                         });

// R15: the numbers of a failed commit are passed by the peer's cursor (a gap); after the
// sender restarts they are not handed out again, so nothing written after is skipped.
TEST_F(RecordReplicationTest, R15_NumbersOfAFailedCommitAreNotReusedAfterARestart) {
  auto a = NewNode("a"), b = NewNode("b");
  ASSERT_NO_FATAL_FAILURE(LinkWithOrders(a.get(), b.get(), 1, 2));

  a->faults().Set(fault_points::kWriteBeforeCommit,
                  FaultAction::ReturnError(absl::InternalError("injected")));
  EXPECT_FALSE(a->records()
                   .Write("shop", "orders", Rows("k", 2, 4, "lost"), catalog::WriteMode::kUpsert)
                   .ok());
  a->faults().Clear(fault_points::kWriteBeforeCommit);
  const uint64_t gap_end = a->local().log->CommittedSeq("shop");
  ASSERT_GE(gap_end, 3u);
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(b->StatusOf("a").cursors["shop"], gap_end); });

  a->Stop();
  a->Start();
  for (int i = 10; i <= 12; ++i) Upsert(a.get(), "shop", "orders", Rows("k", i, i + 1, "y"));
  ExpectConverged({a.get(), b.get()}, "shop", "orders", 4);
}

// R15: a subscriber whose cursor is beyond the sender's log (it lost a tail, say) gets a full
// copy, not an empty tail that would skip what is written under those numbers.
TEST_F(RecordReplicationTest, R15_ACursorBeyondTheSendersLogGetsAFullCopy) {
  auto a = NewNode("a"), b = NewNode("b");
  ASSERT_NO_FATAL_FAILURE(LinkWithOrders(a.get(), b.get(), 0, 5));

  b->Isolate();
  storage::v1::ReplicaCursor cursor;
  cursor.set_log_id(a->local().log->log_id());
  cursor.set_seq(a->local().log->CommittedSeq("shop") + (uint64_t{1} << 40));
  rocksdb::WriteBatch batch;
  ASSERT_TRUE(batch
                  .Put(b->local().engine->cf(storage::Cf::kMeta),
                       storage::ToSlice(storage::CursorKey("a", "shop")),
                       cursor.SerializeAsString())
                  .ok());
  ASSERT_OK(b->local().engine->Write(&batch));
  Upsert(a.get(), "shop", "orders", Rows("k", 5, 8, "y"));
  b->Start();
  ExpectConverged({a.get(), b.get()}, "shop", "orders", 8);
}

// R17: an entry that cannot apply yet (its table is dropping here, by a local-only drop that
// leaves no marker) is parked, and the link's other databases keep flowing. Before, the batch
// was retried for ever and everything behind it waited. The parked entries apply once the
// peer's definition makes the table live here again.
TEST_F(RecordReplicationTest, R17_OneStuckTableNeverStallsTheRest) {
  auto a = NewNode("a"), b = NewNode("b");
  Link(a.get(), b.get());
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "stuck", {"name"})));
  ASSERT_OK(a->catalog().CreateTable(Spec("zeta", "free", {"name"})));
  ASSERT_EVENTUALLY([&] {
    ASSERT_NE(b->Table("shop", "stuck"), nullptr);
    ASSERT_NE(b->Table("zeta", "free"), nullptr);
    // B subscribed to both logs: A's rows below come on the log stream, not in a first full
    // copy (which under load could start after them).
    const PeerStatus s = b->StatusOf("a");
    ASSERT_EQ(s.cursors.count("shop"), 1u);
    ASSERT_EQ(s.cursors.count("zeta"), 1u);
  });

  // B's own drop of shop.stuck parks after its first step: the table is dropping on B.
  b->faults().Set(fault_points::kDropAfterTombstone, FaultAction::Block());
  std::thread drop([&] { EXPECT_OK(b->catalog().DropTable("shop", "stuck", /*timed=*/false)); });
  ASSERT_TRUE(b->faults().WaitUntilBlocked(fault_points::kDropAfterTombstone, absl::Seconds(10)));
  // The batch of shop reaches B's applier before the one of zeta.
  b->faults().Set(fault_points::kReplApplyBeforeCommit, FaultAction::Block().Once());
  Upsert(a.get(), "shop", "stuck", Rows("k", 0, 3, "x"));
  const bool held =
      b->faults().WaitUntilBlocked(fault_points::kReplApplyBeforeCommit, absl::Seconds(10));
  Upsert(a.get(), "zeta", "free", Rows("k", 0, 5, "y"));
  b->faults().Release(fault_points::kReplApplyBeforeCommit);
  // No ASSERT returns while B's drop is parked.
  testing::AssertEventually([&] { ASSERT_EQ(LiveKeys(*b, "zeta", "free").size(), 5u); });
  testing::AssertEventually([&] { ASSERT_EQ(b->StatusOf("a").parked_entries, 3u); });
  b->faults().Release(fault_points::kDropAfterTombstone);
  drop.join();
  ASSERT_TRUE(held);
  EXPECT_EQ(b->StatusOf("a").parked_entries, 3u);  // not lost with the drop
  // A's next snapshot defines shop.stuck here again: the parked entries go.
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "later", {"name"})));
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(b->StatusOf("a").parked_entries, 0u); });
  ExpectConverged({a.get(), b.get()}, "shop", "stuck", 3);
}

// R17 without the origin (issue 41, point 12): entries parked on B from A are retried by B
// whether or not A is linked. With A down, B counts them (from storage), applies them once
// its table is live again (here from C's definition) and relays them to C, which has no link
// to A. On the parent commit only A's link retried or counted them: B reported 0 and held
// them for good.
TEST_F(RecordReplicationTest, Issue41_ParkedEntriesApplyAndRelayWithTheirOriginDown) {
  auto a = NewNode("a"), b = NewNode("b"), c = NewNode("c");
  Link(a.get(), b.get());
  Link(b.get(), c.get());
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "stuck", {"name"})));
  ASSERT_EVENTUALLY([&] {
    ASSERT_NE(c->Table("shop", "stuck"), nullptr);
    ASSERT_EQ(b->StatusOf("a").cursors.count("shop"), 1u);
  });
  // B's own local drop of shop.stuck holds after its first step: A's rows park on B.
  b->faults().Set(fault_points::kDropAfterTombstone, FaultAction::Block());
  std::thread drop([&] { EXPECT_OK(b->catalog().DropTable("shop", "stuck", /*timed=*/false)); });
  ASSERT_TRUE(b->faults().WaitUntilBlocked(fault_points::kDropAfterTombstone, absl::Seconds(10)));
  Upsert(a.get(), "shop", "stuck", Rows("k", 0, 3, "x"));
  testing::AssertEventually([&] { ASSERT_EQ(b->StatusOf("a").parked_entries, 3u); });
  b->faults().Release(fault_points::kDropAfterTombstone);
  drop.join();
  ASSERT_EQ(b->Table("shop", "stuck"), nullptr);

  a->Isolate();  // the origin is gone
  ASSERT_EVENTUALLY([&] { ASSERT_FALSE(b->StatusOf("a").connected); });
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(b->StatusOf("a").parked_entries, 3u); });
  // C's next snapshot defines shop.stuck on B again: B applies what it parked and relays it.
  ASSERT_OK(c->catalog().CreateTable(Spec("shop", "later", {"name"})));
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(b->StatusOf("a").parked_entries, 0u); });
  ExpectConverged({b.get(), c.get()}, "shop", "stuck", 3);
}

// R17: writes that pass the log's retention while a full copy runs do not trim the copy's
// tail away (which restarted the copy from its first table, for ever under steady load): the
// log keeps what a linked peer needs, within twice its retention.
TEST_F(RecordReplicationTest, R17_AFullCopyUnderWriteLoadKeepsItsTail) {
  auto a = std::make_unique<TestNode>("a", dir_.Sub("a"), "s3cret");
  a->set_log_retention_entries(100);
  a->Start();
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "orders", {"name"})));
  for (int i = 0; i < 3000; i += 500) {
    Upsert(a.get(), "shop", "orders", Rows("k", i, i + 500, "x"));
  }
  const uint64_t before_copy = a->local().log->CommittedSeq("shop");
  auto b = NewNode("b");
  // A's first batch to B is the copy's first: it waits there while A's writes pass the
  // retention and A trims its log.
  a->faults().Set(fault_points::kReplSendBatch, FaultAction::Block().Once());
  Link(a.get(), b.get());
  ASSERT_TRUE(a->faults().WaitUntilBlocked(fault_points::kReplSendBatch, absl::Seconds(10)));
  for (int i = 0; i < 150; ++i) {
    Upsert(a.get(), "shop", "orders", Rows("w", i, i + 1, "y"));
  }
  a->cluster().TrimOnce();
  const uint64_t trimmed = a->local().log->TrimmedThrough("shop");
  a->faults().Release(fault_points::kReplSendBatch);
  EXPECT_LE(trimmed, before_copy) << "the copy's tail was trimmed";
  ExpectConverged({a.get(), b.get()}, "shop", "orders", 3150);
}

// R17: an R14 refetch gets a share of the batches while other databases have log work; it
// used to wait until every database had nothing left to send, for ever under steady writes.
TEST_F(RecordReplicationTest, R17_RefetchesAreServedUnderWriteLoad) {
  auto a = NewNode("a");
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "orders", {"name"})));
  ASSERT_OK(a->catalog().CreateTable(Spec("busy", "log", {"name"})));
  Upsert(a.get(), "shop", "orders", Rows("k", 0, 3, "x"));
  for (int i = 0; i < 100; ++i) Upsert(a.get(), "busy", "log", Rows("k", i, i + 1, "y"));

  StreamLimits limits;
  limits.max_entries = 1;  // one entry per batch: 100 batches of log work in busy
  LogSender sender(&a->local(), "b", Exclusions(), limits);
  peer::v1::Subscribe subscribe;
  peer::v1::DbCursor* busy = subscribe.add_cursors();
  busy->set_database("busy");
  busy->set_seq(0);
  peer::v1::DbCursor* shop = subscribe.add_cursors();
  shop->set_database("shop");
  shop->set_seq(a->local().log->CommittedSeq("shop"));
  sender.Subscribe(subscribe);
  peer::v1::Refetch refetch;
  refetch.add_tables()->set_database("shop");
  refetch.mutable_tables(0)->set_table("orders");
  sender.Refetch(refetch);

  const catalog::SnapshotRef snap = a->catalog().Snapshot();
  int served_at = -1;
  for (int n = 0; n < 8 && served_at < 0; ++n) {  // twice kRefetchShare
    peer::v1::ChangeBatch out;
    absl::StatusOr<bool> produced = sender.Next(*snap, &out);
    ASSERT_OK(produced);
    ASSERT_TRUE(*produced);
    if (out.has_refetch()) {
      served_at = n;
      EXPECT_EQ(out.entries_size(), 1);  // a row of shop.orders, within the batch limit
    }
  }
  EXPECT_GE(served_at, 0) << "no refetch batch while busy had log work";
}

}  // namespace
}  // namespace cairn::replication
