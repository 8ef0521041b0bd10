// The operations API's front (SPEC §5): a request parsed and checked, its operation found and
// called, errors answered. The operations are in ops_api_schema.cc (databases, tables,
// attributes), ops_api_records.cc (writes, searches) and ops_api_cluster.cc (membership,
// status, verify, backups, test hooks).
#include "node/ops_api.h"

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/clock.h"
#include "common/status.h"
#include "node/internal/ops_api_fields.h"
#include "spdlog/spdlog.h"

namespace cairn::node {
namespace internal {

absl::Status BadRequest(absl::string_view message) {
  return Error(ErrorCode::kBadRequest, message);
}

std::string JsonTypeName(const json& j) {
  return j.is_number_integer() ? "integer" : j.type_name();
}

json Message(absl::string_view text) { return json{{"message", std::string(text)}}; }

Reply JsonReply(const json& body) {
  Reply r;
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

// Declared with its contract in node/internal/ops_api_fields.h.
Reply WriteReply(const std::string& message, const char* key, catalog::WriteResult result,
                 catalog::WriteMode mode, bool is_delete, const OpsApiOptions& options) {
  json body = Message(message);
  const size_t written = result.written.size();
  body[key] = std::move(result.written);
  if (mode != catalog::WriteMode::kUpsert) body["skipped_hashes"] = std::move(result.skipped);
  if (!is_delete) {
    body["new_attributes"] = result.new_attributes;
    if (result.version != 0) body["txn_time"] = HybridClock::PhysicalMs(result.version);
  }
  if (options.enable_test_hooks && written > 0) {
    body["written_as"] = {{"version", result.version},
                          {"origin", options.node_name},
                          {"row_generation", result.row_generation},
                          {"replicate", result.replicate}};
  }
  Reply reply = JsonReply(body);
  reply.records_written = written;
  return reply;
}

}  // namespace internal
namespace {

using nlohmann::json;

// Deeper request bodies are refused before parsing builds them (records are limited further,
// to catalog::internal::kMaxRecordDepth, by the record store).
constexpr int kMaxBodyDepth = 100;

// The deepest nesting of arrays and objects in JSON text, counted without parsing (strings
// are skipped, escapes included). Malformed text gives some number; the parser rejects it.
int MaxNestingDepth(absl::string_view text) {
  int depth = 0, max_depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

}  // namespace

using internal::BadRequest;
using internal::JsonTypeName;

Reply ErrorReply(const absl::Status& status) {
  Reply r;
  r.status = HttpStatusFor(status);
  const ErrorCode code = GetErrorCode(status);
  r.error_code = std::string(ErrorCodeName(code));
  std::string message(status.message());
  if (message.empty()) message = status.ToString();
  json body = json::object();
  body["error"] = message;
  // Harper's extra members (WithDetails) beside the message and our code.
  if (const std::string details = DetailsOf(status); !details.empty()) {
    json extra = json::parse(details, nullptr, /*allow_exceptions=*/false);
    if (extra.is_object()) {
      for (auto& [key, value] : extra.items()) {
        if (key != "error" && key != "code") body[key] = std::move(value);
      }
    }
  }
  body["code"] = r.error_code;
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

OpsApi::OpsApi(catalog::LocalNode* node, OpsApiOptions options)
    : node_(node), options_(std::move(options)) {}

const std::vector<OpsApi::Operation>& OpsApi::Operations() {
  static const auto* ops = new std::vector<Operation>{
      {"create_database", &OpsApi::CreateDatabase, false},
      {"create_schema", &OpsApi::CreateDatabase, false},  // Harper's older name
      {"drop_database", &OpsApi::DropDatabase, false},
      {"alter_database", &OpsApi::AlterDatabase, false},  // design 0013, P6
      {"drop_schema", &OpsApi::DropDatabase, false},      // Harper's older name
      {"describe_database", &OpsApi::DescribeDatabase, false},
      {"describe_schema", &OpsApi::DescribeDatabase, false},  // Harper's older name
      {"describe_all", &OpsApi::DescribeAll, false},
      {"create_table", &OpsApi::CreateTable, false},
      {"describe_table", &OpsApi::DescribeTable, false},
      {"drop_table", &OpsApi::DropTable, false},
      {"create_attribute", &OpsApi::CreateAttribute, false},
      {"drop_attribute", &OpsApi::DropAttribute, false},
      {"insert", &OpsApi::Insert, false},
      {"upsert", &OpsApi::Upsert, false},
      {"update", &OpsApi::Update, false},
      {"delete", &OpsApi::Delete, false},
      {"search_by_id", &OpsApi::SearchById, false},
      {"search_by_hash", &OpsApi::SearchById, false},  // Harper's older name
      {"search_by_value", &OpsApi::SearchByValue, false},
      {"search_by_conditions", &OpsApi::SearchByConditions, false},
      // Cluster operations and test hooks: super users only (U4).
      {"add_node", &OpsApi::AddNode, false, "add_node"},
      {"remove_node", &OpsApi::RemoveNode, false, "remove_node"},
      {"cluster_status", &OpsApi::ClusterStatus, false, "cluster_status"},
      {"verify", &OpsApi::Verify, false, "verify"},
      {"create_backup", &OpsApi::CreateBackup, false, "create_backup"},
      {"set_fault", &OpsApi::SetFault, true, "set_fault"},
      {"clear_fault", &OpsApi::ClearFault, true, "clear_fault"},
      {"fault_hits", &OpsApi::FaultHits, true, "fault_hits"},
      {"fault_probes", &OpsApi::FaultProbes, true, "fault_probes"},
      {"set_clock", &OpsApi::SetClock, true, "set_clock"},
      {"read_rows", &OpsApi::ReadRows, true, "read_rows"},
      {"cut_link", &OpsApi::CutLink, true, "cut_link"},
      {"restore_link", &OpsApi::RestoreLink, true, "restore_link"},
      // Users and roles (SPEC §7): super users only, named as Harper's messages name them,
      // but for what a user may do for itself.
      {"add_role", &OpsApi::AddRole, false, "addRole"},
      {"alter_role", &OpsApi::AlterRole, false, "alterRole"},
      {"drop_role", &OpsApi::DropRole, false, "dropRole"},
      {"list_roles", &OpsApi::ListRoles, false, "listRoles"},
      {"add_user", &OpsApi::AddUser, false, "addUser"},
      {"alter_user", &OpsApi::AlterUser, false, "alterUser"},
      {"drop_user", &OpsApi::DropUser, false, "dropUser"},
      {"list_users", &OpsApi::ListUsers, false, "listUsersExternal"},
      {"user_info", &OpsApi::UserInfo, false},
      {"create_authentication_tokens", &OpsApi::CreateAuthenticationTokens, false},
      {"refresh_operation_token", &OpsApi::RefreshOperationToken, false},
  };
  return *ops;
}

namespace {

// Why `body` is not JSON, in words a client can act on: the parser's message, after the field
// it was in ("records[].n: number overflow parsing '1e400'"). Runs only after a failed parse.
// Never throws: the SAX interface reports errors instead (a number out of range included,
// which json::parse throws as out_of_range, not parse_error).
std::string WhyMalformed(absl::string_view body) {
  class Sax : public json::json_sax_t {
   public:
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override {
      path_.emplace_back();
      return true;
    }
    bool key(string_t& k) override {
      path_.back() = k;
      return true;
    }
    bool end_object() override {
      path_.pop_back();
      return true;
    }
    bool start_array(std::size_t) override {
      path_.emplace_back("[]");
      return true;
    }
    bool end_array() override {
      path_.pop_back();
      return true;
    }
    bool parse_error(std::size_t, const std::string&, const json::exception& e) override {
      std::string field;
      for (const std::string& part : path_) {
        if (part.empty()) continue;
        if (!field.empty() && part != "[]") field += ".";
        field += part;
      }
      why = field.empty() ? std::string(e.what()) : absl::StrCat(field, ": ", e.what());
      return false;
    }
    std::string why = "malformed JSON";

   private:
    std::vector<std::string> path_;
  };
  Sax sax;
  json::sax_parse(body.begin(), body.end(), &sax, json::input_format_t::json, /*strict=*/true);
  return absl::StrCat("malformed JSON: ", sax.why);
}

}  // namespace

namespace {

// A request's own deadline, `timeout_ms` from now, at most the node's --operation-timeout
// (issue 41).
absl::Status TightenDeadline(const json& request, absl::Duration most, Deadline* deadline) {
  auto t = request.find("timeout_ms");
  if (t == request.end() || t->is_null()) return absl::OkStatus();
  const int64_t max_ms = absl::ToInt64Milliseconds(most);
  if (!t->is_number_integer() || (t->is_number_unsigned() && t->get<uint64_t>() > INT64_MAX) ||
      t->get<int64_t>() < 1 || t->get<int64_t>() > max_ms) {
    return BadRequest(absl::StrCat("'timeout_ms' must be an integer from 1 to ", max_ms,
                                   " (the node's --operation-timeout)"));
  }
  if (deadline != nullptr) deadline->Tighten(absl::Now() + absl::Milliseconds(t->get<int64_t>()));
  return absl::OkStatus();
}

}  // namespace

Reply OpsApi::Handle(absl::string_view body, const Caller& caller, Deadline* deadline) const {
  if (MaxNestingDepth(body) > kMaxBodyDepth) {
    return ErrorReply(
        BadRequest(absl::StrCat("body nests deeper than ", kMaxBodyDepth, " levels")));
  }
  json request = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded()) {
    return ErrorReply(BadRequest(WhyMalformed(body)));
  }
  if (!request.is_object()) {
    return ErrorReply(
        BadRequest(absl::StrCat("the body must be a JSON object, not ", JsonTypeName(request))));
  }
  if (absl::Status s = TightenDeadline(request, options_.operation_timeout, deadline); !s.ok()) {
    return ErrorReply(s);
  }
  Fields fields(request, caller, deadline);
  absl::StatusOr<std::string> name = fields.String("operation");
  if (!name.ok()) return ErrorReply(name.status());
  const Operation* op = nullptr;
  for (const Operation& candidate : Operations()) {
    if (*name == candidate.name) op = &candidate;
  }
  if (op == nullptr) {
    return ErrorReply(BadRequest(absl::StrCat("unknown operation '", *name, "'")));
  }
  Reply reply;
  absl::Status admitted = Admit(*op, fields);
  if (admitted.ok() && !caller.forwarded_by.empty()) {
    admitted = RefuseNodeLocalForwarded(fields);  // C11, design 0013 P4
  }
  if (!admitted.ok()) {
    if (GetErrorCode(admitted) == ErrorCode::kForbidden && options_.audit != nullptr) {
      options_.audit->Refused(caller, op->name, admitted.message());
    }
    reply = ErrorReply(admitted);
  } else {
    // Decision 156: every admitted request but a verify (itself background work, asked for)
    // is foreground work that verifies and strips give way to.
    if (op->handler != &OpsApi::Verify) node_->activity.Note(absl::Now());
    absl::StatusOr<Reply> result;
    try {
      result = (this->*(op->handler))(fields);
    } catch (const std::exception& e) {
      // Only a bug gets here (the JSON library throws on misuse): answer 500, keep serving.
      result = Error(ErrorCode::kInternal, absl::StrCat(op->name, ": ", e.what()));
    }
    if (!result.ok() && GetErrorCode(result.status()) == ErrorCode::kNotAMember &&
        caller.forwarded_by.empty()) {
      result = ForwardToMember(*op, body, fields, result.status());  // design 0013, P4
    }
    if (result.ok()) {
      reply = *std::move(result);
    } else {
      if (GetErrorCode(result.status()) == ErrorCode::kInternal) {
        spdlog::error("[{}] {} failed: {}", options_.node_name, op->name,
                      result.status().ToString());
      } else if (GetErrorCode(result.status()) == ErrorCode::kForbidden &&
                 options_.audit != nullptr) {
        // U8: a role's refusal found by the handler (a table, an attribute, a database).
        options_.audit->Refused(
            caller, op->name,
            absl::StrCat(result.status().message(), " ", DetailsOf(result.status())));
      }
      reply = ErrorReply(result.status());
    }
  }
  reply.operation = op->name;
  return reply;
}

absl::Status OpsApi::Admit(const Operation& op, const Fields& f) const {
  const Caller& caller = f.caller();
  const absl::string_view name = op.name;
  // A request without credentials may only ask for tokens; a refresh token only refreshes.
  if (caller.kind == Caller::Kind::kAnonymous && name != "create_authentication_tokens") {
    return Error(ErrorCode::kUnauthorized, "Must login");
  }
  if (caller.kind == Caller::Kind::kRefreshToken && name != "refresh_operation_token") {
    return Error(ErrorCode::kUnauthorized, "invalid token");
  }
  if (op.test_hook && !options_.enable_test_hooks) {
    return Error(
        ErrorCode::kForbidden,
        absl::StrCat("'", name,
                     "' is a test hook; start the node with --enable-test-hooks to use it"));
  }
  if (op.super_user_as != nullptr) return f.access().SuperUser(op.super_user_as);
  return absl::OkStatus();
}

}  // namespace cairn::node
