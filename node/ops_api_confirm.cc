// The operations API: confirmed writes (design 0013, P10). `insert`, `upsert`, `update` and
// `delete` take `replicated_confirmation: N` (else --replicated-confirmation): the answer is
// sent once N other members of the table's database have acknowledged the write's batch
// (replication::Cluster::WaitForConfirmations), or after --confirmation-timeout as 504
// CONFIRMATION_TIMEOUT naming those that did. The write is never undone: the 504 says what it
// did. A write forwarded to a member (P4) is confirmed there, by the member that ran it.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "catalog/placement.h"
#include "common/status.h"
#include "node/internal/ops_api_fields.h"
#include "node/ops_api.h"

namespace cairn::node {

using internal::BadRequest;

absl::StatusOr<OpsApi::Confirmation> OpsApi::ConfirmationFor(const Fields& f, const std::string& db,
                                                             const std::string& table) const {
  Confirmation c;
  c.needed = options_.replicated_confirmation;
  if (const json* v = f.Find("replicated_confirmation"); v != nullptr && !v->is_null()) {
    CAIRN_ASSIGN_OR_RETURN(c.needed, f.Count("replicated_confirmation"));
  }
  if (c.needed == 0) return c;
  const catalog::SnapshotRef snap = node_->catalog->Snapshot();
  const catalog::DatabaseDef* d = snap->FindDatabase(db);
  if (d == nullptr) return c;  // the write answers DATABASE_NOT_FOUND
  if (auto def = snap->FindTable(db, table); def.ok() && !(*def)->replicate()) {
    return BadRequest(absl::StrCat("'replicated_confirmation' is ", c.needed, ", but table '", db,
                                   ".", table,
                                   "' is node-local (C11): no other node holds its rows"));
  }
  if (options_.cluster != nullptr) {
    std::vector<std::string> members =
        catalog::IsEveryNode(d->placement)
            ? options_.cluster->KnownNodes()
            : std::vector<std::string>(d->placement.members().begin(),
                                       d->placement.members().end());
    for (std::string& m : members) {
      if (m != options_.node_name) c.members.push_back(std::move(m));
    }
  }
  if (c.needed > c.members.size()) {
    return BadRequest(absl::StrCat(
        "'replicated_confirmation' is ", c.needed, ", but database '", db, "' has ",
        c.members.size(), " other member(s)",
        c.members.empty() ? std::string() : absl::StrCat(" (", absl::StrJoin(c.members, ", "), ")"),
        " to confirm a write here"));
  }
  return c;
}

absl::Status OpsApi::AwaitConfirmation(const Confirmation& c, const std::string& db,
                                       const catalog::WriteResult& result,
                                       const std::string& message, const Fields& f) const {
  if (c.needed == 0 || result.log_seq == 0) return absl::OkStatus();  // nothing was written
  absl::Time deadline = absl::Now() + options_.confirmation_timeout;
  if (f.deadline() != nullptr) deadline = std::min(deadline, f.deadline()->at());
  const std::vector<std::string> confirmed =
      options_.cluster->WaitForConfirmations(db, result.log_seq, c.needed, c.members, deadline);
  if (confirmed.size() >= c.needed) return absl::OkStatus();
  json details{{"confirmed_by", confirmed},
               {"replicated_confirmation", c.needed},
               {"written", result.written},
               {"skipped", result.skipped}};
  return WithDetails(
      Error(ErrorCode::kConfirmationTimeout,
            absl::StrCat(message, " here, but ", confirmed.size(), " of the ", c.needed,
                         " confirmation(s) asked for arrived in time (confirmed by: ",
                         confirmed.empty() ? std::string("none") : absl::StrJoin(confirmed, ", "),
                         "); the write is not undone and reaches the other members as "
                         "replication delivers it")),
      details.dump());
}

}  // namespace cairn::node
