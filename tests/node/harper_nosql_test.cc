// Harper's 4_noSqlTests.mjs (issue 22): see harper_compat.h. This file carries all 89 of its
// cases, in its order. Harper's suite reads tables that 1_environmentSetup creates and
// 2_dataLoad fills, partly from CSV files (out of scope); each part here first creates the
// tables and rows its cases read, by create_schema, create_table and insert, as those files'
// inline steps do.
#include <cstddef>
#include <string>
#include <utility>

#include "tests/node/harper_compat.h"
#include "tests/node/harper_data.h"

namespace cairn::testing::harper {
namespace {

std::string Str(const json& row, const char* key) {
  auto it = row.find(key);
  return it != row.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Row `i` of an array answer (`body[i]`); null when there is none.
json Row(const json& b, size_t i) { return b.is_array() && i < b.size() ? b[i] : json(); }
// The array `key` of an object answer; null when it is absent or no array.
json ArrayOf(const json& b, const char* key) {
  json a = Get(b, key);
  return a.is_array() ? a : json();
}
// Element 0 of the array `key` of an object answer (`body.key[0]`); null when there is none.
json FirstOf(const json& b, const char* key) {
  const json a = ArrayOf(b, key);
  return a.empty() ? json() : a[0];
}
// Whether JavaScript reads `v` as true: anything but null (or absent), false, 0 and "".
bool Truthy(const json& v) { return !(v.is_null() || v == false || v == 0 || v == ""); }
// An insert of `records` into db.table that inserts every one of them.
Case Insert(std::string title, const std::string& db, const std::string& table,
            const json& records) {
  const std::string n = std::to_string(records.size());
  return Case(std::move(title),
              {{"operation", "insert"}, {"schema", db}, {"table", table}, {"records", records}},
              200, MessageIs("inserted " + n + " of " + n + " records"));
}

// northnwd.employees as Employees.csv fills it (2_dataLoad "7 Upload Employees.csv", a
// csv_file_load), in the columns file 4 reads: ids 1-9, one lastname "King", two starting "D".
json Employees() {
  return json::parse(R"([
      {"employeeid":1,"lastname":"Davolio","firstname":"Nancy"},
      {"employeeid":2,"lastname":"Fuller","firstname":"Andrew"},
      {"employeeid":3,"lastname":"Leverling","firstname":"Janet"},
      {"employeeid":4,"lastname":"Peacock","firstname":"Margaret"},
      {"employeeid":5,"lastname":"Buchanan","firstname":"Steven"},
      {"employeeid":6,"lastname":"Suyama","firstname":"Michael"},
      {"employeeid":7,"lastname":"King","firstname":"Robert"},
      {"employeeid":8,"lastname":"Callahan","firstname":"Laura"},
      {"employeeid":9,"lastname":"Dodsworth","firstname":"Anne"}])");
}

// Cases 1-6: attribute names with a backtick or a slash, rejected whole. dev.invalid_attribute
// as 1_environmentSetup creates it and 2_dataLoad fills it (rows 100 and 101).
TEST_F(HarperCompatTest, NoSqlInvalidAttributeNames4) {
  const auto rejected = ErrorIs("Attribute names cannot include backticks or forward slashes");
  Run({
      CreateSchema("Create schema dev", "dev"),
      CreateTable("Create table invalid_attribute in dev", "dev", "invalid_attribute", "id"),
      Insert(
          "insert valid records into dev.invalid_attributes", "dev", "invalid_attribute",
          json::parse(
              R"([{"id":100,"some_attribute":"some_att1","another_attribute":"another_1"},{"id":101,"some_attribute":"some_att2","another_attribute":"another_2"}])")),
      {"insert invalid attribute name - single row",
       json::parse(
           R"({"operation":"insert","schema":"dev","table":"invalid_attribute","records":[{"id":1,"some`$`attribute":"some_attribute"}]})"),
       400, rejected},
      {"update single row w/ invalid attribute name",
       json::parse(
           R"({"operation":"update","schema":"dev","table":"invalid_attribute","records":[{"id":100,"some/attribute":"some_attribute"}]})"),
       400, rejected},
      {"insert all invalid attribute names - multiple rows",
       json::parse(
           R"({"operation":"insert","schema":"dev","table":"invalid_attribute","records":[{"id":1,"some/attribute1":"some_attribute1","some/attribute2":"some_attribute2","some/attribute3":"some_attribute3","some_attribute4":"some_attribute4"},{"id":2,"some/attribute1":"some_attribute1","some/attribute2":"some_attribute2","some/attribute3":"some_attribute3","some_attribute4":"some_attribute4"},{"id":3,"some/attribute1":"some_attribute1","some/attribute2":"some_attribute2","some/attribute3":"some_attribute3","some_attribute4":"some_attribute4"},{"id":4,"some/attribute1":"some_attribute1","some/attribute2":"some_attribute2","some/attribute3":"some_attribute3","some_attribute4":"some_attribute4"},{"id":5,"some/attribute1":"some_attribute1","some/attribute2":"some_attribute2","some/attribute3":"some_attribute3","some_attribute4":"some_attribute4"},{"id":6,"some/attribute1":"some_attribute1","some/attribute2":"some_attribute2","some/attribute3":"some_attribute3","some_attribute4":"some_attribute4"}]})"),
       400, rejected},
      {"update multiple rows with invalid attribute",
       json::parse(
           R"({"operation":"update","schema":"dev","table":"invalid_attribute","records":[{"id":100,"some/attribute":"some_attribute"},{"id":101,"some-`attribute`":"some_attribute"}]})"),
       400, rejected},
      {"upsert multiple rows with invalid attribute key",
       json::parse(
           R"({"operation":"upsert","schema":"dev","table":"invalid_attribute","records":[{"id":100,"some/attribute":"some_attribute"},{"id":101,"some-`attribute`":"some_attribute"}]})"),
       400, rejected},
      {"insert some invalid attribute names - multiple rows", json::parse(R"({"operation":"insert","schema":"dev","table":"invalid_attribute","records":[{"id":1,"some_attribute1":"some_attribute1","some_attribute2":"some_attribute2","$ome-attribute3":"some_attribute3","some_attribute4":"some_attribute4"},{"id":2,"some_attribute1":"some_attribute1","some_attribute2":"some_attribute2","$ome-attribute3":"some_attribute3","some_attribute4":"some_attribute4"},{"id":3,"some_attribute1":"some_attribute1","some_attribute2":"some_attribute2","some-attribute3":"some_attribute3","some_attribute4/":"some_attribute4"},{"id":4,"some_attribute1":"some_attribute1","some_attribute2":"some_attribute2","some-attribute3/":"some_attribute3","some_attribute4":"some_attribute4"},{"id":5,"some_attribute1":"some_attribute1","some_attribute2":"some_attribute2","some-attribute3":"some_attribute3","some_`attribute4`":"some_attribute4"},{"id":6,"some_attribute1":"some_attribute1","some_attribute2":"some_attribute2","some-attribute3`":"some_attribute3","some_attribute4":"some_attribute4"}]})"),
       400, rejected},
  });
}

// Cases 7-12: search_by_hash and search_by_value answer arrays of row objects. Setup: the 9
// employees of Employees.csv (see Employees()).
TEST_F(HarperCompatTest, NoSqlSearchResults4) {
  Run({
      CreateSchema("Create schema northnwd", "northnwd"),
      CreateTable("Create table employees", "northnwd", "employees", "employeeid"),
      Insert("setup: insert Employees.csv's employees", "northnwd", "employees", Employees()),
      {"NoSQL search by hash no result",
       json::parse(
           R"({"operation":"search_by_hash","schema":"northnwd","table":"employees","hash_attribute":"employeeid","hash_values":[100],"get_attributes":["firstname","lastname"]})"),
       200, RowsWhere(0, AnyBody)},
      {"NoSQL search by hash one result",
       json::parse(
           R"({"operation":"search_by_hash","schema":"northnwd","table":"employees","hash_attribute":"employeeid","hash_values":[1],"get_attributes":["firstname","lastname"]})"),
       200, RowsWhere(1, AnyBody)},
      {"NoSQL search by hash multiple results",
       json::parse(
           R"({"operation":"search_by_hash","schema":"northnwd","table":"employees","hash_attribute":"employeeid","hash_values":[1,5],"get_attributes":["firstname","lastname"]})"),
       200, RowsWhere(2, AnyBody)},
      {"NoSQL search by value no result",
       json::parse(
           R"({"operation":"search_by_value","schema":"northnwd","table":"employees","hash_attribute":"employeeid","search_attribute":"lastname","search_value":"Xyz","get_attributes":["firstname","lastname"]})"),
       200, RowsWhere(0, AnyBody)},
      {"NoSQL search by value one result",
       json::parse(
           R"({"operation":"search_by_value","schema":"northnwd","table":"employees","hash_attribute":"employeeid","search_attribute":"lastname","search_value":"King","get_attributes":["firstname","lastname"]})"),
       200, RowsWhere(1, AnyBody)},
      {"NoSQL search by value multiple results",
       json::parse(
           R"({"operation":"search_by_value","schema":"northnwd","table":"employees","hash_attribute":"employeeid","search_attribute":"lastname","search_value":"D*","get_attributes":["firstname","lastname"]})"),
       200, RowsWhere(2, AnyBody)},
  });
}

// `n` orderids from `first` on, ascending (step 1) or descending (step -1).
json OrderIds(int first, int n, int step) {
  json ids = json::array();
  for (int i = 0; i < n; ++i) ids.push_back(first + step * i);
  return ids;
}

// Cases 13-19: search_by_value "*" on the primary key, in key order, with limit, offset and
// reverse. Setup: Orders.csv's 830 orderids, 10248-11077 (2_dataLoad "11 Upload Orders.csv", a
// csv_file_load), as rows {"orderid": n}: no other column is read.
TEST_F(HarperCompatTest, NoSqlLimitOffsetReverse4) {
  json orders = json::array();
  for (int id = 10248; id <= 11077; ++id) orders.push_back(json{{"orderid", id}});
  Run({
      CreateSchema("Create schema northnwd", "northnwd"),
      CreateTable("Create table orders", "northnwd", "orders", "orderid"),
      Insert("setup: insert Orders.csv's orderids", "northnwd", "orders", orders),
      {"NoSQL search by value limit 20",
       json::parse(
           R"({"operation":"search_by_value","schema":"northnwd","table":"orders","search_attribute":"orderid","search_value":"*","get_attributes":["*"],"limit":20})"),
       200, IdsAre(OrderIds(10248, 20, 1), "orderid")},
      {"NoSQL search by value offset 20",
       json::parse(
           R"({"operation":"search_by_value","schema":"northnwd","table":"orders","search_attribute":"orderid","search_value":"*","get_attributes":["*"],"offset":20})"),
       200, IdsAre(OrderIds(10268, 810, 1), "orderid")},
      {"NoSQL search by value limit 20 offset 20",
       json::parse(
           R"({"operation":"search_by_value","schema":"northnwd","table":"orders","search_attribute":"orderid","search_value":"*","get_attributes":["*"],"limit":20,"offset":20})"),
       200, IdsAre(OrderIds(10268, 20, 1), "orderid")},
      {"NoSQL search by value reverse",
       json::parse(
           R"({"operation":"search_by_value","schema":"northnwd","table":"orders","search_attribute":"orderid","search_value":"*","get_attributes":["*"],"reverse":true})"),
       200, IdsAre(OrderIds(11077, 830, -1), "orderid")},
      {"NoSQL search by value reverse offset 20",
       json::parse(
           R"({"operation":"search_by_value","schema":"northnwd","table":"orders","search_attribute":"orderid","search_value":"*","get_attributes":["*"],"reverse":true,"offset":20})"),
       200, IdsAre(OrderIds(11057, 810, -1), "orderid")},
      {"NoSQL search by value reverse limit 20",
       json::parse(
           R"({"operation":"search_by_value","schema":"northnwd","table":"orders","search_attribute":"orderid","search_value":"*","get_attributes":["*"],"reverse":true,"limit":20})"),
       200, IdsAre(OrderIds(11077, 20, -1), "orderid")},
      {"NoSQL search by value reverse offset 20 limit 20",
       json::parse(
           R"({"operation":"search_by_value","schema":"northnwd","table":"orders","search_attribute":"orderid","search_value":"*","get_attributes":["*"],"reverse":true,"offset":20,"limit":20})"),
       200, IdsAre(OrderIds(11057, 20, -1), "orderid")},
  });
}

// Cases 20-38: update, insert and search_by_hash on northnwd.employees and call.aggr. Setup:
// the 9 employees of Employees.csv (see Employees()); call.aggr as 2_dataLoad fills it.
TEST_F(HarperCompatTest, NoSqlWrites4) {
  const auto no_hash = ErrorIs(
      "a valid hash attribute must be provided with update record, check log for more info");
  Run({
      CreateSchema("Create schema northnwd", "northnwd"),
      CreateSchema("Create schema call", "call"),
      CreateTable("Create table employees", "northnwd", "employees", "employeeid"),
      CreateTable("Create table aggr in call", "call", "aggr", "all"),
      Insert("setup: insert Employees.csv's employees", "northnwd", "employees", Employees()),
      Insert("Import data bulk insert into call.aggr", "call", "aggr", DataBulk()),
      {"update NoSQL employee",
       json::parse(
           R"({"operation":"update","schema":"northnwd","table":"employees","records":[{"employeeid":1,"address":"def1234"}]})"),
       200, [](const json& b) { return FirstOf(b, "update_hashes") == 1; }},
      {"update NoSQL employee confirm",
       json::parse(
           R"({"operation":"search_by_hash","schema":"northnwd","table":"employees","hash_attribute":"employeeid","hash_values":[1],"get_attributes":["employeeid","address"]})"),
       200,
       [](const json& b) {
         return Get(Row(b, 0), "employeeid") == 1 && Get(Row(b, 0), "address") == "def1234";
       }},
      {"update NoSQL call.aggr set data to dot & double dot",
       json::parse(
           R"({"operation":"update","schema":"call","table":"aggr","records":[{"all":4,"dog_name":".","owner_name":".."}]})"),
       200, [](const json& b) { return FirstOf(b, "update_hashes") == 4; }},
      {"update NoSQL employee add new attribute",
       json::parse(
           R"({"operation":"update","schema":"northnwd","table":"employees","records":[{"employeeid":1,"address":"def1234","test_record":"I'mATest"}]})"),
       200, [](const json& b) { return FirstOf(b, "update_hashes") == 1; }},
      {"Insert with duplicate records to make sure both are not added",
       json::parse(
           R"({"operation":"insert","schema":"northnwd","table":"employees","records":[{"employeeid":212,"address":"def1234","lastname":"dobolina","firstname":"bob"},{"employeeid":212,"address":"def1234","lastname":"dobolina2","firstname":"bob"}]})"),
       200, [](const json& b) { return FirstOf(b, "skipped_hashes") == 212; }},
      {"Insert with no hash",
       json::parse(
           R"({"operation":"insert","schema":"northnwd","table":"employees","records":[{"address":"1 North Street","lastname":"Dog","firstname":"Harper"}]})"),
       200,
       [](const json& b) {
         return ArrayOf(b, "inserted_hashes").size() == 1 &&
                Str(b, "message") == "inserted 1 of 1 records";
       }},
      Difference(
          "Harper takes an empty key as none and generates one (200, inserted 1 of 1); SPEC "
          "D8: \"\" is not a key, so a client's mistake is not stored under a new id",
          {"Insert with empty hash",
           json::parse(
               R"({"operation":"insert","schema":"northnwd","table":"employees","records":[{"employeeid":"","address":"23 North Street","lastname":"Cat","firstname":"Brian"}]})"),
           400, ErrorIs("records[0]: the primary key 'employeeid' must not be an empty string")}),
      {"NoSQL search by hash",
       json::parse(
           R"({"operation":"search_by_hash","schema":"northnwd","table":"employees","hash_attribute":"employeeid","hash_values":[1],"get_attributes":["address","test_record"]})"),
       200,
       [](const json& b) {
         return Get(Row(b, 0), "address") == "def1234" &&
                Get(Row(b, 0), "test_record") == "I'mATest";
       }},
      {"NoSQL search by hash - check dot & double dot",
       json::parse(
           R"({"operation":"search_by_hash","schema":"call","table":"aggr","hash_values":[4],"get_attributes":["*"]})"),
       200,
       [](const json& b) {
         return Get(Row(b, 0), "dog_name") == "." && Get(Row(b, 0), "owner_name") == "..";
       }},
      {"NoSQL search by hash no schema",
       json::parse(
           R"({"operation":"search_by_hash","schema":"callABC","table":"aggr","hash_values":[4],"get_attributes":["*"]})"),
       404, ErrorIs("database 'callABC' does not exist")},
      {"NoSQL search by hash no table",
       json::parse(
           R"({"operation":"search_by_hash","schema":"call","table":"aggrABC","hash_values":[4],"get_attributes":["*"]})"),
       404, ErrorIs("Table 'call.aggrABC' does not exist")},
      Difference(
          "Harper answers 500; SPEC §5: a wrongly typed field is always 400",
          {"NoSQL search by hash hash_value bad data type",
           json::parse(
               R"({"operation":"search_by_hash","schema":"call","table":"aggr","hash_values":4,"get_attributes":["*"]})"),
           400, ErrorIs("'hash_values' must be an array")}),
      Difference(
          "Harper answers 500; SPEC §5: a wrongly typed field is always 400",
          {"NoSQL search by hash get_attributes bad data type",
           json::parse(
               R"({"operation":"search_by_hash","schema":"call","table":"aggr","hash_values":[4],"get_attributes":"*"})"),
           400, ErrorIs("'get_attributes' must be an array")}),
      {"update NoSQL employee with falsey attributes",
       json::parse(
           R"({"operation":"update","schema":"northnwd","table":"employees","records":[{"employeeid":2,"address":0,"hireDate":null,"notes":false}]})"),
       200,
       [](const json& b) {
         return Str(b, "message") == "updated 1 of 1 records" && FirstOf(b, "update_hashes") == 2;
       }},
      {"NoSQL search by hash to confirm falsey update",
       json::parse(
           R"({"operation":"search_by_hash","schema":"northnwd","table":"employees","hash_attribute":"employeeid","hash_values":[2],"get_attributes":["address","hireDate","notes"]})"),
       200,
       [](const json& b) {
         // Strict equality: the number 0, null (present, not absent), the boolean false.
         const json r = Row(b, 0);
         return Get(r, "address") == 0 && r.contains("hireDate") && Get(r, "hireDate").is_null() &&
                Get(r, "notes") == false;
       }},
      {"update NoSQL one employee record with no hash attribute",
       json::parse(
           R"({"operation":"update","schema":"northnwd","table":"employees","records":[{"address":"3000 Dog Place"}]})"),
       400, no_hash},
      {"update NoSQL one employee record with empty hash attribute",
       json::parse(
           R"({"operation":"update","schema":"northnwd","table":"employees","records":[{"employeeid":"","address":"123 North Blvd","notes":"This guy is the real deal"}]})"),
       400, no_hash},
      {"update NoSQL multiple employee records with no hash attribute",
       json::parse(
           R"({"operation":"update","schema":"northnwd","table":"employees","records":[{"employeeid":2,"address":"123 North Blvd","notes":"This guy is the real deal"},{"address":"45 Lost St","notes":"This person doesn't even have an id!"},{"employeeid":3,"address":"1 Main St","notes":"This guy okay"}]})"),
       400, no_hash},
      {"update NoSQL employee with valid nonexistent hash",
       json::parse(
           R"({"operation":"update","schema":"northnwd","table":"employees","records":[{"employeeid":"There is no way this exists","notes":"who is this fella?"}]})"),
       200,
       [](const json& b) {
         // Harper's test takes either answer (and asserts nothing of any other message).
         const std::string key = "There is no way this exists";
         if (Str(b, "message") == "updated 0 of 1 records") {
           return ArrayOf(b, "update_hashes") == json::array() &&
                  FirstOf(b, "skipped_hashes") == json(key);
         }
         if (Str(b, "message") == "updated 1 of 1 records") {
           return FirstOf(b, "update_hashes") == json(key) &&
                  ArrayOf(b, "skipped_hashes") == json::array();
         }
         return true;
       }},
  });
}

// The texts Harper's wildcard cases look for in dev.remarks_blob's remarks (those of rows 11,
// 7 and 9 of remarks.json).
constexpr char kLoadedWithUpgrades[] =
    "Location ... Location ...GOURGEOUS HOME in a Heart of MANDARIN,Next to Loretto Magnet "
    "schoolClose to I-295, shopping & entertainment. Gated community! Loaded with upgrades:";
constexpr char kDontMiss[] =
    "*DON'T MISS THIS BEAUTIFUL DAVID WEEKLEY BELMONTE MODEL*ONE OF THE LARGEST LOTS IN "
    "CROSSWATER*GREAT FOR OUTDOOR FUN!*LUXURIOUS LIVING!*HIGH TECH HOME*CROWN MOLDING, CUSTOM "
    "PLANTATION SHUTTERS, 18'' TILE & CUSTOM WHITE OAK HARDWOOD FLOORING...";
constexpr char kSpacious[] =
    "**Spacious & updated 2-story home on large preserve lot nearly 1/2 acre! Concrete block "
    "constr. & desirable ICW location near JTB, shopping, dining & the beach! Great split BD "
    "flrpln w/soaring ceilings features 4BD + office, upstairs loft & 3 full BA.";

// A dev.remarks_blob row as Harper's wildcard cases read it: id, length and remarks, plus both
// timestamps or neither.
bool RemarksKeys(const json& r) {
  const bool stamped = r.contains("__updatedtime__") && r.contains("__createdtime__");
  return r.size() == (stamped ? 5u : 3u);
}

// Cases 39-43: search_by_value wildcards (one leading and one trailing "*"; others literal).
// Setup: dev.remarks_blob as 2_dataLoad fills it, with the 11 records of json/remarks.json.
TEST_F(HarperCompatTest, NoSqlWildcards4) {
  Run({
      CreateSchema("Create schema dev", "dev"),
      CreateTable("Create table remarks_blob in dev", "dev", "remarks_blob", "id"),
      Insert("Import data bulk insert into dev.remarks_blob table", "dev", "remarks_blob",
             Remarks()),
      {"NoSQL search by value - * at end",
       json::parse(
           R"({"operation":"search_by_value","schema":"dev","table":"remarks_blob","search_attribute":"remarks","search_value":"Location ... Location ...GOURGEOUS HOME in a Heart of MANDARIN,Next to Loretto Magnet schoolClose to I-295, shopping & entertainment. Gated community! Loaded with upgrades:*","get_attributes":["*"]})"),
       200,
       RowsWhere(2,
                 [](const json& r) {
                   return RemarksKeys(r) &&
                          Str(r, "remarks").find(kLoadedWithUpgrades) != std::string::npos;
                 })},
      {"NoSQL search by value - * at start",
       json::parse(
           R"({"operation":"search_by_value","schema":"dev","table":"remarks_blob","search_attribute":"remarks","search_value":"**DON'T MISS THIS BEAUTIFUL DAVID WEEKLEY BELMONTE MODEL*ONE OF THE LARGEST LOTS IN CROSSWATER*GREAT FOR OUTDOOR FUN!*LUXURIOUS LIVING!*HIGH TECH HOME*CROWN MOLDING, CUSTOM PLANTATION SHUTTERS, 18'' TILE & CUSTOM WHITE OAK HARDWOOD FLOORING...","get_attributes":["*"]})"),
       200,
       RowsWhere(1,
                 [](const json& r) {
                   return RemarksKeys(r) && Str(r, "remarks").find(kDontMiss) != std::string::npos;
                 })},
      {"NoSQL search by value - * at start and end",
       json::parse(
           R"({"operation":"search_by_value","schema":"dev","table":"remarks_blob","search_attribute":"remarks","search_value":"*4 Bedroom/2.5+*","get_attributes":["*"]})"),
       200,
       RowsWhere(3,
                 [](const json& r) {
                   return RemarksKeys(r) &&
                          Str(r, "remarks").find("4 Bedroom/2.5+") != std::string::npos;
                 })},
      {"NoSQL search by value - * as search_value",
       json::parse(
           R"({"operation":"search_by_value","schema":"dev","table":"remarks_blob","search_attribute":"remarks","search_value":"*","get_attributes":["*"]})"),
       200, RowsWhere(11, RemarksKeys)},
      {"NoSQL search by value - *** at start",
       json::parse(
           R"({"operation":"search_by_value","schema":"dev","table":"remarks_blob","search_attribute":"remarks","search_value":"***Spacious & updated 2-story home on large preserve lot nearly 1/2 acre! Concrete block constr. & desirable ICW location near JTB, shopping, dining & the beach! Great split BD flrpln w/soaring ceilings features 4BD + office, upstairs loft & 3 full BA.","get_attributes":["*"]})"),
       200,
       RowsWhere(1,
                 [](const json& r) {
                   return RemarksKeys(r) && Str(r, "remarks").find(kSpacious) != std::string::npos;
                 })},
  });
}

// Row `i` of an array answer is dev.leading_zero's row `id`: some_att<n>, another_<n>.
bool ZeroRowIs(const json& b, size_t i, const json& id, const std::string& n) {
  const json r = Row(b, i);
  return Get(r, "id") == id && Get(r, "some_attribute") == json("some_att" + n) &&
         Get(r, "another_attribute") == json("another_" + n);
}

// Cases 44-48: keys 0, "011" and "00011" are distinct, by type and text. Setup: dev.leading_zero
// as 2_dataLoad fills it ("insert records into dev.leading_zero").
TEST_F(HarperCompatTest, NoSqlLeadingZero4) {
  Run({
      CreateSchema("Create schema dev", "dev"),
      CreateTable("Create table leading_zero in dev", "dev", "leading_zero", "id"),
      {"insert records into dev.leading_zero",
       json::parse(
           R"({"operation":"insert","schema":"dev","table":"leading_zero","records":[{"id":0,"some_attribute":"some_att1","another_attribute":"another_1"},{"id":"011","some_attribute":"some_att2","another_attribute":"another_2"},{"id":"00011","some_attribute":"some_att3","another_attribute":"another_3"}]})"),
       200,
       [](const json& b) {
         return Str(b, "message") == "inserted 3 of 3 records" &&
                ArrayOf(b, "inserted_hashes") == json::array({0, "011", "00011"});
       }},
      {"NoSQL search by hash on leading_zero, value = 0",
       json::parse(
           R"({"operation":"search_by_hash","schema":"dev","table":"leading_zero","hash_attribute":"id","hash_values":[0],"get_attributes":["*"]})"),
       200, [](const json& b) { return b.size() == 1 && ZeroRowIs(b, 0, 0, "1"); }},
      {"NoSQL search by hash on leading_zero, values \"011\",\"00011\"",
       json::parse(
           R"({"operation":"search_by_hash","schema":"dev","table":"leading_zero","hash_attribute":"id","hash_values":["011","00011"],"get_attributes":["*"]})"),
       200,
       [](const json& b) {
         return b.size() == 2 && ZeroRowIs(b, 0, "011", "2") && ZeroRowIs(b, 1, "00011", "3");
       }},
      {"NoSQL search by value leading_zero - value = 0",
       json::parse(
           R"({"operation":"search_by_value","schema":"dev","table":"leading_zero","search_attribute":"id","search_value":0,"get_attributes":["*"]})"),
       200, [](const json& b) { return b.size() == 1 && ZeroRowIs(b, 0, 0, "1"); }},
      {"NoSQL search by value leading_zero - value = \"011\"",
       json::parse(
           R"({"operation":"search_by_value","schema":"dev","table":"leading_zero","search_attribute":"id","search_value":"011","get_attributes":["*"]})"),
       200, [](const json& b) { return b.size() == 1 && ZeroRowIs(b, 0, "011", "2"); }},
      {"NoSQL search by value leading_zero - value = \"0*\"",
       json::parse(
           R"({"operation":"search_by_value","schema":"dev","table":"leading_zero","search_attribute":"id","search_value":"0*","get_attributes":["*"]})"),
       200,
       [](const json& b) {
         return b.size() == 2 && ZeroRowIs(b, 0, "00011", "3") && ZeroRowIs(b, 1, "011", "2");
       }},
  });
}

// Cases 49-54: upsert, update and delete on northnwd.products. Setup: product 1 as
// Products.csv has it (2_dataLoad "9 Upload Products.csv", a csv_file_load; not discontinued).
TEST_F(HarperCompatTest, NoSqlProducts4) {
  Run({
      CreateSchema("Create schema northnwd", "northnwd"),
      CreateTable("Create table products", "northnwd", "products", "productid"),
      Insert("setup: insert Products.csv's product 1", "northnwd", "products",
             json::parse(R"([{"productid":1,"productname":"Chai","discontinued":false}])")),
      {"Upsert into products 1 new record & 2 that exist",
       json::parse(
           R"({"operation":"upsert","schema":"northnwd","table":"products","records":[{"categoryid":1,"unitsnnorder":0,"unitsinstock":39,"supplierid":1,"productid":1,"discontinued":true,"reorderlevel":10,"productname":"Chai","quantityperunit":"10 boxes x 20 bags","unitprice":18},{"productid":100,"categoryid":1,"unitsnnorder":0,"unitsinstock":39,"supplierid":1,"discontinued":true,"reorderlevel":10,"productname":"Chai","quantityperunit":"10 boxes x 20 bags","unitprice":18},{"productid":101,"categoryid":1,"unitsnnorder":0,"unitsinstock":39,"supplierid":1,"discontinued":true,"reorderlevel":10,"productname":"Chai","quantityperunit":"10 boxes x 20 bags","unitprice":18}]})"),
       200,
       [](const json& b) {
         return ArrayOf(b, "upserted_hashes") == json::array({1, 100, 101}) &&
                !Truthy(Get(b, "skipped_hashes")) && Str(b, "message") == "upserted 3 of 3 records";
       }},
      {"Confirm upserted records exist and are updated",
       json::parse(
           R"({"operation":"search_by_value","schema":"northnwd","table":"products","search_attribute":"discontinued","search_value":true,"get_attributes":["*"]})"),
       200,
       [](const json& b) {
         // Every row is one of the upserted three (no count: an empty answer passes too).
         if (!b.is_array()) return false;
         for (const json& r : b) {
           const json id = Get(r, "productid");
           if (!(id == 1 || id == 100 || id == 101) || !Truthy(Get(r, "discontinued"))) {
             return false;
           }
         }
         return true;
       }},
      {"Upsert into products 3 new records w/o hash vals",
       json::parse(
           R"({"operation":"upsert","schema":"northnwd","table":"products","records":[{"categoryid":1,"unitsnnorder":0,"unitsinstock":39,"supplierid":1,"discontinued":"True","reorderlevel":10,"productname":"Chai","quantityperunit":"10 boxes x 20 bags","unitprice":18},{"categoryid":1,"unitsnnorder":0,"unitsinstock":39,"supplierid":1,"discontinued":"True","reorderlevel":10,"productname":"Chai","quantityperunit":"10 boxes x 20 bags","unitprice":18},{"categoryid":1,"unitsnnorder":0,"unitsinstock":39,"supplierid":1,"discontinued":"True","reorderlevel":10,"productname":"Chai","quantityperunit":"10 boxes x 20 bags","unitprice":18}]})"),
       200,
       [](const json& b) {
         return ArrayOf(b, "upserted_hashes").size() == 3 && !Truthy(Get(b, "skipped_hashes")) &&
                Str(b, "message") == "upserted 3 of 3 records";
       }},
      {"Remove added record from products",
       json::parse(
           R"({"operation":"delete","schema":"northnwd","table":"products","hash_values":[100]})"),
       200,
       [](const json& b) {
         return ArrayOf(b, "deleted_hashes") == json::array({100}) &&
                ArrayOf(b, "skipped_hashes") == json::array() &&
                Str(b, "message") == "1 of 1 record successfully deleted";
       }},
      {"Update products 1 existing record & one that does not exist", json::parse(R"({"operation":"update","schema":"northnwd","table":"products","records":[{"productid":1,"discontinued":true},{"categoryid":1,"unitsnnorder":0,"unitsinstock":39,"supplierid":1,"productid":100,"discontinued":"False","reorderlevel":10,"productname":"Chai","quantityperunit":"10 boxes x 20 bags","unitprice":18}]})"),
       200,
       [](const json& b) {
         return ArrayOf(b, "update_hashes") == json::array({1}) &&
                ArrayOf(b, "skipped_hashes") == json::array({100}) &&
                Str(b, "message") == "updated 1 of 2 records";
       }},
      {"Restore Product record",
       json::parse(
           R"({"operation":"update","schema":"northnwd","table":"products","records":[{"productid":1,"discontinued":"False"}]})"),
       200,
       [](const json& b) {
         return Str(b, "message") == "updated 1 of 1 records" &&
                ArrayOf(b, "update_hashes") == json::array({1}) &&
                ArrayOf(b, "skipped_hashes") == json::array();
       }},
  });
}

// Cases 55-56: an update does not overwrite __createdtime__. Setup: the 9 employees of
// Employees.csv (see Employees()).
TEST_F(HarperCompatTest, NoSqlCreatedTime4) {
  Run({
      CreateSchema("Create schema northnwd", "northnwd"),
      CreateTable("Create table employees", "northnwd", "employees", "employeeid"),
      Insert("setup: insert Employees.csv's employees", "northnwd", "employees", Employees()),
      {"attempt to update __createdtime__",
       json::parse(
           R"({"operation":"update","schema":"northnwd","table":"employees","records":[{"employeeid":1,"__createdtime__":"bad value"}]})"),
       200, [](const json& b) { return FirstOf(b, "update_hashes") == 1; }},
      {"confirm __createdtime__ did not change",
       json::parse(
           R"({"operation":"search_by_hash","schema":"northnwd","table":"employees","hash_attribute":"employeeid","hash_values":[1],"get_attributes":["employeeid","__createdtime__"]})"),
       200,
       [](const json& b) {
         return Get(Row(b, 0), "employeeid") == 1 &&
                Get(Row(b, 0), "__createdtime__") != "bad value";
       }},
  });
}

// Cases 57-60: " " and "" are values of their own, neither trimmed nor null. Setup: dev.dog as
// 2_dataLoad fills it ("Insert data into dev.dog", the 9 records of json/dog.json).
TEST_F(HarperCompatTest, NoSqlBlankValues4) {
  Run({
      CreateSchema("Create schema dev", "dev"),
      CreateTable("Create table dog in dev", "dev", "dog", "id"),
      Insert("Insert data into dev.dog", "dev", "dog", Dogs()),
      {"insert record with dog_name =  single space value & empty string",
       json::parse(
           R"({"operation":"insert","schema":"dev","table":"dog","records":[{"id":1111,"dog_name":" "},{"id":2222,"dog_name":""}]})"),
       200,
       [](const json& b) {
         return Str(b, "message") == "inserted 2 of 2 records" &&
                ArrayOf(b, "inserted_hashes") == json::array({1111, 2222});
       }},
      {"search by value dog_name = single space string",
       json::parse(
           R"({"operation":"search_by_value","schema":"dev","table":"dog","search_attribute":"dog_name","search_value":" ","get_attributes":["id","dog_name"]})"),
       200, [](const json& b) { return b == json::parse(R"([{"id":1111,"dog_name":" "}])"); }},
      {"search by value dog_name = empty string",
       json::parse(
           R"({"operation":"search_by_value","schema":"dev","table":"dog","search_attribute":"dog_name","search_value":"","get_attributes":["id","dog_name"]})"),
       200, [](const json& b) { return b == json::parse(R"([{"id":2222,"dog_name":""}])"); }},
      {"Delete dev.dog records previously created",
       json::parse(
           R"({"operation":"delete","schema":"dev","table":"dog","hash_values":[1111,2222]})"),
       200,
       [](const json& b) {
         return ArrayOf(b, "deleted_hashes") == json::array({1111, 2222});
       }},
  });
}

// Cases 61-63: a database and a table named by numbers ("123", "4"). Setup: 123.4 as
// 2_dataLoad leaves it: its four inserted rows, 987654321 renamed "Hot Diddy Dawg" by its two
// updates, and "Hot Dawg" under a generated key.
TEST_F(HarperCompatTest, NoSqlNumberNames4) {
  Run({
      CreateSchema("Create schema number as string 123", "123"),
      CreateTable("Create table number \"4\" in 123", "123", "4", "id"),
      Insert(
          "setup: insert 123.4's rows", "123", "4",
          json::parse(
              R"([{"id":987654321,"name":"Hot Diddy Dawg"},{"id":987654322,"name":"The Coolest Dawg"},{"id":987654323,"name":"Sup Dawg"},{"id":987654324,"name":"Snoop Dawg"},{"name":"Hot Dawg"}])")),
      {"Search by value 123.4",
       json::parse(
           R"({"operation":"search_by_value","schema":"123","table":"4","search_attribute":"name","search_value":"Hot Diddy Dawg","get_attributes":["id","name"]})"),
       200,
       [](const json& b) {
         return b == json::parse(R"([{"id":987654321,"name":"Hot Diddy Dawg"}])");
       }},
      {"Search by hash 123.4",
       json::parse(
           R"({"operation":"search_by_hash","schema":"123","table":"4","hash_values":[987654321],"get_attributes":["name"]})"),
       200, [](const json& b) { return b == json::parse(R"([{"name":"Hot Diddy Dawg"}])"); }},
      {"Delete 123.4 record",
       json::parse(
           R"({"operation":"delete","schema":"123","table":"4","hash_values":[987654321]})"),
       200, MessageIs("1 of 1 record successfully deleted")},
  });
}

// Cases 64-89: search_by_conditions over dev.dog_conditions, the 11 rows 2_dataLoad upserts
// ("Upsert dog data for conditions search tests"). Without a sort, rows come in the order of
// the index the first usable condition reads (value, then primary key), as Harper's do.
TEST_F(HarperCompatTest, NoSqlConditions4) {
  const json records = DogConditions();
  Run(
      {
          {"Create table dog_conditions for conditions tests in dev",
           {{"operation", "create_table"},
            {"schema", "dev"},
            {"table", "dog_conditions"},
            {"hash_attribute", "id"}},
           200,
           MessageIs("table 'dev.dog_conditions' successfully created.")},
          {"Upsert dog data for conditions search tests",
           {{"operation", "upsert"},
            {"schema", "dev"},
            {"table", "dog_conditions"},
            {"records", records}},
           200,
           MessageIs("upserted 11 of 11 records")},
          {"search by conditions - equals",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["*"],"conditions":[{"search_attribute":"age","search_type":"equals","search_value":5}]})"),
           200, RowsWhere(2, [](const json& r) { return r["id"] == 1 || r["id"] == 2; })},
          {"search by conditions - contains",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["*"],"conditions":[{"search_attribute":"location","search_type":"contains","search_value":"Denver"}]})"),
           200,
           RowsWhere(6,
                     [](const json& r) {
                       return Str(r, "location").find("Denver") != std::string::npos;
                     })},
          {"search by conditions - starts_with",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["*"],"conditions":[{"search_attribute":"location","search_type":"starts_with","search_value":"Denver"}]})"),
           200,
           RowsWhere(6, [](const json& r) { return Str(r, "location").rfind("Denver", 0) == 0; })},
          {"search by conditions - ends_with",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["*"],"conditions":[{"search_attribute":"dog_name","search_type":"ends_with","search_value":"y"}]})"),
           200,
           RowsWhere(4,
                     [](const json& r) {
                       const std::string s = Str(r, "dog_name");
                       return !s.empty() && s.back() == 'y';
                     })},
          {"search by conditions - greater_than",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["*"],"conditions":[{"search_attribute":"age","search_type":"greater_than","search_value":4}]})"),
           200, RowsWhere(6, [](const json& r) { return r["age"].is_number() && r["age"] > 4; })},
          {"search by conditions - greater_than_equal",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["*"],"conditions":[{"search_attribute":"age","search_type":"greater_than_equal","search_value":4}]})"),
           200, RowsWhere(8, [](const json& r) { return r["age"].is_number() && r["age"] >= 4; })},
          {"search by conditions - less_than",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["*"],"conditions":[{"search_attribute":"age","search_type":"less_than","search_value":4}]})"),
           200, RowsWhere(2, [](const json& r) { return r["age"].is_number() && r["age"] < 4; })},
          {"search by conditions - less_than_equal",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["*"],"conditions":[{"search_attribute":"age","search_type":"less_than_equal","search_value":4}]})"),
           200, RowsWhere(4, [](const json& r) { return r["age"].is_number() && r["age"] <= 4; })},
          {"search by conditions - between",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["*"],"conditions":[{"search_attribute":"age","search_type":"between","search_value":[2,5]}]})"),
           200,
           RowsWhere(5,
                     [](const json& r) {
                       return r["age"].is_number() && r["age"] >= 2 && r["age"] <= 5;
                     })},
          {"search by conditions - between using same value",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["*"],"conditions":[{"search_attribute":"age","search_type":"between","search_value":[5,5]}]})"),
           200, RowsWhere(2, [](const json& r) { return r["age"] == 5; })},
          {"search by conditions - between w/ alpha",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["*"],"conditions":[{"search_attribute":"group","search_type":"between","search_value":["A","B"]}]})"),
           200, RowsWhere(7, [](const json& r) { return r["group"] == "A" || r["group"] == "B"; })},
          {"search by conditions - equals & equals", json::parse(R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["*"],"conditions":[{"search_attribute":"group","search_type":"equals","search_value":"A"},{"search_attribute":"age","search_type":"equals","search_value":5}]})"),
           200, RowsWhere(2, [](const json& r) { return r["age"] == 5 && r["group"] == "A"; })},
          {"search by conditions - equals || equals",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["*"],"operator":"OR","conditions":[{"search_attribute":"group","search_type":"equals","search_value":"A"},{"search_attribute":"group","search_type":"equals","search_value":"B"}]})"),
           200, RowsWhere(7, [](const json& r) { return r["group"] == "A" || r["group"] == "B"; })},
          {"search by conditions - equals & contains",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["*"],"conditions":[{"search_attribute":"location","search_type":"contains","search_value":"CO"},{"search_attribute":"group","search_type":"equals","search_value":"B"}]})"),
           200,
           RowsWhere(2,
                     [](const json& r) {
                       return r["group"] == "B" &&
                              Str(r, "location").find("CO") != std::string::npos;
                     })},
          {"search by conditions - equals & ends_with",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["*"],"conditions":[{"search_attribute":"location","search_type":"ends_with","search_value":"CO"},{"search_attribute":"group","search_type":"equals","search_value":"B"}]})"),
           200,
           RowsWhere(2,
                     [](const json& r) {
                       return r["group"] == "B" && Str(r, "location").size() > 4 &&
                              Str(r, "location").substr(Str(r, "location").size() - 4) == ", CO";
                     })},
          {"search by conditions - greater_than_equal & starts_with",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["*"],"conditions":[{"search_attribute":"location","search_type":"starts_with","search_value":"Denver"},{"search_attribute":"age","search_type":"greater_than_equal","search_value":5}]})"),
           200,
           RowsWhere(3,
                     [](const json& r) {
                       return r["age"].is_number() && r["age"] >= 5 &&
                              Str(r, "location").rfind("Denver,", 0) == 0;
                     })},
          {"search by conditions - less_than_equal ||  greater_than",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["*"],"operator":"OR","conditions":[{"search_attribute":"age","search_type":"less_than_equal","search_value":4},{"search_attribute":"age","search_type":"greater_than","search_value":5}]})"),
           200,
           RowsWhere(8,
                     [](const json& r) {
                       return r["age"].is_number() && (r["age"] <= 4 || r["age"] > 5);
                     })},
          {"search by conditions - contains || contains",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["*"],"operator":"OR","conditions":[{"search_attribute":"location","search_type":"contains","search_value":"NC"},{"search_attribute":"location","search_type":"contains","search_value":"CO"}]})"),
           200,
           RowsWhere(10,
                     [](const json& r) {
                       const std::string s = Str(r, "location");
                       return s.find("CO") != std::string::npos ||
                              s.find("NC") != std::string::npos;
                     })},
          {"search by conditions - contains & between", json::parse(R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["id","age","group","location"],"conditions":[{"search_attribute":"group","search_type":"between","search_value":["A","C"]},{"search_attribute":"location","search_type":"contains","search_value":"Denver"}]})"),
           200, IdsAre({1, 2, 8, 5, 7, 11})},
          {"search by conditions - starts_with \"AND\" between",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["id","age","location","group"],"sort":{"attribute":"id"},"operator":"AND","conditions":[{"search_attribute":"group","search_type":"between","search_value":["A","C"]},{"search_attribute":"location","search_type":"starts_with","search_value":"Denver"}]})"),
           200, IdsAre({1, 2, 5, 7, 8, 11})},
          {"search by conditions - starts_with & between w/ offset",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["id","age","location","group"],"sort":{"attribute":"id"},"offset":1,"conditions":[{"search_attribute":"group","search_type":"between","search_value":["A","C"]},{"search_attribute":"location","search_type":"starts_with","search_value":"Denver"}]})"),
           200, IdsAre({2, 5, 7, 8, 11})},
          {"search by conditions - starts_with & between limit",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["id","age","location","group"],"sort":{"attribute":"id"},"limit":4,"conditions":[{"search_attribute":"group","search_type":"between","search_value":["A","C"]},{"search_attribute":"location","search_type":"starts_with","search_value":"Denver"}]})"),
           200, IdsAre({1, 2, 5, 7})},
          {"search by conditions - starts_with & between offset, limit",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["id","age","location","group"],"sort":{"attribute":"id"},"offset":1,"limit":3,"conditions":[{"search_attribute":"group","search_type":"between","search_value":["A","C"]},{"search_attribute":"location","search_type":"starts_with","search_value":"Denver"}]})"),
           200, IdsAre({2, 5, 7})},
          {"search by conditions - starts_with condition, offset, limit of 2",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["id","age","location","group"],"offset":3,"limit":2,"conditions":[{"search_attribute":"location","search_type":"starts_with","search_value":"Denver"}]})"),
           200, IdsAre({11, 1})},
          {"search by conditions - starts_with condition, offset, limit of 10", json::parse(R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["id","age","location","group"],"offset":3,"limit":10,"conditions":[{"search_attribute":"location","search_type":"starts_with","search_value":"Denver"}]})"),
           200, IdsAre({11, 1, 8})},
          {"search by conditions - ends_with condition, offset, limit of 3",
           json::parse(
               R"({"operation":"search_by_conditions","schema":"dev","table":"dog_conditions","get_attributes":["id","age","location","group"],"offset":3,"limit":3,"sort":{"attribute":"id"},"conditions":[{"search_attribute":"location","search_type":"ends_with","search_value":"CO"}]})"),
           200, IdsAre({7, 9, 10})},
      });
}

}  // namespace
}  // namespace cairn::testing::harper
