// OpsApi: the operations of SPEC §5, from a request body to a reply, independent of HTTP.
// Field names, aliases and answers follow Harper's operations API (`schema` = `database`,
// `hash_attribute` = `primary_key`, `hash_values` = `ids`, `search_attribute` / `search_value`
// = `attribute` / `value`). Every failure is a reply with the SPEC §5 status and
// {"error", "code"}; nothing here throws or crashes on any input. Thread-safe: requests run
// concurrently on the HTTP pool threads and share only the node.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "catalog/local_node.h"
#include "common/deadline.h"
#include "common/fault.h"
#include "nlohmann/json.hpp"
#include "node/access.h"
#include "node/audit.h"
#include "node/authenticator.h"
#include "node/credentials.h"
#include "replication/cluster.h"

namespace cairn::node {

// What an operation answers.
struct Reply {
  int status = 200;
  std::string body;  // JSON text, unless `stream` is set
  // A streamed answer (the searches): writes the JSON body in pieces through `write`, which
  // returns false once the client is gone; returns OK when the body is complete. A failure
  // before the first piece is answered as an error (REQUEST_TIMEOUT, TABLE_DROPPING); after
  // it, it can only cut the body short, so the operation checks everything it can first.
  std::function<absl::Status(const std::function<bool(absl::string_view)>& write)> stream;
  // Whether `stream` computes (a search: it runs holding one of --search-cpus' slots) or only
  // waits on another node (a forwarded answer, design 0013, P4: it holds none).
  bool stream_computes = true;
  std::string operation = "unknown";  // for metrics: a known operation name or "unknown"
  std::string error_code;             // SPEC §5 code when status is not 200
  uint64_t records_written = 0;
};

// The reply of a failed request: SPEC §5 status, {"error": message, "code": CODE}.
Reply ErrorReply(const absl::Status& status);

struct OpsApiOptions {
  std::string node_name;
  bool enable_test_hooks = false;   // the fault operations answer 403 without it (SPEC §6)
  FaultRegistry* faults = nullptr;  // armed by the fault operations
  OffsetClock* clock = nullptr;     // the node's wall clock, shifted by set_clock (test hooks)
  // Peer links: drops are forwarded through it, cluster_status reads it. Null: a node with
  // no cluster (tests of the API alone).
  replication::Cluster* cluster = nullptr;
  // Where create_backup puts backups (--backup-dir). Empty: the operation is refused.
  std::string backup_dir;
  // Tokens (create_authentication_tokens, refresh_operation_token). Null: refused.
  Authenticator* authenticator = nullptr;
  // Refused operations are logged and counted here (U8). Null: only answered.
  Audit* audit = nullptr;
  // What add_user and alter_user spend on a password's hash (credentials.h).
  PasswordHashCost password_hash_cost;
  // Bounded work per request (issue 41, docs/operations.md "Limits"): the longest a request's
  // `timeout_ms` may ask for (--operation-timeout), and what a sort may hold (--max-sort-bytes).
  absl::Duration operation_timeout = absl::Seconds(60);
  uint64_t max_sort_bytes = 32 << 20;
  // Design 0013, P10: the confirmations a write waits for when it names none
  // (--replicated-confirmation), and how long it waits (--confirmation-timeout).
  uint64_t replicated_confirmation = 0;
  absl::Duration confirmation_timeout = absl::Seconds(5);
};

class OpsApi {
 public:
  OpsApi(catalog::LocalNode* node, OpsApiOptions options);

  // Parses and runs one `POST /` body sent by `caller`, whose role is enforced (SPEC U4).
  // `deadline` (null: none) is checked as the work goes (common/deadline.h); the body's
  // `timeout_ms` tightens it. A streamed reply checks it too, so it must outlive the stream.
  Reply Handle(absl::string_view body, const Caller& caller, Deadline* deadline = nullptr) const;
  // The same for an in-process caller, who may do everything.
  Reply Handle(absl::string_view body) const { return Handle(body, Caller::Internal()); }

  // Design 0013, P4, for /metrics: operations this node sent to a member, and the waits of
  // a forward for members that did not hold the table yet.
  uint64_t forwarded_operations() const { return forwarded_.load(); }
  uint64_t forward_schema_waits() const { return forward_schema_waits_.load(); }

 private:
  class Fields;
  using Handler = absl::StatusOr<Reply> (OpsApi::*)(const Fields&) const;
  struct Operation {
    const char* name;
    Handler handler;
    bool test_hook;
    // Set: only a super user may run it (U4), and a refusal names it so (Harper's name of the
    // operation where Harper's tests assert it). Unset: the handler checks what it needs.
    const char* super_user_as = nullptr;
  };
  static const std::vector<Operation>& Operations();
  // Whether the caller may run `op` at all (U4 for whole operations, the test hooks' flag);
  // the handler checks the objects it names.
  absl::Status Admit(const Operation& op, const Fields& f) const;

  absl::StatusOr<Reply> CreateDatabase(const Fields& f) const;
  absl::StatusOr<Reply> DropDatabase(const Fields& f) const;
  absl::StatusOr<Reply> AlterDatabase(const Fields& f) const;
  // Design 0013, P2, P6: the placement a request's `replicas` / `replica_count` ask for,
  // resolved to node names here. `required`: one of them must be given.
  absl::StatusOr<catalog::PlacementSpec> PlacementOf(const Fields& f, absl::string_view db,
                                                     bool required) const;
  absl::StatusOr<catalog::PlacementSpec> ResolvePlacement(const Fields& f, absl::string_view db,
                                                          bool required) const;
  // Design 0013, P3 item 6: every member `spec` adds to `db`'s placement must be linked to
  // this node now, since a non-member relays no rows.
  absl::Status CheckNewMembersLinked(absl::string_view db,
                                     const catalog::PlacementSpec& spec) const;
  // Design 0013, P4, P5 (ops_api_forward.cc): an operation `refused` with NOT_A_MEMBER (the
  // store refused its rows before anything ran) sent to a member over the peer link, whose
  // answer is relayed unchanged. A forwarded request is not forwarded again.
  absl::StatusOr<Reply> ForwardToMember(const Operation& op, absl::string_view body,
                                        const Fields& f, const absl::Status& refused) const;
  // On a member, an operation a peer forwarded that names a table node-local here (C11) is
  // refused with NOT_A_MEMBER before it runs: the peer meant the replicated table of the
  // name, whose rows this node does not hold, and it tries the next member (P4, P5).
  absl::Status RefuseNodeLocalForwarded(const Fields& f) const;
  // One pass over the members ForwardToMember may try.
  struct Round {
    std::optional<absl::StatusOr<Reply>> answer;  // unset: no member took the operation
    bool behind = false;           // a member lacked the table or the user: its schema is behind
    std::vector<std::string> why;  // why each member was passed over
  };
  // `relay_behind`: a member's answer that it lacks the table or the user is the answer;
  // else the next member is tried and `behind` set. `until`: the request's deadline.
  Round ForwardRound(const Operation& op, const std::vector<std::string>& targets,
                     peer::v1::OperateRequest request, absl::Time until, bool relay_behind) const;
  absl::StatusOr<Reply> DescribeDatabase(const Fields& f) const;
  absl::StatusOr<Reply> DescribeAll(const Fields& f) const;
  absl::StatusOr<Reply> CreateTable(const Fields& f) const;
  absl::StatusOr<Reply> DescribeTable(const Fields& f) const;
  absl::StatusOr<Reply> DropTable(const Fields& f) const;
  absl::StatusOr<Reply> CreateAttribute(const Fields& f) const;
  absl::StatusOr<Reply> DropAttribute(const Fields& f) const;
  absl::StatusOr<Reply> Insert(const Fields& f) const;
  absl::StatusOr<Reply> Upsert(const Fields& f) const;
  absl::StatusOr<Reply> Update(const Fields& f) const;
  absl::StatusOr<Reply> Delete(const Fields& f) const;
  absl::StatusOr<Reply> SearchById(const Fields& f) const;
  absl::StatusOr<Reply> SearchByValue(const Fields& f) const;
  absl::StatusOr<Reply> SearchByConditions(const Fields& f) const;
  absl::StatusOr<Reply> AddNode(const Fields& f) const;
  absl::StatusOr<Reply> RemoveNode(const Fields& f) const;
  absl::StatusOr<Reply> ClusterStatus(const Fields& f) const;
  absl::StatusOr<Reply> Verify(const Fields& f) const;
  absl::StatusOr<Reply> CreateBackup(const Fields& f) const;
  absl::StatusOr<Reply> SetFault(const Fields& f) const;
  absl::StatusOr<Reply> ClearFault(const Fields& f) const;
  // How often an armed fault point was hit: lets a test see a request reach the point.
  absl::StatusOr<Reply> FaultHits(const Fields& f) const;
  absl::StatusOr<Reply> FaultProbes(const Fields& f) const;
  absl::StatusOr<Reply> SetClock(const Fields& f) const;
  absl::StatusOr<Reply> ReadRows(const Fields& f) const;
  absl::StatusOr<Reply> CutLink(const Fields& f) const;
  absl::StatusOr<Reply> RestoreLink(const Fields& f) const;
  // Users and roles (SPEC §7), ops_api_users.cc.
  absl::StatusOr<Reply> AddRole(const Fields& f) const;
  absl::StatusOr<Reply> AlterRole(const Fields& f) const;
  absl::StatusOr<Reply> DropRole(const Fields& f) const;
  absl::StatusOr<Reply> ListRoles(const Fields& f) const;
  absl::StatusOr<Reply> AddUser(const Fields& f) const;
  absl::StatusOr<Reply> AlterUser(const Fields& f) const;
  absl::StatusOr<Reply> DropUser(const Fields& f) const;
  absl::StatusOr<Reply> ListUsers(const Fields& f) const;
  absl::StatusOr<Reply> UserInfo(const Fields& f) const;
  absl::StatusOr<Reply> CreateAuthenticationTokens(const Fields& f) const;
  absl::StatusOr<Reply> RefreshOperationToken(const Fields& f) const;
  // A user or role as list_users, user_info and list_roles answer them (no password, no hash).
  static nlohmann::json RoleJson(const catalog::RoleDef& role);
  static nlohmann::json UserJson(const catalog::Principals& principals,
                                 const catalog::v1::UserRow& user);

  absl::StatusOr<Reply> Write(const Fields& f, catalog::WriteMode mode) const;
  // Design 0013, P10 (ops_api_confirm.cc): the confirmations a write of db.table asks for
  // (its `replicated_confirmation`, else the node's default) and the members that may give
  // them, this node excluded. BAD_REQUEST, before anything is written, when it asks for more
  // than there are (a node-local table has none).
  struct Confirmation {
    size_t needed = 0;
    std::vector<std::string> members;
  };
  absl::StatusOr<Confirmation> ConfirmationFor(const Fields& f, const std::string& db,
                                               const std::string& table) const;
  // Once the write ran: waits for `c` (no longer than --confirmation-timeout and the request's
  // deadline). OK, or CONFIRMATION_TIMEOUT naming the members that confirmed and what the
  // write did, which stays done.
  absl::Status AwaitConfirmation(const Confirmation& c, const std::string& db,
                                 const catalog::WriteResult& result, const std::string& message,
                                 const Fields& f) const;
  // U4 for a write of `records` to db.table in `mode`, and for a read of db.table
  // (`*get_attributes` becomes what the role may read; every `searched` attribute must be).
  absl::Status CheckWrite(const Fields& f, const std::string& db, const std::string& table,
                          const nlohmann::json& records, catalog::WriteMode mode) const;
  absl::Status CheckRead(const Fields& f, const std::string& db, const std::string& table,
                         std::vector<std::string>* get_attributes,
                         const std::vector<std::string>& searched) const;
  // describe_table's object for one table (Harper's fields plus ours), with the attributes
  // `access` sees (U4).
  absl::StatusOr<nlohmann::json> Describe(const catalog::TableDef& def, const Access& access) const;
  // A reply that streams, as a JSON array, the records `search` visits; with `key_order`
  // (get_attributes), each record's keys in that order.
  Reply StreamedArray(std::function<absl::Status(const catalog::RecordStore::Visitor&)> search,
                      std::string what, std::vector<std::string> key_order) const;
  // R10: the peers' answers as the drop response lists them.
  static nlohmann::json PeerDropStatuses(const std::vector<replication::PeerDropStatus>& peers);

  catalog::LocalNode* const node_;
  const OpsApiOptions options_;
  mutable std::atomic<uint64_t> forwarded_{0};
  mutable std::atomic<uint64_t> forward_schema_waits_{0};
};

}  // namespace cairn::node
