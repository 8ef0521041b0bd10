// UserCatalog: users and roles (SPEC §7): loading, and local changes (U2, U7). Peers' changes
// and the U7 repair are in user_catalog_peer.cc. See user_catalog.h for the invariants.
#include "catalog/user_catalog.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "catalog/internal/catalog_rows.h"
#include "catalog/internal/user_edit.h"
#include "common/status.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"
#include "storage/rocksdb_status.h"

namespace cairn::catalog {

using internal::PutProto;
using storage::Cf;
using storage::ToSlice;

namespace {

constexpr char kSuperUserPermission[] = R"({"super_user":true})";
absl::Status NoSuperUserLeft() {
  return Error(ErrorCode::kLastSuperUser,
               "Rejected: this change would leave the instance with no active super_user. Grant "
               "super_user to another active user first.");
}

bool IsSuper(absl::string_view permission) {
  return ReadPermission(nlohmann::json::parse(permission, nullptr, /*allow_exceptions=*/false))
      .super_user;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Loading.

absl::StatusOr<PrincipalsRef> UserCatalog::Load(storage::Engine* engine, HybridClock* hlc) {
  auto out = std::make_shared<Principals>();
  auto scan = [&](absl::string_view prefix, auto&& fn) -> absl::Status {
    auto it = engine->NewIterator(Cf::kCatalog, nullptr, storage::PrefixSuccessor(prefix));
    for (it->Seek(ToSlice(prefix)); it->Valid(); it->Next()) {
      const absl::string_view key = storage::ToView(it->key());
      const absl::string_view value = storage::ToView(it->value());
      if (!fn(key.substr(prefix.size()), value)) {
        return absl::DataLossError(
            absl::StrCat("catalog: unreadable row at key '", absl::CHexEscape(key), "'"));
      }
    }
    return storage::FromRocks(it->status());
  };
  CAIRN_RETURN_IF_ERROR(scan(storage::kUserPrefix, [&](absl::string_view, absl::string_view v) {
    v1::UserRow row;
    if (!row.ParseFromArray(v.data(), static_cast<int>(v.size()))) return false;
    hlc->Observe(row.stamp());
    out->PutUser(std::make_shared<const v1::UserRow>(std::move(row)));
    return true;
  }));
  CAIRN_RETURN_IF_ERROR(scan(storage::kRolePrefix, [&](absl::string_view, absl::string_view v) {
    v1::RoleRow row;
    if (!row.ParseFromArray(v.data(), static_cast<int>(v.size()))) return false;
    hlc->Observe(row.stamp());
    out->PutRole(std::make_shared<const RoleDef>(std::move(row)));
    return true;
  }));
  auto markers = [&](absl::string_view prefix, bool users) {
    return scan(prefix, [&, users](absl::string_view name, absl::string_view v) {
      v1::PrincipalMarker m;
      if (!m.ParseFromArray(v.data(), static_cast<int>(v.size()))) return false;
      hlc->Observe(m.dropped_time());
      if (users) {
        out->PutUserMarker(std::string(name), std::move(m));
      } else {
        out->PutRoleMarker(std::string(name), std::move(m));
      }
      return true;
    });
  };
  CAIRN_RETURN_IF_ERROR(markers(storage::kUserMarkerPrefix, true));
  CAIRN_RETURN_IF_ERROR(markers(storage::kRoleMarkerPrefix, false));
  std::string value;
  bool found = false;
  CAIRN_RETURN_IF_ERROR(engine->Get(Cf::kCatalog, storage::kSigningKeyKey, &value, &found));
  if (found) {
    v1::SigningKey key;
    if (!key.ParseFromString(value)) {
      return absl::DataLossError("catalog: unreadable token signing key");
    }
    out->PutSigningKey(std::move(key));
  }
  return PrincipalsRef(std::move(out));
}

// ---------------------------------------------------------------------------------------------
// Local changes (U2, U7).

namespace {

// At most this many witnesses are kept with a loss (SuperUserLoss.witnesses): for a merge to
// leave no super user, every one of them must have lost super_user concurrently too.
constexpr size_t kMaxWitnesses = 8;

// The active super users of `p` a loss leaves (not `user`, and none of role `role` when a
// role lost super_user), in name order, at most kMaxWitnesses.
std::vector<std::string> Witnesses(const Principals& p, absl::string_view user,
                                   absl::string_view role) {
  std::vector<std::string> out;
  for (const auto& [name, u] : p.users) {
    if (out.size() == kMaxWitnesses) break;
    if (name == user || (!role.empty() && u->role() == role)) continue;
    if (p.IsActiveSuperUser(*u)) out.push_back(name);
  }
  return out;
}

// U7: what a change stamped `stamp` by `origin` took from a super user, to keep on the changed
// user or role until something gives it back; `was` and `is` say whether it was and is an
// active super user (or a super role). Cleared when it is one again.
void TrackLoss(bool was, bool is, Hlc stamp, absl::string_view origin, v1::SuperUserLoss from,
               std::vector<std::string> witnesses, v1::SuperUserLoss* loss) {
  if (is) {
    loss->Clear();
  } else if (was) {
    from.set_stamp(stamp);
    from.set_origin(std::string(origin));
    for (std::string& w : witnesses) from.add_witnesses(std::move(w));
    *loss = std::move(from);
  }
}

}  // namespace

absl::Status UserCatalog::Commit(const Catalog::DatabaseLock& lock, Edit* edit) {
  if (edit->names.empty()) return absl::OkStatus();
  CAIRN_RETURN_IF_ERROR(catalog_->engine_->Write(&edit->batch));
  PrincipalsRef published = std::move(edit->next);
  catalog_->Publish(lock, edit->names,
                    [&](CatalogSnapshot* next) { next->principals = std::move(published); });
  return absl::OkStatus();
}

absl::StatusOr<RoleRef> UserCatalog::AddRole(RoleSpec spec) {
  if (spec.id.empty()) spec.id = spec.name;  // Harper: the id defaults to the name
  CAIRN_RETURN_IF_ERROR(ValidateRoleName("role", spec.name));
  CAIRN_RETURN_IF_ERROR(ValidateRoleName("id", spec.id));
  Catalog::DatabaseLock lock(catalog_, kSystemDatabase);
  const PrincipalsRef base = catalog_->Snapshot()->principals;
  if (base->FindRole(spec.id) != nullptr || base->FindRoleByName(spec.name) != nullptr) {
    return Error(ErrorCode::kRoleExists,
                 absl::StrCat("A role with name '", spec.name, "' already exists"));
  }
  CAIRN_ASSIGN_OR_RETURN(const Hlc now, catalog_->options_.hlc->Now());
  // A re-created name is a new object, newer than its drop (C3 as U6 applies it).
  CAIRN_ASSIGN_OR_RETURN(const Hlc after_marker,
                         HlcAfter(base->RoleMarker(spec.id), "a role after its drop"));
  v1::RoleRow row;
  row.set_id(spec.id);
  row.set_name(spec.name);
  row.set_permission(spec.permission);
  row.set_created_time(std::max(now, after_marker));
  row.set_stamp(row.created_time());
  row.set_origin(catalog_->options_.node_name);
  Edit edit(catalog_->engine_, *base);
  edit.PutRole(row);
  RoleRef out(edit.next->roles.at(spec.id));
  CAIRN_RETURN_IF_ERROR(Commit(lock, &edit));
  return out;
}

absl::StatusOr<RoleRef> UserCatalog::AlterRole(const RoleSpec& spec) {
  Catalog::DatabaseLock lock(catalog_, kSystemDatabase);
  const PrincipalsRef base = catalog_->Snapshot()->principals;
  const RoleDef* role = base->FindRole(spec.id);
  if (role == nullptr) return Error(ErrorCode::kRoleNotFound, "Invalid role id");
  if (!spec.name.empty() && spec.name != role->row.name()) {
    CAIRN_RETURN_IF_ERROR(ValidateRoleName("role", spec.name));
    if (base->FindRoleByName(spec.name) != nullptr) {
      return Error(ErrorCode::kRoleExists,
                   absl::StrCat("A role with name '", spec.name, "' already exists"));
    }
  }
  CAIRN_ASSIGN_OR_RETURN(const Hlc now, catalog_->options_.hlc->Now());
  v1::RoleRow row = role->row;
  if (!spec.name.empty()) row.set_name(spec.name);
  row.set_permission(spec.permission);
  row.set_stamp(now);
  row.set_origin(catalog_->options_.node_name);
  v1::SuperUserLoss from;
  from.set_permission(role->row.permission());
  TrackLoss(role->permission.super_user, IsSuper(spec.permission), now, row.origin(),
            std::move(from), Witnesses(*base, "", spec.id), row.mutable_lost_super());
  Edit edit(catalog_->engine_, *base);
  edit.PutRole(std::move(row));
  if (internal::LeavesNoSuperUser(*base, *edit.next)) return NoSuperUserLeft();
  RoleRef out(edit.next->roles.at(spec.id));
  CAIRN_RETURN_IF_ERROR(Commit(lock, &edit));
  return out;
}

absl::StatusOr<std::string> UserCatalog::DropRole(absl::string_view id) {
  Catalog::DatabaseLock lock(catalog_, kSystemDatabase);
  const PrincipalsRef base = catalog_->Snapshot()->principals;
  const RoleDef* role = base->FindRole(id);
  if (role == nullptr) return Error(ErrorCode::kRoleNotFound, "Role not found");
  for (const auto& [name, user] : base->users) {
    if (user->active() && user->role() == id) {
      return Error(ErrorCode::kRoleInUse,
                   absl::StrCat("Cannot drop role ", role->row.name(),
                                " as it has active user(s) tied to this role"));
    }
  }
  CAIRN_ASSIGN_OR_RETURN(const Hlc now, catalog_->options_.hlc->Now());
  CAIRN_ASSIGN_OR_RETURN(const Hlc after_create,
                         HlcAfter(role->row.created_time(), "a role's drop"));
  v1::PrincipalMarker marker;
  marker.set_dropped_time(std::max(now, after_create));
  marker.set_origin(catalog_->options_.node_name);
  const std::string name = role->row.name();
  Edit edit(catalog_->engine_, *base);
  edit.EraseRole(std::string(id));
  edit.PutRoleMarker(std::string(id), std::move(marker));
  if (internal::LeavesNoSuperUser(*base, *edit.next)) return NoSuperUserLeft();
  CAIRN_RETURN_IF_ERROR(Commit(lock, &edit));
  return name;
}

absl::Status UserCatalog::AddUser(const UserSpec& spec) {
  CAIRN_RETURN_IF_ERROR(ValidateUsername(spec.username));
  Catalog::DatabaseLock lock(catalog_, kSystemDatabase);
  const PrincipalsRef base = catalog_->Snapshot()->principals;
  if (base->FindUser(spec.username) != nullptr) {
    return Error(ErrorCode::kUserExists, absl::StrCat("User ", spec.username, " already exists"));
  }
  const RoleDef* role = base->FindRoleByName(spec.role);
  if (role == nullptr) {
    return Error(ErrorCode::kRoleNotFound, absl::StrCat(spec.role, " role not found"));
  }
  CAIRN_ASSIGN_OR_RETURN(const Hlc now, catalog_->options_.hlc->Now());
  CAIRN_ASSIGN_OR_RETURN(const Hlc after_marker,
                         HlcAfter(base->UserMarker(spec.username), "a user after its drop"));
  v1::UserRow row;
  row.set_username(spec.username);
  row.set_password_hash(spec.password_hash);
  row.set_role(role->row.id());
  row.set_active(spec.active);
  row.set_created_time(std::max(now, after_marker));
  row.set_stamp(row.created_time());
  row.set_password_time(row.created_time());
  row.set_origin(catalog_->options_.node_name);
  row.set_password_origin(row.origin());
  Edit edit(catalog_->engine_, *base);
  edit.PutUser(std::move(row));
  // The first user of a node that had none must be an active super user: from now on the node
  // asks for credentials (U1, U7).
  if (internal::LeavesNoSuperUser(*base, *edit.next)) return NoSuperUserLeft();
  return Commit(lock, &edit);
}

absl::StatusOr<UserRef> UserCatalog::AlterUser(const UserChange& change) {
  Catalog::DatabaseLock lock(catalog_, kSystemDatabase);
  const PrincipalsRef base = catalog_->Snapshot()->principals;
  const v1::UserRow* user = base->FindUser(change.username);
  if (user == nullptr) {
    return Error(ErrorCode::kUserNotFound,
                 absl::StrCat("User ", change.username, " does not exist"));
  }
  v1::UserRow row = *user;
  if (change.role.has_value()) {
    const RoleDef* role = base->FindRoleByName(*change.role);
    if (role == nullptr) {
      return Error(ErrorCode::kRoleNotFound,
                   absl::StrCat("Update failed.  Requested '", *change.role, "' role not found."));
    }
    row.set_role(role->row.id());
  }
  CAIRN_ASSIGN_OR_RETURN(const Hlc now, catalog_->options_.hlc->Now());
  if (change.password_hash.has_value()) {
    row.set_password_hash(*change.password_hash);
    row.set_password_time(now);  // tokens issued before are refused from now on (U5)
    row.set_password_origin(catalog_->options_.node_name);
  }
  if (change.active.has_value()) row.set_active(*change.active);
  row.set_stamp(now);
  row.set_origin(catalog_->options_.node_name);
  v1::SuperUserLoss from;
  from.set_role(user->role());
  TrackLoss(base->IsActiveSuperUser(*user), base->IsActiveSuperUser(row), now, row.origin(),
            std::move(from), Witnesses(*base, user->username(), ""), row.mutable_lost_super());
  Edit edit(catalog_->engine_, *base);
  edit.PutUser(std::move(row));
  if (internal::LeavesNoSuperUser(*base, *edit.next)) return NoSuperUserLeft();
  UserRef out = edit.next->users.at(change.username);
  CAIRN_RETURN_IF_ERROR(Commit(lock, &edit));
  return out;
}

absl::Status UserCatalog::DropUser(absl::string_view username) {
  Catalog::DatabaseLock lock(catalog_, kSystemDatabase);
  const PrincipalsRef base = catalog_->Snapshot()->principals;
  const v1::UserRow* user = base->FindUser(username);
  if (user == nullptr) {
    return Error(ErrorCode::kUserNotFound, absl::StrCat("User ", username, " does not exist"));
  }
  CAIRN_ASSIGN_OR_RETURN(const Hlc now, catalog_->options_.hlc->Now());
  CAIRN_ASSIGN_OR_RETURN(const Hlc after_create, HlcAfter(user->created_time(), "a user's drop"));
  v1::PrincipalMarker marker;
  marker.set_dropped_time(std::max(now, after_create));
  marker.set_origin(catalog_->options_.node_name);
  if (base->IsActiveSuperUser(*user)) {
    // U7: enough to give the user back, should a concurrent change elsewhere take the last
    // other super user away; its loss names the super users the drop left.
    v1::UserRow* dropped = marker.mutable_dropped_user();
    *dropped = *user;
    v1::SuperUserLoss from;
    from.set_role(user->role());
    TrackLoss(true, false, marker.dropped_time(), marker.origin(), std::move(from),
              Witnesses(*base, user->username(), ""), dropped->mutable_lost_super());
  }
  Edit edit(catalog_->engine_, *base);
  edit.EraseUser(std::string(username));
  edit.PutUserMarker(std::string(username), std::move(marker));
  if (internal::LeavesNoSuperUser(*base, *edit.next)) return NoSuperUserLeft();
  return Commit(lock, &edit);
}

absl::StatusOr<bool> UserCatalog::Bootstrap(absl::string_view username,
                                            absl::string_view password_hash) {
  CAIRN_RETURN_IF_ERROR(ValidateUsername(username));
  Catalog::DatabaseLock lock(catalog_, kSystemDatabase);
  const PrincipalsRef base = catalog_->Snapshot()->principals;
  if (!base->users.empty()) return false;
  // Its own origin per bootstrap (the node and this process): two bootstraps of one name are
  // two versions, never one version with two passwords.
  const std::string origin =
      absl::StrCat(catalog_->options_.node_name, "#", absl::Hex(catalog_->options_.incarnation));
  Edit edit(catalog_->engine_, *base);
  const RoleDef* role = base->FindRole(kSuperUserRole);
  if (role == nullptr || !role->permission.super_user) {
    if (role != nullptr) {
      return Error(ErrorCode::kInternal,
                   "cannot create the admin user: the role 'super_user' exists without "
                   "super_user permission");
    }
    v1::RoleRow row;
    row.set_id(std::string(kSuperUserRole));
    row.set_name(std::string(kSuperUserRole));
    row.set_permission(kSuperUserPermission);
    // Equal to a marker of the name survives it (C6).
    row.set_created_time(std::max(kBootstrapStamp, base->RoleMarker(kSuperUserRole)));
    row.set_stamp(row.created_time());
    row.set_origin(origin);
    edit.PutRole(std::move(row));
  }
  v1::UserRow row;
  row.set_username(std::string(username));
  row.set_password_hash(std::string(password_hash));
  row.set_role(std::string(kSuperUserRole));
  row.set_active(true);
  row.set_created_time(std::max(kBootstrapStamp, base->UserMarker(username)));
  row.set_stamp(row.created_time());
  row.set_password_time(row.created_time());
  row.set_origin(origin);
  row.set_password_origin(origin);
  edit.PutUser(std::move(row));
  CAIRN_RETURN_IF_ERROR(Commit(lock, &edit));
  return true;
}

absl::Status UserCatalog::EnsureSigningKey(std::string key) {
  Catalog::DatabaseLock lock(catalog_, kSystemDatabase);
  const PrincipalsRef base = catalog_->Snapshot()->principals;
  if (base->signing_key.has_value()) return absl::OkStatus();
  CAIRN_ASSIGN_OR_RETURN(const Hlc now, catalog_->options_.hlc->Now());
  v1::SigningKey row;
  row.set_key(std::move(key));
  row.set_created_time(now);
  row.set_origin(catalog_->options_.node_name);
  Edit edit(catalog_->engine_, *base);
  edit.PutSigningKey(std::move(row));
  return Commit(lock, &edit);
}

}  // namespace cairn::catalog
