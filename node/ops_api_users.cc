// The operations API: users, roles and tokens (SPEC §7, U1-U8), with Harper's fields, answers
// and messages (its deliberate differences of SPEC §5 kept: something absent is 404, a wrongly
// typed field 400). Only a super user runs them (OpsApi::Admit), but for user_info and the
// token operations, which a user runs for itself.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "catalog/permissions.h"
#include "catalog/user_catalog.h"
#include "common/clock.h"
#include "common/status.h"
#include "node/credentials.h"
#include "node/internal/ops_api_fields.h"
#include "node/ops_api.h"

namespace cairn::node {

using internal::BadRequest;
using internal::JsonReply;
using internal::Message;

namespace {

// Keys add_role and alter_role take (Harper's list); any other is refused.
constexpr const char* kRoleKeys[] = {"operation", "role",           "id", "permission", "hdb_user",
                                     "access",    "hdb_auth_header"};

// Harper refuses a role request's unknown keys, in its role-JSON answer.
std::vector<std::string> UnknownRoleKeys(const json& body) {
  std::vector<std::string> unknown;
  for (const auto& [key, value] : body.items()) {
    bool known = false;
    for (const char* k : kRoleKeys) known = known || key == k;
    if (!known) unknown.push_back(absl::StrCat("'", key, "'"));
  }
  if (unknown.empty()) return {};
  return {absl::StrCat(
      unknown.size() == 1 ? "Invalid key in JSON body - " : "Invalid keys in JSON body - ",
      absl::StrJoin(unknown, ", "))};
}

// A present, non-empty string field, or Harper's "<Field> can't be blank".
bool Present(const json* v) {
  return v != nullptr && v->is_string() && !v->get<std::string>().empty();
}

int64_t Ms(Hlc stamp) { return static_cast<int64_t>(HybridClock::PhysicalMs(stamp)); }

// expires_in: seconds, or a number and a unit ("30m", "12h", "1d"), as Harper takes it.
absl::StatusOr<absl::Duration> ParseExpiresIn(const json& v) {
  int64_t n = 0;
  if (v.is_number_integer() && storage::ExactInt64(v, &n) && n > 0) return absl::Seconds(n);
  if (v.is_string()) {
    std::string text = absl::AsciiStrToLower(absl::StripAsciiWhitespace(v.get<std::string>()));
    absl::Duration unit = absl::Seconds(1);
    if (!text.empty() && !absl::ascii_isdigit(static_cast<unsigned char>(text.back()))) {
      const char u = text.back();
      text.pop_back();
      unit = u == 's'   ? absl::Seconds(1)
             : u == 'm' ? absl::Minutes(1)
             : u == 'h' ? absl::Hours(1)
             : u == 'd' ? absl::Hours(24)
                        : absl::ZeroDuration();
    }
    if (unit != absl::ZeroDuration() && absl::SimpleAtoi(text, &n) && n > 0 && n < (1LL << 31)) {
      return unit * n;
    }
  }
  return BadRequest("'expires_in' must be a number of seconds or a duration such as '1d'");
}

}  // namespace

json OpsApi::RoleJson(const catalog::RoleDef& role) {
  json permission = json::parse(role.row.permission(), nullptr, /*allow_exceptions=*/false);
  if (permission.is_discarded()) permission = json::object();
  return {{"__createdtime__", Ms(role.row.created_time())},
          {"__updatedtime__", Ms(role.row.stamp())},
          {"id", role.row.id()},
          {"permission", std::move(permission)},
          {"role", role.row.name()}};
}

json OpsApi::UserJson(const catalog::Principals& principals, const catalog::v1::UserRow& user) {
  const catalog::RoleDef* role = principals.RoleOf(user);
  // Never the password or its hash (U2).
  return {{"__createdtime__", Ms(user.created_time())},
          {"__updatedtime__", Ms(user.stamp())},
          {"active", user.active()},
          {"role", role != nullptr ? RoleJson(*role) : json(user.role())},
          {"username", user.username()}};
}

// ---- Roles.

absl::StatusOr<Reply> OpsApi::AddRole(const Fields& f) const {
  std::vector<std::string> main = UnknownRoleKeys(*f.Body());
  const json* role = f.Find("role");
  const json* permission = f.Find("permission");
  const json* id = f.Find("id");
  if (!Present(role)) main.push_back("Role can't be blank");
  if (permission == nullptr || permission->is_null()) main.push_back("Permission can't be blank");
  if (Present(role) && !catalog::ValidateRoleName("role", role->get<std::string>()).ok()) {
    main.push_back("Role is invalid");
  }
  if (id != nullptr &&
      (!Present(id) || !catalog::ValidateRoleName("id", id->get<std::string>()).ok())) {
    main.push_back("Id is invalid");
  }
  catalog::SnapshotRef snap = node_->catalog->Snapshot();
  if (permission == nullptr || permission->is_null()) return catalog::PermissionErrors(main);
  CAIRN_RETURN_IF_ERROR(catalog::ValidatePermission(*permission, *snap, std::move(main)));
  catalog::RoleSpec spec;
  spec.name = role->get<std::string>();
  spec.id = id != nullptr ? id->get<std::string>() : "";
  spec.permission = permission->dump();
  CAIRN_ASSIGN_OR_RETURN(catalog::RoleRef added, node_->users->AddRole(std::move(spec)));
  return JsonReply(RoleJson(*added));
}

absl::StatusOr<Reply> OpsApi::AlterRole(const Fields& f) const {
  std::vector<std::string> main = UnknownRoleKeys(*f.Body());
  const json* id = f.Find("id");
  const json* role = f.Find("role");
  const json* permission = f.Find("permission");
  if (!Present(id)) main.push_back("Id can't be blank");
  if (permission == nullptr || permission->is_null()) main.push_back("Permission can't be blank");
  if (role != nullptr &&
      (!Present(role) || !catalog::ValidateRoleName("role", role->get<std::string>()).ok())) {
    main.push_back("Role is invalid");
  }
  if (permission == nullptr || permission->is_null() || !Present(id)) {
    return catalog::PermissionErrors(main);
  }
  CAIRN_RETURN_IF_ERROR(
      catalog::ValidatePermission(*permission, *node_->catalog->Snapshot(), std::move(main)));
  catalog::RoleSpec spec;
  spec.id = id->get<std::string>();
  spec.name = role != nullptr ? role->get<std::string>() : "";
  spec.permission = permission->dump();
  CAIRN_ASSIGN_OR_RETURN(catalog::RoleRef altered, node_->users->AlterRole(spec));
  json body = RoleJson(*altered);
  body.erase("__createdtime__");  // Harper answers what was updated
  return JsonReply(body);
}

absl::StatusOr<Reply> OpsApi::DropRole(const Fields& f) const {
  const json* id = f.Find("id");
  if (!Present(id)) return BadRequest("Id can't be blank");
  CAIRN_ASSIGN_OR_RETURN(std::string name, node_->users->DropRole(id->get<std::string>()));
  return JsonReply(Message(absl::StrCat(name, " successfully deleted")));
}

absl::StatusOr<Reply> OpsApi::ListRoles(const Fields&) const {
  catalog::PrincipalsRef principals = node_->catalog->Snapshot()->principals;
  json out = json::array();
  for (const auto& [id, role] : principals->roles) out.push_back(RoleJson(*role));
  return JsonReply(out);
}

// ---- Users.

absl::StatusOr<Reply> OpsApi::AddUser(const Fields& f) const {
  // Harper's checks, every failure in one message; unknown keys are dropped, as Harper does.
  std::vector<std::string> errors;
  const json* username = f.Find("username");
  const json* password = f.Find("password");
  const json* role = f.Find("role");
  const json* active = f.Find("active");
  if (!Present(username)) errors.push_back("Username can't be blank");
  if (!Present(password)) errors.push_back("Password can't be blank");
  if (!Present(role)) errors.push_back("Role can't be blank");
  if (active == nullptr || active->is_null()) {
    errors.push_back("Active can't be blank");
  } else if (!active->is_boolean()) {
    errors.push_back("Active must be a boolean");
  }
  if (!errors.empty()) return BadRequest(absl::StrJoin(errors, ","));
  CAIRN_RETURN_IF_ERROR(catalog::ValidateUsername(username->get<std::string>()));
  CAIRN_ASSIGN_OR_RETURN(std::string hash,
                         HashPassword(password->get<std::string>(), options_.password_hash_cost));
  catalog::UserSpec spec;
  spec.username = username->get<std::string>();
  spec.password_hash = std::move(hash);
  spec.role = role->get<std::string>();
  spec.active = active->get<bool>();
  CAIRN_RETURN_IF_ERROR(node_->users->AddUser(spec));
  return JsonReply(Message(absl::StrCat(spec.username, " successfully added")));
}

absl::StatusOr<Reply> OpsApi::AlterUser(const Fields& f) const {
  const json* username = f.Find("username");
  if (!Present(username)) return BadRequest("username is required");
  catalog::UserChange change;
  change.username = username->get<std::string>();
  const json* password = f.Find("password");
  const json* role = f.Find("role");
  const json* active = f.Find("active");
  if (password == nullptr && role == nullptr && active == nullptr) {
    return BadRequest("nothing to update, must supply active, role or password to update");
  }
  if (password != nullptr) {
    if (!password->is_string() ||
        absl::StripAsciiWhitespace(password->get<std::string>()).empty()) {
      return BadRequest("password cannot be an empty string");
    }
    CAIRN_ASSIGN_OR_RETURN(change.password_hash,
                           HashPassword(password->get<std::string>(), options_.password_hash_cost));
  }
  if (role != nullptr) {
    if (!Present(role)) return BadRequest("If role is specified, it cannot be empty.");
    change.role = role->get<std::string>();
  }
  if (active != nullptr) {
    if (!active->is_boolean()) return BadRequest("active must be true or false");
    change.active = active->get<bool>();
  }
  CAIRN_ASSIGN_OR_RETURN(catalog::UserRef altered, node_->users->AlterUser(change));
  json body = Message("updated 1 of 1 records");
  body["new_attributes"] = json::array();
  body["txn_time"] = Ms(altered->stamp());
  body["update_hashes"] = json::array({change.username});
  body["skipped_hashes"] = json::array();
  return JsonReply(body);
}

absl::StatusOr<Reply> OpsApi::DropUser(const Fields& f) const {
  const json* username = f.Find("username");
  if (!Present(username)) return BadRequest("Username can't be blank");
  CAIRN_RETURN_IF_ERROR(node_->users->DropUser(username->get<std::string>()));
  return JsonReply(Message(absl::StrCat(username->get<std::string>(), " successfully deleted")));
}

absl::StatusOr<Reply> OpsApi::ListUsers(const Fields&) const {
  catalog::PrincipalsRef principals = node_->catalog->Snapshot()->principals;
  json out = json::array();
  for (const auto& [name, user] : principals->users) out.push_back(UserJson(*principals, *user));
  return JsonReply(out);
}

absl::StatusOr<Reply> OpsApi::UserInfo(const Fields& f) const {
  const Caller& caller = f.caller();
  catalog::PrincipalsRef principals = node_->catalog->Snapshot()->principals;
  const catalog::v1::UserRow* user =
      caller.kind == Caller::Kind::kUser ? principals->FindUser(caller.username) : nullptr;
  if (user == nullptr) return JsonReply(Message("There was no user info in the body"));
  return JsonReply(UserJson(*principals, *user));
}

// ---- Tokens (U5).

absl::StatusOr<Reply> OpsApi::CreateAuthenticationTokens(const Fields& f) const {
  if (options_.authenticator == nullptr) {
    return Error(ErrorCode::kBadRequest, "this node issues no tokens");
  }
  const json* username = f.Find("username");
  const json* password = f.Find("password");
  std::vector<std::string> errors;
  for (const auto& [name, v] : {std::pair{"username", username}, std::pair{"password", password}}) {
    if (v == nullptr) continue;
    if (!v->is_string()) {
      errors.push_back(absl::StrCat("'", name, "' must be a string"));
    } else if (v->get<std::string>().empty()) {
      errors.push_back(absl::StrCat("'", name, "' is not allowed to be empty"));
    }
  }
  if (!errors.empty()) return BadRequest(absl::StrJoin(errors, ". "));
  // expires_in sets the operation token's life only (Harper).
  std::optional<absl::Duration> ttl;
  if (const json* expires = f.Find("expires_in"); expires != nullptr && !expires->is_null()) {
    CAIRN_ASSIGN_OR_RETURN(ttl, ParseExpiresIn(*expires));
  }
  Authenticator::Tokens tokens;
  if (username != nullptr || password != nullptr) {
    if (username == nullptr || password == nullptr) {
      return Error(ErrorCode::kUnauthorized, "invalid credentials");
    }
    CAIRN_ASSIGN_OR_RETURN(tokens,
                           options_.authenticator->IssueTokens(username->get<std::string>(),
                                                               password->get<std::string>(), ttl));
  } else if (f.caller().kind == Caller::Kind::kUser) {
    CAIRN_ASSIGN_OR_RETURN(tokens, options_.authenticator->IssueTokensFor(f.caller(), ttl));
  } else if (f.caller().kind == Caller::Kind::kAnonymous) {
    return Error(ErrorCode::kUnauthorized, "Must login");
  } else {
    return Error(ErrorCode::kUnauthorized, "invalid credentials");
  }
  return JsonReply(
      {{"operation_token", tokens.operation_token}, {"refresh_token", tokens.refresh_token}});
}

absl::StatusOr<Reply> OpsApi::RefreshOperationToken(const Fields& f) const {
  if (options_.authenticator == nullptr) {
    return Error(ErrorCode::kBadRequest, "this node issues no tokens");
  }
  std::string refresh;
  if (f.caller().kind == Caller::Kind::kRefreshToken) {
    refresh = f.caller().token;  // Authorization: Bearer <refresh token>
  } else {
    CAIRN_ASSIGN_OR_RETURN(refresh, f.String("refresh_token"));
  }
  CAIRN_ASSIGN_OR_RETURN(std::string token, options_.authenticator->RefreshOperationToken(refresh));
  return JsonReply({{"operation_token", token}});
}

}  // namespace cairn::node
