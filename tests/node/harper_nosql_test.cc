// Harper's 4_noSqlTests.mjs (issue 22): see harper_compat.h. Harper's suite reads tables
// that 2_dataLoad fills from CSV files (out of scope); each part here first creates the rows
// its cases read, by insert, as 2_dataLoad's inline inserts do.
#include "tests/node/harper_compat.h"

namespace cairn::testing::harper {
namespace {

std::string Str(const json& row, const char* key) {
  auto it = row.find(key);
  return it != row.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Cases 64-89: search_by_conditions over dev.dog_conditions, the 11 rows 2_dataLoad upserts
// ("Upsert dog data for conditions search tests"). Without a sort, rows come in the order of
// the index the first usable condition reads (value, then primary key), as Harper's do.
TEST_F(HarperCompatTest, NoSqlConditions4) {
  const json rows = json::array(
      {R"({"id":1,"breed_id":154,"weight_lbs":35,"dog_name":"Penny","age":5,"adorable":true,"owner_id":2,"group":"A","location":"Denver, NC"})",
       R"({"id":2,"breed_id":346,"weight_lbs":55,"dog_name":"Harper","age":5,"adorable":true,"owner_id":3,"group":"A","location":"Denver, CO"})",
       R"({"id":3,"breed_id":348,"weight_lbs":84,"dog_name":"Alby","age":8,"adorable":true,"owner_id":4,"group":"A","location":"Portland, OR"})",
       R"({"id":4,"breed_id":347,"weight_lbs":60,"dog_name":"Billy","age":4,"adorable":true,"owner_id":1,"group":"B","location":"Evergreen, CO"})",
       R"({"id":5,"breed_id":348,"weight_lbs":15,"dog_name":"Rose Merry","age":6,"adorable":true,"owner_id":2,"group":"B","location":"Denver, CO"})",
       R"({"id":6,"breed_id":351,"weight_lbs":28,"dog_name":"Kato","age":4,"adorable":true,"owner_id":3,"group":"A","location":"Charlotte, NC"})",
       R"({"id":7,"breed_id":349,"weight_lbs":35,"dog_name":"Simon","age":1,"adorable":true,"owner_id":4,"group":"C","location":"Denver, CO"})",
       R"({"id":8,"breed_id":250,"weight_lbs":55,"dog_name":"Gemma","age":3,"adorable":true,"owner_id":1,"group":"A","location":"Denver, NC"})",
       R"({"id":9,"breed_id":104,"weight_lbs":75,"dog_name":"Bode","age":9,"adorable":true,"owner_id":null,"group":"C","location":"Boulder, CO"})",
       R"({"id":10,"breed_id":null,"weight_lbs":null,"dog_name":null,"age":7,"adorable":null,"owner_id":null,"group":"D","location":"Boulder, CO"})",
       R"({"id":11,"breed_id":null,"weight_lbs":null,"dog_name":null,"age":null,"adorable":null,"owner_id":null,"group":"C","location":"Denver, CO"})"});
  json records = json::array();
  for (const json& r : rows) records.push_back(json::parse(r.get<std::string>()));
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
