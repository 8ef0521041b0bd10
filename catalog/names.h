// Name rules (SPEC C13). Each returns INVALID_NAME with a message naming the bad value.
#pragma once

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace cairn::catalog {

// The database whose catalog objects are users and roles (SPEC U6); no table lives in it, and
// a client cannot create one of that name (Harper reserves it too).
inline constexpr absl::string_view kSystemDatabaseName = "system";

// 1-64 characters of [A-Za-z0-9_-], not starting with '_', and not "system".
absl::Status ValidateDatabaseName(absl::string_view name);
absl::Status ValidateTableName(absl::string_view name);
// A node name as a placement names it (design 0013): the identifier rule --name and routes
// are held to (node/config.cc, Cluster::AddPeer), so "*" (every node) is never one.
absl::Status ValidateNodeName(absl::string_view name);
// 1-kMaxAttributeNameBytes bytes of valid UTF-8, no '/' or '`' (D8), no control characters.
inline constexpr size_t kMaxAttributeNameBytes = 250;
absl::Status ValidateAttributeName(absl::string_view name);
bool IsValidUtf8(absl::string_view s);

}  // namespace cairn::catalog
