// search_by_conditions (SPEC §5 Harper compatibility, decision 104): what matches, and that
// the reads a plan picks (primary key, index ranges, an `or` of them) find exactly what a
// scan finds, each row once.
#include "catalog/search_conditions.h"

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "catalog/record_store.h"
#include "tests/catalog/catalog_fixture.h"
#include "tests/testing/testing.h"

namespace cairn::catalog {
namespace {

using ::cairn::testing::HasErrorCode;
using nlohmann::json;

class SearchConditionsTest : public CatalogFixture {
 protected:
  // The answer's rows, in order.
  std::vector<json> Search(const std::string& table, const std::vector<json>& conditions,
                           const json* op = nullptr, const json* sort = nullptr,
                           SearchOptions options = {}) {
    std::vector<json> out;
    auto search = ParseConditionSearch(json(conditions), op, sort);
    EXPECT_OK(search);
    if (!search.ok()) return out;
    EXPECT_OK(records().SearchByConditions("db", table, *search, options, [&](const json& r) {
      out.push_back(r);
      return true;
    }));
    return out;
  }
  static std::vector<json> Ids(const std::vector<json>& rows) {
    std::vector<json> ids;
    for (const json& r : rows) ids.push_back(r["id"]);
    return ids;
  }
  static json C(const std::string& attribute, const std::string& type, json value) {
    return {{"search_attribute", attribute}, {"search_type", type}, {"search_value", value}};
  }
};

TEST_F(SearchConditionsTest, Decision104_WhatEachComparatorMatches) {
  auto matches = [](const json& condition, const json& record) {
    auto search = ParseConditionSearch(json::array({condition}), nullptr, nullptr);
    EXPECT_OK(search);
    return search.ok() && Matches(search->root, record);
  };
  const json r = {{"n", 5}, {"f", 2.5}, {"s", "Denver, CO"}, {"list", {1, "b", 9}}, {"z", nullptr}};
  EXPECT_TRUE(matches(C("n", "equals", 5.0), r));   // 5 == 5.0
  EXPECT_FALSE(matches(C("n", "equals", "5"), r));  // an untyped attribute: strict
  EXPECT_TRUE(matches(C("list", "equals", 9), r));  // any element
  EXPECT_TRUE(matches(C("z", "equals", nullptr), r));
  EXPECT_FALSE(matches(C("missing", "equals", nullptr), r));  // absent is not null
  EXPECT_TRUE(matches(C("missing", "not_equal", 1), r));
  EXPECT_FALSE(matches(C("list", "not_equal", "b"), r));  // an element is equal
  EXPECT_TRUE(matches(C("s", "contains", "ver, C"), r));
  EXPECT_TRUE(matches(C("s", "starts_with", "Den"), r));
  EXPECT_TRUE(matches(C("s", "ends_with", "CO"), r));
  EXPECT_FALSE(matches(C("n", "contains", "5"), r));  // text comparisons: strings only
  EXPECT_TRUE(matches(C("n", "greater_than", 4.5), r));
  EXPECT_FALSE(matches(C("n", "greater_than", 5), r));
  EXPECT_TRUE(matches(C("n", "greater_than_equal", 5), r));
  EXPECT_TRUE(matches(C("f", "less_than", 3), r));
  EXPECT_TRUE(matches(C("f", "less_than_equal", 2.5), r));
  EXPECT_TRUE(matches(C("n", "between", {5, 5}), r));  // inclusive both ends
  EXPECT_TRUE(matches(C("s", "between", {"D", "E"}), r));
  EXPECT_FALSE(matches(C("s", "greater_than", 5), r));  // a string is never above a number
  EXPECT_FALSE(matches(C("z", "less_than", 1), r));     // nor null below one
  EXPECT_FALSE(matches(C("b", "greater_than", false), {{"b", true}}));  // nor true than false
  // Numbers compare as the index orders them: 1e17 written as a float is the integer 10^17.
  EXPECT_FALSE(
      matches(C("n", "greater_than_equal", json(int64_t{100000000000000001})), {{"n", 1e17}}));
  EXPECT_TRUE(matches(C("n", "equals", 1e17), {{"n", int64_t{100000000000000000}}}));
  EXPECT_FALSE(matches(C("n", "greater_than_equal", 9223372036854775808.0),  // 2^63: a float
                       {{"n", INT64_MAX}}));
  EXPECT_TRUE(matches(C("list", "greater_than", 8), r));
  EXPECT_TRUE(matches(C("n", "gt", 4), r));  // the short names
}

TEST_F(SearchConditionsTest, Decision104_RequestsThatAreRefused) {
  auto refused = [](const std::vector<json>& conditions, const json* op = nullptr,
                    const json* sort = nullptr) {
    return ParseConditionSearch(json(conditions), op, sort).status();
  };
  EXPECT_THAT(ParseConditionSearch(json::object(), nullptr, nullptr).status(),
              HasErrorCode(ErrorCode::kBadRequest));
  EXPECT_THAT(refused({C("a", "like", 1)}), HasErrorCode(ErrorCode::kBadRequest));
  EXPECT_THAT(refused({C("a", "between", 1)}), HasErrorCode(ErrorCode::kBadRequest));
  EXPECT_THAT(refused({C("a", "between", {1, 2, 3})}), HasErrorCode(ErrorCode::kBadRequest));
  EXPECT_THAT(refused({C("a", "equals", {1})}), HasErrorCode(ErrorCode::kBadRequest));
  EXPECT_THAT(refused({{{"search_type", "equals"}, {"search_value", 1}}}),
              HasErrorCode(ErrorCode::kBadRequest));
  const json xor_op = "xor";
  EXPECT_THAT(refused({C("a", "equals", 1)}, &xor_op), HasErrorCode(ErrorCode::kBadRequest));
  const json bad_sort = {{"attribute", "a"}, {"descending", "yes"}};
  EXPECT_THAT(refused({C("a", "equals", 1)}, nullptr, &bad_sort),
              HasErrorCode(ErrorCode::kBadRequest));
  // At most kMaxConditions leaves.
  std::vector<json> many(kMaxConditions + 1, C("a", "equals", 1));
  EXPECT_THAT(refused(many), HasErrorCode(ErrorCode::kBadRequest));
  many.pop_back();
  EXPECT_OK(ParseConditionSearch(json(many), nullptr, nullptr).status());
  // Groups nest, but not without end.
  json deep = json::array({C("a", "equals", 1)});
  for (int i = 0; i < 40; ++i) {
    json group = {{"operator", "or"}, {"conditions", deep}};
    deep = json::array({group});
  }
  EXPECT_THAT(ParseConditionSearch(deep, nullptr, nullptr).status(),
              HasErrorCode(ErrorCode::kBadRequest));

  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"a"})));
  auto search = ParseConditionSearch(json::array({C("nope", "equals", 1)}), nullptr, nullptr);
  ASSERT_OK(search);
  EXPECT_THAT(
      records().SearchByConditions("db", "t", *search, {}, [](const json&) { return true; }),
      HasErrorCode(ErrorCode::kUnknownAttribute));
}

// The core of the plan: index and key ranges read exactly the rows a scan matches, and each
// row once (arrays, `or` branches that overlap), in either direction. Two tables hold the same
// rows, one with every attribute indexed, one with none; random condition trees over random
// values of every kind must give the same set on both, the set a brute-force Matches gives.
TEST_F(SearchConditionsTest, Decision104_IndexReadsFindWhatAScanFinds) {
  const uint64_t seed = testing::TestSeed();
  std::mt19937_64 rng(seed);
  // Numbers where a float and an integer meet: 1e17 (a float the index holds as an integer),
  // 10^17 + 1, 2^63 - 1 beside 2^63, 1.5e19 and 2^64 - 1 (beyond int64: floats).
  const std::vector<json> pool = {nullptr,
                                  false,
                                  true,
                                  -3,
                                  0,
                                  1,
                                  2,
                                  5,
                                  7,
                                  -2.5,
                                  0.5,
                                  1.5,
                                  4.75,
                                  1e17,
                                  int64_t{100000000000000001},
                                  1.5e19,
                                  UINT64_MAX,
                                  INT64_MAX,
                                  9223372036854775808.0,
                                  "",
                                  "a",
                                  "ab",
                                  "abc",
                                  "b",
                                  "ba",
                                  "B",
                                  "A\u00e9",
                                  json::array({1, "a"}),
                                  json::array({2, 5, 7}),
                                  json::array({"ab", "b", 1.5}),
                                  json::array({1e17, int64_t{100000000000000001}}),
                                  json::array()};
  auto any = [&] { return pool[rng() % pool.size()]; };
  for (const bool indexed : {true, false}) {
    TableSpec spec = Spec("db", indexed ? "indexed" : "plain");
    spec.attributes->push_back({"a", v1::ANY, indexed});
    spec.attributes->push_back({"b", v1::ANY, indexed});
    ASSERT_OK(catalog().CreateTable(spec));
  }
  std::vector<json> rows;
  json batch = json::array();
  for (int id = 0; id < 120; ++id) {
    json r = {{"id", id}};
    if (rng() % 8 != 0) r["a"] = any();
    if (rng() % 8 != 0) r["b"] = any();
    rows.push_back(r);
    batch.push_back(r);
  }
  ASSERT_OK(records().Write("db", "indexed", batch, WriteMode::kInsert));
  ASSERT_OK(records().Write("db", "plain", batch, WriteMode::kInsert));

  const std::vector<std::string> types = {
      "equals",       "not_equal",          "contains",  "starts_with",     "ends_with",
      "greater_than", "greater_than_equal", "less_than", "less_than_equal", "between"};
  const std::vector<std::string> attributes = {"a", "b", "id"};
  auto scalar = [&] {
    json v = any();
    while (v.is_array()) v = any();
    return v;
  };
  std::function<json(int)> condition = [&](int depth) -> json {
    if (depth < 2 && rng() % 4 == 0) {
      json group = {{"operator", rng() % 2 ? "or" : "and"}, {"conditions", json::array()}};
      const int n = 1 + static_cast<int>(rng() % 3);
      for (int i = 0; i < n; ++i) group["conditions"].push_back(condition(depth + 1));
      return group;
    }
    const std::string type = types[rng() % types.size()];
    json value = scalar();
    if (type == "between") value = json::array({scalar(), scalar()});
    if (attributes[rng() % 3] == "id" && type != "between") {
      return C("id", type, static_cast<int>(rng() % 130) - 5);
    }
    return C(attributes[rng() % 2], type, value);
  };
  for (int round = 0; round < 300; ++round) {
    json conditions = json::array();
    const int n = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < n; ++i) conditions.push_back(condition(0));
    const json op = rng() % 2 ? "or" : "and";
    SearchOptions options;
    options.reverse = rng() % 2 == 0;
    SCOPED_TRACE(absl::StrCat("seed ", seed, " round ", round, ": ", op.dump(), " ",
                              conditions.dump(), options.reverse ? " reverse" : ""));
    auto search = ParseConditionSearch(conditions, &op, nullptr);
    ASSERT_OK(search);
    std::vector<json> expected;
    for (const json& r : rows) {
      if (Matches(search->root, r)) expected.push_back(r["id"]);
    }
    for (const char* table : {"indexed", "plain"}) {
      std::vector<json> got =
          Ids(Search(table, conditions.get<std::vector<json>>(), &op, nullptr, options));
      std::sort(got.begin(), got.end());
      ASSERT_EQ(got, expected) << table;  // sorted ids: a row twice shows
    }
  }
}

TEST_F(SearchConditionsTest, Decision104_AnArrayRowComesOnce) {
  TableSpec spec = Spec("db", "t");
  spec.attributes->push_back({"list", v1::ANY, true});
  ASSERT_OK(catalog().CreateTable(spec));
  ASSERT_OK(records().Write(
      "db", "t", {{{"id", 1}, {"list", {3, 7, 9, "x", "xy"}}}, {{"id", 2}, {"list", {4}}}},
      WriteMode::kInsert));
  EXPECT_EQ(Ids(Search("t", {C("list", "greater_than", 1)})), (std::vector<json>{1, 2}));
  EXPECT_EQ(Ids(Search("t", {C("list", "starts_with", "x")})), (std::vector<json>{1}));
  const json or_op = "or";
  EXPECT_EQ(Ids(Search("t", {C("list", "equals", 3), C("list", "equals", 9)}, &or_op)),
            (std::vector<json>{1}));
  SearchOptions reverse;
  reverse.reverse = true;
  EXPECT_EQ(Ids(Search("t", {C("list", "between", {3, 9})}, nullptr, nullptr, reverse)),
            (std::vector<json>{1, 2}));  // 1 at its 9, then 2 at its 4
}

TEST_F(SearchConditionsTest, Decision104_SortLimitOffsetAndReverse) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  ASSERT_OK(records().Write("db", "t",
                            {{{"id", 1}, {"g", "b"}, {"n", 3}},
                             {{"id", 2}, {"g", "a"}, {"n", 3}},
                             {{"id", 3}, {"g", "b"}, {"n", 1}},
                             {{"id", 4}, {"n", 2}},
                             {{"id", 5}, {"g", "a"}, {"n", 9}}},
                            WriteMode::kInsert));
  const std::vector<json> all = {C("n", "greater_than", 0)};
  const json by_g = {{"attribute", "g"}, {"next", {{"attribute", "n"}, {"descending", true}}}};
  // Absent values first, then by g, ties by n descending.
  EXPECT_EQ(Ids(Search("t", all, nullptr, &by_g)), (std::vector<json>{4, 5, 2, 1, 3}));
  SearchOptions page;
  page.offset = 1;
  page.limit = 3;
  EXPECT_EQ(Ids(Search("t", all, nullptr, &by_g, page)), (std::vector<json>{5, 2, 1}));
  page.reverse = true;
  EXPECT_EQ(Ids(Search("t", all, nullptr, &by_g, page)), (std::vector<json>{1, 2, 5}));
  // Unsorted: the order of the index read (n, then the key), reversed on request.
  SearchOptions reverse;
  reverse.reverse = true;
  EXPECT_EQ(Ids(Search("t", all, nullptr, nullptr, reverse)), (std::vector<json>{5, 2, 1, 4, 3}));
  // An `or` read backwards: its branches in turn backwards, so the last branch's rows first.
  const json or_op = "or";
  SearchOptions last_first;
  last_first.reverse = true;
  last_first.limit = 1;
  EXPECT_EQ(
      Ids(Search("t", {C("id", "equals", 1), C("id", "equals", 2)}, &or_op, nullptr, last_first)),
      (std::vector<json>{2}));
  // offset + limit saturates instead of wrapping to a small number: a sort is then refused
  // (it would hold more than kMaxSortRows rows), not answered short.
  SearchOptions huge;
  huge.offset = 2;
  huge.limit = UINT64_MAX;
  auto sorted = ParseConditionSearch(json(all), nullptr, &by_g);
  ASSERT_OK(sorted);
  EXPECT_THAT(
      records().SearchByConditions("db", "t", *sorted, huge, [](const json&) { return true; }),
      HasErrorCode(ErrorCode::kBadRequest));
  // The projection names what it keeps; a row without it answers null (as Harper).
  SearchOptions projected;
  projected.get_attributes = {"g", "id"};
  EXPECT_EQ(Search("t", {C("id", "equals", 4)}, nullptr, nullptr, projected),
            (std::vector<json>{{{"g", nullptr}, {"id", 4}}}));
}

}  // namespace
}  // namespace cairn::catalog
