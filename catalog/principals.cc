#include "catalog/principals.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "catalog/names.h"
#include "common/fnv1a.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace cairn::catalog {

std::string UserName(absl::string_view username) { return absl::StrCat("user/", username); }
std::string RoleName(absl::string_view id) { return absl::StrCat("role/", id); }

namespace {

Permission PermissionOf(const v1::RoleRow& row) {
  return ReadPermission(
      nlohmann::json::parse(row.permission(), nullptr, /*allow_exceptions=*/false));
}

}  // namespace

RoleDef::RoleDef(v1::RoleRow r) : row(std::move(r)), permission(PermissionOf(row)) {}

const v1::UserRow* Principals::FindUser(absl::string_view username) const {
  auto it = users.find(username);
  return it == users.end() ? nullptr : it->second.get();
}

const RoleDef* Principals::FindRole(absl::string_view id) const {
  auto it = roles.find(id);
  return it == roles.end() ? nullptr : it->second.get();
}

const RoleDef* Principals::FindRoleByName(absl::string_view name) const {
  for (const auto& [id, role] : roles) {
    if (role->row.name() == name) return role.get();
  }
  return nullptr;
}

bool Principals::IsActiveSuperUser(const v1::UserRow& user) const {
  if (!user.active()) return false;
  const RoleDef* role = RoleOf(user);
  return role != nullptr && role->permission.super_user;
}

int Principals::ActiveSuperUsers() const {
  int n = 0;
  for (const auto& [name, user] : users) n += IsActiveSuperUser(*user) ? 1 : 0;
  return n;
}

uint64_t Principals::UserMarker(absl::string_view username) const {
  auto it = user_markers.find(username);
  return it == user_markers.end() ? 0 : it->second.dropped_time();
}

uint64_t Principals::RoleMarker(absl::string_view id) const {
  auto it = role_markers.find(id);
  return it == role_markers.end() ? 0 : it->second.dropped_time();
}

void Principals::PutUser(UserRef user) {
  EraseUser(user->username());
  digest += UserState(*user);
  users[user->username()] = std::move(user);
}

void Principals::EraseUser(absl::string_view username) {
  auto it = users.find(username);
  if (it == users.end()) return;
  digest -= UserState(*it->second);
  users.erase(it);
}

void Principals::PutRole(RoleRef role) {
  EraseRole(role->row.id());
  digest += RoleState(role->row);
  roles[role->row.id()] = std::move(role);
}

void Principals::EraseRole(absl::string_view id) {
  auto it = roles.find(id);
  if (it == roles.end()) return;
  digest -= RoleState(it->second->row);
  roles.erase(it);
}

void Principals::PutUserMarker(const std::string& username, v1::PrincipalMarker marker) {
  if (auto it = user_markers.find(username); it != user_markers.end()) {
    digest -= MarkerState("user", username, it->second);
  }
  digest += MarkerState("user", username, marker);
  user_markers[username] = std::move(marker);
}

void Principals::PutRoleMarker(const std::string& id, v1::PrincipalMarker marker) {
  if (auto it = role_markers.find(id); it != role_markers.end()) {
    digest -= MarkerState("role", id, it->second);
  }
  digest += MarkerState("role", id, marker);
  role_markers[id] = std::move(marker);
}

void Principals::PutSigningKey(v1::SigningKey key) {
  if (signing_key.has_value()) digest -= SigningKeyState(*signing_key);
  digest += SigningKeyState(key);
  signing_key = std::move(key);
}

namespace {

uint64_t VersionState(absl::string_view kind, absl::string_view name, uint64_t created,
                      uint64_t stamp, absl::string_view origin) {
  Fnv1a h;
  h.Add(kind);
  h.Add(name);
  h.Add(created);
  h.Add(stamp);
  h.Add(origin);
  return h.value();
}

}  // namespace

uint64_t UserState(const v1::UserRow& user) {
  // The password merges on its own version: it is part of the user's.
  return VersionState("user", user.username(), user.created_time(), user.stamp(), user.origin()) +
         VersionState("password", user.username(), 0, user.password_time(), user.password_origin());
}

uint64_t RoleState(const v1::RoleRow& role) {
  return VersionState("role", role.id(), role.created_time(), role.stamp(), role.origin());
}

uint64_t MarkerState(absl::string_view kind, absl::string_view name,
                     const v1::PrincipalMarker& marker) {
  return VersionState(absl::StrCat(kind, " marker"), name, 0, marker.dropped_time(),
                      marker.origin());
}

uint64_t SigningKeyState(const v1::SigningKey& key) {
  return VersionState("key", "", key.created_time(), 0, key.origin());
}

absl::Status ValidateUsername(absl::string_view username) {
  if (username.empty() || username.size() > 128) {
    return Error(ErrorCode::kBadRequest, "'username' must be 1 to 128 bytes long");
  }
  if (username == kSystemDatabase) {
    return Error(ErrorCode::kBadRequest, "'username' cannot be 'system': the name is reserved");
  }
  for (unsigned char c : username) {
    if (c < 0x20 || c == 0x7f || c == ':') {
      return Error(ErrorCode::kBadRequest, "'username' cannot contain ':' or control characters");
    }
  }
  if (!IsValidUtf8(username))
    return Error(ErrorCode::kBadRequest, "'username' must be valid UTF-8");
  return absl::OkStatus();
}

absl::Status ValidateRoleName(absl::string_view field, absl::string_view name) {
  if (name.empty() || name.size() > 128) {
    return Error(ErrorCode::kBadRequest, absl::StrCat("'", field, "' must be 1 to 128 characters"));
  }
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') {
      return Error(
          ErrorCode::kBadRequest,
          absl::StrCat("'", field, "' may hold only letters, digits, '_' and '-': '", name, "'"));
    }
  }
  return absl::OkStatus();
}

}  // namespace cairn::catalog
