// <data-dir>/ready.json (SPEC §6): written once the node serves, removed on clean exit.
// Harnesses poll for it and check `pid` to know the file is from the process they started.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace cairn::node {

struct ReadyInfo {
  std::string name;
  std::string ops;   // HOST:PORT bound for the operations API
  std::string peer;  // HOST:PORT bound for peers
  int pid = 0;
};

// Atomically: writes a temporary file next to `path`, syncs it, renames it over `path`.
absl::Status WriteFileAtomically(const std::string& path, const std::string& text);
absl::Status WriteReadyFile(const std::string& path, const ReadyInfo& info);
absl::StatusOr<ReadyInfo> ReadReadyFile(const std::string& path);

}  // namespace cairn::node
