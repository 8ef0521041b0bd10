#include "node/access.h"

#include <algorithm>
#include <utility>

#include "absl/container/btree_map.h"
#include "absl/strings/str_cat.h"
#include "catalog/permissions.h"
#include "common/status.h"

namespace cairn::node {

using nlohmann::json;

namespace {

constexpr char kRefused[] =
    "This operation is not authorized due to role restrictions and/or invalid database items";

const char* Name(Action a) {
  switch (a) {
    case Action::kRead:
      return "read";
    case Action::kInsert:
      return "insert";
    case Action::kUpdate:
      return "update";
    case Action::kDelete:
      return "delete";
  }
  return "read";
}

bool Allows(const catalog::TableAccess& t, Action a) {
  switch (a) {
    case Action::kRead:
      return t.read;
    case Action::kInsert:
      return t.insert;
    case Action::kUpdate:
      return t.update;
    case Action::kDelete:
      return t.remove;
  }
  return false;
}

bool Allows(const catalog::AttributeAccess& a, Action action) {
  switch (action) {
    case Action::kRead:
      return a.read;
    case Action::kInsert:
      return a.insert;
    case Action::kUpdate:
      return a.update;
    case Action::kDelete:
      return false;
  }
  return false;
}

bool Visible(const catalog::AttributeAccess& a) { return a.read || a.insert || a.update; }

std::string NoSuchAttribute(const catalog::TableDef& def, absl::string_view attribute) {
  return absl::StrCat("Attribute '", attribute, "' does not exist on '", def.QualifiedName(), "'");
}

bool IsTimestamp(absl::string_view attribute) {
  return attribute == catalog::kCreatedTimeAttribute || attribute == catalog::kUpdatedTimeAttribute;
}

}  // namespace

absl::Status Access::Refuse(json unauthorized, json invalid) {
  json details = {{"unauthorized_access", std::move(unauthorized)},
                  {"invalid_schema_items", std::move(invalid)}};
  return WithDetails(Error(ErrorCode::kForbidden, kRefused),
                     details.dump(-1, ' ', false, json::error_handler_t::replace));
}

absl::Status Access::SuperUser(absl::string_view harper_name) const {
  if (unrestricted()) return absl::OkStatus();
  return Refuse(json::array({absl::StrCat("Operation '", harper_name,
                                          "' is restricted to 'super_user' roles")}),
                json::array());
}

absl::Status Access::Structure(absl::string_view operation, absl::string_view db) const {
  const catalog::Permission* p = caller_.permission();
  if (unrestricted() || (p != nullptr && p->MayChangeStructure(db))) return absl::OkStatus();
  return Refuse(
      json::array({absl::StrCat("Operation '", operation,
                                "' needs super_user or structure_user for database '", db, "'")}),
      json::array());
}

absl::Status Access::Table(absl::string_view db, absl::string_view table,
                           std::initializer_list<Action> actions) const {
  if (unrestricted()) return absl::OkStatus();
  const catalog::Permission* p = caller_.permission();
  if (p == nullptr) {
    return Refuse(json::array({absl::StrCat("User ", caller_.username,
                                            " has no role or permissions.  Please assign the user "
                                            "a valid role.")}),
                  json::array());
  }
  if (p->databases.find(db) == p->databases.end()) {
    return Refuse(json::array(), json::array({absl::StrCat("database '", db, "' does not exist")}));
  }
  const catalog::TableAccess* t = p->Table(db, table);
  if (t == nullptr || !(t->read || t->insert || t->update || t->remove)) {
    return Refuse(json::array(),
                  json::array({absl::StrCat("Table '", db, ".", table, "' does not exist")}));
  }
  json missing = json::array();
  for (Action a : actions) {
    if (!Allows(*t, a)) missing.push_back(Name(a));
  }
  if (missing.empty()) return absl::OkStatus();
  return Refuse(json::array({{{"schema", std::string(db)},
                              {"table", std::string(table)},
                              {"required_table_permissions", std::move(missing)},
                              {"required_attribute_permissions", json::array()}}}),
                json::array());
}

absl::Status Access::Read(const catalog::TableDef& def, std::vector<std::string>* get_attributes,
                          const std::vector<std::string>& searched) const {
  CAIRN_RETURN_IF_ERROR(Table(def.database(), def.name(), {Action::kRead}));
  if (unrestricted()) return absl::OkStatus();
  const catalog::TableAccess* t = caller_.permission()->Table(def.database(), def.name());
  if (!t->restricted()) return absl::OkStatus();
  json invalid = json::array();
  auto check = [&](const std::string& attribute) {
    if (!t->Attribute(attribute, def.primary_key()).read) {
      const std::string message = NoSuchAttribute(def, attribute);
      if (std::find(invalid.begin(), invalid.end(), message) == invalid.end()) {
        invalid.push_back(message);
      }
    }
  };
  for (const std::string& a : searched) check(a);
  const bool all =
      get_attributes->empty() ||
      std::find(get_attributes->begin(), get_attributes->end(), "*") != get_attributes->end();
  if (all) {
    // "*" is what the role may read, in the table's order (Harper).
    get_attributes->clear();
    for (const catalog::AttributeDef& a : def.attributes()) {
      if (t->Attribute(a.name, def.primary_key()).read) get_attributes->push_back(a.name);
    }
    // Nothing readable: refused (an empty list would mean every attribute to the store).
    if (get_attributes->empty()) invalid.push_back(NoSuchAttribute(def, def.primary_key()));
  } else {
    for (const std::string& a : *get_attributes) check(a);
  }
  if (!invalid.empty()) return Refuse(json::array(), std::move(invalid));
  return absl::OkStatus();
}

absl::Status Access::Write(const catalog::TableDef& def, const json& records,
                           std::initializer_list<Action> actions) const {
  std::vector<Action> table_actions(actions);
  CAIRN_RETURN_IF_ERROR(Table(def.database(), def.name(), actions));
  if (unrestricted()) return absl::OkStatus();
  const catalog::TableAccess* t = caller_.permission()->Table(def.database(), def.name());
  json invalid = json::array();
  absl::btree_map<std::string, json> missing;  // attribute -> the permissions it lacks
  for (const json& record : records) {
    if (!record.is_object()) continue;  // the record store refuses it, naming it
    for (const auto& [attribute, value] : record.items()) {
      if (IsTimestamp(attribute)) {
        // Harper's words, its typo included.
        return Error(ErrorCode::kForbidden,
                     "Internal timestamp attributes - '__createdtime_' and '__updatedtime__' - "
                     "cannot be inserted to or updated by HDB users.");
      }
      if (!t->restricted() || missing.contains(attribute)) continue;
      const catalog::AttributeAccess access = t->Attribute(attribute, def.primary_key());
      if (!Visible(access)) {
        const std::string message = NoSuchAttribute(def, attribute);
        if (std::find(invalid.begin(), invalid.end(), message) == invalid.end()) {
          invalid.push_back(message);
        }
        continue;
      }
      json lacks = json::array();
      for (Action a : table_actions) {
        if (!Allows(access, a)) lacks.push_back(Name(a));
      }
      if (!lacks.empty()) missing[attribute] = std::move(lacks);
    }
  }
  if (invalid.empty() && missing.empty()) return absl::OkStatus();
  json unauthorized = json::array();
  if (!missing.empty()) {
    json attributes = json::array();
    for (auto& [attribute, lacks] : missing) {
      attributes.push_back({{"attribute_name", attribute}, {"required_permissions", lacks}});
    }
    unauthorized.push_back({{"schema", def.database()},
                            {"table", def.name()},
                            {"required_table_permissions", json::array()},
                            {"required_attribute_permissions", std::move(attributes)}});
  }
  return Refuse(std::move(unauthorized), std::move(invalid));
}

bool Access::SeesDatabase(absl::string_view db) const {
  if (unrestricted()) return true;
  const catalog::Permission* p = caller_.permission();
  if (p == nullptr) return false;
  if (p->MayChangeStructure(db)) return true;
  auto it = p->databases.find(db);
  if (it == p->databases.end()) return false;
  for (const auto& [table, t] : it->second) {
    if (t.read || t.insert || t.update || t.remove) return true;
  }
  return false;
}

bool Access::Sees(absl::string_view db, absl::string_view table) const {
  if (unrestricted()) return true;
  const catalog::Permission* p = caller_.permission();
  if (p == nullptr) return false;
  if (p->MayChangeStructure(db)) return true;
  const catalog::TableAccess* t = p->Table(db, table);
  return t != nullptr && (t->read || t->insert || t->update || t->remove);
}

absl::Status Access::MaySee(absl::string_view db, absl::string_view table) const {
  if (table.empty() ? SeesDatabase(db) : Sees(db, table)) return absl::OkStatus();
  if (table.empty() || !SeesDatabase(db)) {
    return Refuse(json::array(), json::array({absl::StrCat("database '", db, "' does not exist")}));
  }
  return Refuse(json::array(),
                json::array({absl::StrCat("Table '", db, ".", table, "' does not exist")}));
}

bool Access::SeesAttribute(const catalog::TableDef& def, absl::string_view attribute) const {
  if (unrestricted()) return true;
  const catalog::Permission* p = caller_.permission();
  if (p == nullptr) return false;
  if (p->MayChangeStructure(def.database())) return true;
  const catalog::TableAccess* t = p->Table(def.database(), def.name());
  return t != nullptr && Visible(t->Attribute(attribute, def.primary_key()));
}

}  // namespace cairn::node
