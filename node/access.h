// Access: a caller's role enforced on one operation (SPEC U4), before any work; and what a
// role may see of describe answers and search results. A refusal is 403 FORBIDDEN in Harper's
// shape: {"error": "This operation is not authorized due to role restrictions and/or invalid
// database items", "unauthorized_access": [...], "invalid_schema_items": [...], "code"}, the
// two lists naming the operation and every object refused (a database or table the role does
// not name, or an attribute it cannot see, is reported as not existing, as Harper does).
// Thread-compatible; one per request.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "catalog/schema.h"
#include "nlohmann/json.hpp"
#include "node/authenticator.h"

namespace cairn::node {

enum class Action { kRead, kInsert, kUpdate, kDelete };

class Access {
 public:
  explicit Access(const Caller& caller) : caller_(caller) {}

  // Whether the caller may do anything (a super user, an in-process caller, a node that asks
  // for no credentials): every check below passes, nothing is filtered.
  bool unrestricted() const { return caller_.super_user(); }

  // Operations only a super user may run (cluster operations, users and roles, test hooks).
  // `harper_name`: how Harper's message names the operation ("addUser"), else ours.
  absl::Status SuperUser(absl::string_view harper_name) const;
  // Schema operations on `db`: super_user, or structure_user for it.
  absl::Status Structure(absl::string_view operation, absl::string_view db) const;
  // The role may do every one of `actions` to db.table (table level).
  absl::Status Table(absl::string_view db, absl::string_view table,
                     std::initializer_list<Action> actions) const;
  // A read of `def`: every attribute named in `*get_attributes` and in `searched` must be
  // readable; `*get_attributes` empty or ["*"] becomes the readable attributes when the role
  // lists attributes (so a search answers only what the role may read).
  absl::Status Read(const catalog::TableDef& def, std::vector<std::string>* get_attributes,
                    const std::vector<std::string>& searched) const;
  // A write of `records` (objects) to `def`: every attribute a record sets must allow each of
  // `actions` (insert and/or update); the timestamps may not be written at all.
  absl::Status Write(const catalog::TableDef& def, const nlohmann::json& records,
                     std::initializer_list<Action> actions) const;

  // describe_*: whether the role sees db.table (some action on it, or the database's
  // structure), and which attributes of it (some action on each; the primary key when any).
  bool Sees(absl::string_view db, absl::string_view table) const;
  bool SeesDatabase(absl::string_view db) const;
  bool SeesAttribute(const catalog::TableDef& def, absl::string_view attribute) const;
  // FORBIDDEN, as Harper words it, unless the role sees db (`table` empty) or db.table.
  absl::Status MaySee(absl::string_view db, absl::string_view table = {}) const;

 private:
  // FORBIDDEN with Harper's lists.
  static absl::Status Refuse(nlohmann::json unauthorized, nlohmann::json invalid);

  const Caller& caller_;
};

}  // namespace cairn::node
