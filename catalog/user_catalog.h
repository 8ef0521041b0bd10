// UserCatalog: users and roles, the catalog objects of the `system` database (SPEC §7). Their
// local changes (U2), the bootstrap admin (U1), the cluster's token signing key (U5), peers'
// changes (U6), and the guard that keeps an active super user (U7). Readers see users and
// roles in catalog snapshots (CatalogSnapshot::principals), published like table definitions:
// each change is one catalog batch and one publish, under the system database's lock (C12), so
// a request admitted after a change returns sees it, and the schema journal names it for the
// peers' DB_SCHEMA deltas (R3). Passwords arrive hashed: no secret is handled here.
// Thread-safe.
//
// Invariants (with Principals' own):
//  (1) A user's or role's stamp only grows: a local change stamps hlc.Now() (after every stamp
//      this node saw, so after the version it replaces); a peer's version replaces ours only
//      when Newer (stamp, then origin).
//  (2) A marker only moves forward, and every object older than it (created_time <
//      dropped_time) is gone from the catalog in the batch that records it; a local create is
//      stamped after the name's marker (C3 as U6 applies it).
//  (3) After every change the catalog holds an active super user, or no user at all: a local
//      change that would leave none is refused (U7); after a peer's, Repair gives one back.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "catalog/catalog.h"
#include "catalog/principals.h"
#include "storage/engine.h"

namespace cairn::catalog {

// The stamp of the bootstrap admin and its role (U1): older than every change any node makes,
// so a node that joins a cluster with its own --admin-password never replaces the cluster's
// admin (decision 115). Two bootstraps of one name fall to the origin tie-break.
inline constexpr Hlc kBootstrapStamp = 1;
// The role the bootstrap admin gets (Harper's name).
inline constexpr absl::string_view kSuperUserRole = "super_user";

struct RoleSpec {
  std::string id;          // empty: the name (Harper)
  std::string name;        // Harper's `role`
  std::string permission;  // JSON text, already checked (ValidatePermission)
};

struct UserSpec {
  std::string username;
  std::string password_hash;  // argon2id (node/credentials.h)
  std::string role;           // the role's *name*, as add_user takes it (Harper)
  bool active = true;
};

struct UserChange {
  std::string username;
  std::optional<std::string> password_hash;
  std::optional<std::string> role;  // a role name
  std::optional<bool> active;
};

// A peer's DbSchema of the system database, in catalog terms.
struct PeerPrincipals {
  std::vector<v1::UserRow> users;
  std::vector<v1::RoleRow> roles;
  std::vector<std::pair<std::string, v1::PrincipalMarker>> user_markers;  // by username
  std::vector<std::pair<std::string, v1::PrincipalMarker>> role_markers;  // by role id
  std::optional<v1::SigningKey> signing_key;
};

struct PrincipalApplyStats {
  uint64_t applied = 0;   // objects, markers or a key that changed something here
  uint64_t refused = 0;   // older than their name's marker (dead): expected, not an error
  uint64_t invalid = 0;   // a name or value this node does not take; skipped
  uint64_t restored = 0;  // super users given back by the U7 repair
};

class UserCatalog {
 public:
  explicit UserCatalog(Catalog* catalog) : catalog_(catalog) {}

  // The principals a catalog holds on disk (for Catalog::Load), every stamp observed by `hlc`.
  static absl::StatusOr<PrincipalsRef> Load(storage::Engine* engine, HybridClock* hlc);

  // ---- Local changes (U2). Each fails with nothing written, and LAST_SUPER_USER (409) when
  // it would leave no active super user (U7).
  // ROLE_EXISTS if the id or the name is taken.
  absl::StatusOr<RoleRef> AddRole(RoleSpec spec) ABSL_LOCKS_EXCLUDED(catalog_->mu_);
  // ROLE_NOT_FOUND for an unknown id; `name` empty keeps the role's name.
  absl::StatusOr<RoleRef> AlterRole(const RoleSpec& spec) ABSL_LOCKS_EXCLUDED(catalog_->mu_);
  // ROLE_NOT_FOUND; ROLE_IN_USE while an active user has it. Returns the role's name.
  absl::StatusOr<std::string> DropRole(absl::string_view id) ABSL_LOCKS_EXCLUDED(catalog_->mu_);
  // USER_EXISTS; ROLE_NOT_FOUND for an unknown role name.
  absl::Status AddUser(const UserSpec& spec) ABSL_LOCKS_EXCLUDED(catalog_->mu_);
  // USER_NOT_FOUND; ROLE_NOT_FOUND.
  absl::StatusOr<UserRef> AlterUser(const UserChange& change) ABSL_LOCKS_EXCLUDED(catalog_->mu_);
  // USER_NOT_FOUND.
  absl::Status DropUser(absl::string_view username) ABSL_LOCKS_EXCLUDED(catalog_->mu_);

  // U1: when the catalog holds no user, the admin with a super_user role (both stamped
  // kBootstrapStamp). False, with nothing done, when some user exists.
  absl::StatusOr<bool> Bootstrap(absl::string_view username, absl::string_view password_hash)
      ABSL_LOCKS_EXCLUDED(catalog_->mu_);
  // U5: stores `key` as the cluster's signing key unless the catalog holds one.
  absl::Status EnsureSigningKey(std::string key) ABSL_LOCKS_EXCLUDED(catalog_->mu_);

  // U6: a peer's users, roles, markers and key, applied in one batch and one publish:
  // markers first (each retires the older copy of its name), then roles, then users (each
  // replacing ours when Newer, refused when dead), then the key (the older one stays), then
  // the U7 repair. Applying the same twice changes nothing; in any order, the nodes converge.
  // An error means nothing was written.
  absl::StatusOr<PrincipalApplyStats> ApplyPeer(const PeerPrincipals& peer)
      ABSL_LOCKS_EXCLUDED(catalog_->mu_);

 private:
  struct Edit;
  // Writes `edit`'s batch and publishes its principals, naming its changed objects in the
  // journal. Nothing when it changed nothing.
  absl::Status Commit(const Catalog::DatabaseLock& lock, Edit* edit)
      ABSL_LOCKS_EXCLUDED(catalog_->mu_);
  // A peer's marker of a user (`user`) or role: recorded when newer than the one held, the
  // copy of its name created before it retired (C8 as U6 applies it).
  void ApplyMarker(Edit* edit, bool user, const std::string& name, const v1::PrincipalMarker& m,
                   PrincipalApplyStats* stats);
  // U7, after a peer's changes left no active super user: gives one back (see the .cc).
  void Repair(Edit* edit, PrincipalApplyStats* stats);
  // Undoes one loss of super_user (a user's, a dropped user's, a role's) in `edit` when that
  // gives back an active super user; false, with nothing changed, otherwise.
  bool RestoreLoss(Edit* edit, bool role, bool dropped, const std::string& name);

  Catalog* const catalog_;
};

}  // namespace cairn::catalog
