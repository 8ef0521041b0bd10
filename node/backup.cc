#include "node/backup.h"

#include <filesystem>

#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "node/ready_file.h"

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
  fs::create_directories(backup_dir, ec);
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
  auto cleanup = [&] { fs::remove_all(tmp, ec); };
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
    cleanup();
    return Error(ErrorCode::kBadRequest,
                 absl::StrCat("storing the backup as ", info.path, ": ", ec.message()));
  }
  return info;
}

bool IsUnrestoredBackup(const std::string& data_dir) {
  std::error_code ec;
  return std::filesystem::exists(absl::StrCat(data_dir, "/", kBackupFile), ec);
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
