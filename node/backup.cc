#include "node/backup.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "node/ready_file.h"
#include "spdlog/spdlog.h"

namespace cairn::node {
namespace {

constexpr char kBackupFile[] = "backup.json";
constexpr char kRestoredFile[] = "restored-from.json";

}  // namespace

absl::Status ValidateBackupName(absl::string_view name) {
  bool ok = !name.empty() && name.size() <= 64;
  for (char c : name) {
    ok = ok && (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  }
  if (ok) return absl::OkStatus();
  return Error(ErrorCode::kInvalidName,
               absl::StrCat("backup name '", name, "' must be 1-64 of [A-Za-z0-9_-]"));
}

std::string DefaultBackupName(absl::Time t) {
  return absl::FormatTime("%Y%m%dT%H%M%SZ", t, absl::UTCTimeZone());
}

absl::StatusOr<BackupInfo> CreateBackup(catalog::LocalNode* node, const std::string& node_name,
                                        const std::string& backup_dir, const std::string& name) {
  CAIRN_RETURN_IF_ERROR(ValidateBackupName(name));
  namespace fs = std::filesystem;
  std::error_code ec;
  // Backups hold every record: created 0700 whatever the umask (as the data directory).
  if (!fs::exists(backup_dir, ec)) {
    fs::create_directories(backup_dir, ec);
    if (!ec) fs::permissions(backup_dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  }
  if (ec) {
    return Error(ErrorCode::kInternal,
                 absl::StrCat("creating the backup directory ", backup_dir, ": ", ec.message()));
  }
  BackupInfo info;
  info.name = name;
  info.path = fs::absolute(fs::path(backup_dir) / name).lexically_normal().string();
  info.node = node_name;
  info.created = absl::Now();
  info.log_id = node->log->log_id();
  if (fs::exists(info.path, ec)) {
    return Error(ErrorCode::kBadRequest, absl::StrCat("a backup named '", name, "' exists at ",
                                                      info.path, "; choose another name"));
  }
  // Built under a name no other call uses, then renamed into place: a crash or a failure
  // leaves at most a ".tmp-" directory, never a backup that looks complete.
  const std::string tmp =
      absl::StrCat(backup_dir, "/.tmp-", name, "-", absl::Uniform<uint32_t>(absl::BitGen()));
  fs::create_directories(tmp, ec);
  if (!ec) fs::permissions(tmp, fs::perms::owner_all, fs::perm_options::replace, ec);
  auto cleanup = [&tmp] {
    std::error_code ignored;  // a leftover is removed at the next start
    fs::remove_all(tmp, ignored);
  };
  if (ec) {
    return Error(ErrorCode::kInternal, absl::StrCat("creating ", tmp, ": ", ec.message()));
  }
  if (absl::Status s = node->engine->Checkpoint(tmp + "/db"); !s.ok()) {
    cleanup();
    return Annotate(s, "taking the RocksDB checkpoint");
  }
  const nlohmann::json manifest = {
      {"name", info.name},
      {"node", info.node},
      {"created", absl::FormatTime(absl::RFC3339_sec, info.created, absl::UTCTimeZone())},
      {"log_id", absl::StrCat(info.log_id)}};
  if (absl::Status s = WriteFileAtomically(absl::StrCat(tmp, "/", kBackupFile), manifest.dump(2));
      !s.ok()) {
    cleanup();
    return s;
  }
  fs::rename(tmp, info.path, ec);  // fails when a backup of that name appeared meanwhile
  if (ec) {
    const std::string why = ec.message();
    cleanup();
    return Error(ErrorCode::kBadRequest,
                 absl::StrCat("storing the backup as ", info.path, ": ", why));
  }
  // The rename is durable once the directory holding it is synced: only then is the backup
  // reported as taken.
  const int dir_fd = ::open(backup_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const bool synced = dir_fd >= 0 && ::fsync(dir_fd) == 0;
  if (dir_fd >= 0) ::close(dir_fd);
  if (!synced) {
    return Error(ErrorCode::kInternal, absl::StrCat("syncing ", backup_dir, " after the backup"));
  }
  return info;
}

void RemoveUnfinishedBackups(const std::string& backup_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::directory_iterator it(backup_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (absl::StartsWith(it->path().filename().string(), ".tmp-")) {
      spdlog::warn("removing {}: a backup that never finished", it->path().string());
      std::error_code ignored;
      fs::remove_all(it->path(), ignored);
    }
  }
}

absl::StatusOr<std::optional<PendingRestore>> FindPendingRestore(const std::string& data_dir) {
  const std::string path = absl::StrCat(data_dir, "/", kBackupFile);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  PendingRestore restore;
  std::string error;
  if (!j.is_object() || !j.contains("node") || !j["node"].is_string() || !j.contains("created") ||
      !j["created"].is_string() ||
      !absl::ParseTime(absl::RFC3339_full, j["created"].get<std::string>(), &restore.created,
                       &error)) {
    return Error(ErrorCode::kBadRequest,
                 absl::StrCat(path, " is not a backup's manifest (node, created)", error));
  }
  restore.node = j["node"].get<std::string>();
  return restore;
}

absl::Status CheckRestore(const PendingRestore& restore, absl::Time now,
                          absl::Duration tombstone_retention, bool allow_stale) {
  if (now - restore.created <= tombstone_retention || allow_stale) return absl::OkStatus();
  return Error(
      ErrorCode::kBadRequest,
      absl::StrCat("the backup was taken ",
                   absl::FormatTime(absl::RFC3339_sec, restore.created, absl::UTCTimeZone()),
                   ", longer ago than deletes are remembered (",
                   absl::FormatDuration(tombstone_retention),
                   "): rows deleted since could come back on every node. Restore a newer "
                   "backup, or start with --restore-stale-backup to accept that"));
}

absl::Status MarkRestored(const std::string& data_dir) {
  std::error_code ec;
  std::filesystem::rename(absl::StrCat(data_dir, "/", kBackupFile),
                          absl::StrCat(data_dir, "/", kRestoredFile), ec);
  if (ec) {
    return Error(ErrorCode::kInternal,
                 absl::StrCat("renaming ", data_dir, "/", kBackupFile, ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace cairn::node
