// Harper's 1_environmentSetup.mjs (issue 22): see harper_compat.h.
//
// Carried: 46 of its 47 cases, in order. Left out (1): 1 SQL ("Search by hash empty table").
// "Create table confirm table exists", "Describe schema northnwd" and "Describe schema
// ${testData.schema_number_string}" send describe_schema, the older name of describe_database.
// No stand-ins: Harper runs it on an empty server (0_envCleanup drops every database), as this
// fixture's fresh cairnd is.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tests/node/harper_compat.h"

namespace cairn::testing::harper {
namespace {

// Harper's describeSchema(db) (every value t of the body has t.schema === db) and, given a table,
// checkTableInSchema(db, table) (no value t has t.schema != db or t.name != table). Both read
// Object.values(body): no values at all passes.
std::function<bool(const json&)> EveryTableIs(std::string db, std::string table = "") {
  return [db, table](const json& b) {
    if (!b.is_object() && !b.is_array()) return false;
    for (const json& t : b) {
      if (!Is(t, "schema", db)) return false;
      if (!table.empty() && !Is(t, "name", table)) return false;
    }
    return true;
  };
}

TEST_F(HarperCompatTest, EnvironmentSetup1) {
  Run({
      CreateSchema("Create schema northnwd", "northnwd"),
      {"Create schema confirm schema exists",
       {{"operation", "describe_all"}},
       200,
       Has("northnwd")},  // Object.keys(body) includes "northnwd"
      CreateSchema("Create schema dev", "dev"),
      CreateSchema("Create schema call", "call"),
      CreateSchema("Create schema other", "other"),
      CreateSchema("Create schema another", "another"),
      CreateSchema("Create schema number as string 123", "123"),
      CreateSchema("Create schema number as another string 1123", "1123"),
      {"Create schema as number - expect error",
       {{"operation", "create_schema"}, {"schema", 1123}},
       400,
       TextHas({"'schema' must be a string"})},
      CreateTable("Create table customers", "northnwd", "customers", "customerid"),
      // Left out: "Search by hash empty table" (SQL).
      {"Create table confirm table exists",
       {{"operation", "describe_schema"}, {"schema", "northnwd"}},
       200,
       EveryTableIs("northnwd", "customers")},
      CreateTable("Create table suppliers", "northnwd", "suppliers", "supplierid"),
      CreateTable("Create table region", "northnwd", "region", "regionid"),
      CreateTable("Create table employees", "northnwd", "employees", "employeeid"),
      CreateTable("Create table orders", "northnwd", "orders", "orderid"),
      CreateTable("Create table territories", "northnwd", "territories", "territoryid"),
      CreateTable("Create table categories", "northnwd", "categories", "categoryid"),
      CreateTable("Create table shippers", "northnwd", "shippers", "shipperid"),
      CreateTable("Create table employeeterritories", "northnwd", "employeeterritories",
                  "employeeid"),
      CreateTable("Create table order_details", "northnwd", "order_details", "orderdetailid"),
      CreateTable("Create table products", "northnwd", "products", "productid"),
      CreateTable("Create table long_text in dev", "dev", "long_text", "id"),
      CreateTable("Create table aggr in call", "call", "aggr", "all"),
      CreateTable("Create table AttributeDropTest in dev", "dev", "AttributeDropTest", "hashid"),
      {"Describe schema northnwd",
       {{"operation", "describe_schema"}, {"schema", "northnwd"}},
       200,
       EveryTableIs("northnwd")},
      CreateTable("Create table invalid_attribute in dev", "dev", "invalid_attribute", "id"),
      CreateTable("Create table remarks_blob in dev", "dev", "remarks_blob", "id"),
      CreateTable("Create table books in dev", "dev", "books", "id"),
      CreateTable("Create table ratings in dev", "dev", "ratings", "id"),
      CreateTable("Create table time_functions in dev", "dev", "time_functions", "id"),
      CreateTable("Create table dog in dev", "dev", "dog", "id"),
      CreateTable("Create table breed in dev", "dev", "breed", "id"),
      CreateTable("Create table owner in dev", "dev", "owner", "id"),
      CreateTable("Create table movie in dev", "dev", "movie", "id"),
      CreateTable("Create table credits in dev", "dev", "credits", "movie_id"),
      CreateTable("Create table rando in dev", "dev", "rando", "id"),
      CreateTable("Create table owner in other", "other", "owner", "id"),
      CreateTable("Create table breed in another", "another", "breed", "id"),
      CreateTable("Create table sql_function in dev", "dev", "sql_function", "id"),
      CreateTable("Create table leading_zero in dev", "dev", "leading_zero", "id"),
      CreateTable("Create table number \"4\" in 123", "123", "4", "id"),
      CreateTable("Create table number 1 as string in 1123", "1123", "1", "id"),
      {"Create table as number - expect error",
       {{"operation", "create_table"}, {"database", 1123}, {"table", 1}, {"hash_attribute", "id"}},
       400,
       TextHas({"'schema' must be a string. 'table' must be a string"})},
      // Harper's title is in single quotes in its source: the ${...} is not interpolated.
      {"Describe schema ${testData.schema_number_string}",
       {{"operation", "describe_schema"}, {"schema", "123"}},
       200,
       [](const json& b) {
         return b.is_object() && b.contains("4") && Is(b.at("4"), "schema", "123") &&
                Is(b.at("4"), "name", "4");
       }},
      {"Describe table number \"4\"",
       {{"operation", "describe_table"}, {"schema", "123"}, {"table", "4"}},
       200,
       [](const json& b) { return Is(b, "schema", "123") && Is(b, "name", "4"); }},
      CreateTable("Create table dog_conditions for conditions tests in dev", "dev",
                  "dog_conditions", "id"),
  });
}

}  // namespace
}  // namespace cairn::testing::harper
