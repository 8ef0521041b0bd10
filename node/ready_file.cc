#include "node/ready_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace cairn::node {

absl::Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Error(ErrorCode::kInternal, absl::StrCat("creating ", tmp, ": ", std::strerror(errno)));
  }
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!written || !synced || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Error(ErrorCode::kInternal, absl::StrCat("writing ", path, ": ", why));
  }
  return absl::OkStatus();
}

absl::Status WriteReadyFile(const std::string& path, const ReadyInfo& info) {
  return WriteFileAtomically(
      path,
      nlohmann::json{{"name", info.name}, {"ops", info.ops}, {"peer", info.peer}, {"pid", info.pid}}
              .dump() +
          "\n");
}

absl::StatusOr<ReadyInfo> ReadReadyFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error(ErrorCode::kInternal, absl::StrCat("no ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("ops") || !j["ops"].is_string() || !j.contains("pid") ||
      !j["pid"].is_number_integer()) {
    return Error(ErrorCode::kInternal, absl::StrCat(path, " is incomplete"));
  }
  ReadyInfo info;
  info.name = j.value("name", "");
  info.ops = j["ops"].get<std::string>();
  info.peer = j.value("peer", "");
  info.pid = j["pid"].get<int>();
  return info;
}

}  // namespace cairn::node
