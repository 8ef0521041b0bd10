// search_by_conditions (SPEC §5 Harper compatibility, decision 104): what matches, and that
// the reads a plan picks (primary key, index ranges, an `or` of them) find exactly what a
// scan finds, each row once.
#include "catalog/search_conditions.h"

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "boost/iterator/transform_iterator.hpp"
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
                                  UINT64_MAX - 1,
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

// Issue 41, point 11: integers beyond int64 in an `Any` attribute compared as the double they
// round to, which 2^64 - 2 and 2^64 - 1 share: `equals 18446744073709551614` also returned the
// 2^64 - 1 row and `greater_than` it returned nothing. The index still holds such values under
// their double; an index read keeps every row of that double and the exact comparison
// (storage::CompareNumbers) decides, as a scan does.
TEST_F(SearchConditionsTest, Issue41_IntegersBeyondInt64CompareExactly) {
  const json rows = json::array({{{"id", 1}, {"n", UINT64_MAX}},
                                 {{"id", 2}, {"n", UINT64_MAX - 1}},
                                 {{"id", 3}, {"n", UINT64_MAX - 2}},
                                 {{"id", 4}, {"n", 18446744073709551616.0}},  // 2^64, a double
                                 {{"id", 5}, {"n", INT64_MAX}},
                                 {{"id", 6}, {"n", uint64_t{1} << 63}}});
  for (const bool indexed : {true, false}) {
    const std::string table = indexed ? "indexed" : "plain";
    SCOPED_TRACE(table);
    TableSpec spec = Spec("db", table);
    spec.attributes->push_back({"n", v1::ANY, indexed});
    ASSERT_OK(catalog().CreateTable(spec));
    ASSERT_OK(records().Write("db", table, rows, WriteMode::kInsert));
    auto ids = [&](const json& condition) {
      std::vector<json> got = Ids(Search(table, {condition}));
      std::sort(got.begin(), got.end());
      return json(got);
    };
    EXPECT_EQ(ids(C("n", "equals", UINT64_MAX - 1)), json({2}));
    EXPECT_EQ(ids(C("n", "not_equal", UINT64_MAX - 1)), json({1, 3, 4, 5, 6}));
    EXPECT_EQ(ids(C("n", "greater_than", UINT64_MAX - 1)), json({1, 4}));
    EXPECT_EQ(ids(C("n", "greater_than_equal", UINT64_MAX - 1)), json({1, 2, 4}));
    EXPECT_EQ(ids(C("n", "less_than", UINT64_MAX - 1)), json({3, 5, 6}));
    EXPECT_EQ(ids(C("n", "less_than_equal", UINT64_MAX)), json({1, 2, 3, 5, 6}));
    EXPECT_EQ(ids(C("n", "between", json::array({UINT64_MAX - 2, UINT64_MAX - 1}))), json({2, 3}));
    EXPECT_EQ(ids(C("n", "equals", 18446744073709551616.0)), json({4}));
    EXPECT_EQ(ids(C("n", "greater_than", INT64_MAX)), json({1, 2, 3, 4, 6}));
    const json sort = {{"attribute", "n"}};
    EXPECT_EQ(json(Ids(Search(table, {C("n", "greater_than", 0)}, nullptr, &sort))),
              json({5, 6, 3, 2, 1, 4}));
  }
}

// Issue 41, point 11, found by Decision104_IndexReadsFindWhatAScanFinds (seed
// 1796438079147925915): an `or` planner that dropped a branch "whose leaf an earlier branch
// has" compared the two leaves' values as nlohmann does, through a double, so `equals 1e17`
// and `equals 100000000000000001` were one leaf and the second branch was never read.
TEST_F(SearchConditionsTest, Issue41_AnOrKeepsBranchesWhoseNumbersShareADouble) {
  TableSpec spec = Spec("db", "t");
  spec.attributes->push_back({"n", v1::ANY, true});
  ASSERT_OK(catalog().CreateTable(spec));
  ASSERT_OK(records().Write("db", "t",
                            {{{"id", 1}, {"n", 1e17}},
                             {{"id", 2}, {"n", int64_t{100000000000000001}}},
                             {{"id", 3}, {"n", UINT64_MAX}},
                             {{"id", 4}, {"n", UINT64_MAX - 1}}},
                            WriteMode::kInsert));
  const json or_op = "or";
  auto ids = [&](const json& a, const json& b) {
    std::vector<json> got = Ids(Search("t", {C("n", "equals", a), C("n", "equals", b)}, &or_op));
    std::sort(got.begin(), got.end());
    return json(got);
  };
  EXPECT_EQ(ids(1e17, int64_t{100000000000000001}), json({1, 2}));
  EXPECT_EQ(ids(UINT64_MAX, UINT64_MAX - 1), json({3, 4}));
  EXPECT_EQ(ids(5, 5.0), json::array());  // one leaf: the same rows
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

// Issue 41, point 1: `contains` costs character reads linear in the value and the pattern,
// for the shapes that make a naive search take O(n * m) (a pattern of half a 1 MiB value took
// 6 s) and the standard Boyer-Moore's table O(m^2).
TEST(TextSearchTest, Issue41_ContainsIsLinearInTheValue) {
  const size_t n = 1 << 20, m = 4096;
  const std::string run(n, 'a');
  std::string periodic;
  while (periodic.size() < n) periodic += "ab";
  std::string periodic_miss;
  while (periodic_miss.size() + 2 < m) periodic_miss += "ab";
  periodic_miss += "bb";
  const struct {
    const char* shape;
    const std::string& text;
    std::string pattern;
    bool found;
  } cases[] = {
      {"a^(m-1)b in a^n", run, std::string(m - 1, 'a') + "b", false},
      {"ba^(m-1) in a^n", run, "b" + std::string(m - 1, 'a'), false},
      {"a^m in a^n", run, std::string(m, 'a'), true},
      {"(ab)^k bb in (ab)^n", periodic, periodic_miss, false},
  };
  for (const auto& c : cases) {
    uint64_t reads = 0;
    auto counted = [&reads](char ch) {
      ++reads;
      return ch;
    };
    const TextSearch search(c.pattern);
    auto first = boost::make_transform_iterator(c.text.begin(), counted);
    auto last = boost::make_transform_iterator(c.text.end(), counted);
    EXPECT_EQ(search.Find(first, last) != last, c.found) << c.shape;
    EXPECT_LE(reads, 2 * n) << c.shape;
    EXPECT_EQ(search.In(c.text), c.found) << c.shape;
  }
}

// Issue 41, point 4: a tree's groups count against the cap as its leaves do (1 leaf and
// 500,000 empty groups took 6 s and 205 MiB), and a text pattern is bounded (point 1).
TEST_F(SearchConditionsTest, Issue41_GroupsCountAndPatternsAreBounded) {
  json wide = json::array({C("a", "equals", 1)});
  for (size_t i = 0; i < kMaxConditions; ++i) {
    wide.push_back({{"operator", "and"}, {"conditions", json::array()}});
  }
  EXPECT_THAT(ParseConditionSearch(wide, nullptr, nullptr).status(),
              HasErrorCode(ErrorCode::kBadRequest));
  wide.erase(wide.size() - 1);
  EXPECT_OK(ParseConditionSearch(wide, nullptr, nullptr).status());

  const std::string longest(kMaxPatternBytes, 'x');
  for (const char* type : {"contains", "starts_with", "ends_with"}) {
    EXPECT_OK(ParseConditionSearch(json::array({C("a", type, longest)}), nullptr, nullptr));
    EXPECT_THAT(
        ParseConditionSearch(json::array({C("a", type, longest + "x")}), nullptr, nullptr).status(),
        HasErrorCode(ErrorCode::kBadRequest))
        << type;
  }
  // search_by_value's wildcards are the same conditions.
  ASSERT_OK(catalog().CreateTable(Spec("db", "t", {"a"})));
  EXPECT_THAT(records().SearchByValue("db", "t", "a", "*" + longest + "x*", {},
                                      [](const json&) { return true; }),
              HasErrorCode(ErrorCode::kBadRequest));
  EXPECT_OK(records().SearchByValue("db", "t", "a", "*" + longest + "*", {},
                                    [](const json&) { return true; }));
}

// Issue 41, point 6: a sort names each attribute once, has at most kMaxSortLevels levels, and
// holds at most max_sort_bytes (one attribute named 17 times took 1 GiB).
TEST_F(SearchConditionsTest, Issue41_SortsAreBounded) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  std::vector<json> rows;
  for (int i = 0; i < 200; ++i) rows.push_back({{"id", i}, {"s", std::string(100, 'a' + i % 26)}});
  ASSERT_OK(records().Write("db", "t", rows, WriteMode::kInsert));
  const json repeated = {{"attribute", "s"}, {"next", {{"attribute", "s"}}}};
  EXPECT_THAT(
      ParseConditionSearch(json::array({C("id", "greater_than", -1)}), nullptr, &repeated).status(),
      HasErrorCode(ErrorCode::kBadRequest));
  json levels = nullptr;
  for (size_t i = 0; i <= kMaxSortLevels; ++i) {
    levels = {{"attribute", absl::StrCat("a", i)}, {"next", levels}};
  }
  EXPECT_THAT(
      ParseConditionSearch(json::array({C("id", "greater_than", -1)}), nullptr, &levels).status(),
      HasErrorCode(ErrorCode::kBadRequest));

  const json by_s = {{"attribute", "s"}};
  auto search = ParseConditionSearch(json::array({C("id", "greater_than", -1)}), nullptr, &by_s);
  ASSERT_OK(search);
  SearchOptions small;
  small.max_sort_bytes = 8 << 10;  // 200 rows of 100-byte values do not fit
  EXPECT_THAT(
      records().SearchByConditions("db", "t", *search, small, [](const json&) { return true; }),
      HasErrorCode(ErrorCode::kBadRequest));
  // With a limit the sort holds only the rows it keeps, and fits.
  small.limit = 10;
  EXPECT_EQ(Search("t", {C("id", "greater_than", -1)}, nullptr, &by_s, small).size(), 10u);
  small.limit = 0;
  small.max_sort_bytes = 1 << 20;
  EXPECT_EQ(Search("t", {C("id", "greater_than", -1)}, nullptr, &by_s, small).size(), 200u);
}

// Issue 41, point 5: an `or` of many indexed branches that each match every row reads the
// table once, not once per branch (1,000 such leaves read it 1,000 times), and still answers
// each row once; identical branches are read once.
TEST_F(SearchConditionsTest, Issue41_AWideOrReadsEachRowOnce) {
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  std::vector<json> rows;
  for (int i = 0; i < 20; ++i) rows.push_back({{"id", i}, {"n", i}});
  ASSERT_OK(records().Write("db", "t", rows, WriteMode::kInsert));
  const json or_op = "or";
  auto reads = [&](const std::vector<json>& leaves, size_t* answered) {
    faults_.Set(fault_points::kScanRow, FaultAction::Delay(absl::ZeroDuration()).OnNth(1 << 30));
    *answered = Search("t", leaves, &or_op).size();
    const int64_t hits = faults_.HitCount(fault_points::kScanRow);
    faults_.Clear(fault_points::kScanRow);
    return hits;
  };
  std::vector<json> wide;
  for (int i = 1; i <= 1000; ++i) wide.push_back(C("n", "greater_than", -i));
  size_t answered = 0;
  EXPECT_LE(reads(wide, &answered), 2 * 20);
  EXPECT_EQ(answered, 20u);
  std::vector<json> same(1000, C("n", "greater_than_equal", 0));
  EXPECT_LE(reads(same, &answered), 2 * 20);
  EXPECT_EQ(answered, 20u);
  // A few ranges are still read branch by branch, through the index.
  EXPECT_EQ(Ids(Search("t", {C("n", "less_than", 2), C("n", "greater_than", 17)}, &or_op)),
            (std::vector<json>{0, 1, 18, 19}));
}

}  // namespace
}  // namespace cairn::catalog
