// The operations API: operations on rows this node does not hold, forwarded to a member
// (design 0013, P4, P5). The store refuses them with NOT_A_MEMBER before anything runs (a
// non-member holds no rows, P3); OpsApi::Handle then sends the request body, as the client
// sent it, to a member over the peer link (Cluster::Operate) with the user the front door
// authenticated, and relays the member's answer unchanged: its status, its error, its body,
// streamed through when it is long (a search). On the member, a forwarded operation that
// names a table node-local there is refused before it runs (C11, RefuseNodeLocalForwarded).
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "catalog/placement.h"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "node/internal/ops_api_fields.h"
#include "node/ops_api.h"

namespace cairn::node {

namespace {

// A successful answer up to this long is read whole and answered with its length; a longer
// one is streamed through as it comes. An error's answer is always read whole.
constexpr size_t kWholeReplyBytes = 64 << 10;
// How long a forward waits for members to learn a table or a user this node holds.
constexpr absl::Duration kSchemaPatience = absl::Seconds(5);

// What the caller gets when the call to `member` broke once it may have run the operation.
absl::Status Broken(const std::string& member, const absl::Status& why, bool reads_only) {
  return Error(
      absl::IsDeadlineExceeded(why) ? ErrorCode::kRequestTimeout : ErrorCode::kNoMemberReachable,
      absl::StrCat("the operation was forwarded to member '", member,
                   "', whose answer did not arrive whole (", why.message(), ")",
                   reads_only ? "" : ": the write may have run there"));
}

// A call that ended before any answer and surely ran nothing: the member refused it before
// running it (stopping, not authenticating this node, no Operate) or it was never made.
bool RanNothing(const absl::Status& s) {
  return absl::IsUnimplemented(s) || absl::IsUnauthenticated(s) || absl::IsPermissionDenied(s) ||
         GetErrorCode(s) == ErrorCode::kShuttingDown;
}

// A member's answer that means its schema is a moment behind this node's, which holds the
// table (its store found it) and authenticated the user: it ran nothing.
bool Behind(const peer::v1::OperateReply& head) {
  const std::string& code = head.error_code();
  return code == ErrorCodeName(ErrorCode::kTableNotFound) ||
         code == ErrorCodeName(ErrorCode::kDatabaseNotFound) ||
         code == ErrorCodeName(ErrorCode::kUnauthorized);
}

// The message of the error a member answered, whose status message was read: its body's
// "error", read up to kWholeReplyBytes (the rest of the call is cancelled).
std::string ErrorMessage(const peer::v1::OperateReply& head, replication::OperateCall* call) {
  std::string body = head.piece();
  peer::v1::OperateReply m;
  while (body.size() < kWholeReplyBytes && call->Read(&m)) body += m.piece();
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("error") && j["error"].is_string()) {
    return j["error"].get<std::string>();
  }
  return "it answered NOT_A_MEMBER";
}

// The member's answer, from its status message `head` on: read whole when short or an
// error, else streamed through.
absl::StatusOr<Reply> Relay(const std::string& member, const peer::v1::OperateReply& head,
                            std::unique_ptr<replication::OperateCall> call, bool reads_only) {
  Reply reply;
  reply.status = static_cast<int>(head.status());
  reply.error_code = head.error_code();
  reply.records_written = head.records_written();
  std::string prefix = head.piece();  // the status message carries the first piece
  peer::v1::OperateReply m;
  while (reply.status != 200 || prefix.size() < kWholeReplyBytes) {
    if (!call->Read(&m)) {
      absl::Status s = call->Finish();
      if (!s.ok()) return Broken(member, s, reads_only);
      reply.body = std::move(prefix);
      return reply;
    }
    prefix += m.piece();
  }
  std::shared_ptr<replication::OperateCall> shared = std::move(call);
  reply.stream = [shared, prefix = std::move(prefix)](
                     const std::function<bool(absl::string_view)>& write) -> absl::Status {
    bool wrote = write(prefix);
    peer::v1::OperateReply piece;
    while (wrote && shared->Read(&piece)) wrote = write(piece.piece());
    if (!wrote) {
      shared->Cancel();
      return Error(ErrorCode::kRequestTimeout, "the client left during a forwarded answer");
    }
    // After the first piece an error can only cut the body short (Reply::stream).
    return shared->Finish();
  };
  reply.stream_computes = false;  // it waits on the member, holding no CPU slot
  return reply;
}

}  // namespace

absl::StatusOr<Reply> OpsApi::ForwardToMember(const Operation& op, absl::string_view body,
                                              const Fields& f, const absl::Status& refused) const {
  if (options_.cluster == nullptr) return refused;
  absl::StatusOr<std::string> db = f.Database(/*required=*/false, /*records=*/true);
  if (!db.ok()) return refused;
  std::vector<std::string> members;
  {
    const catalog::SnapshotRef snap = node_->catalog->Snapshot();
    const catalog::DatabaseDef* d = snap->FindDatabase(*db);
    if (d == nullptr || catalog::IsReady(d->placement, options_.node_name)) return refused;
    // P7: only a ready member serves the database; one catching up forwards as well.
    members = catalog::ReadyMembers(d->placement);
  }
  const Caller& caller = f.caller();
  peer::v1::OperateRequest request;
  request.set_body(std::string(body));
  if (caller.kind == Caller::Kind::kUser) request.set_user(caller.username);
  Deadline* const deadline = f.deadline();
  const absl::Time until =
      deadline != nullptr ? deadline->at() : absl::Now() + options_.operation_timeout;
  // Members in the database's rendezvous order, so that every node tries the same one first.
  const std::vector<std::string> order = catalog::RendezvousOrder(*db, members);
  // A member whose schema is a moment behind (a table or a user created through this node
  // just now) ran nothing: the round is tried again after a short wait, within the deadline
  // and kSchemaPatience, and then that member's answer is the answer.
  const absl::Time patience = std::min(until, absl::Now() + kSchemaPatience);
  absl::Duration wait = absl::Milliseconds(5);
  for (;;) {
    const bool last = absl::Now() + wait >= patience;
    Round round = ForwardRound(op, options_.cluster->ForwardTargets(order), request, until,
                               /*relay_behind=*/last);
    if (round.answer.has_value()) return *std::move(round.answer);
    if (!round.behind || last || (deadline != nullptr && deadline->cancelled())) {
      return Error(ErrorCode::kNoMemberReachable,
                   absl::StrCat("database '", *db, "' is held by ", absl::StrJoin(members, ", "),
                                ", and none of them could take the operation from this node",
                                round.why.empty()
                                    ? " (none is linked to it)"
                                    : absl::StrCat(" (", absl::StrJoin(round.why, "; "), ")")));
    }
    forward_schema_waits_.fetch_add(1, std::memory_order_relaxed);
    absl::SleepFor(wait);
    wait = std::min(wait * 2, absl::Milliseconds(200));
  }
}

absl::Status OpsApi::RefuseNodeLocalForwarded(const Fields& f) const {
  absl::StatusOr<std::string> db = f.Database(/*required=*/false, /*records=*/true);
  absl::StatusOr<std::string> table = f.Table(/*records=*/true);
  if (!db.ok() || !table.ok()) return absl::OkStatus();  // the operation answers for its fields
  absl::StatusOr<catalog::TableRef> def = node_->catalog->Snapshot()->FindTable(*db, *table);
  if (!def.ok() || (*def)->replicate()) return absl::OkStatus();
  return Error(
      ErrorCode::kNotAMember,
      absl::StrCat("table '", *db, ".", *table, "' is node-local on this node (",
                   options_.node_name, "): it does not hold the replicated table's rows (C11)"));
}

OpsApi::Round OpsApi::ForwardRound(const Operation& op, const std::vector<std::string>& targets,
                                   peer::v1::OperateRequest request, absl::Time until,
                                   bool relay_behind) const {
  // P5: the next member is tried only when this one surely ran nothing (no call was made, it
  // refused the call, it answered NOT_A_MEMBER, or it is behind), or the operation only
  // reads. A write whose call broke is answered, not retried (an insert without a key would
  // run twice, with two ids).
  const bool reads_only = absl::StartsWith(op.name, "search_");
  Round round;
  for (const std::string& member : targets) {
    // The member's deadline is this node's, as it is now (design 0013, P4 item 6).
    request.set_timeout_ms(static_cast<uint64_t>(
        std::max<int64_t>(1, absl::ToInt64Milliseconds(until - absl::Now()))));
    absl::StatusOr<std::unique_ptr<replication::OperateCall>> call =
        options_.cluster->Operate(member, request, until);
    if (!call.ok()) {
      round.why.push_back(absl::StrCat(member, ": ", call.status().message()));
      continue;
    }
    peer::v1::OperateReply head;
    if (!(*call)->Read(&head) || head.status() == 0) {
      absl::Status s = (*call)->Finish();
      if (s.ok()) s = absl::DataLossError("the answer had no status");
      if (!reads_only && !RanNothing(s)) {
        round.answer = Broken(member, s, reads_only);
        return round;
      }
      round.why.push_back(absl::StrCat(member, ": ", s.message()));
      continue;
    }
    if (head.error_code() == ErrorCodeName(ErrorCode::kNotAMember)) {
      // Not a member in its view, or its table of the name is node-local (C11).
      round.why.push_back(absl::StrCat(member, ": ", ErrorMessage(head, call->get())));
      continue;
    }
    if (!relay_behind && Behind(head)) {
      round.behind = true;
      round.why.push_back(absl::StrCat(member, ": its schema is behind (", head.error_code(), ")"));
      continue;
    }
    forwarded_.fetch_add(1, std::memory_order_relaxed);
    round.answer = Relay(member, head, *std::move(call), reads_only);
    return round;
  }
  return round;
}

}  // namespace cairn::node
