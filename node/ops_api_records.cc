// The operations API: record writes and searches (SPEC §5; D1-D7).
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "node/access.h"
#include "node/internal/ops_api_fields.h"
#include "node/ops_api.h"
#include "spdlog/spdlog.h"

namespace cairn::node {

using internal::BadRequest;
using internal::WriteReply;

namespace {

// A streamed answer is handed to the socket in pieces of about this size.
constexpr size_t kStreamChunkBytes = 64 << 10;

// Every attribute a condition (or a group's conditions) names.
void CollectAttributes(const catalog::Condition& c, std::vector<std::string>* out) {
  if (!c.is_group()) out->push_back(c.attribute);
  for (const catalog::Condition& child : c.children) CollectAttributes(child, out);
}

}  // namespace

absl::Status OpsApi::CheckWrite(const Fields& f, const std::string& db, const std::string& table,
                                const json& records, catalog::WriteMode mode) const {
  const Access& access = f.access();
  if (access.unrestricted()) return absl::OkStatus();
  // Harper: an upsert needs both insert and update.
  auto check = [&](std::initializer_list<Action> actions) -> absl::Status {
    CAIRN_RETURN_IF_ERROR(access.Table(db, table, actions));
    CAIRN_ASSIGN_OR_RETURN(catalog::TableRef def, node_->catalog->Snapshot()->FindTable(db, table));
    return access.Write(*def, records, actions);
  };
  switch (mode) {
    case catalog::WriteMode::kInsert:
      return check({Action::kInsert});
    case catalog::WriteMode::kUpdate:
      return check({Action::kUpdate});
    case catalog::WriteMode::kUpsert:
      return check({Action::kInsert, Action::kUpdate});
  }
  return absl::OkStatus();
}

absl::Status OpsApi::CheckRead(const Fields& f, const std::string& db, const std::string& table,
                               std::vector<std::string>* get_attributes,
                               const std::vector<std::string>& searched) const {
  const Access& access = f.access();
  if (access.unrestricted()) return absl::OkStatus();
  CAIRN_RETURN_IF_ERROR(access.Table(db, table, {Action::kRead}));
  CAIRN_ASSIGN_OR_RETURN(catalog::TableRef def, node_->catalog->Snapshot()->FindTable(db, table));
  return access.Read(*def, get_attributes, searched);
}

absl::StatusOr<Reply> OpsApi::Insert(const Fields& f) const {
  return Write(f, catalog::WriteMode::kInsert);
}
absl::StatusOr<Reply> OpsApi::Upsert(const Fields& f) const {
  return Write(f, catalog::WriteMode::kUpsert);
}
absl::StatusOr<Reply> OpsApi::Update(const Fields& f) const {
  return Write(f, catalog::WriteMode::kUpdate);
}

absl::StatusOr<Reply> OpsApi::Write(const Fields& f, catalog::WriteMode mode) const {
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database(/*required=*/false, /*records=*/true));
  CAIRN_ASSIGN_OR_RETURN(std::string table, f.Table(/*records=*/true));
  CAIRN_ASSIGN_OR_RETURN(const json* records, f.Array("records"));
  CAIRN_RETURN_IF_ERROR(CheckWrite(f, db, table, *records, mode));  // U4, before any work
  // Issue 41: a request whose time is up while it waited writes nothing; once begun, the
  // write is one batch and completes.
  CAIRN_RETURN_IF_ERROR(f.CheckWriteDeadline());
  CAIRN_ASSIGN_OR_RETURN(const Confirmation confirmation, ConfirmationFor(f, db, table));  // P10
  std::optional<replication::Cluster::ConfirmScope> confirming;
  if (confirmation.needed > 0) confirming.emplace(options_.cluster, db);
  CAIRN_ASSIGN_OR_RETURN(catalog::WriteResult result,
                         node_->records->Write(db, table, *records, mode));
  const char* verb = "inserted";
  const char* key = "inserted_hashes";
  if (mode == catalog::WriteMode::kUpsert) {
    verb = "upserted";
    key = "upserted_hashes";
  } else if (mode == catalog::WriteMode::kUpdate) {
    verb = "updated";
    key = "update_hashes";  // sic: Harper's name
  }
  const std::string message =
      absl::StrCat(verb, " ", result.written.size(), " of ", records->size(), " records");
  CAIRN_RETURN_IF_ERROR(AwaitConfirmation(confirmation, db, result, message, f));
  return WriteReply(message, key, std::move(result), mode, /*is_delete=*/false, options_);
}

absl::StatusOr<Reply> OpsApi::Delete(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database(/*required=*/false, /*records=*/true));
  CAIRN_ASSIGN_OR_RETURN(std::string table, f.Table(/*records=*/true));
  CAIRN_ASSIGN_OR_RETURN(const json* ids, f.Array("ids", "hash_values"));
  CAIRN_RETURN_IF_ERROR(f.access().Table(db, table, {Action::kDelete}));  // U4
  CAIRN_RETURN_IF_ERROR(f.CheckWriteDeadline());                          // issue 41, as Write
  CAIRN_ASSIGN_OR_RETURN(const Confirmation confirmation, ConfirmationFor(f, db, table));  // P10
  std::optional<replication::Cluster::ConfirmScope> confirming;
  if (confirmation.needed > 0) confirming.emplace(options_.cluster, db);
  CAIRN_ASSIGN_OR_RETURN(catalog::WriteResult result, node_->records->Delete(db, table, *ids));
  const std::string message =
      absl::StrCat(result.written.size(), " of ", ids->size(),
                   ids->size() == 1 ? " record" : " records", " successfully deleted");
  CAIRN_RETURN_IF_ERROR(AwaitConfirmation(confirmation, db, result, message, f));
  return WriteReply(message, "deleted_hashes", std::move(result), catalog::WriteMode::kUpdate,
                    /*is_delete=*/true, options_);
}

absl::StatusOr<Reply> OpsApi::SearchById(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database(/*required=*/false, /*records=*/true));
  CAIRN_ASSIGN_OR_RETURN(std::string table, f.Table(/*records=*/true));
  CAIRN_ASSIGN_OR_RETURN(const json* ids_field, f.Array("ids", "hash_values"));
  catalog::SearchOptions options;
  options.deadline = f.deadline();  // issue 41: every row read checks it
  options.max_sort_bytes = options_.max_sort_bytes;
  CAIRN_ASSIGN_OR_RETURN(options.get_attributes, f.GetAttributes());
  CAIRN_RETURN_IF_ERROR(CheckRead(f, db, table, &options.get_attributes, {}));  // U4
  catalog::RecordStore* records = node_->records.get();
  options.validate_only = true;
  CAIRN_RETURN_IF_ERROR(records->SearchById(db, table, *ids_field, options, nullptr));
  options.validate_only = false;
  return StreamedArray(
      [=, ids = *ids_field](const catalog::RecordStore::Visitor& visit) {
        return records->SearchById(db, table, ids, options, visit);
      },
      absl::StrCat("search_by_id on ", db, ".", table), options.get_attributes);
}

absl::StatusOr<Reply> OpsApi::SearchByConditions(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database(/*required=*/false, /*records=*/true));
  CAIRN_ASSIGN_OR_RETURN(std::string table, f.Table(/*records=*/true));
  CAIRN_ASSIGN_OR_RETURN(const json* conditions, f.Array("conditions"));
  if (conditions->empty()) return BadRequest("'conditions' must contain at least 1 items");
  CAIRN_ASSIGN_OR_RETURN(
      catalog::ConditionSearch search,
      catalog::ParseConditionSearch(*conditions, f.Find("operator"), f.Find("sort")));
  catalog::SearchOptions options;
  options.deadline = f.deadline();  // issue 41: every row read checks it
  options.max_sort_bytes = options_.max_sort_bytes;
  CAIRN_ASSIGN_OR_RETURN(options.get_attributes, f.GetAttributes());
  CAIRN_ASSIGN_OR_RETURN(options.limit, f.Count("limit"));
  CAIRN_ASSIGN_OR_RETURN(options.offset, f.Count("offset"));
  CAIRN_ASSIGN_OR_RETURN(options.reverse, f.Bool("reverse", false));
  std::vector<std::string> searched;
  CollectAttributes(search.root, &searched);
  for (const catalog::SortKey& k : search.sort) searched.push_back(k.attribute);
  CAIRN_RETURN_IF_ERROR(CheckRead(f, db, table, &options.get_attributes, searched));  // U4
  catalog::RecordStore* records = node_->records.get();
  options.validate_only = true;
  CAIRN_RETURN_IF_ERROR(records->SearchByConditions(db, table, search, options, nullptr));
  options.validate_only = false;
  return StreamedArray(
      [=, search = std::move(search)](const catalog::RecordStore::Visitor& visit) {
        return records->SearchByConditions(db, table, search, options, visit);
      },
      absl::StrCat("search_by_conditions on ", db, ".", table), options.get_attributes);
}

absl::StatusOr<Reply> OpsApi::SearchByValue(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database(/*required=*/false, /*records=*/true));
  CAIRN_ASSIGN_OR_RETURN(std::string table, f.Table(/*records=*/true));
  CAIRN_ASSIGN_OR_RETURN(std::string attribute, f.String("attribute", "search_attribute"));
  const json* value_field = f.Find("value", "search_value");
  if (value_field == nullptr) return Fields::Required("value");
  catalog::SearchOptions options;
  options.deadline = f.deadline();  // issue 41: every row read checks it
  options.max_sort_bytes = options_.max_sort_bytes;
  CAIRN_ASSIGN_OR_RETURN(options.get_attributes, f.GetAttributes());
  CAIRN_ASSIGN_OR_RETURN(options.limit, f.Count("limit"));
  CAIRN_ASSIGN_OR_RETURN(options.offset, f.Count("offset"));
  // Harper's `desc` is the older name of `reverse`.
  CAIRN_ASSIGN_OR_RETURN(options.reverse,
                         f.Bool(f.Find("reverse") != nullptr ? "reverse" : "desc", false));
  CAIRN_RETURN_IF_ERROR(CheckRead(f, db, table, &options.get_attributes, {attribute}));  // U4
  catalog::RecordStore* records = node_->records.get();
  options.validate_only = true;
  CAIRN_RETURN_IF_ERROR(
      records->SearchByValue(db, table, attribute, *value_field, options, nullptr));
  options.validate_only = false;
  return StreamedArray(
      [=, value = *value_field](const catalog::RecordStore::Visitor& visit) {
        return records->SearchByValue(db, table, attribute, value, options, visit);
      },
      absl::StrCat("search_by_value on ", db, ".", table), options.get_attributes);
}

// Both searches stream their answer: a table of any size is never built whole in memory
// (SPEC §5). Everything the search can refuse was checked (validate_only) before this, so
// those errors got a proper status; a failure now can only cut the body short.
Reply OpsApi::StreamedArray(
    std::function<absl::Status(const catalog::RecordStore::Visitor&)> search, std::string what,
    std::vector<std::string> key_order) const {
  // Harper answers a get_attributes list with its keys in the list's order.
  if (std::find(key_order.begin(), key_order.end(), "*") != key_order.end()) key_order.clear();
  {
    absl::flat_hash_set<std::string> named;  // a name given twice keeps its first place
    std::vector<std::string> once;
    for (std::string& key : key_order) {
      if (named.insert(key).second) once.push_back(std::move(key));
    }
    key_order = std::move(once);
  }
  Reply reply;
  reply.stream =
      [search = std::move(search), what = std::move(what), key_order = std::move(key_order),
       node_name = options_.node_name](const std::function<bool(absl::string_view)>& write) {
        std::string chunk = "[";
        bool first = true, client_gone = false, sent_first = false;
        absl::Status s = search([&](const json& record) {
          if (!first) chunk.push_back(',');
          first = false;
          if (key_order.empty() || !record.is_object()) {
            chunk += record.dump(-1, ' ', false, json::error_handler_t::replace);
          } else {
            chunk.push_back('{');
            bool first_key = true;
            for (const std::string& key : key_order) {
              auto it = record.find(key);
              if (it == record.end()) continue;
              if (!first_key) chunk.push_back(',');
              first_key = false;
              chunk += json(key).dump(-1, ' ', false, json::error_handler_t::replace);
              chunk.push_back(':');
              chunk += it->dump(-1, ' ', false, json::error_handler_t::replace);
            }
            chunk.push_back('}');
          }
          // The first row goes out at once (a client sees the answer start), then 64 KiB at a
          // time.
          if (chunk.size() >= kStreamChunkBytes || !sent_first) {
            sent_first = true;
            client_gone = !write(chunk);
            chunk.clear();
          }
          return !client_gone;
        });
        if (client_gone) return Error(ErrorCode::kRequestTimeout, "the client left");
        if (!s.ok()) {
          if (sent_first && GetErrorCode(s) != ErrorCode::kRequestTimeout) {
            spdlog::warn("[{}] {} stopped mid-answer: {}", node_name, what, s.ToString());
          }
          return s;
        }
        chunk.push_back(']');
        if (!write(chunk)) return Error(ErrorCode::kRequestTimeout, "the client left");
        return absl::OkStatus();
      };
  return reply;
}

}  // namespace cairn::node
