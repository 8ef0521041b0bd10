// A role's permissions (SPEC U3, U4): Harper's permission JSON, read into what enforcement
// asks of it, and checked against the catalog when a client writes a role. Immutable once
// built; thread-compatible free functions.
//
//   {"super_user": true}
//   {"structure_user": true | ["db", ...],
//    "<db>": {"tables": {"<table>": {"read": b, "insert": b, "update": b, "delete": b,
//                                    "attribute_permissions": [
//                                      {"attribute_name": "a", "read": b, "insert": b,
//                                       "update": b}, ...]}}}}
//
// A database or table the JSON does not name: no access. A non-empty attribute list hides the
// attributes it does not list; the primary key gets what any listed attribute gets (U4);
// __createdtime__ / __updatedtime__ are readable at most (Harper keeps only their `read`).
#pragma once

#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace cairn::catalog {

struct CatalogSnapshot;

struct AttributeAccess {
  bool read = false;
  bool insert = false;
  bool update = false;
};

struct TableAccess {
  bool read = false;
  bool insert = false;
  bool update = false;
  bool remove = false;  // Harper's "delete"
  // Non-empty: only these attributes are visible to the role (U4), with what it may do to
  // each. The timestamps' insert and update are always false here.
  absl::btree_map<std::string, AttributeAccess, std::less<>> attributes;

  bool restricted() const { return !attributes.empty(); }
  // What the role may do to attribute `name` of a table whose primary key is `primary_key`:
  // the table's rights when the table lists no attributes, else the listed ones (the primary
  // key: the union of every listed attribute's, U4), nothing for an unlisted one.
  AttributeAccess Attribute(absl::string_view name, absl::string_view primary_key) const;
};

struct Permission {
  bool super_user = false;
  bool structure_all = false;                           // structure_user: true
  absl::btree_set<std::string, std::less<>> structure;  // structure_user: [databases]
  // Per database, per table.
  absl::btree_map<std::string, absl::btree_map<std::string, TableAccess, std::less<>>, std::less<>>
      databases;

  // Schema operations on `db` (U4): super_user, or structure_user for it.
  bool MayChangeStructure(absl::string_view db) const {
    return super_user || structure_all || structure.contains(db);
  }
  // The role's entry for db.table; null when it names none (no access).
  const TableAccess* Table(absl::string_view db, absl::string_view table) const;
};

// A stored role's permission JSON (validated when it was written here, or a peer's): whatever
// it grants that this reading understands. Never fails: anything else grants nothing.
Permission ReadPermission(const nlohmann::json& permission);

// U3: a client's permission JSON, checked as Harper checks it against the catalog `snap`:
// OK, or INVALID_PERMISSIONS with Harper's answer in its details ({"main_permissions": [...],
// "schema_permissions": {"<db>_<table>": [...]}}). `main_errors` are reported first (the
// request's own problems: an unknown key, a blank role name).
absl::Status ValidatePermission(const nlohmann::json& permission, const CatalogSnapshot& snap,
                                std::vector<std::string> main_errors = {});

// The error of U3 with only request-level problems (no permission JSON to look at).
absl::Status PermissionErrors(std::vector<std::string> main_errors);

}  // namespace cairn::catalog
