// Record validation (SPEC D1-D3) and index-entry derivation, shared by the record write and
// apply paths. Thread-compatible free functions.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "catalog/schema.h"
#include "nlohmann/json.hpp"

namespace cairn::catalog::internal {

// TYPE_MISMATCH naming the attribute if `value` is not of `attribute`'s type (D3). null is
// accepted for every attribute but the primary key.
absl::Status CheckType(const AttributeDef& attribute, const nlohmann::json& value);

// The index keys of `record` under `def` (every indexed attribute but the primary key; each
// scalar of an array is indexed; objects are not), sorted and unique.
std::vector<std::string> IndexKeys(const TableDef& def, const nlohmann::json& record,
                                   absl::string_view encoded_pk);

// A search value made to fit the attribute's type: "5" searches an Int attribute as 5,
// "true" a Boolean as true. Other values pass unchanged.
nlohmann::json CoerceSearchValue(const AttributeDef& attribute, const nlohmann::json& value);

// A search value with wildcards (decision 7): each `*` matches any run of characters, so
// "abc*" is a prefix, "*abc" a suffix, "*abc*" a substring, "a*c" both ends. Matches strings
// only.
class Wildcard {
 public:
  // `pattern` holds at least one `*`.
  explicit Wildcard(absl::string_view pattern);
  // The literal text before the first `*`: every match starts with it (an index range).
  const std::string& prefix() const { return parts_.front(); }
  // Whether the pattern is its prefix and a `*` only: the index range alone decides.
  bool prefix_only() const { return parts_.size() == 2 && parts_.back().empty(); }
  bool Matches(absl::string_view s) const;

 private:
  std::vector<std::string> parts_;  // the literal text between the `*`s; at least two
};

// Whether a stored field matches a search: equal scalars (5 == 5.0), any element of an
// array, or for a wildcard pattern a string it matches.
bool FieldMatches(const nlohmann::json& field, const nlohmann::json& value,
                  const Wildcard* pattern);

// Records may nest this deep (objects and arrays); deeper input is refused before anything
// recursive (copy, dump) touches it.
inline constexpr int kMaxRecordDepth = 64;
// True if `j` nests more than `max_depth` levels. Iterative: safe on any input.
bool NestedDeeperThan(const nlohmann::json& j, int max_depth);

// Removes from `record` (a body written at `version`) the values of dropped attributes
// (TableDef::IsStripped): ones a strip has still to reach, and ones older than an attribute
// marker (SPEC C15). A function of (body, version, stamps) only, so every node strips a row to
// the same body. Readers never see such values, whatever the definition holds now. Returns
// how many it removed.
size_t DropStripped(const TableDef& def, Hlc version, nlohmann::json* record);

// A fresh random UUID (v4) string, the primary key of an insert that has none (D1).
std::string NewUuid();

}  // namespace cairn::catalog::internal
