// Backups of a node (docs/operations.md "Back up and restore").
//
// A backup is a directory `<backup-dir>/<name>/` holding `db/` (a RocksDB checkpoint of the
// whole database: catalog, records, change log, cursors, peers, all at one point in time) and
// `backup.json` (which node, when, its log id). Starting cairnd with `--data-dir` on a copy of
// such a directory restores the node: `backup.json` marks the database as a copy, so the node
// takes a new log identity and forgets its cursors on its peers' logs (decision 51); then
// `backup.json` is renamed `restored-from.json`. The node serves at once, from the backup's
// state, while every peer's full copy brings it up to date.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "catalog/local_node.h"

namespace cairn::node {

struct BackupInfo {
  std::string name;  // the backup's directory name
  std::string path;  // its absolute path
  std::string node;  // the node it was taken on
  absl::Time created;
  uint64_t log_id = 0;  // the node's log identity when taken (informational)
};

// 1-64 of [A-Za-z0-9_-]: a directory name that is safe everywhere. INVALID_NAME otherwise.
absl::Status ValidateBackupName(absl::string_view name);

// The default name of a backup taken at `t`: "20261129T181500Z" (UTC, sortable).
std::string DefaultBackupName(absl::Time t);

// Takes a backup of `node` into `<backup_dir>/<name>`. Fails with BAD_REQUEST when a backup
// of that name exists; never leaves a partial backup under its name (it is built in a
// temporary directory and renamed into place).
absl::StatusOr<BackupInfo> CreateBackup(catalog::LocalNode* node, const std::string& node_name,
                                        const std::string& backup_dir, const std::string& name);

// Removes what backups that never finished left in `backup_dir` (".tmp-*": a crash during
// create_backup). Their hard links would keep old table files alive. Call at start.
void RemoveUnfinishedBackups(const std::string& backup_dir);

// A data directory holding a backup not yet restored: what its `backup.json` says.
struct PendingRestore {
  std::string node;  // the node the backup was taken on
  absl::Time created;
};
// nullopt for an ordinary data directory; BAD_REQUEST for an unreadable manifest.
absl::StatusOr<std::optional<PendingRestore>> FindPendingRestore(const std::string& data_dir);

// Refuses a backup older than the tombstone retention (SPEC D5) unless `allow_stale`: a row
// deleted since then has no tombstone left anywhere, so the backup's copy would come back on
// every node through the full copies.
absl::Status CheckRestore(const PendingRestore& restore, absl::Time now,
                          absl::Duration tombstone_retention, bool allow_stale);

// After the node opened a restored database: renames `backup.json` to `restored-from.json`,
// so the next start is an ordinary one.
absl::Status MarkRestored(const std::string& data_dir);

}  // namespace cairn::node
