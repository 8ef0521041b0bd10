// Records (SPEC D1-D7) and the write side of the change log (R5).
#include "catalog/record_store.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <future>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "catalog/internal/record_codec.h"
#include "common/fault_points.h"
#include "storage/value_codec.h"
#include "tests/catalog/catalog_fixture.h"

namespace cairn::catalog {
namespace {

using ::cairn::testing::HasErrorCode;
using nlohmann::json;
using storage::v1::ChangeEntry;

class RecordStoreTest : public CatalogFixture {
 protected:
  absl::StatusOr<WriteResult> Write(const std::string& table, json recs, WriteMode mode) {
    return records().Write("db", table, recs, mode);
  }
  std::vector<json> ById(const std::string& table, json ids, std::vector<std::string> get = {}) {
    std::vector<json> out;
    SearchOptions o;
    o.get_attributes = std::move(get);
    EXPECT_OK(records().SearchById("db", table, ids, o, [&](const json& r) {
      out.push_back(r);
      return true;
    }));
    return out;
  }
  std::vector<json> By(const std::string& table, const std::string& attr, json value,
                       SearchOptions o = {}) {
    std::vector<json> out;
    EXPECT_OK(records().SearchByValue("db", table, attr, value, o, [&](const json& r) {
      out.push_back(r);
      return true;
    }));
    return out;
  }
  uint64_t Count(const std::string& table) {
    auto n = records().RecordCount("db", table);
    EXPECT_OK(n);
    return n.ok() ? *n : 0;
  }
  // Every change-log entry of database "db", in sequence order.
  std::vector<ChangeEntry> Log() {
    std::vector<ChangeEntry> out;
    auto it = node_->engine->NewIterator(storage::Cf::kChangeLog);
    const std::string prefix = storage::LogPrefix("db");
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      ChangeEntry e;
      e.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()));
      out.push_back(e);
    }
    return out;
  }
  static ChangeEntry Put(const std::string& table, json pk, Hlc version, const std::string& origin,
                         Hlc row_generation, json record) {
    ChangeEntry e;
    e.set_table(table);
    e.set_op(storage::v1::PUT);
    std::string key;
    EXPECT_OK(storage::AppendPrimaryKey(pk, &key));
    e.set_key(key);
    e.set_version(version);
    e.set_origin(origin);
    e.set_row_generation(row_generation);
    e.set_json(record.dump());
    return e;
  }
  static ChangeEntry Del(const std::string& table, json pk, Hlc version, const std::string& origin,
                         Hlc row_generation) {
    ChangeEntry e = Put(table, pk, version, origin, row_generation, json::object());
    e.set_op(storage::v1::DELETE);
    e.clear_json();
    return e;
  }
  absl::StatusOr<ApplyStats> Apply(std::vector<ChangeEntry> entries,
                                   std::function<void(rocksdb::WriteBatch*)> extra = nullptr) {
    return records().ApplyPeerEntries("db", entries, extra);
  }

  // C9: a drop cancels a scan between two rows it emits, however many rows it reads in between.
  // `scan` runs with a visitor that parks at the first row it is given; the drop begins
  // meanwhile; every row the scan reads after that finds the gate closing.
  void ExpectADropCancels(const TableRef& def,
                          const std::function<absl::Status(const RecordStore::Visitor&)>& scan) {
    std::promise<void> entered, resume;
    std::shared_future<void> resumed = resume.get_future().share();
    std::atomic<int> visits{0};
    // Whatever fails below, the parked visitor is let go, so the scan can finish.
    auto let_go = absl::MakeCleanup([&] { resume.set_value(); });
    auto running = std::async(std::launch::async, [&] {
      return scan([&](const json&) {
        if (visits++ == 0) {
          entered.set_value();
          resumed.wait();
        }
        return true;
      });
    });
    ASSERT_EQ(entered.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready)
        << "the scan never reached a row";
    auto drop = std::async(std::launch::async,
                           [&] { return catalog().DropTable(def->database(), def->name()); });
    ASSERT_EVENTUALLY([&] { ASSERT_TRUE(def->state()->dropping()); });
    std::move(let_go).Invoke();
    EXPECT_THAT(running.get(), HasErrorCode(ErrorCode::kTableDropping));
    EXPECT_EQ(visits.load(), 1);
    EXPECT_OK(drop.get());
  }

  // D3: the index and the records agree exactly. Every index entry points at a live record
  // holding that value, and every value of every live record has its entry.
  void ExpectIndexConsistent(const std::string& table) {
    TableRef def = Live("db", table);
    ASSERT_NE(def, nullptr);
    std::set<std::string> expected;
    auto it = node_->engine->NewIterator(storage::Cf::kRecords);
    const std::string gen = storage::GenerationPrefix(def->generation_id());
    for (it->Seek(gen); it->Valid() && it->key().starts_with(gen); it->Next()) {
      storage::v1::StoredRecord rec;
      ASSERT_TRUE(rec.ParseFromArray(it->value().data(), static_cast<int>(it->value().size())));
      if (rec.deleted()) continue;
      absl::string_view pk(it->key().data() + 8, it->key().size() - 8);
      for (auto& k : internal::IndexKeys(*def, json::parse(rec.json()), pk)) expected.insert(k);
    }
    std::set<std::string> actual;
    auto ix = node_->engine->NewIterator(storage::Cf::kIndexes);
    for (ix->Seek(gen); ix->Valid() && ix->key().starts_with(gen); ix->Next()) {
      actual.insert(ix->key().ToString());
    }
    EXPECT_EQ(actual, expected);
  }
};

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
