#include "catalog/search_conditions.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "catalog/internal/record_codec.h"
#include "catalog/schema.h"
#include "common/status.h"
#include "storage/value_codec.h"

namespace cairn::catalog {
namespace {

using nlohmann::json;

struct ComparatorName {
  const char* name;
  Comparator comparator;
};
// Harper's names, then the short forms its resource API takes.
constexpr ComparatorName kComparators[] = {
    {"equals", Comparator::kEquals},
    {"not_equal", Comparator::kNotEqual},
    {"contains", Comparator::kContains},
    {"starts_with", Comparator::kStartsWith},
    {"ends_with", Comparator::kEndsWith},
    {"greater_than", Comparator::kGreaterThan},
    {"greater_than_equal", Comparator::kGreaterThanEqual},
    {"less_than", Comparator::kLessThan},
    {"less_than_equal", Comparator::kLessThanEqual},
    {"between", Comparator::kBetween},
    {"eq", Comparator::kEquals},
    {"ne", Comparator::kNotEqual},
    {"gt", Comparator::kGreaterThan},
    {"ge", Comparator::kGreaterThanEqual},
    {"gte", Comparator::kGreaterThanEqual},
    {"lt", Comparator::kLessThan},
    {"le", Comparator::kLessThanEqual},
    {"lte", Comparator::kLessThanEqual},
};

absl::Status Bad(std::string message) { return Error(ErrorCode::kBadRequest, std::move(message)); }

// The field named `name` or its alias, or null.
const json* Field(const json& object, const char* name, const char* alias) {
  auto it = object.find(name);
  if (it != object.end()) return &*it;
  it = object.find(alias);
  return it != object.end() ? &*it : nullptr;
}

absl::StatusOr<bool> ParseOperator(const json* op, const std::string& where) {
  if (op == nullptr || op->is_null()) return false;
  if (op->is_string()) {
    const std::string& s = op->get_ref<const std::string&>();
    if (absl::EqualsIgnoreCase(s, "and")) return false;
    if (absl::EqualsIgnoreCase(s, "or")) return true;
  }
  return Bad(absl::StrCat("'", where, "operator' must be \"and\" or \"or\""));
}

absl::Status ParseGroup(const json& conditions, bool any, int depth, const std::string& where,
                        size_t* nodes, Condition* group);

// Counts a leaf or a group against kMaxConditions: an empty group costs a visit per row too.
absl::Status CountNode(size_t* nodes) {
  if (++*nodes > kMaxConditions) {
    return Bad(
        absl::StrCat("a search takes at most ", kMaxConditions, " conditions and groups together"));
  }
  return absl::OkStatus();
}

std::string AsText(const json& v);

// The text comparisons' pattern: bounded, and for `contains` its searcher, built once.
absl::Status PrepareText(const std::string& where, Condition* c) {
  if (c->comparator != Comparator::kContains && c->comparator != Comparator::kStartsWith &&
      c->comparator != Comparator::kEndsWith) {
    return absl::OkStatus();
  }
  std::string pattern = AsText(c->value);
  if (pattern.size() > kMaxPatternBytes) {
    return Bad(absl::StrCat("'", where, ".search_value' is ", pattern.size(),
                            " bytes; a text pattern is at most ", kMaxPatternBytes, " bytes"));
  }
  if (c->comparator == Comparator::kContains && c->text == nullptr) {
    c->text = std::make_shared<const TextSearch>(std::move(pattern));
  }
  return absl::OkStatus();
}

absl::Status ParseOne(const json& c, int depth, const std::string& where, size_t* nodes,
                      Condition* out) {
  if (!c.is_object()) return Bad(absl::StrCat("'", where, "' must be an object"));
  CAIRN_RETURN_IF_ERROR(CountNode(nodes));
  if (auto nested = c.find("conditions"); nested != c.end()) {
    auto op = c.find("operator");
    CAIRN_ASSIGN_OR_RETURN(bool any, ParseOperator(op == c.end() ? nullptr : &*op, where + "."));
    return ParseGroup(*nested, any, depth + 1, where + ".conditions", nodes, out);
  }
  const json* attribute = Field(c, "search_attribute", "attribute");
  if (attribute == nullptr || !attribute->is_string() ||
      attribute->get_ref<const std::string&>().empty()) {
    return Bad(absl::StrCat("'", where, ".search_attribute' must be a non-empty string"));
  }
  const json* type = Field(c, "search_type", "comparator");
  if (type == nullptr || !type->is_string()) {
    return Bad(absl::StrCat("'", where, ".search_type' must be a string"));
  }
  const std::string& name = type->get_ref<const std::string&>();
  auto known = std::find_if(std::begin(kComparators), std::end(kComparators),
                            [&](const ComparatorName& n) { return name == n.name; });
  if (known == std::end(kComparators)) {
    return Bad(absl::StrCat("'", where, ".search_type' '", name,
                            "' is not one of equals, not_equal, contains, starts_with, "
                            "ends_with, greater_than, greater_than_equal, less_than, "
                            "less_than_equal, between"));
  }
  const json* value = Field(c, "search_value", "value");
  if (value == nullptr) return Bad(absl::StrCat("'", where, ".search_value' is required"));
  out->attribute = attribute->get<std::string>();
  out->comparator = known->comparator;
  if (out->comparator == Comparator::kBetween) {
    if (!value->is_array() || value->size() != 2 || (*value)[0].is_structured() ||
        (*value)[1].is_structured()) {
      return Bad(absl::StrCat("'", where,
                              ".search_value' of a between condition must be an array of two "
                              "values, [lower, upper]"));
    }
    out->value = (*value)[0];
    out->upper = (*value)[1];
    return absl::OkStatus();
  }
  if (value->is_structured()) {
    return Bad(
        absl::StrCat("'", where, ".search_value' must be a string, number, boolean or null"));
  }
  out->value = *value;
  return PrepareText(where, out);
}

absl::Status ParseGroup(const json& conditions, bool any, int depth, const std::string& where,
                        size_t* nodes, Condition* group) {
  if (depth > kMaxGroupDepth) {
    return Bad(absl::StrCat("conditions nest deeper than ", kMaxGroupDepth, " groups"));
  }
  if (!conditions.is_array()) return Bad(absl::StrCat("'", where, "' must be an array"));
  group->any = any;
  group->children.resize(conditions.size());
  for (size_t i = 0; i < conditions.size(); ++i) {
    CAIRN_RETURN_IF_ERROR(ParseOne(conditions[i], depth, absl::StrCat(where, "[", i, "]"), nodes,
                                   &group->children[i]));
  }
  return absl::OkStatus();
}

absl::Status ResolveCondition(const TableDef& def, Condition* c) {
  if (c->is_group()) {
    for (Condition& child : c->children) CAIRN_RETURN_IF_ERROR(ResolveCondition(def, &child));
    return absl::OkStatus();
  }
  const AttributeDef* attr = def.FindAttribute(c->attribute);
  if (attr == nullptr) {
    return Error(ErrorCode::kUnknownAttribute,
                 absl::StrCat("unknown attribute '", c->attribute, "' in conditions"));
  }
  switch (c->comparator) {
    case Comparator::kContains:
    case Comparator::kStartsWith:
    case Comparator::kEndsWith:
      // Text comparisons: the value as given (search_by_value's wildcards come here unparsed).
      CAIRN_RETURN_IF_ERROR(PrepareText("value", c));
      break;
    default:
      c->value = internal::CoerceSearchValue(*attr, c->value);
      c->upper = internal::CoerceSearchValue(*attr, c->upper);
  }
  return absl::OkStatus();
}

// The kind rank of CompareForSort (and of range comparisons: only equal kinds compare).
int KindRank(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return 1;
    case json::value_t::boolean:
      return 2;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return 3;
    case json::value_t::string:
      return 4;
    default:
      return 5;
  }
}

template <typename T>
int Three(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

// Same-kind order: numbers by value, strings by bytes (the index's order), booleans
// false < true.
int CompareSameKind(const json& a, const json& b) {
  switch (KindRank(a)) {
    case 2:
      return Three(a.get<bool>(), b.get<bool>());
    case 3:
      // Exactly, by value (1e17 written as a float is the integer 10^17, and 2^64 - 2 is
      // below 2^64 - 1): a scan, and an index read with its row re-checked, agree.
      return storage::CompareNumbers(a, b);
    case 4:
      return Three(a.get_ref<const std::string&>(), b.get_ref<const std::string&>());
    default:
      return 0;
  }
}

// A range comparison holds only between two numbers or two strings (a number is never
// greater than a string, nor true than false): what an index range reads gives the same rows.
bool InRange(const json& v, const Condition& c) {
  if (KindRank(v) != 3 && KindRank(v) != 4) return false;
  auto cmp = [&](const json& bound, int* out) {
    if (bound.is_null() || KindRank(bound) != KindRank(v)) return false;
    *out = CompareSameKind(v, bound);
    return true;
  };
  int lo = 0, hi = 0;
  switch (c.comparator) {
    case Comparator::kGreaterThan:
      return cmp(c.value, &lo) && lo > 0;
    case Comparator::kGreaterThanEqual:
      return cmp(c.value, &lo) && lo >= 0;
    case Comparator::kLessThan:
      return cmp(c.value, &hi) && hi < 0;
    case Comparator::kLessThanEqual:
      return cmp(c.value, &hi) && hi <= 0;
    case Comparator::kBetween:
      return cmp(c.value, &lo) && lo >= 0 && cmp(c.upper, &hi) && hi <= 0;
    default:
      return false;
  }
}

std::string AsText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A text comparison's pattern, without a copy when it is a string (the common case).
template <typename F>
bool WithText(const json& pattern, F f) {
  if (pattern.is_string()) return f(absl::string_view(pattern.get_ref<const std::string&>()));
  return f(absl::string_view(AsText(pattern)));
}

}  // namespace

bool ScalarMatches(const Condition& c, const json& v) {
  switch (c.comparator) {
    case Comparator::kEquals:
    case Comparator::kNotEqual:
      return internal::FieldMatches(v, c.value, nullptr);
    case Comparator::kContains:
      if (!v.is_string()) return false;
      if (c.text != nullptr) return c.text->In(v.get_ref<const std::string&>());
      return WithText(c.value, [&](absl::string_view p) {
        return absl::StrContains(v.get_ref<const std::string&>(), p);
      });
    case Comparator::kStartsWith:
      return v.is_string() && WithText(c.value, [&](absl::string_view p) {
               return absl::StartsWith(v.get_ref<const std::string&>(), p);
             });
    case Comparator::kEndsWith:
      return v.is_string() && WithText(c.value, [&](absl::string_view p) {
               return absl::EndsWith(v.get_ref<const std::string&>(), p);
             });
    default:
      return InRange(v, c);
  }
}

absl::StatusOr<ConditionSearch> ParseConditionSearch(const json& conditions, const json* op,
                                                     const json* sort) {
  ConditionSearch out;
  CAIRN_ASSIGN_OR_RETURN(bool any, ParseOperator(op, ""));
  size_t nodes = 0;
  CAIRN_RETURN_IF_ERROR(ParseGroup(conditions, any, 0, "conditions", &nodes, &out.root));
  const json* level = sort;
  for (size_t depth = 0; level != nullptr && !level->is_null(); ++depth) {
    if (!level->is_object()) return Bad("'sort' must be an object {attribute, descending, next}");
    if (depth == kMaxSortLevels) {
      return Bad(absl::StrCat("'sort' has more than ", kMaxSortLevels, " levels"));
    }
    auto attribute = level->find("attribute");
    if (attribute == level->end() || !attribute->is_string() ||
        attribute->get_ref<const std::string&>().empty()) {
      return Bad("'sort.attribute' must be a non-empty string");
    }
    SortKey key{attribute->get<std::string>(), false};
    // A second level on the same attribute never changes the order, only the cost.
    for (const SortKey& earlier : out.sort) {
      if (earlier.attribute == key.attribute) {
        return Bad(absl::StrCat("'sort' names attribute '", key.attribute, "' more than once"));
      }
    }
    auto descending = level->find("descending");
    if (descending != level->end() && !descending->is_null()) {
      if (!descending->is_boolean()) return Bad("'sort.descending' must be a boolean");
      key.descending = descending->get<bool>();
    }
    out.sort.push_back(std::move(key));
    auto next = level->find("next");
    level = next == level->end() ? nullptr : &*next;
  }
  return out;
}

absl::Status ResolveConditions(const TableDef& def, ConditionSearch* search) {
  CAIRN_RETURN_IF_ERROR(ResolveCondition(def, &search->root));
  for (const SortKey& key : search->sort) {
    if (def.FindAttribute(key.attribute) == nullptr) {
      return Error(ErrorCode::kUnknownAttribute,
                   absl::StrCat("unknown attribute '", key.attribute, "' in sort"));
    }
  }
  return absl::OkStatus();
}

bool Matches(const Condition& c, const json& record) {
  if (c.is_group()) {
    if (c.any) {
      return std::any_of(c.children.begin(), c.children.end(),
                         [&](const Condition& child) { return Matches(child, record); });
    }
    return std::all_of(c.children.begin(), c.children.end(),
                       [&](const Condition& child) { return Matches(child, record); });
  }
  auto field = record.find(c.attribute);
  const bool negated = c.comparator == Comparator::kNotEqual;
  if (field == record.end()) return negated;
  bool found = false;
  if (field->is_array()) {
    found = std::any_of(field->begin(), field->end(),
                        [&](const json& e) { return !e.is_array() && ScalarMatches(c, e); });
  } else {
    found = ScalarMatches(c, *field);
  }
  return negated ? !found : found;
}

SortValue SortValueOf(const json* value) {
  SortValue out;
  if (value == nullptr) return out;
  out.rank = KindRank(*value);
  if (out.rank == 5) {
    out.text = value->dump(-1, ' ', false, json::error_handler_t::replace);
  } else if (out.rank != 1) {
    out.scalar = *value;
  }
  return out;
}

int CompareForSort(const SortValue& a, const SortValue& b) {
  if (a.rank != b.rank) return a.rank < b.rank ? -1 : 1;
  if (a.rank == 5) return Three(a.text, b.text);
  return CompareSameKind(a.scalar, b.scalar);
}

}  // namespace cairn::catalog
