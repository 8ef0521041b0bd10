// What both sides of anti-entropy's Verify steps share (SPEC R18, design 0007): the limits a
// callee enforces on a peer's step, and conversions between stored rows, their stamps and the
// entries a step carries. Used by anti_entropy.cc (the caller) and anti_entropy_serve.cc (the
// callee). Thread-compatible free functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cairn/storage/v1/records.pb.h"
#include "catalog/record_store.h"
#include "catalog/table_digest.h"
#include "common/clock.h"

namespace cairn::replication::internal {

// What the callee accepts per step (a peer's values are input to check): keys or rows of a
// rows, behind or repair step, and the page a stamps step may ask for.
inline constexpr size_t kMaxKeysPerStep = 10'000;
// Leaves a stamps step may name: every leaf of a tree of the greatest depth.
inline constexpr size_t kMaxStampLeaves = size_t{1} << 16;
// The page of a stamps step that names none.
inline constexpr uint32_t kDefaultStampsPage = 1'000;
// Bodies per rows answer or repair request, whatever the keys (a row may be as large as a
// request, 10 MiB by default; a step with one row may exceed it).
inline constexpr size_t kMaxStepBytes = 4 << 20;
// The longest a behind step waits for this node's cursor.
inline constexpr uint32_t kMaxWaitMs = 30'000;

// The entry a step carries for a stored row (its body only `with_body`), or for a stamp.
storage::v1::ChangeEntry EntryOf(const std::string& table, absl::string_view key,
                                 const storage::v1::StoredRecord& row, bool with_body);
storage::v1::ChangeEntry EntryOf(const std::string& table, const catalog::RowStamp& s);
catalog::RowStamp StampOf(const storage::v1::ChangeEntry& e);

// True when `row` (stored here, maybe absent) loses last-writer-wins to the stamp (D5).
bool Loses(const std::optional<storage::v1::StoredRecord>& row, Hlc version,
           absl::string_view origin);
// The row (an entry) carries exactly the stamp: the same write, unchanged since it was listed.
bool Same(const storage::v1::ChangeEntry& row, const catalog::RowStamp& s);
// Rows an apply neither took nor lost to a newer one: a retired generation, a node-local
// table of the name, malformed, or parked. Differences verify could not repair.
uint64_t NotApplied(const catalog::ApplyStats& s);
// The table is being dropped here (C9): the step answers "skipped", not an error.
bool Dropping(const absl::Status& s);

}  // namespace cairn::replication::internal
