// RecordStore: local writes and searches (SPEC D1-D4, D6, D8, C9, C16) and the write side of
// the change log (R5). Peer entries: record_store_apply_test.cc; the C8 purge:
// record_store_purge_test.cc; strips of dropped attributes: record_store_strip_test.cc.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <future>
#include <map>
#include <random>
#include <set>

#include "catalog/internal/record_codec.h"
#include "common/fault_points.h"
#include "storage/value_codec.h"
#include "tests/catalog/record_store_fixture.h"

namespace cairn::catalog {
namespace {

using ::cairn::testing::HasErrorCode;
using nlohmann::json;
using storage::v1::ChangeEntry;

TEST_F(RecordStoreTest, D1_InsertWithoutPrimaryKeyGetsAUuid) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  auto r = Write("t", json::array({{{"name", "x"}}}), WriteMode::kInsert);
  ASSERT_OK(r);
  ASSERT_EQ(r->written.size(), 1u);
  ASSERT_TRUE(r->written[0].is_string());
  EXPECT_EQ(r->written[0].get<std::string>().size(), 36u);
  auto found = ById("t", r->written);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0]["name"], "x");
}

TEST_F(RecordStoreTest, D1_PrimaryKeyTypes) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  ASSERT_OK(Write("t", json::array({{{"id", 1}, {"v", "int"}}, {{"id", "1"}, {"v", "str"}}}),
                  WriteMode::kInsert));
  EXPECT_EQ(Count("t"), 2u);  // 1 and "1" are different keys
  EXPECT_EQ(ById("t", json::array({1}))[0]["v"], "int");
  EXPECT_THAT(Write("t", json::array({{{"id", 2}}, {{"id", 1.5}}}), WriteMode::kInsert),
              HasErrorCode(ErrorCode::kTypeMismatch));
  EXPECT_THAT(Write("t", json::array({{{"id", json::object()}}}), WriteMode::kInsert),
              HasErrorCode(ErrorCode::kTypeMismatch));
  EXPECT_EQ(Count("t"), 2u);  // nothing of the refused batches
  EXPECT_TRUE(ById("t", json::array({2})).empty());
}

// D8: "" is not a primary key, and an attribute name has no backtick; nothing of such a batch
// is written. The message names the record, except where Harper's tests compare the whole
// message (an update without a key, a record's attribute name): there it is Harper's.
TEST_F(RecordStoreTest, D8_EmptyKeysAndBacktickNamesAreRefused) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  for (WriteMode mode : {WriteMode::kInsert, WriteMode::kUpsert, WriteMode::kUpdate}) {
    auto r = Write("t", json::array({{{"id", 1}}, {{"id", ""}, {"v", 1}}}), mode);
    EXPECT_THAT(r, HasErrorCode(ErrorCode::kBadRequest));
    EXPECT_EQ(r.status().message(),
              mode == WriteMode::kUpdate
                  ? "a valid hash attribute must be provided with update record, check log for "
                    "more info"
                  : "records[1]: the primary key 'id' must not be an empty string");
  }
  for (const char* name : {"a`b", "a/b"}) {
    auto r = Write("t", json::array({{{"id", 1}, {name, 1}}}), WriteMode::kInsert);
    EXPECT_THAT(r, HasErrorCode(ErrorCode::kInvalidName));
    EXPECT_EQ(r.status().message(), "Attribute names cannot include backticks or forward slashes");
  }
  EXPECT_THAT(catalog().CreateAttribute("db", "t", {"`", v1::ANY, true}),
              HasErrorCode(ErrorCode::kInvalidName));
  EXPECT_EQ(Count("t"), 0u);
  EXPECT_TRUE(Log().empty());
  EXPECT_EQ(Live("db", "t")->attributes().size(), 3u);  // id and the two time attributes
  // A peer's entry keyed "" or with a backtick field is malformed: skipped and counted.
  const Hlc gen = Live("db", "t")->created_time();
  auto s = Apply({Put("t", "", 10, "p", gen, {{"id", ""}}),
                  Put("t", "k", 11, "p", gen, {{"id", "k"}, {"x`", 1}})});
  ASSERT_OK(s);
  EXPECT_EQ(s->malformed, 2u);
  EXPECT_EQ(Count("t"), 0u);
}

TEST_F(RecordStoreTest, D2_SchemaDefinedRefusesTheWholeBatchOnOneBadRecord) {
  TableSpec sealed = Spec("db", "t", {"name"});
  sealed.sealed = true;  // else an attribute it does not declare is added (D2)
  ASSERT_OK(catalog().CreateTable(sealed));
  auto r = Write("t", json::array({{{"id", 1}, {"name", "ok"}}, {{"id", 2}, {"nope", 1}}}),
                 WriteMode::kInsert);
  EXPECT_THAT(r, HasErrorCode(ErrorCode::kUnknownAttribute));
  EXPECT_NE(r.status().message().find("'nope'"), std::string::npos);
  r = Write("t", json::array({{{"id", 1}, {"name", "ok"}}, {{"id", 2}, {"name", 7}}}),
            WriteMode::kInsert);
  EXPECT_THAT(r, HasErrorCode(ErrorCode::kTypeMismatch));
  EXPECT_NE(r.status().message().find("'name'"), std::string::npos);
  EXPECT_THAT(Write("t", json::array({{{"id", 1}}, "not an object"}), WriteMode::kInsert),
              HasErrorCode(ErrorCode::kBadRequest));
  EXPECT_EQ(Count("t"), 0u);
  EXPECT_TRUE(Log().empty());
  EXPECT_EQ(Live("db", "t")->attributes().size(), 2u);
}

// D2 and decision 105: a schema-defined table not sealed adds a record's new field as a
// dynamic table does, provisional: a declaration of it (a peer's definition, as decision 103)
// gives it its type and index.
TEST_F(RecordStoreTest, D2_SchemaDefinedTablesAddUndeclaredFieldsProvisionally) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"name"})));
  auto r =
      Write("t", json::array({{{"id", 1}, {"name", "ok"}, {"payload", "x"}}}), WriteMode::kInsert);
  ASSERT_OK(r);
  EXPECT_THAT(r->new_attributes, ::testing::ElementsAre("payload"));
  const AttributeDef* payload = Live("db", "t")->FindAttribute("payload");
  ASSERT_NE(payload, nullptr);
  EXPECT_EQ(payload->type, v1::ANY);
  EXPECT_TRUE(payload->indexed);
  EXPECT_EQ(payload->origin, v1::PEER_RECORD);  // provisional
  EXPECT_EQ(By("t", "payload", "x").size(), 1u);
  // A peer declares it: it takes the declared type and index in place, the row keeps it.
  TableRef live = Live("db", "t");
  PeerTableDef peer{"db", "t", live->created_time(), "id", {}, /*schema_defined=*/true};
  peer.attributes = {{"name", v1::STRING, true}, {"payload", v1::STRING, false}};
  ASSERT_OK(catalog().ApplyPeerTable(peer));
  payload = Live("db", "t")->FindAttribute("payload");
  ASSERT_NE(payload, nullptr);
  EXPECT_EQ(payload->type, v1::STRING);
  EXPECT_FALSE(payload->indexed);
  EXPECT_NE(payload->origin, v1::PEER_RECORD);
  EXPECT_EQ(ById("t", json::array({1}))[0]["payload"], "x");
  ExpectIndexConsistent("t");
}

TEST_F(RecordStoreTest, D2_DynamicTablesAddIndexedAttributesAndTrackTimes) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  auto r = Write("t", json::array({{{"id", 1}, {"color", "red"}}}), WriteMode::kInsert);
  ASSERT_OK(r);
  EXPECT_THAT(r->new_attributes, ::testing::ElementsAre("color"));
  const AttributeDef* color = Live("db", "t")->FindAttribute("color");
  ASSERT_NE(color, nullptr);
  EXPECT_TRUE(color->indexed);
  EXPECT_EQ(By("t", "color", "red").size(), 1u);
  json first = ById("t", json::array({1}))[0];
  ASSERT_TRUE(first["__createdtime__"].is_number());
  EXPECT_EQ(first["__createdtime__"], first["__updatedtime__"]);
  ASSERT_OK(Write("t", json::array({{{"id", 1}, {"size", 3}}}), WriteMode::kUpdate));
  json second = ById("t", json::array({1}))[0];
  EXPECT_EQ(second["__createdtime__"], first["__createdtime__"]);
  EXPECT_GE(second["__updatedtime__"].get<int64_t>(), first["__updatedtime__"].get<int64_t>());
  EXPECT_EQ(second["color"], "red");  // update merges
  EXPECT_EQ(second["size"], 3);
  // Invalid attribute names are refused with nothing written.
  EXPECT_THAT(Write("t", json::array({{{"id", 2}, {"a/b", 1}}}), WriteMode::kInsert),
              HasErrorCode(ErrorCode::kInvalidName));
  EXPECT_EQ(Count("t"), 1u);
}

// D2, C1: a dynamic write refused by a schema change that raced it leaves nothing behind, not
// even the attributes it would have added. Here a create_attribute gives one of its new names a
// type its value does not have, between the write's validation and its catalog change.
TEST_F(RecordStoreTest, D2_ARefusedDynamicWriteAddsNoAttribute) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  faults_.Set(fault_points::kWriteBeforeAttributes, FaultAction::Block().OnNth(1));
  auto write = std::async(std::launch::async, [&] {
    return Write("t", json::array({{{"id", 1}, {"a", "text"}, {"b", 1}}}), WriteMode::kInsert);
  });
  ASSERT_TRUE(faults_.WaitUntilBlocked(fault_points::kWriteBeforeAttributes, absl::Seconds(30)));
  ASSERT_OK(catalog().CreateAttribute("db", "t", {"b", v1::STRING, true}));
  faults_.Release(fault_points::kWriteBeforeAttributes);
  EXPECT_THAT(write.get(), HasErrorCode(ErrorCode::kTypeMismatch));
  EXPECT_EQ(Live("db", "t")->FindAttribute("a"), nullptr);
  EXPECT_EQ(Count("t"), 0u);
  EXPECT_TRUE(Log().empty());
}

TEST_F(RecordStoreTest, D3_Types) {
  TableSpec spec = Spec("db", "t");
  spec.attributes = std::vector<AttributeSpec>{{"s", v1::STRING, false}, {"i", v1::INT, true},
                                               {"f", v1::FLOAT, true},   {"b", v1::BOOLEAN, true},
                                               {"d", v1::DATE, true},    {"any", v1::ANY, true}};
  ASSERT_OK(catalog().CreateTable(spec));
  for (const json& ok :
       {json{{"id", 1},
             {"s", "x"},
             {"i", 3},
             {"f", 2},
             {"b", true},
             {"d", "2024-05-01T10:00:00Z"},
             {"any", {{"x", 1}}}},
        json{{"id", 2}, {"i", 3.0}, {"f", 2.5}, {"d", 1700000000000}, {"s", nullptr}},
        json{{"id", 3}, {"d", "2024-05-01"}, {"d", "2024-05-01 10:00:00"}}}) {
    EXPECT_OK(Write("t", json::array({ok}), WriteMode::kUpsert)) << ok.dump();
  }
  for (const json& bad :
       {json{{"id", 9}, {"s", 1}}, json{{"id", 9}, {"i", 1.5}}, json{{"id", 9}, {"i", "3"}},
        json{{"id", 9}, {"f", "2.5"}}, json{{"id", 9}, {"b", 1}},
        json{{"id", 9}, {"d", "yesterday"}}, json{{"id", 9}, {"d", true}}}) {
    EXPECT_THAT(Write("t", json::array({bad}), WriteMode::kUpsert),
                HasErrorCode(ErrorCode::kTypeMismatch))
        << bad.dump();
  }
  EXPECT_EQ(By("t", "i", "3").size(), 2u);  // a string search value fits an Int attribute
  EXPECT_EQ(By("t", "f", 2).size(), 1u);    // 2 == 2.0
}

TEST_F(RecordStoreTest, InsertUpdateUpsertDeleteSemantics) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"a", "b"})));
  auto ins = Write("t", json::array({{{"id", 1}, {"a", "x"}}, {{"id", 2}, {"a", "y"}}}),
                   WriteMode::kInsert);
  ASSERT_OK(ins);
  EXPECT_EQ(ins->written, json::array({1, 2}));
  ins = Write("t", json::array({{{"id", 1}, {"a", "z"}}, {{"id", 3}}}), WriteMode::kInsert);
  ASSERT_OK(ins);
  EXPECT_EQ(ins->written, json::array({3}));
  EXPECT_EQ(ins->skipped, json::array({1}));  // insert skips keys that exist
  EXPECT_EQ(ById("t", json::array({1}))[0]["a"], "x");

  auto upd = Write("t", json::array({{{"id", 1}, {"b", "bb"}}, {{"id", 9}, {"a", "q"}}}),
                   WriteMode::kUpdate);
  ASSERT_OK(upd);
  EXPECT_EQ(upd->written, json::array({1}));
  EXPECT_EQ(upd->skipped, json::array({9}));  // update skips keys that do not exist
  EXPECT_EQ(ById("t", json::array({1}))[0], (json{{"id", 1}, {"a", "x"}, {"b", "bb"}}));
  EXPECT_THAT(Write("t", json::array({{{"a", "no key"}}}), WriteMode::kUpdate),
              HasErrorCode(ErrorCode::kBadRequest));

  auto ups = Write("t", json::array({{{"id", 2}, {"b", "u"}}, {{"id", 4}, {"a", "new"}}}),
                   WriteMode::kUpsert);
  ASSERT_OK(ups);
  EXPECT_EQ(ups->written, json::array({2, 4}));
  EXPECT_EQ(ById("t", json::array({2}))[0], (json{{"id", 2}, {"a", "y"}, {"b", "u"}}));
  EXPECT_EQ(Count("t"), 4u);

  auto del = records().Delete("db", "t", json::array({2, 77, 2}));
  ASSERT_OK(del);
  EXPECT_EQ(del->written, json::array({2}));
  EXPECT_EQ(del->skipped, json::array({77, 2}));
  EXPECT_EQ(Count("t"), 3u);
  EXPECT_TRUE(ById("t", json::array({2})).empty());
  EXPECT_TRUE(By("t", "a", "y").empty());
  // A deleted key can be inserted again.
  ASSERT_OK(Write("t", json::array({{{"id", 2}, {"a", "again"}}}), WriteMode::kInsert));
  EXPECT_EQ(Count("t"), 4u);
  // The same key twice in one batch: the second sees the first.
  auto twice = Write("t", json::array({{{"id", 5}, {"a", "1"}}, {{"id", 5}, {"b", "2"}}}),
                     WriteMode::kUpsert);
  ASSERT_OK(twice);
  EXPECT_EQ(ById("t", json::array({5}))[0], (json{{"id", 5}, {"a", "1"}, {"b", "2"}}));
  EXPECT_TRUE(By("t", "a", "x").size() == 1 && By("t", "a", "1").size() == 1);
  ExpectIndexConsistent("t");
  ASSERT_OK(Reopen());
  EXPECT_EQ(Count("t"), 5u);
  ExpectIndexConsistent("t");
}

TEST_F(RecordStoreTest, D6_UnknownSearchAttributeIsRefused) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"name"})));
  std::vector<json> out;
  absl::Status s = records().SearchByValue("db", "t", "nope", "x", {}, [&](const json& r) {
    out.push_back(r);
    return true;
  });
  EXPECT_THAT(s, HasErrorCode(ErrorCode::kUnknownAttribute));
  EXPECT_EQ(s.message(), "unknown attribute 'nope'");
  SearchOptions o;
  o.get_attributes = {"name", "ghost"};
  EXPECT_THAT(
      records().SearchById("db", "t", json::array({1}), o, [](const json&) { return true; }),
      HasErrorCode(ErrorCode::kUnknownAttribute));
  EXPECT_THAT(
      records().SearchByValue("db", "missing", "name", "x", {}, [](const json&) { return true; }),
      HasErrorCode(ErrorCode::kTableNotFound));
}

// Decision 7, Harper's wildcards: a leading `*` matches a suffix, a trailing one a prefix,
// both a substring ("*4 Bedroom/2.5+*"); a `*` elsewhere is a literal character. On an index
// (a prefix narrows the range), a plain attribute (scanned), the primary key and array
// elements; strings only. Harper's clients search so ("*Sheriff Woody"); before, such a value
// was taken as an equality and found nothing.
TEST_F(RecordStoreTest, SearchByValueWildcards) {
  TableSpec spec = Spec("db", "t", {"task"});
  spec.attributes->push_back({"plain", v1::STRING, /*indexed=*/false});
  spec.attributes->push_back({"list", v1::ANY, true});
  ASSERT_OK(catalog().CreateTable(spec));
  const std::vector<std::string> tasks = {"Sheriff Woody",   "Mr Sheriff Woody",
                                          "Mr. Potato Head", "4 Bedroom/2.5+ Bath",
                                          "Woody",           "2*3"};
  json batch = json::array();
  for (size_t i = 0; i < tasks.size(); ++i) {
    batch.push_back({{"id", "k-" + tasks[i]},
                     {"task", tasks[i]},
                     {"plain", tasks[i]},
                     {"list", json::array({static_cast<int>(i), tasks[i]})}});
  }
  batch.push_back({{"id", 7}, {"list", json::array({7})}});  // not a string: never a match
  ASSERT_OK(Write("t", batch, WriteMode::kInsert));
  auto ids = [&](const std::string& attribute, const std::string& value) {
    std::set<std::string> out;
    for (const json& r : By("t", attribute, value)) out.insert(r["id"].get<std::string>());
    return out;
  };
  using Ids = std::set<std::string>;
  for (const std::string attribute : {"task", "plain", "list"}) {
    SCOPED_TRACE(attribute);
    EXPECT_EQ(ids(attribute, "*Sheriff Woody"), (Ids{"k-Sheriff Woody", "k-Mr Sheriff Woody"}));
    EXPECT_EQ(ids(attribute, "*4 Bedroom/2.5+*"), (Ids{"k-4 Bedroom/2.5+ Bath"}));
    EXPECT_EQ(ids(attribute, "*oo*").size(), 4u);  // Bedroom too
    EXPECT_EQ(ids(attribute, "Woody*"), (Ids{"k-Woody"}));
    EXPECT_EQ(ids(attribute, "**").size(), 6u);  // contains "": every string
    EXPECT_TRUE(ids(attribute, "*Sheriff").empty());
    EXPECT_TRUE(ids(attribute, "Mr*Woody").empty());   // a literal `*`: an equality
    EXPECT_EQ(ids(attribute, "2*3"), (Ids{"k-2*3"}));  // ... that finds its value
    EXPECT_EQ(ids(attribute, "*2*3*"), (Ids{"k-2*3"}));
  }
  EXPECT_EQ(ids("id", "*Woody").size(), 3u);
  EXPECT_EQ(ids("id", "*Potato*"), (Ids{"k-Mr. Potato Head"}));
  EXPECT_EQ(ids("id", "k-2*"), (Ids{"k-2*3"}));
}

TEST_F(RecordStoreTest, SearchByValueVariants) {
  TableSpec spec = Spec("db", "t", {"tag"});
  spec.attributes->push_back({"plain", v1::STRING, /*indexed=*/false});
  spec.attributes->push_back({"list", v1::ANY, true});
  ASSERT_OK(catalog().CreateTable(spec));
  json batch = json::array();
  for (int i = 0; i < 10; ++i) {
    batch.push_back({{"id", "k" + std::to_string(i)},
                     {"tag", i % 2 ? "odd" : "even"},
                     {"plain", "p" + std::to_string(i % 3)},
                     {"list", json::array({i, "x" + std::to_string(i)})}});
  }
  ASSERT_OK(Write("t", batch, WriteMode::kInsert));
  EXPECT_EQ(By("t", "tag", "*").size(), 10u);
  EXPECT_EQ(By("t", "tag", "odd").size(), 5u);
  EXPECT_EQ(By("t", "tag", "ev*").size(), 5u);   // prefix on an index
  EXPECT_EQ(By("t", "plain", "p1").size(), 3u);  // not indexed: scanned
  EXPECT_EQ(By("t", "plain", "p*").size(), 10u);
  EXPECT_EQ(By("t", "id", "k3").size(), 1u);  // the primary key
  EXPECT_EQ(By("t", "id", "k*").size(), 10u);
  EXPECT_EQ(By("t", "list", 4).size(), 1u);  // each array element is indexed
  EXPECT_EQ(By("t", "list", "x7").size(), 1u);
  EXPECT_TRUE(By("t", "tag", "none").empty());
  SearchOptions page;
  page.offset = 2;
  page.limit = 3;
  page.get_attributes = {"id"};
  auto got = By("t", "tag", "*", page);
  EXPECT_EQ(got, (std::vector<json>{{{"id", "k2"}}, {{"id", "k3"}}, {{"id", "k4"}}}));
  // The visitor can stop early.
  int seen = 0;
  ASSERT_OK(
      records().SearchByValue("db", "t", "tag", "*", {}, [&](const json&) { return ++seen < 4; }));
  EXPECT_EQ(seen, 4);
}

// D4: every write is logged in its own batch, with its version, origin and row generation.
TEST_F(RecordStoreTest, D4_EachWriteLogsOneEntryWithItsVersion) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"a"})));
  auto w1 = Write("t", json::array({{{"id", 1}, {"a", "x"}}, {{"id", 2}}}), WriteMode::kInsert);
  ASSERT_OK(w1);
  auto w2 = records().Delete("db", "t", json::array({1}));
  ASSERT_OK(w2);
  auto log = Log();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0].op(), storage::v1::PUT);
  EXPECT_EQ(log[0].version(), w1->version);
  EXPECT_EQ(log[0].origin(), "node-a");
  EXPECT_EQ(log[0].row_generation(), Live("db", "t")->created_time());
  EXPECT_TRUE(log[0].json().empty());  // the body is in the records family
  EXPECT_EQ(log[2].op(), storage::v1::DELETE);
  EXPECT_EQ(log[2].version(), w2->version);
  EXPECT_GT(w2->version, w1->version);
  EXPECT_EQ(node_->log->CommittedSeq("db"), 3u);
}

// C16, D5: once a peer's version at the end of time pinned the clock, local writes are refused
// with nothing written: stamping them all with one version would make peers drop every one
// after the first as a duplicate.
TEST_F(RecordStoreTest, C16_WritesAreRefusedWhenTheClockCannotAdvance) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  const Hlc gen = Live("db", "t")->created_time();
  ASSERT_OK(Apply({Put("t", "peer", kMaxHlc, "p", gen, {{"id", "peer"}})}));
  const size_t logged = Log().size();
  EXPECT_THAT(Write("t", json::array({{{"id", "k"}, {"v", 1}}}), WriteMode::kUpsert),
              HasErrorCode(ErrorCode::kInternal));
  EXPECT_THAT(records().Delete("db", "t", json::array({"peer"})),
              HasErrorCode(ErrorCode::kInternal));
  EXPECT_EQ(Count("t"), 1u);
  EXPECT_EQ(Log().size(), logged);
  EXPECT_TRUE(ById("t", json::array({"k"})).empty());
}

TEST_F(RecordStoreTest, DeeplyNestedRecordIsRefused) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  json deep = json::array();
  for (int i = 0; i < 100000; ++i) deep = json::array({std::move(deep)});
  auto r = Write("t", json::array({{{"id", 1}, {"x", std::move(deep)}}}), WriteMode::kInsert);
  EXPECT_THAT(r, HasErrorCode(ErrorCode::kBadRequest));
  EXPECT_EQ(Count("t"), 0u);
  json ok = json::array();
  for (int i = 0; i < 60; ++i) ok = json::array({std::move(ok)});
  EXPECT_OK(Write("t", json::array({{{"id", 2}, {"x", std::move(ok)}}}), WriteMode::kInsert));
}

// C9: a drop cancels a running scan instead of waiting for it to finish.
TEST_F(RecordStoreTest, C9_DropCancelsRunningScan) {
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"v"})));
  json batch = json::array();
  for (int i = 0; i < 50; ++i) batch.push_back({{"id", i}, {"v", "x"}});
  ASSERT_OK(Write("t", batch, WriteMode::kInsert));
  TableRef def = Live("db", "t");
  faults_.Set(fault_points::kScanRow, FaultAction::Block().OnNth(3));
  std::atomic<int> rows{0};
  auto scan = std::async(std::launch::async, [&] {
    return records().SearchByValue("db", "t", "v", "*", {}, [&](const json&) {
      ++rows;
      return true;
    });
  });
  ASSERT_TRUE(faults_.WaitUntilBlocked(fault_points::kScanRow, absl::Seconds(30)));
  auto drop = std::async(std::launch::async, [&] { return catalog().DropTable("db", "t"); });
  WaitUntilDropping(def);
  faults_.Release(fault_points::kScanRow);
  EXPECT_THAT(scan.get(), HasErrorCode(ErrorCode::kTableDropping));
  EXPECT_LT(rows.load(), 50);
  EXPECT_OK(drop.get());
}

// C9: a search whose rows mostly do not match (an unindexed attribute, ids that are absent)
// checks its gate at every row it reads, not only at those it emits.
TEST_F(RecordStoreTest, C9_DropCancelsAScanBetweenMatches) {
  TableSpec spec = Spec("db", "t");
  spec.attributes->push_back({"plain", v1::STRING, /*indexed=*/false});
  spec.attributes->push_back({"n", v1::INT, /*indexed=*/true});
  json batch = json::array();
  batch.push_back({{"id", 0}, {"plain", "yes"}, {"n", 0}});
  for (int i = 1; i < 3000; ++i) batch.push_back({{"id", i}, {"plain", "no"}, {"n", i}});
  json ids = json::array({0});
  for (int i = 1; i < 3000; ++i) ids.push_back(100000 + i);  // absent
  // search_by_conditions: an index range of 3,000 entries, each row read and filtered.
  auto conditions = ParseConditionSearch(
      json::parse(R"([{"search_attribute": "n", "search_type": "greater_than_equal",
                       "search_value": 0},
                      {"search_attribute": "plain", "search_type": "equals",
                       "search_value": "yes"}])"),
      nullptr, nullptr);
  ASSERT_OK(conditions);
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round == 0 ? "filtered scan" : (round == 1 ? "ids" : "index range"));
    ASSERT_OK(catalog().CreateTable(spec));
    ASSERT_OK(Write("t", batch, WriteMode::kInsert));
    ExpectADropCancels(Live("db", "t"), [&](const RecordStore::Visitor& visit) {
      switch (round) {
        case 0:
          return records().SearchByValue("db", "t", "plain", "yes", {}, visit);
        case 1:
          return records().SearchById("db", "t", ids, {}, visit);
        default:
          return records().SearchByConditions("db", "t", *conditions, {}, visit);
      }
    });
  }
}

// D3, D5 against an oracle. Property: after any sequence of local inserts, upserts, updates,
// deletes and peer writes over a few keys and values, (1) every record equals the oracle's,
// (2) the record count is exact, (3) every search by value returns exactly the oracle's
// matches, and (4) the index holds exactly the entries of the live records.
TEST_F(RecordStoreTest, D3_IndexMatchesOracleAfterRandomOperations) {
  const uint64_t seed = testing::TestSeed();
  std::mt19937_64 rng(seed);
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  const Hlc gen = Live("db", "t")->created_time();
  std::map<int, json> oracle;  // key -> record (without the time attributes)
  std::map<int, std::pair<Hlc, std::string>> versions;
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  auto random_value = [&]() -> json {
    switch (pick(4)) {
      case 0:
        return pick(3);
      case 1:
        return "s" + std::to_string(pick(3));
      case 2:
        return json::array({pick(3), "s" + std::to_string(pick(3))});
      default:
        return nullptr;
    }
  };
  auto strip = [](json r) {
    r.erase("__createdtime__");
    r.erase("__updatedtime__");
    return r;
  };
  Hlc peer_clock = HybridClock::Make(absl::ToUnixMillis(absl::Now()), 0);
  for (int step = 0; step < 600; ++step) {
    const int key = pick(12);
    json rec = {{"id", key}};
    if (pick(2)) rec["a"] = random_value();
    if (pick(2)) rec["b"] = random_value();
    const int op = pick(6);
    if (op <= 2) {
      const WriteMode mode = op == 0   ? WriteMode::kInsert
                             : op == 1 ? WriteMode::kUpsert
                                       : WriteMode::kUpdate;
      auto r = Write("t", json::array({rec}), mode);
      ASSERT_OK(r) << "seed " << seed << " step " << step;
      const bool exists = oracle.count(key) != 0;
      if (mode == WriteMode::kInsert && !exists) oracle[key] = rec;
      if (mode != WriteMode::kInsert && exists) {
        for (auto& [k, v] : rec.items()) oracle[key][k] = v;
      }
      if (mode == WriteMode::kUpsert && !exists) oracle[key] = rec;
      if (!r->written.empty()) versions[key] = {r->version, "node-a"};
    } else if (op == 3) {
      auto r = records().Delete("db", "t", json::array({key}));
      ASSERT_OK(r);
      // The tombstone keeps the delete's version: older peer writes lose to it (D5).
      if (oracle.erase(key)) versions[key] = {r->version, "node-a"};
    } else {
      // A peer write, sometimes older than what is stored.
      peer_clock += pick(3) == 0 ? 0 : 1 + pick(1000);
      const Hlc v = pick(4) == 0 ? peer_clock - 5000 : peer_clock;
      const std::string origin = pick(2) ? "node-b" : "node-c";
      const bool del = pick(4) == 0;
      ChangeEntry e = del ? Del("t", key, v, origin, gen) : Put("t", key, v, origin, gen, rec);
      ASSERT_OK(Apply({e}));
      // The oracle's own LWW view over (version, origin) of the last write or tombstone.
      auto& cur = versions[key];
      const bool wins =
          cur.second.empty() || v > cur.first || (v == cur.first && origin > cur.second);
      if (wins) {
        cur = {v, origin};
        if (del) {
          oracle.erase(key);
        } else {
          oracle[key] = rec;
        }
      }
    }
    if (step % 100 == 99) ExpectIndexConsistent("t");
  }
  ExpectIndexConsistent("t");
  EXPECT_EQ(Count("t"), oracle.size()) << "seed " << seed;
  for (const auto& [key, rec] : oracle) {
    auto got = ById("t", json::array({key}));
    ASSERT_EQ(got.size(), 1u) << "seed " << seed << " key " << key;
    EXPECT_EQ(strip(got[0]), rec) << "seed " << seed;
  }
  for (const char* attr : {"a", "b"}) {
    if (Live("db", "t")->FindAttribute(attr) == nullptr) continue;
    for (const json& v :
         {json(0), json(1), json(2), json("s0"), json("s1"), json("s2"), json(nullptr)}) {
      std::set<int> expected;
      for (const auto& [key, rec] : oracle) {
        auto f = rec.find(attr);
        if (f != rec.end() && internal::FieldMatches(*f, v, nullptr)) expected.insert(key);
      }
      std::set<int> got;
      for (const json& r : By("t", attr, v)) got.insert(r["id"].get<int>());
      EXPECT_EQ(got, expected) << "seed " << seed << " " << attr << "=" << v.dump();
    }
  }
}

// A writer process killed with SIGKILL at a random moment loses no acknowledged write: every
// batch it reported as committed is there after a restart, with its log entries (WAL on).
TEST_F(RecordStoreTest, KillNineLosesNoAcknowledgedWrite) {
  const uint64_t seed = testing::TestSeed();
  std::mt19937_64 rng(seed);
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"v"})));
  for (int round = 0; round < 3; ++round) {
    Close();
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      auto node = testing::LocalNode::Open(dir_.path(), options_);
      if (!node.ok()) std::_Exit(1);
      for (int batch = 0;; ++batch) {
        json recs = json::array();
        for (int i = 0; i < 10; ++i) {
          recs.push_back({{"id", round * 1000000 + batch * 10 + i}, {"v", "x"}});
        }
        if (!(*node)->records->Write("db", "t", recs, WriteMode::kInsert).ok()) std::_Exit(2);
        // Acknowledged: tell the parent.
        int32_t acked = batch;
        if (write(fds[1], &acked, sizeof(acked)) != sizeof(acked)) std::_Exit(3);
      }
    }
    close(fds[1]);
    const int kill_after = 20 + static_cast<int>(rng() % 400);
    int32_t last = -1, got = 0;
    while (got < kill_after && read(fds[0], &last, sizeof(last)) == sizeof(last)) ++got;
    kill(pid, SIGKILL);
    // Acknowledgements already in the pipe count too.
    while (read(fds[0], &last, sizeof(last)) == sizeof(last)) {
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "writer exited on its own: " << status;
    ASSERT_OK(Reopen());
    json ids = json::array();
    for (int b = 0; b <= last; ++b) {
      for (int i = 0; i < 10; ++i) ids.push_back(round * 1000000 + b * 10 + i);
    }
    EXPECT_EQ(ById("t", ids).size(), ids.size()) << "seed " << seed << " round " << round;
    // D4, per key and both ways: every acknowledged record has its log entry, and every log
    // entry names a record that was written, at the entry's version.
    const uint64_t generation = Live("db", "t")->generation_id();
    std::map<std::string, Hlc> logged;  // encoded key -> version
    for (const ChangeEntry& e : Log()) logged[e.key()] = e.version();
    for (const json& id : ids) {
      std::string key;
      ASSERT_OK(storage::AppendPrimaryKey(id, &key));
      EXPECT_EQ(logged.count(key), 1u) << "seed " << seed << ": no log entry for " << id;
    }
    for (const auto& [key, version] : logged) {
      std::string value;
      bool found = false;
      ASSERT_OK(node_->engine->Get(storage::Cf::kRecords, storage::RecordKey(generation, key),
                                   &value, &found));
      storage::v1::StoredRecord rec;
      EXPECT_TRUE(found && rec.ParseFromString(value) && rec.version() == version)
          << "seed " << seed << ": a log entry without its record";
    }
    ExpectIndexConsistent("t");
  }
}

}  // namespace
}  // namespace cairn::catalog
