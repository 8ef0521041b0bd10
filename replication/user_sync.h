// Users and roles in DB_SCHEMA (SPEC U6): the DbSchema of the `system` database carries them,
// with their markers and the token signing key, to peers that advertised "schema.users.v1".
// Whole or as a delta, digested, applied in one step (UserCatalog::ApplyPeer): the same round,
// watch and resync machinery as tables (schema_sync.h). Pure functions of a snapshot; no
// network.
#pragma once

#include <cstdint>

#include "absl/container/btree_set.h"
#include "absl/status/status.h"
#include "cairn/peer/v1/peer.pb.h"
#include "catalog/principals.h"
#include "catalog/schema.h"
#include "catalog/user_catalog.h"
#include "replication/schema_sync.h"

namespace cairn::replication {

// Whether a snapshot holds anything of the system database (a DbSchema of it is due).
bool HoldsPrincipals(const catalog::Principals& p);

// R3 for the system database: everything (`only` null) or the whole state of the names in
// `only` ("user/<u>", "role/<id>", "key"; catalog::UserName, RoleName), with the digest.
peer::v1::DbSchema BuildUsersSchema(const catalog::CatalogSnapshot& snap,
                                    const absl::btree_set<std::string>* only);

// The system database's digest: equal digests mean the same versions of the same users,
// roles, markers and key (catalog::Principals::digest).
uint64_t UsersDigest(const catalog::Principals& p);

// StatesOf's part for the system database's objects, keyed by their names as deltas list them.
void AddUserStates(const peer::v1::DbSchema& schema, NameStates* out);
// DropNames's part: takes those names' objects out of a delta.
void DropUserNames(const absl::flat_hash_set<std::string>& names, peer::v1::DbSchema* delta);

// U6: a peer's DbSchema of the system database, applied in one step. Counts what it changed
// in `stats` (users_applied, users_restored) and what it could not take (skipped).
absl::Status ApplyUsersSchema(catalog::UserCatalog* users, const peer::v1::DbSchema& schema,
                              SchemaApplyStats* stats);

}  // namespace cairn::replication
