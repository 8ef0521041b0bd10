#include "common/persistent_map.h"

#include <map>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "tests/testing/testing.h"

namespace cairn {
namespace {

using Map = PersistentMap<std::string, int>;

std::map<std::string, int> Contents(const Map& m) {
  std::map<std::string, int> out;
  for (const auto& [k, v] : m) out.emplace(k, v);
  return out;
}

void ExpectSame(const Map& m, const std::map<std::string, int>& model) {
  ASSERT_EQ(m.size(), model.size());
  ASSERT_EQ(m.empty(), model.empty());
  auto it = m.begin();
  for (const auto& [k, v] : model) {  // invariant (1): in order, every entry once
    ASSERT_NE(it, m.end());
    ASSERT_EQ(it->first, k);
    ASSERT_EQ(it->second, v);
    ++it;
  }
  ASSERT_EQ(it, m.end());
  // Invariant (3): the index stays proportional to size / kMaxChunk.
  ASSERT_LE(m.chunk_count(), 2 * m.size() / (Map::kMaxChunk / 2) + 1);
}

TEST(PersistentMapTest, BehavesAsAnOrderedMap) {
  const uint64_t seed = testing::TestSeed();
  std::mt19937_64 rng(seed);
  SCOPED_TRACE(absl::StrCat("CAIRN_TEST_SEED=", seed));
  Map m;
  std::map<std::string, int> model;
  for (int step = 0; step < 20000; ++step) {
    // Few enough keys that inserts, overwrites and erases all happen, and chunks split and merge.
    const std::string key = absl::StrCat("k", rng() % 700);
    switch (rng() % 5) {
      case 0:
      case 1:
        m[key] = step;
        model[key] = step;
        break;
      case 2:
        m.insert_or_assign(key, -step);
        model[key] = -step;
        break;
      default:
        ASSERT_EQ(m.erase(absl::string_view(key)), model.erase(key)) << key;
    }
    if (step % 97 == 0) {
      ASSERT_NO_FATAL_FAILURE(ExpectSame(m, model)) << "step " << step << ", seed " << seed;
    }
    const std::string probe = absl::StrCat("k", rng() % 800);
    auto found = m.find(absl::string_view(probe));
    auto expected = model.find(probe);
    ASSERT_EQ(found == m.end(), expected == model.end()) << probe;
    if (expected != model.end()) {
      ASSERT_EQ(found->second, expected->second);
    }
    auto lower = m.lower_bound(probe);
    auto expected_lower = model.lower_bound(probe);
    ASSERT_EQ(lower == m.end(), expected_lower == model.end()) << probe;
    if (expected_lower != model.end()) {
      ASSERT_EQ(lower->first, expected_lower->first);
    }
    ASSERT_EQ(m.count(probe), model.count(probe));
  }
  ExpectSame(m, model);
}

TEST(PersistentMapTest, ACopyNeverSeesTheOriginalChange) {  // invariant (2)
  Map m;
  for (int i = 0; i < 1000; ++i) m[absl::StrCat("t", 10000 + i)] = i;
  const Map copy = m;
  const std::map<std::string, int> before = Contents(copy);
  for (int i = 0; i < 1000; i += 3) m.erase(absl::StrCat("t", 10000 + i));
  for (int i = 0; i < 1000; i += 5) m[absl::StrCat("t", 10000 + i)] = -1;
  m[""] = 7;   // before every key
  m["u"] = 8;  // after every key
  Map moved = std::move(m);
  moved["t10001"] = 99;
  EXPECT_EQ(Contents(copy), before);
  EXPECT_EQ(copy.size(), 1000u);
  EXPECT_EQ(moved.find(absl::string_view("t10001"))->second, 99);
  EXPECT_EQ(copy.find(absl::string_view("t10001"))->second, 1);
  EXPECT_TRUE(m.empty());  // NOLINT(bugprone-use-after-move): a moved-from map is empty
  EXPECT_EQ(m.begin(), m.end());
}

TEST(PersistentMapTest, EmptiesAndRefills) {
  Map m;
  for (int i = 0; i < 500; ++i) m[absl::StrCat("a", i)] = i;
  for (int i = 0; i < 500; ++i) ASSERT_EQ(m.erase(absl::StrCat("a", i)), 1u);
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.chunk_count(), 0u);
  EXPECT_EQ(m.begin(), m.end());
  EXPECT_EQ(m.erase(std::string("a1")), 0u);
  m["b"] = 1;
  EXPECT_EQ(Contents(m), (std::map<std::string, int>{{"b", 1}}));
}

TEST(PersistentMapTest, PairKeysFindByPrefix) {  // as the catalog's markers are read per database
  PersistentMap<std::pair<std::string, std::string>, int> m;
  for (int d = 0; d < 5; ++d) {
    for (int t = 0; t < 300; ++t) m[{absl::StrCat("db", d), absl::StrCat("t", t)}] = d * 1000 + t;
  }
  int seen = 0;
  for (auto it = m.lower_bound(std::make_pair(std::string("db3"), std::string()));
       it != m.end() && it->first.first == "db3"; ++it) {
    EXPECT_EQ(it->second / 1000, 3);
    ++seen;
  }
  EXPECT_EQ(seen, 300);
}

}  // namespace
}  // namespace cairn
