#include "catalog/permissions.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "catalog/schema.h"
#include "common/status.h"

namespace cairn::catalog {

using nlohmann::json;

namespace {

constexpr absl::string_view kSuperUser = "super_user";
constexpr absl::string_view kStructureUser = "structure_user";
// Harper 4's role for its replication links: accepted and kept, grants nothing here.
constexpr absl::string_view kClusterUser = "cluster_user";
constexpr const char* kTableActions[] = {"read", "insert", "update", "delete"};
constexpr const char* kAttributeActions[] = {"read", "insert", "update"};

bool IsTimestamp(absl::string_view attribute) {
  return attribute == kCreatedTimeAttribute || attribute == kUpdatedTimeAttribute;
}

bool Flag(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}

bool IsRoleKey(absl::string_view key) {
  return key == kSuperUser || key == kStructureUser || key == kClusterUser;
}

}  // namespace

AttributeAccess TableAccess::Attribute(absl::string_view name,
                                       absl::string_view primary_key) const {
  if (!restricted()) {
    // Timestamps are readable only (U4), whatever the table grants.
    if (IsTimestamp(name)) return {read, false, false};
    return {read, insert, update};
  }
  if (auto it = attributes.find(name); it != attributes.end()) return it->second;
  AttributeAccess out;
  if (name != primary_key) return out;
  for (const auto& [attribute, access] : attributes) {
    out.read |= access.read;
    out.insert |= access.insert;
    out.update |= access.update;
  }
  return out;
}

const TableAccess* Permission::Table(absl::string_view db, absl::string_view table) const {
  auto d = databases.find(db);
  if (d == databases.end()) return nullptr;
  auto t = d->second.find(table);
  return t == d->second.end() ? nullptr : &t->second;
}

Permission ReadPermission(const json& permission) {
  Permission out;
  if (!permission.is_object()) return out;
  out.super_user = Flag(permission, "super_user");
  if (out.super_user) return out;
  if (auto s = permission.find(kStructureUser); s != permission.end()) {
    if (s->is_boolean()) {
      out.structure_all = s->get<bool>();
    } else if (s->is_array()) {
      for (const json& db : *s) {
        if (db.is_string()) out.structure.insert(db.get<std::string>());
      }
    }
  }
  for (const auto& [db, entry] : permission.items()) {
    if (IsRoleKey(db) || !entry.is_object()) continue;
    auto tables = entry.find("tables");
    if (tables == entry.end() || !tables->is_object()) continue;
    for (const auto& [table, t] : tables->items()) {
      if (!t.is_object()) continue;
      TableAccess access;
      access.read = Flag(t, "read");
      access.insert = Flag(t, "insert");
      access.update = Flag(t, "update");
      access.remove = Flag(t, "delete");
      if (auto attrs = t.find("attribute_permissions"); attrs != t.end() && attrs->is_array()) {
        for (const json& a : *attrs) {
          if (!a.is_object()) continue;
          auto name = a.find("attribute_name");
          if (name == a.end() || !name->is_string()) continue;
          const std::string attribute = name->get<std::string>();
          AttributeAccess aa{Flag(a, "read"), Flag(a, "insert"), Flag(a, "update")};
          if (IsTimestamp(attribute)) aa.insert = aa.update = false;  // readable only (U4)
          access.attributes[attribute] = aa;
        }
      }
      out.databases[db][table] = std::move(access);
    }
  }
  return out;
}

namespace {

// Harper's answer to a bad permission JSON: {"error", "main_permissions", "schema_permissions"}.
class PermissionReport {
 public:
  explicit PermissionReport(std::vector<std::string> main) : main_(std::move(main)) {}

  void Main(std::string message) { main_.push_back(std::move(message)); }
  // A message given twice for one table is listed once (a conflict of several attributes).
  void Table(absl::string_view db, absl::string_view table, std::string message) {
    std::vector<std::string>& list = schema_[absl::StrCat(db, "_", table)];
    if (std::find(list.begin(), list.end(), message) == list.end()) {
      list.push_back(std::move(message));
    }
  }
  absl::Status Result() const {
    if (main_.empty() && schema_.empty()) return absl::OkStatus();
    json details = {{"main_permissions", main_}, {"schema_permissions", json::object()}};
    for (const auto& [key, messages] : schema_) details["schema_permissions"][key] = messages;
    return WithDetails(
        Error(ErrorCode::kInvalidPermissions, "Errors in the role permissions JSON provided"),
        details.dump(-1, ' ', false, json::error_handler_t::replace));
  }

 private:
  std::vector<std::string> main_;
  absl::btree_map<std::string, std::vector<std::string>> schema_;
};

void CheckAttribute(const json& a, absl::string_view db, absl::string_view table,
                    const TableDef& def, const json& t, PermissionReport* report) {
  if (!a.is_object()) {
    report->Table(db, table,
                  "Permission object in 'attribute_permission' missing an 'attribute_name'");
    return;
  }
  for (const auto& [key, value] : a.items()) {
    if (key == "attribute_name" || key == "read" || key == "insert" || key == "update" ||
        key == "delete") {  // Harper lets `delete` through, and ignores it
      continue;
    }
    report->Table(db, table, absl::StrCat("Invalid attribute permission key value '", key, "'"));
  }
  auto name = a.find("attribute_name");
  if (name == a.end() || !name->is_string()) {
    report->Table(db, table,
                  "Permission object in 'attribute_permission' missing an 'attribute_name'");
    return;
  }
  const std::string attribute = name->get<std::string>();
  if (def.FindAttribute(attribute) == nullptr) {
    report->Table(db, table,
                  absl::StrCat("Invalid attribute '", attribute, "' in 'attribute_permissions'"));
    return;
  }
  for (const char* action : kAttributeActions) {
    auto v = a.find(action);
    const std::string upper = absl::AsciiStrToUpper(action);
    if (v == a.end()) {
      report->Table(db, table,
                    absl::StrCat(upper, " attribute permission missing for '", attribute, "'"));
    } else if (!v->is_boolean()) {
      report->Table(
          db, table,
          absl::StrCat(upper, " attribute permission for '", attribute, "' must be a boolean"));
    } else if (v->get<bool>()) {
      // A table-level false with an attribute-level true (Harper refuses it).
      auto table_level = t.find(action);
      if (table_level != t.end() && table_level->is_boolean() && !table_level->get<bool>()) {
        report->Table(db, table,
                      absl::StrCat("You have a conflict with TABLE permissions for '", db, ".",
                                   table, "' being false and ATTRIBUTE permissions being true"));
      }
    }
  }
}

void CheckTable(const json& t, absl::string_view db, absl::string_view table, const TableDef& def,
                PermissionReport* report) {
  if (!t.is_object()) {
    for (const char* action : kTableActions) {
      report->Table(db, table,
                    absl::StrCat("Missing table ", absl::AsciiStrToUpper(action), " permission"));
    }
    return;
  }
  for (const auto& [key, value] : t.items()) {
    if (key == "read" || key == "insert" || key == "update" || key == "delete" ||
        key == "attribute_permissions") {
      continue;
    }
    report->Table(db, table, absl::StrCat("Invalid table permission key value '", key, "'"));
  }
  for (const char* action : kTableActions) {
    auto v = t.find(action);
    const std::string upper = absl::AsciiStrToUpper(action);
    if (v == t.end()) {
      report->Table(db, table, absl::StrCat("Missing table ", upper, " permission"));
    } else if (!v->is_boolean()) {
      report->Table(db, table, absl::StrCat("Table ", upper, " permission must be a boolean"));
    }
  }
  auto attrs = t.find("attribute_permissions");
  if (attrs == t.end()) {
    report->Table(db, table, "Missing 'attribute_permissions' array");
    return;
  }
  if (attrs->is_null()) return;  // Harper takes null for []
  if (!attrs->is_array()) {
    report->Table(db, table, "Value for 'attribute_permissions' must be an array");
    return;
  }
  for (const json& a : *attrs) CheckAttribute(a, db, table, def, t, report);
}

}  // namespace

absl::Status PermissionErrors(std::vector<std::string> main_errors) {
  return PermissionReport(std::move(main_errors)).Result();
}

absl::Status ValidatePermission(const json& permission, const CatalogSnapshot& snap,
                                std::vector<std::string> main_errors) {
  PermissionReport report(std::move(main_errors));
  if (!permission.is_object()) {
    report.Main("'permission' must be an object");
    return report.Result();
  }
  auto super = permission.find(kSuperUser);
  if (super != permission.end() && !super->is_boolean()) {
    report.Main("Value for 'super_user' permission must be a boolean");
  }
  auto cluster = permission.find(kClusterUser);
  if (cluster != permission.end() && !cluster->is_boolean()) {
    report.Main("Value for 'cluster_user' permission must be a boolean");
  }
  if (Flag(permission, "super_user") && permission.size() > 1) {
    report.Main("Roles with 'super_user' set to true cannot have other permissions set.");
  }
  if (auto s = permission.find(kStructureUser); s != permission.end()) {
    if (s->is_array()) {
      for (const json& db : *s) {
        if (!db.is_string()) {
          report.Main("Value for 'structure_user' permission must be a boolean or Array");
        } else if (snap.FindDatabase(db.get<std::string>()) == nullptr) {
          report.Main(absl::StrCat("database '", db.get<std::string>(), "' does not exist"));
        }
      }
    } else if (!s->is_boolean()) {
      report.Main("Value for 'structure_user' permission must be a boolean or Array");
    }
  }
  for (const auto& [db, entry] : permission.items()) {
    if (IsRoleKey(db)) continue;
    if (snap.FindDatabase(db) == nullptr) {
      report.Main(absl::StrCat("database '", db, "' does not exist"));
      continue;
    }
    auto tables = entry.is_object() ? entry.find("tables") : entry.end();
    if (!entry.is_object() || tables == entry.end() || !tables->is_object()) {
      report.Main(absl::StrCat("Missing 'tables' object for database '", db, "'"));
      continue;
    }
    for (const auto& [table, t] : tables->items()) {
      absl::StatusOr<TableRef> def = snap.FindTable(db, table);
      if (!def.ok()) {
        report.Main(absl::StrCat("Table '", db, ".", table, "' does not exist"));
        continue;
      }
      CheckTable(t, db, table, **def, &report);
    }
  }
  return report.Result();
}

}  // namespace cairn::catalog
