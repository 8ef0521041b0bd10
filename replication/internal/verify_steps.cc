#include "replication/internal/verify_steps.h"

#include "common/status.h"

namespace cairn::replication::internal {

using catalog::RowStamp;
using storage::v1::ChangeEntry;
using storage::v1::StoredRecord;

ChangeEntry EntryOf(const std::string& table, absl::string_view key, const StoredRecord& row,
                    bool with_body) {
  ChangeEntry e;
  e.set_table(table);
  e.set_op(row.deleted() ? storage::v1::DELETE : storage::v1::PUT);
  e.set_key(std::string(key));
  e.set_version(row.version());
  e.set_origin(row.origin());
  e.set_row_generation(row.row_generation());
  if (with_body && !row.deleted()) e.set_json(row.json());
  return e;
}

ChangeEntry EntryOf(const std::string& table, const RowStamp& s) {
  ChangeEntry e;
  e.set_table(table);
  e.set_op(s.deleted ? storage::v1::DELETE : storage::v1::PUT);
  e.set_key(s.key);
  e.set_version(s.version);
  e.set_origin(s.origin);
  e.set_row_generation(s.row_generation);
  return e;
}

RowStamp StampOf(const ChangeEntry& e) {
  RowStamp s;
  s.key = e.key();
  s.version = e.version();
  s.origin = e.origin();
  s.row_generation = e.row_generation();
  s.deleted = e.op() == storage::v1::DELETE;
  return s;
}

// True when `row` (stored here, maybe absent) loses last-writer-wins to `stamp` (D5).
bool Loses(const std::optional<StoredRecord>& row, Hlc version, absl::string_view origin) {
  return !row.has_value() || catalog::LosesTo(row->version(), row->origin(), version, origin);
}

// The row (an entry) carries exactly the stamp: the same write, unchanged since it was listed.
bool Same(const ChangeEntry& row, const RowStamp& s) {
  return row.version() == s.version && row.origin() == s.origin &&
         row.row_generation() == s.row_generation && (row.op() == storage::v1::DELETE) == s.deleted;
}

// Rows an apply neither took nor lost to a newer one: a retired generation, a node-local
// table of the name, malformed, or parked. Differences verify could not repair.
uint64_t NotApplied(const catalog::ApplyStats& s) {
  return s.dead_generation + s.node_local + s.malformed + s.parked + s.not_member;
}

bool Dropping(const absl::Status& s) { return GetErrorCode(s) == ErrorCode::kTableDropping; }

}  // namespace cairn::replication::internal
