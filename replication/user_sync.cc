#include "replication/user_sync.h"

#include <algorithm>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/fnv1a.h"

namespace cairn::replication {

using catalog::kSigningKeyName;

namespace {

constexpr absl::string_view kUserPrefix = "user/";
constexpr absl::string_view kRolePrefix = "role/";

void AddUser(const catalog::Principals& p, absl::string_view username, peer::v1::DbSchema* out) {
  if (const catalog::v1::UserRow* u = p.FindUser(username)) *out->add_users() = *u;
  if (auto m = p.user_markers.find(username); m != p.user_markers.end()) {
    peer::v1::PrincipalMarker* pm = out->add_principal_markers();
    pm->set_name(catalog::UserName(username));
    *pm->mutable_marker() = m->second;
  }
}

void AddRole(const catalog::Principals& p, absl::string_view id, peer::v1::DbSchema* out) {
  if (const catalog::RoleDef* r = p.FindRole(id)) *out->add_roles() = r->row;
  if (auto m = p.role_markers.find(id); m != p.role_markers.end()) {
    peer::v1::PrincipalMarker* pm = out->add_principal_markers();
    pm->set_name(catalog::RoleName(id));
    *pm->mutable_marker() = m->second;
  }
}

uint64_t State(absl::string_view kind, const google::protobuf::MessageLite& m) {
  Fnv1a h;
  h.Add(kind);
  h.Add(m.SerializeAsString());
  return h.value();
}

}  // namespace

bool HoldsPrincipals(const catalog::Principals& p) {
  return !p.users.empty() || !p.roles.empty() || !p.user_markers.empty() ||
         !p.role_markers.empty() || p.signing_key.has_value();
}

uint64_t UsersDigest(const catalog::Principals& p) {
  Fnv1a h;
  h.Add(catalog::kSystemDatabase);
  h.Add(p.digest);
  return h.value();
}

peer::v1::DbSchema BuildUsersSchema(const catalog::CatalogSnapshot& snap,
                                    const absl::btree_set<std::string>* only) {
  const catalog::Principals& p = *snap.principals;
  peer::v1::DbSchema out;
  out.set_database(std::string(catalog::kSystemDatabase));
  if (only == nullptr) {
    for (const auto& [name, user] : p.users) *out.add_users() = *user;
    for (const auto& [id, role] : p.roles) *out.add_roles() = role->row;
    for (const auto& [name, m] : p.user_markers) {
      peer::v1::PrincipalMarker* pm = out.add_principal_markers();
      pm->set_name(catalog::UserName(name));
      *pm->mutable_marker() = m;
    }
    for (const auto& [id, m] : p.role_markers) {
      peer::v1::PrincipalMarker* pm = out.add_principal_markers();
      pm->set_name(catalog::RoleName(id));
      *pm->mutable_marker() = m;
    }
    if (p.signing_key.has_value()) *out.mutable_signing_key() = *p.signing_key;
  } else {
    out.set_delta(true);
    for (const std::string& name : *only) {
      if (absl::StartsWith(name, kUserPrefix)) {
        AddUser(p, absl::string_view(name).substr(kUserPrefix.size()), &out);
      } else if (absl::StartsWith(name, kRolePrefix)) {
        AddRole(p, absl::string_view(name).substr(kRolePrefix.size()), &out);
      } else if (name == kSigningKeyName && p.signing_key.has_value()) {
        *out.mutable_signing_key() = *p.signing_key;
      }
    }
  }
  out.set_digest(UsersDigest(p));
  return out;
}

void AddUserStates(const peer::v1::DbSchema& schema, NameStates* out) {
  for (const catalog::v1::UserRow& u : schema.users()) {
    (*out)[catalog::UserName(u.username())] += State("user", u);
  }
  for (const catalog::v1::RoleRow& r : schema.roles()) {
    (*out)[catalog::RoleName(r.id())] += State("role", r);
  }
  for (const peer::v1::PrincipalMarker& m : schema.principal_markers()) {
    (*out)[m.name()] += State("marker", m.marker());
  }
  if (schema.has_signing_key()) {
    (*out)[std::string(kSigningKeyName)] += State("key", schema.signing_key());
  }
}

void DropUserNames(const absl::flat_hash_set<std::string>& names, peer::v1::DbSchema* delta) {
  auto drop = [&](auto* entries, auto name_of) {
    entries->erase(std::remove_if(entries->begin(), entries->end(),
                                  [&](const auto& e) { return names.contains(name_of(e)); }),
                   entries->end());
  };
  drop(delta->mutable_users(),
       [](const catalog::v1::UserRow& u) { return catalog::UserName(u.username()); });
  drop(delta->mutable_roles(),
       [](const catalog::v1::RoleRow& r) { return catalog::RoleName(r.id()); });
  drop(delta->mutable_principal_markers(),
       [](const peer::v1::PrincipalMarker& m) { return m.name(); });
  if (names.contains(std::string(kSigningKeyName))) delta->clear_signing_key();
}

absl::Status ApplyUsersSchema(catalog::UserCatalog* users, const peer::v1::DbSchema& schema,
                              SchemaApplyStats* stats) {
  catalog::PeerPrincipals peer;
  peer.users.assign(schema.users().begin(), schema.users().end());
  peer.roles.assign(schema.roles().begin(), schema.roles().end());
  for (const peer::v1::PrincipalMarker& m : schema.principal_markers()) {
    const absl::string_view name = m.name();
    if (absl::StartsWith(name, kUserPrefix)) {
      peer.user_markers.emplace_back(std::string(name.substr(kUserPrefix.size())), m.marker());
    } else if (absl::StartsWith(name, kRolePrefix)) {
      peer.role_markers.emplace_back(std::string(name.substr(kRolePrefix.size())), m.marker());
    } else {
      ++stats->skipped;  // a kind this node does not know
    }
  }
  if (schema.has_signing_key()) peer.signing_key = schema.signing_key();
  // Tables cannot live in the system database (catalog::ValidateDatabaseName): skipped.
  stats->skipped += schema.tables_size() + schema.markers_size() + schema.attribute_markers_size();
  absl::StatusOr<catalog::PrincipalApplyStats> applied = users->ApplyPeer(peer);
  if (!applied.ok()) return applied.status();
  stats->skipped += applied->invalid;  // asked for again whole, as a skipped table is
  stats->users_applied += applied->applied;
  stats->users_restored += applied->restored;
  stats->tables_refused += applied->refused;
  return absl::OkStatus();
}

}  // namespace cairn::replication
