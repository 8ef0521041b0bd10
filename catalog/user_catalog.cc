// UserCatalog: users and roles (SPEC §7). See user_catalog.h for the invariants.
#include "catalog/user_catalog.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "catalog/internal/catalog_rows.h"
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
// The origin a U7 repair stamps its change with: the origin of the version it repairs, so two
// nodes repairing the same state write the same change, and not any node's own name, so the
// repair never collides with a change a node makes.
constexpr absl::string_view kRepairOrigin = "u7:";

absl::Status NoSuperUserLeft() {
  return Error(ErrorCode::kLastSuperUser,
               "Rejected: this change would leave the instance with no active super_user. Grant "
               "super_user to another active user first.");
}

// U7: whether a change from `base` to `next` leaves no active super user. A catalog without
// users before and after (a node that never had an admin) has none to lose.
bool LeavesNoSuperUser(const Principals& base, const Principals& next) {
  return next.ActiveSuperUsers() == 0 && (!base.users.empty() || !next.users.empty());
}

bool IsSuper(absl::string_view permission) {
  return ReadPermission(nlohmann::json::parse(permission, nullptr, /*allow_exceptions=*/false))
      .super_user;
}

}  // namespace

// One change of the principals: the copy it builds, the batch that makes it durable and the
// names it changed (for the journal, Catalog::Publish).
struct UserCatalog::Edit {
  Edit(storage::Engine* e, const Principals& base)
      : engine(e), next(std::make_shared<Principals>(base)) {}

  void PutUser(v1::UserRow row) {
    PutProto(engine, &batch, Cf::kCatalog, storage::UserKey(row.username()), row);
    Name(UserName(row.username()));
    next->PutUser(std::make_shared<const v1::UserRow>(std::move(row)));
  }
  void EraseUser(const std::string& username) {
    batch.Delete(engine->cf(Cf::kCatalog), ToSlice(storage::UserKey(username)))
        .PermitUncheckedError();
    Name(UserName(username));
    next->EraseUser(username);
  }
  void PutRole(v1::RoleRow row) {
    PutProto(engine, &batch, Cf::kCatalog, storage::RoleKey(row.id()), row);
    Name(RoleName(row.id()));
    next->PutRole(std::make_shared<const RoleDef>(std::move(row)));
  }
  void EraseRole(const std::string& id) {
    batch.Delete(engine->cf(Cf::kCatalog), ToSlice(storage::RoleKey(id))).PermitUncheckedError();
    Name(RoleName(id));
    next->EraseRole(id);
  }
  void PutUserMarker(const std::string& username, v1::PrincipalMarker marker) {
    PutProto(engine, &batch, Cf::kCatalog, storage::UserMarkerKey(username), marker);
    Name(UserName(username));
    next->PutUserMarker(username, std::move(marker));
  }
  void PutRoleMarker(const std::string& id, v1::PrincipalMarker marker) {
    PutProto(engine, &batch, Cf::kCatalog, storage::RoleMarkerKey(id), marker);
    Name(RoleName(id));
    next->PutRoleMarker(id, std::move(marker));
  }
  void PutSigningKey(v1::SigningKey key) {
    PutProto(engine, &batch, Cf::kCatalog, storage::kSigningKeyKey, key);
    Name(std::string(kSigningKeyName));
    next->PutSigningKey(std::move(key));
  }

  storage::Engine* const engine;
  std::shared_ptr<Principals> next;
  rocksdb::WriteBatch batch;
  std::vector<std::string> names;  // each once (Name)

 private:
  void Name(std::string name) {
    if (std::find(names.begin(), names.end(), name) == names.end())
      names.push_back(std::move(name));
  }
};

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
  if (LeavesNoSuperUser(*base, *edit.next)) return NoSuperUserLeft();
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
  if (LeavesNoSuperUser(*base, *edit.next)) return NoSuperUserLeft();
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
  if (LeavesNoSuperUser(*base, *edit.next)) return NoSuperUserLeft();
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
  if (LeavesNoSuperUser(*base, *edit.next)) return NoSuperUserLeft();
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
  if (LeavesNoSuperUser(*base, *edit.next)) return NoSuperUserLeft();
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

// ---------------------------------------------------------------------------------------------
// Peers' changes (U6) and the U7 repair.

void UserCatalog::ApplyMarker(Edit* edit, bool user, const std::string& name,
                              const v1::PrincipalMarker& m, PrincipalApplyStats* stats) {
  Principals& next = *edit->next;
  if (!(user ? ValidateUsername(name) : ValidateRoleName("id", name)).ok()) {
    ++stats->invalid;
    return;
  }
  catalog_->options_.hlc->Observe(m.dropped_time());
  const auto& markers = user ? next.user_markers : next.role_markers;
  auto held = markers.find(name);
  if (held != markers.end() &&
      !Newer(m.dropped_time(), m.origin(), held->second.dropped_time(), held->second.origin())) {
    return;
  }
  ++stats->applied;
  if (user) {
    edit->PutUserMarker(name, m);
    const v1::UserRow* u = next.FindUser(name);
    if (u != nullptr && u->created_time() < m.dropped_time()) edit->EraseUser(name);
  } else {
    edit->PutRoleMarker(name, m);
    const RoleDef* r = next.FindRole(name);
    if (r != nullptr && r->row.created_time() < m.dropped_time()) edit->EraseRole(name);
  }
}

absl::StatusOr<PrincipalApplyStats> UserCatalog::ApplyPeer(const PeerPrincipals& peer) {
  PrincipalApplyStats stats;
  HybridClock* hlc = catalog_->options_.hlc;
  Catalog::DatabaseLock lock(catalog_, kSystemDatabase);
  const PrincipalsRef base = catalog_->Snapshot()->principals;
  Edit edit(catalog_->engine_, *base);
  Principals& next = *edit.next;
  // Markers first: each retires the copy of its name created before it (C8 as U6 applies it).
  for (const auto& [username, m] : peer.user_markers) {
    ApplyMarker(&edit, /*user=*/true, username, m, &stats);
  }
  for (const auto& [id, m] : peer.role_markers) ApplyMarker(&edit, /*user=*/false, id, m, &stats);
  // Then roles, then users (a user names its role by id; the order does not matter for that,
  // a user whose role is absent has no permission until it arrives).
  for (const v1::RoleRow& row : peer.roles) {
    if (!ValidateRoleName("id", row.id()).ok() || !ValidateRoleName("role", row.name()).ok()) {
      ++stats.invalid;
      continue;
    }
    hlc->Observe(row.stamp());
    if (row.created_time() < next.RoleMarker(row.id())) {
      ++stats.refused;
      continue;
    }
    const RoleDef* held = next.FindRole(row.id());
    if (held != nullptr &&
        !Newer(row.stamp(), row.origin(), held->row.stamp(), held->row.origin())) {
      continue;
    }
    edit.PutRole(row);
    ++stats.applied;
  }
  for (const v1::UserRow& row : peer.users) {
    if (!ValidateUsername(row.username()).ok()) {
      ++stats.invalid;
      continue;
    }
    hlc->Observe(row.stamp());
    hlc->Observe(row.password_time());
    if (row.created_time() < next.UserMarker(row.username())) {
      ++stats.refused;
      continue;
    }
    const v1::UserRow* held = next.FindUser(row.username());
    if (held == nullptr) {
      edit.PutUser(row);
      ++stats.applied;
      continue;
    }
    // The row by its stamp, the password by its own (UserRow.password_origin).
    v1::UserRow merged =
        Newer(row.stamp(), row.origin(), held->stamp(), held->origin()) ? row : *held;
    const v1::UserRow& password = Newer(row.password_time(), row.password_origin(),
                                        held->password_time(), held->password_origin())
                                      ? row
                                      : *held;
    merged.set_password_hash(password.password_hash());
    merged.set_password_time(password.password_time());
    merged.set_password_origin(password.password_origin());
    if (merged.SerializeAsString() == held->SerializeAsString()) continue;
    edit.PutUser(std::move(merged));
    ++stats.applied;
  }
  // The key: the oldest stays, so a node that joins takes the cluster's (decision 114).
  if (peer.signing_key.has_value()) {
    const v1::SigningKey& key = *peer.signing_key;
    if (key.key().size() != 32) {
      ++stats.invalid;
    } else if (!next.signing_key.has_value() ||
               Newer(next.signing_key->created_time(), next.signing_key->origin(),
                     key.created_time(), key.origin())) {
      edit.PutSigningKey(key);
      ++stats.applied;
    }
  }
  if (LeavesNoSuperUser(*base, next)) Repair(&edit, &stats);
  CAIRN_RETURN_IF_ERROR(Commit(lock, &edit));
  return stats;
}

namespace {

// A change that took super_user away, as the U7 repair sees it.
struct Loss {
  enum Kind { kUser, kDroppedUser, kRole };
  Hlc stamp = 0;
  std::string origin;
  Kind kind = kUser;
  std::string name;                         // username or role id
  const v1::SuperUserLoss* what = nullptr;  // in the principals it was read from
};

bool Before(const Loss& a, const Loss& b) {
  return std::tie(a.stamp, a.origin, a.kind, a.name) < std::tie(b.stamp, b.origin, b.kind, b.name);
}

// Every loss `p` holds: users' and roles' SuperUserLoss, and dropped super users on markers
// (while no newer copy of the name lives).
std::vector<Loss> LossesOf(const Principals& p) {
  std::vector<Loss> out;
  for (const auto& [name, user] : p.users) {
    const v1::SuperUserLoss& l = user->lost_super();
    if (l.stamp() != 0) out.push_back({l.stamp(), l.origin(), Loss::kUser, name, &l});
  }
  for (const auto& [name, marker] : p.user_markers) {
    const v1::UserRow* live = p.FindUser(name);
    const v1::SuperUserLoss& l = marker.dropped_user().lost_super();
    if (marker.has_dropped_user() && l.stamp() != 0 &&
        (live == nullptr || live->created_time() < marker.dropped_time())) {
      out.push_back({marker.dropped_time(), marker.origin(), Loss::kDroppedUser, name, &l});
    }
  }
  for (const auto& [id, role] : p.roles) {
    const v1::SuperUserLoss& l = role->row.lost_super();
    if (l.stamp() != 0) out.push_back({l.stamp(), l.origin(), Loss::kRole, id, &l});
  }
  return out;
}

}  // namespace

// U7: changes made concurrently on several nodes (each allowed where it was made: that node
// still saw another active super user, its witnesses) merged into a catalog with no active
// super user. The newest such change stands. Every witness it names lost super_user through
// a change its node had not seen: those are the concurrent ones, and the merge undoes the one
// with the lowest stamp that gives back an active super user (for two concurrent changes: the
// lower-stamped, as U7 says); if none does, the newest itself is undone. Older losses — a user
// dropped long ago — are never candidates. Every node holding the same changes picks the same
// one and writes the same repair (stamped just after what it repairs, origin kRepairOrigin +
// that version's origin), so the repairs converge like any other change. Each is tried on a
// copy first: nothing is written that does not give back a super user.
void UserCatalog::Repair(Edit* edit, PrincipalApplyStats* stats) {
  Principals& next = *edit->next;
  std::vector<Loss> losses = LossesOf(next);
  if (losses.empty()) {
    spdlog::error("[{}] no active super_user is left, and no change to undo (U7)",
                  catalog_->options_.node_name);
    return;
  }
  const Loss newest = *std::max_element(losses.begin(), losses.end(), Before);
  std::vector<Loss> candidates;
  for (const std::string& w : newest.what->witnesses()) {
    for (const Loss& l : losses) {
      if (l.kind != Loss::kRole && l.name == w) candidates.push_back(l);
    }
    // A witness that lost super_user with its role.
    if (const v1::UserRow* user = next.FindUser(w)) {
      for (const Loss& l : losses) {
        if (l.kind == Loss::kRole && l.name == user->role()) candidates.push_back(l);
      }
    }
  }
  std::sort(candidates.begin(), candidates.end(), Before);
  candidates.push_back(newest);
  for (const Loss& loss : candidates) {
    if (RestoreLoss(edit, loss.kind == Loss::kRole, loss.kind == Loss::kDroppedUser, loss.name)) {
      ++stats->restored;
      spdlog::warn(
          "[{}] changes made concurrently on several nodes left no active super_user; gave "
          "super_user back to {} '{}' (its loss at {} from {} is undone, U7)",
          catalog_->options_.node_name, loss.kind == Loss::kRole ? "role" : "user", loss.name,
          loss.stamp, loss.origin);
      return;
    }
  }
  spdlog::error("[{}] no active super_user is left and none could be given back (U7)",
                catalog_->options_.node_name);
}

bool UserCatalog::RestoreLoss(Edit* edit, bool role, bool dropped, const std::string& name) {
  const Principals& next = *edit->next;
  HybridClock* hlc = catalog_->options_.hlc;
  std::optional<v1::UserRow> user;
  std::optional<v1::RoleRow> restored_role;
  if (role) {
    v1::RoleRow row = next.roles.at(name)->row;
    absl::StatusOr<Hlc> after = HlcAfter(row.lost_super().stamp(), "a U7 repair");
    if (!after.ok()) return false;
    row.set_permission(row.lost_super().permission());
    row.clear_lost_super();
    row.set_stamp(std::max(*after, row.stamp() + 1));
    row.set_origin(absl::StrCat(kRepairOrigin, row.origin()));
    restored_role = std::move(row);
  } else if (dropped) {
    const v1::PrincipalMarker& marker = next.user_markers.at(name);
    absl::StatusOr<Hlc> after = HlcAfter(marker.dropped_time(), "a U7 repair");
    if (!after.ok()) return false;
    v1::UserRow row = marker.dropped_user();
    row.set_username(name);  // the marker's name, which was checked, not the row's
    row.set_role(row.lost_super().role());
    row.clear_lost_super();
    row.set_active(true);
    row.set_created_time(marker.dropped_time());  // equal to the marker survives it (C6)
    row.set_stamp(*after);
    row.set_origin(absl::StrCat(kRepairOrigin, marker.origin()));
    user = std::move(row);
  } else {
    v1::UserRow row = *next.users.at(name);
    absl::StatusOr<Hlc> after = HlcAfter(row.lost_super().stamp(), "a U7 repair");
    if (!after.ok()) return false;
    row.set_active(true);
    row.set_role(row.lost_super().role());
    row.clear_lost_super();
    row.set_stamp(std::max(*after, row.stamp() + 1));
    row.set_origin(absl::StrCat(kRepairOrigin, row.origin()));
    user = std::move(row);
  }
  // Tried on a copy: only a repair that gives back an active super user is written.
  Principals trial = next;
  if (user.has_value()) {
    trial.PutUser(std::make_shared<const v1::UserRow>(*user));
  } else {
    trial.PutRole(std::make_shared<const RoleDef>(*restored_role));
  }
  if (trial.ActiveSuperUsers() == 0) return false;
  // The clock moves past the repair's stamp: a local change after it is newer.
  if (user.has_value()) {
    hlc->Observe(user->stamp());
    edit->PutUser(std::move(*user));
  } else {
    hlc->Observe(restored_role->stamp());
    edit->PutRole(std::move(*restored_role));
  }
  return true;
}

}  // namespace cairn::catalog
