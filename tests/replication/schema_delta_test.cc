// Incremental schema exchange (SPEC R3 as amended for issue 23, R4; design 0003): the catalog's
// journal of changes, deltas built from it, deltas applied in any order and any number of
// times, and the digest check that asks for a database whole when a delta left it apart.
#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/strings/str_cat.h"
#include "catalog/local_node.h"
#include "common/fault_points.h"
#include "replication/cluster.h"
#include "replication/link_session.h"
#include "replication/schema_sync.h"
#include "tests/replication/test_node.h"
#include "tests/testing/testing.h"

namespace cairn::replication {
namespace {

using ::testing::ElementsAre;

class SchemaDeltaTest : public ::testing::Test {
 protected:
  std::unique_ptr<TestNode> NewNode(const std::string& name) {
    auto n = std::make_unique<TestNode>(name, dir_.Sub(name), "s3cret");
    n->Start();
    return n;
  }
  static void ExpectInSync(TestNode* a, TestNode* b) {
    ASSERT_EVENTUALLY([&] {
      PeerStatus s = a->StatusOf(b->name());
      ASSERT_TRUE(s.connected) << s.last_error;
      ASSERT_TRUE(s.schema_in_sync);
      PeerStatus t = b->StatusOf(a->name());
      ASSERT_TRUE(t.connected) << t.last_error;
      ASSERT_TRUE(t.schema_in_sync);
    });
  }

  testing::TempDir dir_;
};

TEST_F(SchemaDeltaTest, R3_TheJournalNamesEveryChangeInOrder) {
  auto a = NewNode("a");
  catalog::Catalog& catalog = a->catalog();
  const uint64_t start = catalog.Snapshot()->version;
  ASSERT_OK(catalog.CreateTable(Spec("shop", "orders", {"name"})));
  ASSERT_OK(catalog.CreateAttribute("shop", "orders", catalog::AttributeSpec("qty")));
  ASSERT_OK(catalog.CreateDatabase("empty"));
  ASSERT_OK(catalog.DropTable("shop", "orders").status());
  const uint64_t end = catalog.Snapshot()->version;

  std::vector<catalog::SchemaChange> changes;
  ASSERT_TRUE(catalog.ChangesSince(start, end, &changes));
  ASSERT_EQ(changes.size(), end - start);
  std::vector<std::string> names;
  for (size_t i = 0; i < changes.size(); ++i) {
    EXPECT_EQ(changes[i].version, start + 1 + i);  // one entry per publish, in order
    names.push_back(absl::StrCat(changes[i].database, ".", changes[i].table));
  }
  // The create, the attribute, the database, the tombstone; the drop's completion changes
  // nothing a peer is sent (journaled as the database's).
  EXPECT_THAT(names, ElementsAre("shop.orders", "shop.orders", "empty.", "shop.orders", "shop."));

  // A window: only what was published after `after`, up to `upto`.
  changes.clear();
  ASSERT_TRUE(catalog.ChangesSince(start + 1, start + 2, &changes));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].version, start + 2);

  // Before the journal's start (it begins at the version loaded at Open): the caller must send
  // everything.
  changes.clear();
  EXPECT_FALSE(catalog.ChangesSince(0, end, &changes));
  EXPECT_TRUE(changes.empty());
}

TEST_F(SchemaDeltaTest, R3_ADeltaCarriesTheWholeStateOfEachChangedNameOnly) {
  auto a = NewNode("a");
  catalog::Catalog& catalog = a->catalog();
  ASSERT_OK(catalog.CreateTable(Spec("shop", "orders", {"name"})));
  ASSERT_OK(catalog.CreateTable(Spec("shop", "items", {"sku"})));
  const uint64_t before = catalog.Snapshot()->version;
  ASSERT_OK(catalog.DropTable("shop", "items").status());
  ASSERT_OK(catalog.CreateTable(Spec("shop", "items", {"label"})));  // recreated
  catalog::SnapshotRef snap = catalog.Snapshot();
  std::vector<catalog::SchemaChange> changes;
  ASSERT_TRUE(catalog.ChangesSince(before, snap->version, &changes));

  std::vector<peer::v1::DbSchema> deltas = BuildDeltas(*snap, changes, {}, SchemaOptions());
  ASSERT_EQ(deltas.size(), 1u);
  const peer::v1::DbSchema& d = deltas[0];
  EXPECT_TRUE(d.delta());
  ASSERT_EQ(d.tables_size(), 1);  // not orders: unchanged
  EXPECT_EQ(d.tables(0).name(), "items");
  EXPECT_EQ(d.tables(0).created_time(), snap->FindTable("shop", "items").value()->created_time());
  ASSERT_EQ(d.markers_size(), 1);  // the drop's marker comes with the name
  EXPECT_EQ(d.markers(0).table(), "items");
  EXPECT_EQ(d.digest(), SchemaDigest(*snap, "shop"));  // of the whole database

  // A database asked for whole is sent whole, with no delta of it beside.
  deltas = BuildDeltas(*snap, changes, {"shop"}, SchemaOptions());
  ASSERT_EQ(deltas.size(), 1u);
  EXPECT_FALSE(deltas[0].delta());
  EXPECT_EQ(deltas[0].tables_size(), 2);
}

// R4 for deltas: built after each change on a, applied on b shuffled and repeated, they leave
// b with a's tables, attributes and markers.
TEST_F(SchemaDeltaTest, R4_DeltasInAnyOrderAnyNumberOfTimesConverge) {
  const uint64_t seed = testing::TestSeed();
  std::mt19937_64 rng(seed);
  auto a = NewNode("a"), b = NewNode("b");  // not linked: the test carries the deltas
  catalog::Catalog& ca = a->catalog();
  std::vector<peer::v1::DbSchema> deltas;
  uint64_t version = ca.Snapshot()->version;
  auto take = [&] {
    catalog::SnapshotRef snap = ca.Snapshot();
    std::vector<catalog::SchemaChange> changes;
    ASSERT_TRUE(ca.ChangesSince(version, snap->version, &changes));
    for (peer::v1::DbSchema& d : BuildDeltas(*snap, changes, {}, SchemaOptions())) {
      deltas.push_back(std::move(d));
    }
    version = snap->version;
  };
  ASSERT_OK(ca.CreateTable(Spec("shop", "orders", {"name"})));
  take();
  ASSERT_OK(ca.CreateTable(Spec("shop", "items", {"sku"})));
  take();
  ASSERT_OK(ca.CreateAttribute("shop", "orders", catalog::AttributeSpec("qty")));
  take();
  ASSERT_OK(ca.DropTable("shop", "items").status());
  take();
  ASSERT_OK(ca.CreateTable(Spec("shop", "items", {"label"})));
  take();
  ASSERT_OK(a->records().DropAttribute("shop", "orders", "name").status());
  take();
  ASSERT_OK(ca.CreateTable(Spec("crm", "people", {"email"})));
  take();
  ASSERT_OK(ca.DropTable("crm", "people").status());
  take();

  // Each delta once or twice, in a random order.
  std::vector<const peer::v1::DbSchema*> order;
  for (const peer::v1::DbSchema& d : deltas) {
    order.push_back(&d);
    if (rng() % 2 == 0) order.push_back(&d);
  }
  std::shuffle(order.begin(), order.end(), rng);
  for (const peer::v1::DbSchema* d : order) {
    SchemaApplyStats stats;
    ASSERT_OK(ApplyDbSchema(&b->catalog(), &b->records(), *d, &stats)) << "seed " << seed;
  }
  catalog::SnapshotRef sa = ca.Snapshot(), sb = b->catalog().Snapshot();
  for (const std::string db : {"shop", "crm"}) {
    EXPECT_EQ(SchemaDigest(*sa, db), SchemaDigest(*sb, db)) << db << ", seed " << seed;
  }
  EXPECT_THAT(b->Attributes("shop", "orders"), ElementsAre("id", "qty")) << "seed " << seed;
  EXPECT_THAT(b->Attributes("shop", "items"), ElementsAre("id", "label")) << "seed " << seed;
  EXPECT_EQ(b->Table("shop", "items")->created_time(), a->Table("shop", "items")->created_time());
  EXPECT_EQ(b->Table("crm", "people"), nullptr) << "seed " << seed;
}

// The sums the schema digest is made of, as the catalog keeps them publish by publish, equal
// a count from scratch, and survive a restart.
uint64_t CountedMarkers(const catalog::CatalogSnapshot& snap, const std::string& db) {
  absl::btree_set<std::string> names;
  for (const auto& [id, time] : snap.markers) {
    if (id.first == db) names.insert(id.second);
  }
  for (const auto& [id, stamps] : snap.attribute_markers) {
    if (id.first == db) names.insert(id.second);
  }
  uint64_t sum = 0;
  for (const std::string& name : names) sum += catalog::NameMarkersDigest(snap, db, name);
  return sum;
}

uint64_t CountedTables(const catalog::CatalogSnapshot& snap, const std::string& db) {
  uint64_t sum = 0;
  if (const catalog::DatabaseDef* d = snap.FindDatabase(db)) {
    for (const auto& [name, def] : d->tables) sum += def->replicate() ? def->names_digest() : 0;
  }
  return sum;
}

TEST_F(SchemaDeltaTest, R3_TheDigestSumsTheCatalogKeepsEqualACount) {
  auto a = NewNode("a");
  catalog::Catalog& c = a->catalog();
  ASSERT_OK(c.CreateTable(Spec("shop", "orders", {"name", "colour"})));
  ASSERT_OK(c.CreateTable(Spec("shop", "local", {"x"}, /*replicate=*/false)));  // C11: not summed
  ASSERT_OK(c.CreateTable(Spec("shop", "items", {"sku"})));
  ASSERT_OK(a->records().DropAttribute("shop", "orders", "colour").status());
  ASSERT_OK(c.DropTable("shop", "items").status());
  ASSERT_OK(c.CreateTable(Spec("shop", "items", {"label"})));
  // A peer's markers: of a name held here (it retires the generation) and of one never seen.
  const Hlc later = a->node_hlc_now() + 1000;
  ASSERT_OK(a->records().ApplyPeerDrop("shop", "items", later).status());
  ASSERT_OK(a->records().ApplyPeerAttributeDrop("shop", "elsewhere", "qty", later));
  auto check = [&](const std::string& when) {
    catalog::SnapshotRef snap = a->catalog().Snapshot();  // a new catalog after the restart
    auto it = snap->marker_digests.find("shop");
    ASSERT_NE(it, snap->marker_digests.end()) << when;
    EXPECT_EQ(it->second, CountedMarkers(*snap, "shop")) << when;
    EXPECT_EQ(snap->FindDatabase("shop")->replicated_digest, CountedTables(*snap, "shop")) << when;
  };
  check("as kept");
  const uint64_t digest = SchemaDigest(*c.Snapshot(), "shop");
  a->Stop();
  a->Start();
  check("after a restart");
  EXPECT_EQ(SchemaDigest(*a->catalog().Snapshot(), "shop"), digest);
}

// R3 incremental: once the catalogs agree, one create costs the links its own definition,
// however many tables there are (and no echo: R3_AChangeIsNotEchoedToItsSender).
TEST_F(SchemaDeltaTest, R3_ACreateSendsItsTableNotTheCatalog) {
  auto a = NewNode("a"), b = NewNode("b");
  a->Route(*b);  // one link: a second one would start with whole snapshots of its own
  constexpr int kTables = 40;
  for (int i = 0; i < kTables; ++i) {
    ASSERT_OK(a->catalog().CreateTable(Spec("shop", absl::StrCat("t", i), {"name"})));
  }
  ASSERT_EVENTUALLY([&] { ASSERT_NE(b->Table("shop", absl::StrCat("t", kTables - 1)), nullptr); });
  ExpectInSync(a.get(), b.get());
  const uint64_t sent_before =
      a->cluster().schema_tables_sent() + b->cluster().schema_tables_sent();

  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "one_more", {"name"})));
  ASSERT_EVENTUALLY([&] { ASSERT_NE(b->Table("shop", "one_more"), nullptr); });
  ExpectInSync(a.get(), b.get());
  const uint64_t sent =
      a->cluster().schema_tables_sent() + b->cluster().schema_tables_sent() - sent_before;
  // Whole snapshots would send all 41 definitions (and b its 41 back).
  EXPECT_GE(sent, 1u);
  EXPECT_LE(sent, 4u);
}

// R3 incremental across a restart: the restarted node's journal starts at the catalog it
// loaded; its first round is whole, later ones are deltas again.
TEST_F(SchemaDeltaTest, R3_AfterARestartTheFirstRoundIsWholeThenDeltas) {
  auto a = NewNode("a"), b = NewNode("b");
  a->Route(*b);
  constexpr int kTables = 20;
  for (int i = 0; i < kTables; ++i) {
    ASSERT_OK(a->catalog().CreateTable(Spec("shop", absl::StrCat("t", i), {"name"})));
  }
  ASSERT_EVENTUALLY([&] { ASSERT_NE(b->Table("shop", absl::StrCat("t", kTables - 1)), nullptr); });
  ExpectInSync(a.get(), b.get());

  // Nothing changes while a is away: the first rounds after the restart are whole and equal,
  // so no "send ours once" round can land after the create below.
  a->Stop();
  a->Start();
  ExpectInSync(a.get(), b.get());

  const uint64_t sent_before = a->cluster().schema_tables_sent();
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "after_restart", {"name"})));
  ASSERT_EVENTUALLY([&] { ASSERT_NE(b->Table("shop", "after_restart"), nullptr); });
  ExpectInSync(a.get(), b.get());
  // A delta: the one table (a whole database would be 21).
  EXPECT_EQ(a->cluster().schema_tables_sent() - sent_before, 1u);
}

// R3: a database whose tables are all dropped keeps its markers (C8), and a whole round
// still describes it (a peer that was away must learn them); the list comes from the kept
// per-database sums, before and after a restart.
TEST_F(SchemaDeltaTest, R3_ADatabaseWithOnlyMarkersLeftIsStillDescribed) {
  auto a = NewNode("a");
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "orders", {"name"})));
  ASSERT_OK(a->catalog().CreateTable(Spec("crm", "people", {"name"})));
  ASSERT_OK(a->catalog().DropDatabase("shop").status());
  ASSERT_EQ(a->catalog().Snapshot()->FindDatabase("shop"), nullptr);
  EXPECT_THAT(SchemaDatabases(*a->catalog().Snapshot()), ElementsAre("crm", "shop"));
  a->Stop();
  a->Start();
  EXPECT_THAT(SchemaDatabases(*a->catalog().Snapshot()), ElementsAre("crm", "shop"));
}

// R3 incremental, no echo: b does not send a the definition it just took from a. Its round
// after the apply still goes (an empty delta with b's digest), so a's digest check sees b in
// step.
TEST_F(SchemaDeltaTest, R3_AChangeIsNotEchoedToItsSender) {
  auto a = NewNode("a"), b = NewNode("b");
  a->Route(*b);
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "orders", {"name"})));
  ASSERT_EVENTUALLY([&] { ASSERT_NE(b->Table("shop", "orders"), nullptr); });
  ExpectInSync(a.get(), b.get());
  const uint64_t messages_before = b->cluster().schema_messages_sent();
  const uint64_t tables_before = b->cluster().schema_tables_sent();

  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "items", {"sku"})));
  ASSERT_OK(a->catalog().CreateAttribute("shop", "orders", catalog::AttributeSpec("total")));
  ASSERT_EVENTUALLY([&] {
    ASSERT_THAT(b->Attributes("shop", "orders"), ElementsAre("id", "name", "total"));
    ASSERT_NE(b->Table("shop", "items"), nullptr);
  });
  ExpectInSync(a.get(), b.get());
  ASSERT_EVENTUALLY([&] { ASSERT_GT(b->cluster().schema_messages_sent(), messages_before); });
  EXPECT_EQ(b->cluster().schema_tables_sent(), tables_before);
}

// A delta applied nowhere (the fault point stands for any delta that missed a change) leaves
// the digests apart; the receiver then asks for the database whole and converges. Its first
// request is lost: it asks again after the backoff, and counts both.
TEST_F(SchemaDeltaTest, R3_ADigestLeftApartIsRepairedByAWholeDatabase) {
  auto a = NewNode("a"), b = NewNode("b");
  a->Route(*b);  // one link, so the delta has one way to b
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "orders", {"name"})));
  ASSERT_EVENTUALLY([&] { ASSERT_NE(b->Table("shop", "orders"), nullptr); });
  ExpectInSync(a.get(), b.get());

  const uint64_t resyncs = b->cluster().schema_resyncs();
  b->faults().Set(fault_points::kReplSchemaReceive,
                  FaultAction::ReturnError(absl::UnavailableError("lost")).Once());
  b->faults().Set(fault_points::kReplSchemaResync,
                  FaultAction::ReturnError(absl::UnavailableError("lost")).Once());
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "items", {"sku"})));
  // b heard of items and applied nothing; only a request for shop whole brings it.
  ASSERT_EVENTUALLY([&] { ASSERT_GE(b->faults().HitCount(fault_points::kReplSchemaReceive), 1); });
  ASSERT_EVENTUALLY([&] { ASSERT_NE(b->Table("shop", "items"), nullptr); });
  ExpectInSync(a.get(), b.get());
  EXPECT_EQ(b->faults().HitCount(fault_points::kReplSchemaResync), 1);  // the lost one
  // Two at least: a third follows if the answer takes longer than the 4 s backoff.
  EXPECT_GE(b->cluster().schema_resyncs(), resyncs + 2);
}

// The digest watch's timers run on the node's clock (issue 42, point 6; decision 136): a test
// advances the clock through the backoff (2, 4, 8, 16 s ...) instead of waiting it out.
TEST_F(SchemaDeltaTest, R3_TheWatchsBackoffRunsOnTheNodesClock) {
  testing::ManualClock clock(absl::Now());  // one for both: R16 sees no offset between them
  auto a = std::make_unique<TestNode>("a", dir_.Sub("a"), "s3cret");
  auto b = std::make_unique<TestNode>("b", dir_.Sub("b"), "s3cret");
  a->set_clock(&clock);
  b->set_clock(&clock);
  a->Start();
  b->Start();
  a->Route(*b);
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "orders", {"name"})));
  ASSERT_EVENTUALLY([&] { ASSERT_NE(b->Table("shop", "orders"), nullptr); });
  ExpectInSync(a.get(), b.get());

  const auto lost = FaultAction::ReturnError(absl::UnavailableError("lost"));
  b->faults().Set(fault_points::kReplSchemaReceive, lost);
  b->faults().Set(fault_points::kReplSchemaResync, lost);
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "items", {"sku"})));
  ASSERT_EVENTUALLY([&] { ASSERT_GE(b->faults().HitCount(fault_points::kReplSchemaReceive), 1); });
  // Each step comes within the writer's idle wait (1 s) of the clock's move; waiting the
  // backoff out in real time would take 2 + 4 + 8 s. The clock moves on every attempt, not
  // once per step: the receive fault is hit just before the watch is stamped with the clock,
  // and a move that lands in between would leave a new watch waiting for the next one.
  const absl::Duration step = kSchemaResyncMaxBackoff + absl::Seconds(1);
  for (int requests = 1; requests <= 3; ++requests) {
    testing::AssertEventually(
        [&] {
          clock.Advance(step);
          ASSERT_GE(b->faults().HitCount(fault_points::kReplSchemaResync), requests);
        },
        absl::Seconds(5));
    if (HasFatalFailure()) return;
  }
  b->faults().Clear(fault_points::kReplSchemaReceive);
  b->faults().Clear(fault_points::kReplSchemaResync);
  testing::AssertEventually(
      [&] {
        clock.Advance(step);
        ASSERT_NE(b->Table("shop", "items"), nullptr);
      },
      absl::Seconds(5));
}

// Decision 136: the node's clock set back an hour does not make a watch wait an hour.
TEST(DigestWatchTest, R3_AClockSetBackDoesNotStretchTheWait) {
  const absl::Time t = absl::FromUnixSeconds(1'800'000'000);
  DigestWatch w;
  w.since = t;
  w.asked_at = t + absl::Minutes(3);
  w.backoff = absl::Seconds(16);
  w.next_request = w.asked_at + w.backoff;
  const absl::Time back = t + absl::Minutes(3) - absl::Hours(1);
  w.ClampTo(back);
  EXPECT_EQ(w.next_request, back + absl::Seconds(16));
  EXPECT_EQ(w.since, back);
  EXPECT_EQ(w.asked_at, back);
  // A clock that went forward changes nothing.
  DigestWatch ahead = w;
  ahead.ClampTo(back + absl::Hours(2));
  EXPECT_EQ(ahead.next_request, w.next_request);
  EXPECT_EQ(ahead.since, w.since);
}

// Decision 44 with deltas: a local-only drop leaves b without a table a still holds and
// sends a nothing of it. a's digest check finds b apart; the whole database b sends back leaves
// the digests apart, so a sends b its own whole database once, and the table returns, with no
// other change anywhere.
TEST_F(SchemaDeltaTest, Decision44_ALocalOnlyDropGetsThePeersTableBackWithoutAnotherChange) {
  auto a = NewNode("a"), b = NewNode("b");
  a->Route(*b);
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "orders", {"name"})));
  ASSERT_EVENTUALLY([&] { ASSERT_NE(b->Table("shop", "orders"), nullptr); });
  ExpectInSync(a.get(), b.get());
  const Hlc created = a->Table("shop", "orders")->created_time();
  ASSERT_OK(b->catalog().DropTable("shop", "orders", /*timed=*/false).status());
  ASSERT_EVENTUALLY([&] {
    catalog::TableRef back = b->Table("shop", "orders");
    ASSERT_NE(back, nullptr);
    ASSERT_EQ(back->created_time(), created);
  });
  ExpectInSync(a.get(), b.get());
}

}  // namespace
}  // namespace cairn::replication
