// What both halves of UserCatalog (user_catalog.cc, user_catalog_peer.cc) share: the Edit a
// change of the principals builds, and the U7 test. Not for use outside catalog/.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "catalog/internal/catalog_rows.h"
#include "catalog/user_catalog.h"
#include "rocksdb/write_batch.h"
#include "storage/keys.h"

namespace cairn::catalog {

namespace internal {

// U7: whether a change from `base` to `next` leaves no active super user. A catalog without
// users before and after (a node that never had an admin) has none to lose.
inline bool LeavesNoSuperUser(const Principals& base, const Principals& next) {
  return next.ActiveSuperUsers() == 0 && (!base.users.empty() || !next.users.empty());
}

}  // namespace internal

// One change of the principals: the copy it builds, the batch that makes it durable and the
// names it changed (for the journal, Catalog::Publish).
struct UserCatalog::Edit {
  Edit(storage::Engine* e, const Principals& base)
      : engine(e), next(std::make_shared<Principals>(base)) {}

  void PutUser(v1::UserRow row) {
    internal::PutProto(engine, &batch, storage::Cf::kCatalog, storage::UserKey(row.username()),
                       row);
    Name(UserName(row.username()));
    next->PutUser(std::make_shared<const v1::UserRow>(std::move(row)));
  }
  void EraseUser(const std::string& username) {
    batch.Delete(engine->cf(storage::Cf::kCatalog), storage::ToSlice(storage::UserKey(username)))
        .PermitUncheckedError();
    Name(UserName(username));
    next->EraseUser(username);
  }
  void PutRole(v1::RoleRow row) {
    internal::PutProto(engine, &batch, storage::Cf::kCatalog, storage::RoleKey(row.id()), row);
    Name(RoleName(row.id()));
    next->PutRole(std::make_shared<const RoleDef>(std::move(row)));
  }
  void EraseRole(const std::string& id) {
    batch.Delete(engine->cf(storage::Cf::kCatalog), storage::ToSlice(storage::RoleKey(id)))
        .PermitUncheckedError();
    Name(RoleName(id));
    next->EraseRole(id);
  }
  void PutUserMarker(const std::string& username, v1::PrincipalMarker marker) {
    internal::PutProto(engine, &batch, storage::Cf::kCatalog, storage::UserMarkerKey(username),
                       marker);
    Name(UserName(username));
    next->PutUserMarker(username, std::move(marker));
  }
  void PutRoleMarker(const std::string& id, v1::PrincipalMarker marker) {
    internal::PutProto(engine, &batch, storage::Cf::kCatalog, storage::RoleMarkerKey(id), marker);
    Name(RoleName(id));
    next->PutRoleMarker(id, std::move(marker));
  }
  void PutSigningKey(v1::SigningKey key) {
    internal::PutProto(engine, &batch, storage::Cf::kCatalog, storage::kSigningKeyKey, key);
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

}  // namespace cairn::catalog
