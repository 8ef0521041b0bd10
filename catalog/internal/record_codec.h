// Record validation (SPEC D1-D3) and index-entry derivation, shared by the record write and
// apply paths. Thread-compatible free functions.
#pragma once

#include <optional>
#include <string>
#include <utility>
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

// A search string with Harper's wildcards (decision 7): a trailing `*` makes it a prefix, a
// leading one a suffix, both a substring ("*a*b*" contains "a*b"); a `*` anywhere else is a
// literal character, and "*" alone (every record) is not a pattern. Matches strings only.
class Wildcard {
 public:
  enum class Kind { kPrefix, kSuffix, kContains };
  // The pattern in `value`, if it is one.
  static std::optional<Wildcard> Parse(absl::string_view value);
  // The literal text every match starts with (empty unless a prefix): an index range.
  const std::string& prefix() const;
  // Whether the index range of prefix() alone decides.
  bool prefix_only() const { return kind_ == Kind::kPrefix; }
  bool Matches(absl::string_view s) const;
  Kind kind() const { return kind_; }
  // The literal text around the `*`s.
  const std::string& text() const { return text_; }

 private:
  Wildcard(Kind kind, std::string text) : kind_(kind), text_(std::move(text)) {}
  Kind kind_;
  std::string text_;
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
