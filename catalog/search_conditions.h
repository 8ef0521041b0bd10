// search_by_conditions (SPEC §5, Harper compatibility; decision 104): Harper's conditions,
// parsed from a request and matched against records. RecordStore::SearchByConditions plans
// the reads (catalog/record_store_conditions.cc); this file says what matches. Thread-
// compatible value types and free functions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "boost/algorithm/searching/knuth_morris_pratt.hpp"
#include "nlohmann/json.hpp"

namespace cairn::catalog {

class TableDef;

enum class Comparator {
  kEquals,
  kNotEqual,
  kContains,
  kStartsWith,
  kEndsWith,
  kGreaterThan,
  kGreaterThanEqual,
  kLessThan,
  kLessThanEqual,
  kBetween,
};

// A substring search whose cost is linear in the text and the pattern (issue 41): Knuth-Morris-
// Pratt reads each character of the text at most twice and builds its table in O(m), where a
// naive search may take O(n * m) (a 512 KiB pattern against a 1 MiB value took 6 s; the
// standard library's Boyer-Moore builds its table in O(m^2)). Built once per `contains`
// condition, not per row. Immutable after construction; thread-safe.
class TextSearch {
 public:
  explicit TextSearch(std::string pattern)
      : pattern_(std::move(pattern)), searcher_(pattern_.begin(), pattern_.end()) {}
  TextSearch(const TextSearch&) = delete;  // the searcher points into pattern_
  TextSearch& operator=(const TextSearch&) = delete;

  bool In(absl::string_view text) const { return Find(text.begin(), text.end()) != text.end(); }
  // The first occurrence in [first, last) of random-access iterators over chars, or `last`.
  template <class It>
  It Find(It first, It last) const {
    return searcher_(first, last).first;
  }
  const std::string& pattern() const { return pattern_; }

 private:
  const std::string pattern_;
  const boost::algorithm::knuth_morris_pratt<std::string::const_iterator> searcher_;
};

// A condition: a leaf compares one attribute with a value; a group joins its children with
// `and` or `or`. Invariant: a leaf has an attribute and no children; a group has no
// attribute.
struct Condition {
  std::string attribute;  // empty for a group
  Comparator comparator = Comparator::kEquals;
  nlohmann::json value;  // kBetween: the lower bound
  nlohmann::json upper;  // kBetween only
  bool any = false;      // a group: `or` (else `and`)
  std::vector<Condition> children;
  // kContains: the pattern's searcher (ParseConditionSearch and ResolveConditions build it;
  // without it, as in a test that matches an unresolved condition, the search is naive).
  std::shared_ptr<const TextSearch> text;

  bool is_group() const { return attribute.empty(); }
};

struct SortKey {
  std::string attribute;
  bool descending = false;
};

struct ConditionSearch {
  Condition root;             // a group
  std::vector<SortKey> sort;  // outermost first; empty: in the order the reads find rows
};

// Bounds on one search's work (issue 41; docs/operations.md "Limits"). A request holds at most
// kMaxConditions leaves and groups together, nested at most kMaxGroupDepth groups deep; a text
// pattern (contains, starts_with, ends_with) is at most kMaxPatternBytes long; a sort has at
// most kMaxSortLevels levels, each on a different attribute. Beyond any: 400 naming it.
inline constexpr size_t kMaxConditions = 1000;
inline constexpr int kMaxGroupDepth = 16;
inline constexpr size_t kMaxPatternBytes = 4096;
inline constexpr size_t kMaxSortLevels = 8;

// Parses Harper's fields: `conditions` (an array of conditions, each {search_attribute |
// attribute, search_type | comparator, search_value | value}, or a group {operator,
// conditions}), the top-level `operator` ("and" by default; null if absent) and `sort`
// ({attribute, descending, next: {...}}; null if absent). BAD_REQUEST naming what is wrong.
absl::StatusOr<ConditionSearch> ParseConditionSearch(const nlohmann::json& conditions,
                                                     const nlohmann::json* op,
                                                     const nlohmann::json* sort);

// Checks every attribute a condition or the sort names exists in `def` (UNKNOWN_ATTRIBUTE)
// and makes values fit their attribute's type ("5" searches an Int attribute as 5).
absl::Status ResolveConditions(const TableDef& def, ConditionSearch* search);

// Whether `record` (a body with dropped attributes removed) matches. A leaf on an attribute
// the record lacks matches only not_equal; on an array, a leaf matches if an element does
// (not_equal: if no element is equal).
bool Matches(const Condition& condition, const nlohmann::json& record);

// Whether one scalar (an element of an array field, or an index entry's value) satisfies the
// leaf `condition` (not_equal: whether it is equal).
bool ScalarMatches(const Condition& condition, const nlohmann::json& value);

// A row's value as `sort` orders it, prepared once per row. Kinds order absent < null <
// booleans < numbers < strings < arrays and objects; within a kind, by value (numbers as the
// index orders them, strings by their bytes, arrays and objects by their JSON text).
struct SortValue {
  int rank = 0;           // 0 absent, 1 null, 2 boolean, 3 number, 4 string, 5 array or object
  nlohmann::json scalar;  // ranks 2-4
  std::string text;       // rank 5
};
SortValue SortValueOf(const nlohmann::json* value);  // null: absent
// Negative if `a` comes before `b`, 0 if they tie.
int CompareForSort(const SortValue& a, const SortValue& b);

}  // namespace cairn::catalog
