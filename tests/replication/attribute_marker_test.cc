// SPEC C15 between in-process nodes over gRPC on loopback: attribute markers travel in
// DB_SCHEMA, remove the attribute everywhere, strip its older values from every row on every
// node — and from rows that arrive later by any path — so that every node ends with the same
// body under the same (version, origin); a re-created attribute starts empty.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/fault_points.h"
#include "replication/clock_bound.h"
#include "replication/schema_sync.h"
#include "tests/replication/test_node.h"
#include "tests/testing/testing.h"

namespace cairn::replication {
namespace {

using ::testing::Contains;
using ::testing::Not;
using json = nlohmann::json;

class AttributeMarkerTest : public ::testing::Test {
 protected:
  std::unique_ptr<TestNode> NewNode(const std::string& name) {
    auto n = std::make_unique<TestNode>(name, dir_.Sub(name), "s3cret");
    n->Start();
    return n;
  }
  // Returns the version written (0 on failure, which fails the test).
  static Hlc Upsert(TestNode* n, const json& records) {
    auto r = n->records().Write("shop", "people", records, catalog::WriteMode::kUpsert);
    EXPECT_OK(r);
    return r.ok() ? r->version : 0;
  }
  // Rows p<from>..p<to - 1> with x and y = `y`.
  static json People(int from, int to, const std::string& y) {
    json out = json::array();
    for (int i = from; i < to; ++i) {
      out.push_back({{"id", absl::StrCat("p", i)}, {"x", absl::StrCat("x", i)}, {"y", y}});
    }
    return out;
  }
  // Every node holds the same rows of shop.people (key, version, origin, row generation,
  // body) and the same attributes, and `count` live rows.
  static void ExpectConverged(const std::vector<TestNode*>& nodes, size_t count) {
    ASSERT_EVENTUALLY([&] {
      const std::vector<std::string> want = TableRows(*nodes[0], "shop", "people");
      const std::vector<std::string> attributes = nodes[0]->Attributes("shop", "people");
      for (TestNode* n : nodes) {
        ASSERT_EQ(LiveKeys(*n, "shop", "people").size(), count) << n->name();
        ASSERT_EQ(TableRows(*n, "shop", "people"), want)
            << n->name() << " differs from " << nodes[0]->name();
        ASSERT_EQ(n->Attributes("shop", "people"), attributes) << n->name();
      }
    });
  }
  // How many stored rows of shop.people on `n` hold `needle` in their body.
  static size_t RowsHolding(TestNode& n, const std::string& needle) {
    size_t found = 0;
    for (const std::string& row : TableRows(n, "shop", "people")) {
      if (row.find(needle) != std::string::npos) ++found;
    }
    return found;
  }
  // Records found by search_by_value attribute=value (an error counts as none).
  static size_t Found(TestNode& n, const std::string& attribute, const json& value) {
    size_t found = 0;
    absl::Status s =
        n.records().SearchByValue("shop", "people", attribute, value, {}, [&](const json&) {
          ++found;
          return true;
        });
    return s.ok() ? found : 0;
  }
  static void WaitPast(Hlc t) {
    ASSERT_EVENTUALLY([&] {
      ASSERT_GT(static_cast<uint64_t>(absl::ToUnixMillis(absl::Now())),
                HybridClock::PhysicalMs(t) + 1);
    });
  }

  testing::TempDir dir_;
};

// C15, the reproduction: a drops y; no node — nor one added later — holds it, serves
// it or finds it by value, and every body and version is the same everywhere.
TEST_F(AttributeMarkerTest, C15_ADroppedAttributeLeavesEveryNodeAndNodesAddedLater) {
  auto a = NewNode("a"), b = NewNode("b"), c = NewNode("c");
  a->Route(*b);
  b->Route(*c);
  c->Route(*a);
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "people", {"x", "y"})));
  ASSERT_EVENTUALLY([&] { ASSERT_NE(c->Table("shop", "people"), nullptr); });
  Upsert(a.get(), People(0, 100, "secret"));
  ExpectConverged({a.get(), b.get(), c.get()}, 100);
  ASSERT_EQ(Found(*b, "y", "secret"), 100u);

  ASSERT_OK(a->records().DropAttribute("shop", "people", "y"));
  ExpectConverged({a.get(), b.get(), c.get()}, 100);
  for (TestNode* n : {a.get(), b.get(), c.get()}) {
    EXPECT_THAT(n->Attributes("shop", "people"), Not(Contains("y"))) << n->name();
    EXPECT_EQ(RowsHolding(*n, "secret"), 0u) << n->name();
    EXPECT_EQ(Found(*n, "y", "secret"), 0u) << n->name();
    EXPECT_EQ(n->Table("shop", "people")->attribute_markers().count("y"), 1u) << n->name();
  }
  // The marker outlives the attribute: a node added later gets it with the schema, and the
  // rows it copies carry no y.
  auto d = NewNode("d");
  d->Route(*b);
  ExpectConverged({a.get(), b.get(), c.get(), d.get()}, 100);
  EXPECT_EQ(RowsHolding(*d, "secret"), 0u);
  EXPECT_EQ(d->Table("shop", "people")->attribute_markers().count("y"), 1u);
  EXPECT_EQ(d->records().values_stripped(), 0u) << "a's strip reached the copy's source first";
}

// C15: a drops y while b is cut off and writes y to old and new rows. After the heal, rows b
// wrote before the drop's stamp lose y and rows written after keep it, on both nodes, with the
// same bodies — and the kept values are found by value (their index is rebuilt under the
// attribute that comes back with them).
TEST_F(AttributeMarkerTest, C15_RowsWrittenBeforeTheMarkerLoseTheValueAndLaterOnesKeepIt) {
  auto a = NewNode("a"), b = NewNode("b");
  a->Route(*b);
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "people", {"x", "y"})));
  Upsert(a.get(), People(0, 50, "old"));
  ExpectConverged({a.get(), b.get()}, 50);

  b->Isolate();
  // Overwrites of old rows, before the drop's stamp (the clocks of a and b are the same wall
  // clock with their own logical counters: a later millisecond orders them).
  WaitPast(Upsert(b.get(), People(0, 10, "b-before")));
  ASSERT_OK(a->records().DropAttribute("shop", "people", "y"));
  const Hlc dropped = a->Table("shop", "people")->attribute_markers().at("y");
  WaitPast(dropped);
  Upsert(b.get(), People(10, 20, "b-after"));  // overwrites, after the drop's stamp
  Upsert(b.get(), People(50, 60, "b-after"));  // new rows, after it too
  b->Start();

  ExpectConverged({a.get(), b.get()}, 60);
  for (TestNode* n : {a.get(), b.get()}) {
    EXPECT_EQ(RowsHolding(*n, "\"old\""), 0u) << n->name();
    EXPECT_EQ(RowsHolding(*n, "b-before"), 0u) << n->name();
    EXPECT_EQ(RowsHolding(*n, "b-after"), 20u) << n->name();
    EXPECT_EQ(Found(*n, "y", "b-after"), 20u) << n->name();
    const std::optional<catalog::AttributeDef> y = n->Attribute("shop", "people", "y");
    ASSERT_TRUE(y.has_value()) << n->name();
    EXPECT_GE(y->created_time, dropped) << n->name();
  }
}

// C15: y dropped and re-created with another type on a. A peer's old rows never bring y back
// (not even the peer's own rows written before the drop, arriving after the re-create); the
// new values replicate.
TEST_F(AttributeMarkerTest, C15_ARecreatedAttributeStartsEmptyEverywhere) {
  auto a = NewNode("a"), b = NewNode("b");
  a->Route(*b);
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "people", {"x", "y"})));
  Upsert(a.get(), People(0, 30, "old"));
  ExpectConverged({a.get(), b.get()}, 30);

  b->Isolate();
  WaitPast(Upsert(b.get(), People(30, 40, "b-old")));  // b's own rows, older than the drop
  ASSERT_OK(a->records().DropAttribute("shop", "people", "y"));
  ASSERT_OK(a->catalog().CreateAttribute("shop", "people", {"y", catalog::v1::INT, true}));
  json fresh = json::array();
  for (int i = 0; i < 5; ++i) fresh.push_back({{"id", absl::StrCat("p", i)}, {"y", i}});
  ASSERT_OK(a->records().Write("shop", "people", fresh, catalog::WriteMode::kUpdate));
  b->Start();

  ExpectConverged({a.get(), b.get()}, 40);
  for (TestNode* n : {a.get(), b.get()}) {
    EXPECT_EQ(RowsHolding(*n, "old"), 0u) << n->name();  // "old" and "b-old"
    EXPECT_EQ(Found(*n, "y", 3), 1u) << n->name();
    EXPECT_EQ(Found(*n, "y", "b-old"), 0u) << n->name();
    const std::optional<catalog::AttributeDef> y = n->Attribute("shop", "people", "y");
    ASSERT_TRUE(y.has_value()) << n->name();
    EXPECT_EQ(y->type, catalog::v1::INT) << n->name();
  }
}

// C15 with C4: a peer whose definition still lists y (it has not applied the marker yet)
// never adds y back; the marker is applied before definitions (R4) and survives restarts.
TEST_F(AttributeMarkerTest, C15_APeerDefinitionOlderThanTheMarkerDoesNotAddTheAttribute) {
  auto a = NewNode("a");
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "people", {"x", "y"})));
  const Hlc created = a->Table("shop", "people")->created_time();
  ASSERT_OK(a->records().DropAttribute("shop", "people", "y"));
  catalog::PeerTableDef old;
  old.database = "shop";
  old.table = "people";
  old.created_time = created;
  old.primary_key = "id";
  old.schema_defined = true;
  old.attributes = {{"x", catalog::v1::STRING, true, created},
                    {"y", catalog::v1::STRING, true, created}};
  ASSERT_OK(a->catalog().ApplyPeerTable(old));
  EXPECT_THAT(a->Attributes("shop", "people"), Not(Contains("y")));
  old.attributes[1].created_time = 0;  // a peer without attribute stamps
  ASSERT_OK(a->catalog().ApplyPeerTable(old));
  EXPECT_THAT(a->Attributes("shop", "people"), Not(Contains("y")));
  a->Stop();
  a->Start();
  EXPECT_EQ(a->Table("shop", "people")->attribute_markers().count("y"), 1u);
  ASSERT_OK(a->catalog().ApplyPeerTable(old));
  EXPECT_THAT(a->Attributes("shop", "people"), Not(Contains("y")));
  // A peer's attribute created after the marker is a new attribute: it is added.
  old.attributes[1].created_time = a->node_hlc_now();
  ASSERT_OK(a->catalog().ApplyPeerTable(old));
  EXPECT_THAT(a->Attributes("shop", "people"), Contains("y"));
}

// C15 with R16: b's clock runs 200 ms ahead (within the bound). b creates z; a learns of it
// and drops it at once. The drop is stamped after z's creation (a's clock observed it), so
// b removes z too and z does not come back to a with b's next definition.
TEST_F(AttributeMarkerTest, C15_ADropIsStampedAfterTheAttributeItDrops) {
  OffsetClock ahead;
  ahead.set_offset(absl::Milliseconds(200));
  auto a = NewNode("a");
  auto b = std::make_unique<TestNode>("b", dir_.Sub("b"), "s3cret");
  b->set_clock(&ahead);
  b->Start();
  a->Route(*b);
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "people", {"x"})));
  ASSERT_EVENTUALLY([&] { ASSERT_NE(b->Table("shop", "people"), nullptr); });
  ASSERT_OK(b->catalog().CreateAttribute("shop", "people", {"z", catalog::v1::STRING, true}));
  ASSERT_EVENTUALLY([&] { ASSERT_THAT(a->Attributes("shop", "people"), Contains("z")); });
  const Hlc created = a->Table("shop", "people")->FindAttribute("z")->created_time;
  absl::StatusOr<Hlc> dropped = a->records().DropAttribute("shop", "people", "z");
  ASSERT_OK(dropped);
  EXPECT_GT(*dropped, created);
  ASSERT_EVENTUALLY([&] { ASSERT_THAT(b->Attributes("shop", "people"), Not(Contains("z"))); });
  // Another schema change on b makes b send its definition again; once a has it, z must
  // still be gone there.
  ASSERT_OK(b->catalog().CreateTable(Spec("shop", "later", {"x"})));
  ASSERT_EVENTUALLY([&] { ASSERT_NE(a->Table("shop", "later"), nullptr); });
  EXPECT_THAT(a->Attributes("shop", "people"), Not(Contains("z")));
  EXPECT_THAT(b->Attributes("shop", "people"), Not(Contains("z")));
}

// C15 with C4 (decision 102): c holds y from the old generation (older than a's drop of it)
// and learns from b — which re-created the table after the drop — a y newer than the drop
// before the drop itself reaches c. c keeps y (its stamp is the newer one), so the nodes end
// with one y of one type: c does not lose it to the marker and get it back from b's rows as
// an attribute of another type (found by a fresh seed of the random schedule).
TEST_F(AttributeMarkerTest, C15_AnAttributeNewerOnAnyNodeSurvivesTheMarkerEverywhere) {
  auto a = NewNode("a"), b = NewNode("b"), c = NewNode("c");
  a->Route(*b);
  b->Route(*c);
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "people", {"x", "y"})));
  Upsert(a.get(), People(0, 20, "old"));
  ExpectConverged({a.get(), b.get(), c.get()}, 20);

  a->Isolate();
  absl::StatusOr<Hlc> dropped = a->records().DropAttribute("shop", "people", "y");
  ASSERT_OK(dropped);
  WaitPast(*dropped);
  // b drops its copy locally (no marker) and creates the table again: y newer than the drop.
  ASSERT_OK(b->catalog().DropTable("shop", "people", /*timed=*/false));
  ASSERT_OK(b->catalog().CreateTable(Spec("shop", "people", {"x", "y"})));
  Upsert(b.get(), People(100, 110, "new"));
  ASSERT_EVENTUALLY([&] {
    const std::optional<catalog::AttributeDef> y = c->Attribute("shop", "people", "y");
    ASSERT_TRUE(y.has_value());
    ASSERT_GE(y->created_time, *dropped);
  });
  a->Start();
  ASSERT_EVENTUALLY([&] {
    for (TestNode* n : {a.get(), b.get(), c.get()}) {
      ASSERT_EQ(n->Table("shop", "people")->attribute_markers().count("y"), 1u) << n->name();
      const std::optional<catalog::AttributeDef> y = n->Attribute("shop", "people", "y");
      ASSERT_TRUE(y.has_value()) << n->name();
      ASSERT_EQ(y->type, catalog::v1::STRING) << n->name();
      ASSERT_EQ(Found(*n, "y", "new"), 10u) << n->name();
      ASSERT_EQ(RowsHolding(*n, "\"old\""), 0u) << n->name();
    }
  });
}

// Decision 103: an attribute a node made for a field of a peer's record (decision 5: Any,
// indexed) is provisional, on that node and on every node its definition reaches; the first
// declared definition of it that arrives gives it its type and index there, and that node's
// next definition carries it on. Without this, C4 would keep the guess on some nodes and the
// declared type on others for good (found by fresh seeds of the random schedule, where a
// marker had removed the attribute on a node that then received rows carrying it).
TEST_F(AttributeMarkerTest, Decision103_AnAttributeMadeForAPeerRecordTakesTheDeclaredType) {
  auto a = NewNode("a"), c = NewNode("c");
  a->Route(*c);
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "people", {"x"})));
  const Hlc created = a->Table("shop", "people")->created_time();
  ASSERT_EVENTUALLY([&] { ASSERT_NE(c->Table("shop", "people"), nullptr); });
  // What a peer's row carrying y does on a (decision 5), as a peer's definition would carry
  // it on. c adds y from a's definition (C4), provisional too; d, added later, creates the
  // table from it (C5), y provisional too.
  catalog::AttributeSpec guess("y", catalog::v1::ANY, /*indexed=*/true, a->node_hlc_now());
  guess.provisional = true;
  ASSERT_OK(a->catalog().ApplyPeerTable(
      {"shop", "people", created, "id", {{"x", catalog::v1::STRING, true, created}, guess}, true}));
  auto d = NewNode("d");
  d->Route(*a);
  for (TestNode* n : {c.get(), d.get()}) {
    ASSERT_EVENTUALLY([&] {
      ASSERT_NE(n->Table("shop", "people"), nullptr) << n->name();
      const std::optional<catalog::AttributeDef> y = n->Attribute("shop", "people", "y");
      ASSERT_TRUE(y.has_value()) << n->name();
      ASSERT_EQ(y->origin, catalog::v1::PEER_RECORD) << n->name();
    });
  }
  Upsert(a.get(), json::array({{{"id", "p1"}, {"x", "x1"}, {"y", "v"}}}));
  // b declares y (String, not indexed) in a table of the same name: the same table (C8,
  // no marker between them) whose definition reaches a, then c and d through a.
  auto b = NewNode("b");
  ASSERT_OK(b->catalog().CreateTable(Spec("shop", "people", {"x"})));
  ASSERT_OK(b->catalog().CreateAttribute("shop", "people", {"y", catalog::v1::STRING, false}));
  b->Route(*a);
  ASSERT_EVENTUALLY([&] {
    for (TestNode* n : {a.get(), b.get(), c.get(), d.get()}) {
      const std::optional<catalog::AttributeDef> y = n->Attribute("shop", "people", "y");
      ASSERT_TRUE(y.has_value()) << n->name();
      ASSERT_EQ(y->type, catalog::v1::STRING) << n->name();
      ASSERT_FALSE(y->indexed) << n->name();
      ASSERT_NE(y->origin, catalog::v1::PEER_RECORD) << n->name();
      ASSERT_EQ(Found(*n, "y", "v"), 1u) << n->name();
    }
  });
}

// Decision 105: an attribute a local write made (a dynamic table's new field, D2) is a guess
// too. a writes a row with `colour` while b, cut off, declares `colour` (String, not indexed);
// once linked both end with b's declaration and a's row keeps its value. Without it, a kept
// Any, indexed as its own declaration, b its String, for good (C4).
TEST_F(AttributeMarkerTest, Decision105_AnAttributeALocalWriteMadeTakesTheDeclaredType) {
  auto a = NewNode("a"), b = NewNode("b");
  catalog::TableSpec dynamic = Spec("shop", "people", {});
  dynamic.attributes.reset();
  ASSERT_OK(a->catalog().CreateTable(dynamic));
  ASSERT_OK(b->catalog().CreateTable(dynamic));
  Upsert(a.get(), json::array({{{"id", "p1"}, {"colour", "red"}}}));
  ASSERT_OK(b->catalog().CreateAttribute("shop", "people", {"colour", catalog::v1::STRING, false}));
  b->Route(*a);
  ASSERT_EVENTUALLY([&] {
    for (TestNode* n : {a.get(), b.get()}) {
      const std::optional<catalog::AttributeDef> colour = n->Attribute("shop", "people", "colour");
      ASSERT_TRUE(colour.has_value()) << n->name();
      ASSERT_EQ(colour->type, catalog::v1::STRING) << n->name();
      ASSERT_FALSE(colour->indexed) << n->name();
      ASSERT_NE(colour->origin, catalog::v1::PEER_RECORD) << n->name();
      ASSERT_EQ(Found(*n, "colour", "red"), 1u) << n->name();
    }
  });
}

// C15 with R16: an attribute marker's stamp and an attribute's created_time in a peer's
// snapshot are stamps like any other; one from the future refuses the snapshot before
// anything of it is applied or observed.
TEST(AttributeMarkerSchemaTest, R16_AttributeStampsFromTheFutureAreRefused) {
  HybridClock hlc(SystemClock::Default());
  ClockBound bound(&hlc, absl::Seconds(1));
  const Hlc now = HybridClock::Make(static_cast<uint64_t>(absl::ToUnixMillis(absl::Now())), 0);
  const Hlc future =
      HybridClock::Make(static_cast<uint64_t>(absl::ToUnixMillis(absl::Now() + absl::Hours(1))), 0);
  peer::v1::DbSchema schema;
  schema.set_database("shop");
  peer::v1::PeerAttributeMarker* m = schema.add_attribute_markers();
  m->set_table("people");
  m->set_attribute("y");
  m->set_dropped_time(now);
  peer::v1::PeerTable* t = schema.add_tables();
  t->set_name("people");
  t->set_created_time(now);
  t->set_primary_key("id");
  peer::v1::PeerAttribute* y = t->add_attributes();
  y->set_name("y");
  y->set_created_time(now);
  EXPECT_OK(bound.CheckSchema(schema, "b"));
  m->set_dropped_time(future);
  EXPECT_EQ(bound.CheckSchema(schema, "b").code(), absl::StatusCode::kFailedPrecondition);
  m->set_dropped_time(now);
  y->set_created_time(future);
  EXPECT_EQ(bound.CheckSchema(schema, "b").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(bound.refusals(), 2u);
}

// C15: the schema digest (cluster_status schema_in_sync) covers the attribute markers, so
// two nodes that hold different ones are not reported in sync. The snapshots are made by hand
// here, so their marker sums are counted as Catalog::Publish keeps them.
TEST(AttributeMarkerSchemaTest, C15_TheSchemaDigestCoversAttributeMarkers) {
  auto counted = [](catalog::CatalogSnapshot s, const std::string& db) {
    s.marker_digests[db] = catalog::NameMarkersDigest(s, db, "people");
    return s;
  };
  catalog::CatalogSnapshot none;
  catalog::CatalogSnapshot one;
  one.attribute_markers[{"shop", "people"}]["y"] = 100;
  one = counted(one, "shop");
  catalog::CatalogSnapshot later = one;
  later.attribute_markers[{"shop", "people"}]["y"] = 200;
  later = counted(later, "shop");
  catalog::CatalogSnapshot other_db = none;
  other_db.attribute_markers[{"else", "people"}]["y"] = 100;
  other_db = counted(other_db, "else");
  EXPECT_NE(SchemaDigest(none, "shop"), SchemaDigest(one, "shop"));
  EXPECT_NE(SchemaDigest(one, "shop"), SchemaDigest(later, "shop"));
  EXPECT_EQ(SchemaDigest(none, "shop"), SchemaDigest(other_db, "shop"));
  // Sent only to a peer that advertised the capability (R1).
  EXPECT_EQ(BuildDbSchema(one, "shop").attribute_markers_size(), 1);
  EXPECT_EQ(BuildDbSchema(one, "shop", {{}, /*attribute_markers=*/false}).attribute_markers_size(),
            0);
}

}  // namespace
}  // namespace cairn::replication
