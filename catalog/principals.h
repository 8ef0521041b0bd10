// Users and roles as readers see them (SPEC §7): the `system` database's part of a catalog
// snapshot. Immutable once published, like the rest of a CatalogSnapshot (C1); a change
// publishes a new Principals (UserCatalog). Thread-compatible.
//
// Invariants:
//  (1) `digest` is the sum (mod 2^64) of PrincipalState over every user, role and marker held
//      and the signing key: Put*/Erase* keep it, so two nodes with equal digests hold the same
//      versions of the same objects (U6 digests).
//  (2) A user or role held is live: its created_time is not below its name's marker (C6 as U6
//      applies it).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/container/btree_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cairn/catalog/v1/catalog.pb.h"
#include "catalog/names.h"
#include "catalog/permissions.h"
#include "common/clock.h"

namespace cairn::catalog {

// The database whose catalog objects users and roles are (SPEC U6). No table lives in it.
inline constexpr absl::string_view kSystemDatabase = kSystemDatabaseName;

// How a change of the system database is named in the schema journal and in DbSchema deltas:
// "user/<username>", "role/<id>", "key".
std::string UserName(absl::string_view username);  // "user/<username>"
std::string RoleName(absl::string_view id);        // "role/<id>"
inline constexpr absl::string_view kSigningKeyName = "key";

// A role and what its permission JSON grants.
struct RoleDef {
  explicit RoleDef(v1::RoleRow r);
  const v1::RoleRow row;
  const Permission permission;
};
using RoleRef = std::shared_ptr<const RoleDef>;
using UserRef = std::shared_ptr<const v1::UserRow>;

// The order of two versions of one object (U6): by stamp, then by origin node name (D5's
// tie-break). Equal stamp and origin is the same change.
inline bool Newer(uint64_t stamp, absl::string_view origin, uint64_t than_stamp,
                  absl::string_view than_origin) {
  return stamp != than_stamp ? stamp > than_stamp : origin > than_origin;
}

struct Principals {
  absl::btree_map<std::string, UserRef, std::less<>> users;  // by username
  absl::btree_map<std::string, RoleRef, std::less<>> roles;  // by id
  absl::btree_map<std::string, v1::PrincipalMarker, std::less<>> user_markers;
  absl::btree_map<std::string, v1::PrincipalMarker, std::less<>> role_markers;
  std::optional<v1::SigningKey> signing_key;
  uint64_t digest = 0;  // invariant (1)

  // ---- Reading.
  const v1::UserRow* FindUser(absl::string_view username) const;
  const RoleDef* FindRole(absl::string_view id) const;
  // The role whose `name` (Harper's `role`) is `name`, or null. Names are unique among the
  // roles added here; a peer's may repeat one, and then the smallest id is found.
  const RoleDef* FindRoleByName(absl::string_view name) const;
  const RoleDef* RoleOf(const v1::UserRow& user) const { return FindRole(user.role()); }
  // An active user whose role has super_user (U7).
  bool IsActiveSuperUser(const v1::UserRow& user) const;
  int ActiveSuperUsers() const;
  // Whether requests need credentials: once any user exists (U1). A node started without an
  // admin password and holding no user serves every request as a super user (SPEC §6).
  bool AuthenticationRequired() const { return !users.empty(); }
  uint64_t UserMarker(absl::string_view username) const;
  uint64_t RoleMarker(absl::string_view id) const;

  // ---- Changing a copy (UserCatalog, and Load). Each keeps invariant (1).
  void PutUser(UserRef user);
  void EraseUser(absl::string_view username);
  void PutRole(RoleRef role);
  void EraseRole(absl::string_view id);
  void PutUserMarker(const std::string& username, v1::PrincipalMarker marker);
  void PutRoleMarker(const std::string& id, v1::PrincipalMarker marker);
  void PutSigningKey(v1::SigningKey key);
};
using PrincipalsRef = std::shared_ptr<const Principals>;

// One object's share of Principals::digest: a stable hash (FNV-1a) of its kind, name and the
// version it is at (created_time, stamp, origin; a user's password version too; a marker's
// dropped_time).
uint64_t UserState(const v1::UserRow& user);
uint64_t RoleState(const v1::RoleRow& role);
uint64_t MarkerState(absl::string_view kind, absl::string_view name,
                     const v1::PrincipalMarker& marker);
uint64_t SigningKeyState(const v1::SigningKey& key);

// Username rules: 1-128 bytes of UTF-8 without control characters or ':' (Basic credentials
// end the name at the first one), and not "system" (Harper's rule). BAD_REQUEST names it.
absl::Status ValidateUsername(absl::string_view username);
// Role names and ids: 1-128 characters of [A-Za-z0-9_-] (Harper's `[\w-]+`).
absl::Status ValidateRoleName(absl::string_view field, absl::string_view name);

}  // namespace cairn::catalog
