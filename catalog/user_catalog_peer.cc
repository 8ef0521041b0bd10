// UserCatalog: peers' changes of users and roles merged by stamp, with their markers (SPEC U6),
// and the U7 repair of a merge that leaves no active super user. Loading and local changes are
// in user_catalog.cc; see user_catalog.h for the invariants.
#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "catalog/internal/user_edit.h"
#include "catalog/user_catalog.h"
#include "common/status.h"
#include "spdlog/spdlog.h"

namespace cairn::catalog {

using internal::LeavesNoSuperUser;

namespace {

// The origin a U7 repair stamps its change with: the origin of the version it repairs, so two
// nodes repairing the same state write the same change, and not any node's own name, so the
// repair never collides with a change a node makes.
constexpr absl::string_view kRepairOrigin = "u7:";

}  // namespace

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
