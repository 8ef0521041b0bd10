#include "node/ops_api.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "catalog/names.h"
#include "catalog/schema.h"
#include "common/clock.h"
#include "common/status.h"
#include "node/backup.h"
#include "node/config.h"
#include "replication/link_session.h"
#include "spdlog/spdlog.h"
#include "storage/value_codec.h"

namespace cairn::node {
namespace {

using nlohmann::json;

// Deeper request bodies are refused before parsing builds them (records are limited further,
// to catalog::internal::kMaxRecordDepth, by the record store).
constexpr int kMaxBodyDepth = 100;
// A streamed answer is handed to the socket in pieces of about this size.
constexpr size_t kStreamChunkBytes = 64 << 10;

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

// Harper's answer to a write: {"message", <key>: written keys, "skipped_hashes", ...}.
// With test hooks, "written_as" adds each written record's stamps (D4, D7) for the cluster
// checker's model: the full HLC, which txn_time (ms) rounds away.
// The answer of a write, in Harper's shape: `key` lists what was written; `skipped_hashes`
// what was not, except for an upsert (it skips nothing, and Harper's answer has no such key);
// a delete answers only those three keys (Harper's tests compare the whole object).
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

}  // namespace

Reply ErrorReply(const absl::Status& status) {
  Reply r;
  r.status = HttpStatusFor(status);
  const ErrorCode code = GetErrorCode(status);
  r.error_code = std::string(ErrorCodeName(code));
  std::string message(status.message());
  if (message.empty()) message = status.ToString();
  r.body = json{{"error", message}, {"code", r.error_code}}.dump(-1, ' ', false,
                                                                 json::error_handler_t::replace);
  return r;
}

// The request body's fields, read by name with their Harper aliases. Every accessor answers
// BAD_REQUEST naming the field when it is missing or of the wrong type, and INVALID_NAME for
// a name that breaks C13.
class OpsApi::Fields {
 public:
  explicit Fields(const json& body) : body_(body) {}

  // The value at `name` (or `alias`); null when absent.
  const json* Find(absl::string_view name, absl::string_view alias = {}) const {
    return Find(name, alias, nullptr);
  }
  // Same; `*used` is the key found (what a message about the field names, as Harper's do).
  const json* Find(absl::string_view name, absl::string_view alias, std::string* used) const {
    for (absl::string_view key : {name, alias}) {
      if (key.empty()) continue;
      auto it = body_.find(std::string(key));
      if (it == body_.end()) continue;
      if (used != nullptr) *used = std::string(key);
      return &*it;
    }
    return nullptr;
  }

  // Harper's words for a field that is missing or of the wrong type.
  static absl::Status Required(absl::string_view name) {
    return BadRequest(absl::StrCat("'", name, "' is required"));
  }

  absl::StatusOr<std::string> String(absl::string_view name, absl::string_view alias = {}) const {
    std::string used;
    const json* v = Find(name, alias, &used);
    if (v == nullptr) return Required(name);
    if (!v->is_string()) return BadRequest(absl::StrCat("'", used, "' must be a string"));
    return v->get<std::string>();
  }

  absl::StatusOr<bool> Bool(absl::string_view name, bool default_value) const {
    const json* v = Find(name);
    if (v == nullptr || v->is_null()) return default_value;
    if (!v->is_boolean()) {
      return BadRequest(absl::StrCat("'", name, "' must be true or false, not ", JsonTypeName(*v)));
    }
    return v->get<bool>();
  }

  absl::StatusOr<uint64_t> Count(absl::string_view name) const {
    const json* v = Find(name);
    if (v == nullptr || v->is_null()) return 0;
    if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<int64_t>() >= 0)) {
      return BadRequest(absl::StrCat("'", name, "' must be a non-negative integer"));
    }
    return v->get<uint64_t>();
  }

  absl::StatusOr<const json*> Array(absl::string_view name, absl::string_view alias = {}) const {
    std::string used;
    const json* v = Find(name, alias, &used);
    if (v == nullptr) return Required(name);
    if (!v->is_array()) return BadRequest(absl::StrCat("'", used, "' must be an array"));
    return v;
  }

  // `database` (alias `schema`); Harper's default database "data" when absent, unless the
  // operation is about the database itself (`required`). `records`: an operation on records,
  // which takes an integer for a name as its decimal text, as Harper does (`"schema": 123`).
  // A name of the wrong type is refused in Harper's words, which call the database 'schema'
  // and list a wrong table too ("'schema' must be a string. 'table' must be a string").
  absl::StatusOr<std::string> Database(bool required = false, bool records = false) const {
    const json* v = Find("database", "schema");
    if (v == nullptr) {
      if (required) return Required("database");
      return std::string("data");
    }
    std::string db;
    if (!NameOf(*v, records, &db)) {
      std::string message = "'schema' must be a string";
      const json* table = Find("table");
      std::string unused;
      if (table != nullptr && !NameOf(*table, records, &unused)) {
        absl::StrAppend(&message, ". 'table' must be a string");
      }
      return BadRequest(message);
    }
    CAIRN_RETURN_IF_ERROR(catalog::ValidateDatabaseName(db));
    return db;
  }

  absl::StatusOr<std::string> Table(bool records = false) const {
    const json* v = Find("table");
    if (v == nullptr) return Required("table");
    std::string table;
    if (!NameOf(*v, records, &table)) return BadRequest("'table' must be a string");
    CAIRN_RETURN_IF_ERROR(catalog::ValidateTableName(table));
    return table;
  }

  // A name's text: a string, or with `numbers` an integer's decimal text.
  static bool NameOf(const json& v, bool numbers, std::string* out) {
    if (v.is_string()) {
      *out = v.get<std::string>();
      return true;
    }
    int64_t n = 0;
    if (numbers && v.is_number_integer() && storage::ExactInt64(v, &n)) {
      *out = absl::StrCat(n);
      return true;
    }
    return false;
  }

  absl::StatusOr<std::string> Attribute(absl::string_view name, absl::string_view alias) const {
    CAIRN_ASSIGN_OR_RETURN(std::string attribute, String(name, alias));
    CAIRN_RETURN_IF_ERROR(catalog::ValidateAttributeName(attribute));
    return attribute;
  }

  // get_attributes: an array of attribute names; absent means every attribute.
  absl::StatusOr<std::vector<std::string>> GetAttributes() const {
    std::vector<std::string> out;
    const json* v = Find("get_attributes");
    if (v == nullptr || v->is_null()) return out;
    if (!v->is_array()) return BadRequest("'get_attributes' must be an array");
    for (const json& a : *v) {
      if (!a.is_string()) return BadRequest("'get_attributes' must be an array of attribute names");
      out.push_back(a.get<std::string>());
    }
    return out;
  }

 private:
  const json& body_;
};

OpsApi::OpsApi(catalog::LocalNode* node, OpsApiOptions options)
    : node_(node), options_(std::move(options)) {}

const std::vector<OpsApi::Operation>& OpsApi::Operations() {
  static const auto* ops = new std::vector<Operation>{
      {"create_database", &OpsApi::CreateDatabase, false},
      {"create_schema", &OpsApi::CreateDatabase, false},  // Harper's older name
      {"drop_database", &OpsApi::DropDatabase, false},
      {"drop_schema", &OpsApi::DropDatabase, false},  // Harper's older name
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
      {"add_node", &OpsApi::AddNode, false},
      {"remove_node", &OpsApi::RemoveNode, false},
      {"cluster_status", &OpsApi::ClusterStatus, false},
      {"verify", &OpsApi::Verify, false},
      {"create_backup", &OpsApi::CreateBackup, false},
      {"set_fault", &OpsApi::SetFault, true},
      {"clear_fault", &OpsApi::ClearFault, true},
      {"fault_hits", &OpsApi::FaultHits, true},
      {"fault_probes", &OpsApi::FaultProbes, true},
      {"set_clock", &OpsApi::SetClock, true},
      {"read_rows", &OpsApi::ReadRows, true},
      {"cut_link", &OpsApi::CutLink, true},
      {"restore_link", &OpsApi::RestoreLink, true},
  };
  return *ops;
}

std::vector<std::string> OpsApi::OperationNames() {
  std::vector<std::string> names;
  for (const Operation& op : Operations()) names.push_back(op.name);
  return names;
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

Reply OpsApi::Handle(absl::string_view body) const {
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
  Fields fields(request);
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
  if (op->test_hook && !options_.enable_test_hooks) {
    reply = ErrorReply(
        Error(ErrorCode::kForbidden, absl::StrCat("'", op->name,
                                                  "' is a test hook; start the node with "
                                                  "--enable-test-hooks to use it")));
  } else {
    absl::StatusOr<Reply> result;
    try {
      result = (this->*(op->handler))(fields);
    } catch (const std::exception& e) {
      // Only a bug gets here (the JSON library throws on misuse): answer 500, keep serving.
      result = Error(ErrorCode::kInternal, absl::StrCat(op->name, ": ", e.what()));
    }
    if (result.ok()) {
      reply = *std::move(result);
    } else {
      if (GetErrorCode(result.status()) == ErrorCode::kInternal) {
        spdlog::error("[{}] {} failed: {}", options_.node_name, op->name,
                      result.status().ToString());
      }
      reply = ErrorReply(result.status());
    }
  }
  reply.operation = op->name;
  return reply;
}

// ---- Databases and tables.

absl::StatusOr<Reply> OpsApi::CreateDatabase(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database(/*required=*/true));
  CAIRN_RETURN_IF_ERROR(node_->catalog->CreateDatabase(db));
  return JsonReply(Message(absl::StrCat("database '", db, "' successfully created")));
}

absl::StatusOr<Reply> OpsApi::DropDatabase(const Fields& f) const {
  // SPEC R9: a client's `replicatedFrom` / `dropped_time` are never read; this is a local
  // drop, stamped here.
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database(/*required=*/true));
  CAIRN_ASSIGN_OR_RETURN(bool replicated, f.Bool("replicated", true));
  CAIRN_ASSIGN_OR_RETURN(catalog::DropResult dropped,
                         node_->catalog->DropDatabase(db, /*timed=*/replicated));
  json body = Message(absl::StrCat("successfully deleted '", db, "'"));
  body["replicated"] = json::array();
  if (dropped.timed && options_.cluster != nullptr) {
    body["replicated"] = PeerDropStatuses(
        options_.cluster->ForwardDropDatabase(db, dropped.dropped_time, dropped.tables));
  }
  return JsonReply(body);
}

absl::StatusOr<Reply> OpsApi::DescribeDatabase(const Fields& f) const {
  // Harper's default database when absent, as for tables (creating and dropping a database
  // still name it: a default there would act on "data" by accident).
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database());
  catalog::SnapshotRef snap = node_->catalog->Snapshot();
  const catalog::DatabaseDef* d = snap->FindDatabase(db);
  if (d == nullptr) {
    return Error(ErrorCode::kDatabaseNotFound, absl::StrCat("database '", db, "' does not exist"));
  }
  json body = json::object();
  for (const auto& [name, def] : d->tables) {
    CAIRN_ASSIGN_OR_RETURN(body[name], Describe(*def));
  }
  return JsonReply(body);
}

absl::StatusOr<Reply> OpsApi::DescribeAll(const Fields&) const {
  catalog::SnapshotRef snap = node_->catalog->Snapshot();
  json body = json::object();
  for (const auto& [db, d] : snap->databases) {
    json tables = json::object();
    for (const auto& [name, def] : d->tables) {
      CAIRN_ASSIGN_OR_RETURN(tables[name], Describe(*def));
    }
    body[db] = std::move(tables);
  }
  return JsonReply(body);
}

absl::StatusOr<Reply> OpsApi::CreateTable(const Fields& f) const {
  catalog::TableSpec spec;
  CAIRN_ASSIGN_OR_RETURN(spec.database, f.Database());
  CAIRN_ASSIGN_OR_RETURN(spec.table, f.Table());
  CAIRN_ASSIGN_OR_RETURN(spec.primary_key, f.Attribute("primary_key", "hash_attribute"));
  CAIRN_ASSIGN_OR_RETURN(spec.replicate, f.Bool("replicate", true));
  CAIRN_ASSIGN_OR_RETURN(spec.sealed, f.Bool("sealed", false));
  if (const json* attributes = f.Find("attributes"); attributes != nullptr) {
    if (!attributes->is_array()) return BadRequest("'attributes' must be an array");
    spec.attributes.emplace();
    for (size_t i = 0; i < attributes->size(); ++i) {
      const json& a = (*attributes)[i];
      const std::string where = absl::StrCat("attributes[", i, "]");
      if (!a.is_object()) return BadRequest(absl::StrCat(where, " must be an object"));
      Fields af(a);
      catalog::AttributeSpec attribute;
      CAIRN_ASSIGN_OR_RETURN(attribute.name, af.Attribute("name", "attribute"));
      if (af.Find("type") != nullptr) {
        CAIRN_ASSIGN_OR_RETURN(std::string type, af.String("type"));
        auto parsed = catalog::ParseAttributeType(type);
        if (!parsed.ok()) return Annotate(parsed.status(), where);
        attribute.type = *parsed;
      }
      CAIRN_ASSIGN_OR_RETURN(attribute.indexed, af.Bool("indexed", false));
      spec.attributes->push_back(std::move(attribute));
    }
  }
  CAIRN_RETURN_IF_ERROR(node_->catalog->CreateTable(spec).status());
  return JsonReply(
      Message(absl::StrCat("table '", spec.database, ".", spec.table, "' successfully created.")));
}

absl::StatusOr<Reply> OpsApi::DescribeTable(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database());
  CAIRN_ASSIGN_OR_RETURN(std::string table, f.Table());
  CAIRN_ASSIGN_OR_RETURN(catalog::TableRef def, node_->catalog->Snapshot()->FindTable(db, table));
  CAIRN_ASSIGN_OR_RETURN(json body, Describe(*def));
  return JsonReply(body);
}

absl::StatusOr<json> OpsApi::Describe(const catalog::TableDef& def) const {
  json attributes = json::array();
  for (const catalog::AttributeDef& a : def.attributes()) {
    attributes.push_back({{"attribute", a.name},
                          {"type", std::string(catalog::AttributeTypeName(a.type))},
                          {"indexed", a.indexed || a.is_primary_key},
                          {"is_primary_key", a.is_primary_key}});
  }
  // C15: the attribute markers of the name, which outlive the attributes they dropped.
  json dropped = json::array();
  // Times in epoch milliseconds, as everywhere in the API (txn_time, __createdtime__); the
  // exact HLC stamps beside them, for tools that compare generations and markers.
  for (const auto& [name, stamp] : def.attribute_markers()) {
    dropped.push_back(
        {{"name", name}, {"dropped_time", HybridClock::PhysicalMs(stamp)}, {"dropped_hlc", stamp}});
  }
  CAIRN_ASSIGN_OR_RETURN(uint64_t count, node_->records->RecordCount(def));
  return json{{"schema", def.database()},
              {"database", def.database()},
              {"name", def.name()},
              {"hash_attribute", def.primary_key()},
              {"primary_key", def.primary_key()},
              {"schema_defined", def.schema_defined()},
              {"sealed", def.sealed()},
              {"audit", false},
              {"attributes", std::move(attributes)},
              {"dropped_attributes", std::move(dropped)},
              {"record_count", count},
              {"created_time", HybridClock::PhysicalMs(def.created_time())},
              {"created_hlc", def.created_time()},
              {"generation_id", def.generation_id()},
              {"replicate", def.replicate()}};
}

absl::StatusOr<Reply> OpsApi::DropTable(const Fields& f) const {
  // SPEC R9: client provenance fields are ignored; see DropDatabase.
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database());
  CAIRN_ASSIGN_OR_RETURN(std::string table, f.Table());
  CAIRN_ASSIGN_OR_RETURN(bool replicated, f.Bool("replicated", true));
  CAIRN_ASSIGN_OR_RETURN(catalog::DropResult dropped,
                         node_->catalog->DropTable(db, table, /*timed=*/replicated));
  json body = Message(absl::StrCat("successfully deleted table '", db, ".", table, "'"));
  // A node-local table's drop is never sent to peers (C11): `timed` is false for it too.
  body["replicated"] = json::array();
  if (dropped.timed && options_.cluster != nullptr) {
    body["replicated"] =
        PeerDropStatuses(options_.cluster->ForwardDropTable(db, table, dropped.dropped_time));
  }
  return JsonReply(body);
}

json OpsApi::PeerDropStatuses(const std::vector<replication::PeerDropStatus>& peers) {
  json out = json::array();
  for (const replication::PeerDropStatus& p : peers) {
    json entry = {{"node", p.node}, {"status", p.status}};
    if (!p.reason.empty()) entry["reason"] = p.reason;
    out.push_back(std::move(entry));
  }
  return out;
}

absl::StatusOr<Reply> OpsApi::CreateAttribute(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database());
  CAIRN_ASSIGN_OR_RETURN(std::string table, f.Table());
  catalog::AttributeSpec spec;
  CAIRN_ASSIGN_OR_RETURN(spec.name, f.Attribute("attribute", "name"));
  if (f.Find("type") != nullptr) {
    CAIRN_ASSIGN_OR_RETURN(std::string type, f.String("type"));
    CAIRN_ASSIGN_OR_RETURN(spec.type, catalog::ParseAttributeType(type));
  }
  CAIRN_ASSIGN_OR_RETURN(spec.indexed, f.Bool("indexed", true));  // Harper's default
  CAIRN_RETURN_IF_ERROR(node_->catalog->CreateAttribute(db, table, spec).status());
  return JsonReply(Message(
      absl::StrCat("attribute '", db, ".", table, ".", spec.name, "' successfully created.")));
}

absl::StatusOr<Reply> OpsApi::DropAttribute(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database());
  CAIRN_ASSIGN_OR_RETURN(std::string table, f.Table());
  CAIRN_ASSIGN_OR_RETURN(std::string attribute, f.Attribute("attribute", "name"));
  // The values go in the background (C15, decision 100); readers no longer see them.
  CAIRN_RETURN_IF_ERROR(
      node_->records->DropAttribute(db, table, attribute, /*in_background=*/true).status());
  return JsonReply(Message(absl::StrCat("successfully deleted attribute '", attribute, "'")));
}

// ---- Records.

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
  return WriteReply(message, key, std::move(result), mode, /*is_delete=*/false, options_);
}

absl::StatusOr<Reply> OpsApi::Delete(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database(/*required=*/false, /*records=*/true));
  CAIRN_ASSIGN_OR_RETURN(std::string table, f.Table(/*records=*/true));
  CAIRN_ASSIGN_OR_RETURN(const json* ids, f.Array("ids", "hash_values"));
  CAIRN_ASSIGN_OR_RETURN(catalog::WriteResult result, node_->records->Delete(db, table, *ids));
  const std::string message =
      absl::StrCat(result.written.size(), " of ", ids->size(),
                   ids->size() == 1 ? " record" : " records", " successfully deleted");
  return WriteReply(message, "deleted_hashes", std::move(result), catalog::WriteMode::kUpdate,
                    /*is_delete=*/true, options_);
}

absl::StatusOr<Reply> OpsApi::SearchById(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database(/*required=*/false, /*records=*/true));
  CAIRN_ASSIGN_OR_RETURN(std::string table, f.Table(/*records=*/true));
  CAIRN_ASSIGN_OR_RETURN(const json* ids_field, f.Array("ids", "hash_values"));
  catalog::SearchOptions options;
  CAIRN_ASSIGN_OR_RETURN(options.get_attributes, f.GetAttributes());
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
  CAIRN_ASSIGN_OR_RETURN(options.get_attributes, f.GetAttributes());
  CAIRN_ASSIGN_OR_RETURN(options.limit, f.Count("limit"));
  CAIRN_ASSIGN_OR_RETURN(options.offset, f.Count("offset"));
  CAIRN_ASSIGN_OR_RETURN(options.reverse, f.Bool("reverse", false));
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
  CAIRN_ASSIGN_OR_RETURN(options.get_attributes, f.GetAttributes());
  CAIRN_ASSIGN_OR_RETURN(options.limit, f.Count("limit"));
  CAIRN_ASSIGN_OR_RETURN(options.offset, f.Count("offset"));
  // Harper's `desc` is the older name of `reverse`.
  CAIRN_ASSIGN_OR_RETURN(options.reverse,
                         f.Bool(f.Find("reverse") != nullptr ? "reverse" : "desc", false));
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
        if (client_gone) return false;
        if (!s.ok()) {
          spdlog::warn("[{}] {} stopped mid-answer: {}", node_name, what, s.ToString());
          return false;
        }
        chunk.push_back(']');
        return write(chunk);
      };
  return reply;
}

// ---- Cluster and test hooks.

namespace {

json VerifiedJson(const absl::btree_map<std::string, replication::VerifyRecord>& records) {
  json out = json::object();
  for (const auto& [db, r] : records) {
    json one{
        {"verified_at", absl::FormatTime(absl::RFC3339_sec, r.verified_at, absl::UTCTimeZone())},
        {"rows_compared", r.rows_compared},
        {"rows_repaired", r.rows_repaired},
        {"in_sync", r.in_sync}};
    if (!r.error.empty()) one["error"] = r.error;
    out[db] = std::move(one);
  }
  return out;
}

}  // namespace

absl::StatusOr<Reply> OpsApi::ClusterStatus(const Fields&) const {
  json connections = json::array();
  if (options_.cluster != nullptr) {
    for (const replication::PeerStatus& p : options_.cluster->Status()) {
      connections.push_back(
          {{"name", p.name},
           {"url", p.address},
           {"connected", p.connected},
           {"authenticated", p.authenticated},
           {"schema_in_sync", p.schema_in_sync},
           {"capabilities", p.capabilities},
           // C15 needs both ends: false means the peer (as of its last Hello) neither sends
           // nor applies attribute markers, so it keeps attributes dropped elsewhere.
           {"attribute_markers",
            std::find(p.capabilities.begin(), p.capabilities.end(),
                      replication::kAttributeMarkersCapability) != p.capabilities.end()},
           // How far this node is behind the peer's change log (R12): entries and ms.
           {"lag_entries", p.lag_entries},
           {"lag_ms", p.lag_ms},
           {"cursors", p.cursors},
           {"last_error", p.last_error},
           // R16: the peer's clock minus this node's at its last Hello (ms).
           {"clock_offset_ms", p.clock_offset_ms},
           // R17: entries from the peer parked until their table is defined here.
           {"parked_entries", p.parked_entries},
           // R18: the last verify of each database with the peer.
           {"verified", VerifiedJson(p.verified)},
           {"full_copy",
            {{"active", p.full_copy_active},
             {"percent", std::round(p.full_copy_percent * 10) / 10},
             {"rows_per_s", std::round(p.full_copy_rows_per_s)}}}});
    }
  }
  json body{{"node_name", options_.node_name},
            {"is_enabled", !connections.empty()},
            {"connections", std::move(connections)}};
  if (options_.cluster != nullptr) {
    // R16: links, snapshots, batches and forwarded drops refused for a clock or stamp ahead.
    body["clock_offset_refusals"] = options_.cluster->clock_bound().refusals();
  }
  return JsonReply(body);
}

// {"operation": "create_backup", "name"?}: a consistent copy of the whole node under
// --backup-dir (node/backup.h); restore by starting cairnd on it.
absl::StatusOr<Reply> OpsApi::CreateBackup(const Fields& f) const {
  std::string name = DefaultBackupName(absl::Now());
  if (f.Find("name") != nullptr) {
    CAIRN_ASSIGN_OR_RETURN(name, f.String("name"));
  }
  if (options_.backup_dir.empty()) return BadRequest("this node has no backup directory");
  const absl::Time start = absl::Now();
  CAIRN_ASSIGN_OR_RETURN(BackupInfo info,
                         node::CreateBackup(node_, options_.node_name, options_.backup_dir, name));
  spdlog::info("backup '{}' taken in {}: {}", info.name, absl::FormatDuration(absl::Now() - start),
               info.path);
  return JsonReply(
      json{{"message", absl::StrCat("backup '", info.name, "' taken")},
           {"name", info.name},
           {"path", info.path},
           {"node", info.node},
           {"created", absl::FormatTime(absl::RFC3339_sec, info.created, absl::UTCTimeZone())}});
}

absl::StatusOr<Reply> OpsApi::AddNode(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.String("name", "node_name"));
  CAIRN_ASSIGN_OR_RETURN(std::string url, f.String("url", "hostname"));
  CAIRN_ASSIGN_OR_RETURN(HostPort address, ParseHostPort(url, "'url'"));
  if (address.port == 0) return BadRequest("'url' needs the peer's port");
  replication::PeerRoute route{name, address.ToString(), {}};
  // R11: {"exclude_tables": {"db": ["table", ...]}}
  if (const json* exclude = f.Find("exclude_tables"); exclude != nullptr) {
    const char* shape = "'exclude_tables' must be an object of database: [table, ...]";
    if (!exclude->is_object()) return BadRequest(shape);
    for (const auto& [db, tables] : exclude->items()) {
      if (!tables.is_array()) return BadRequest(shape);
      CAIRN_RETURN_IF_ERROR(catalog::ValidateDatabaseName(db));
      for (const json& t : tables) {
        if (!t.is_string()) return BadRequest(shape);
        CAIRN_RETURN_IF_ERROR(catalog::ValidateTableName(t.get<std::string>()));
        route.exclude.Add(db, t.get<std::string>());
      }
    }
  }
  if (options_.cluster == nullptr) return Error(ErrorCode::kInternal, "no cluster");
  CAIRN_RETURN_IF_ERROR(options_.cluster->AddPeer(route, /*persist=*/true));
  return JsonReply(Message(absl::StrCat("Successfully added '", name, "' to cluster")));
}

// {"operation": "verify", "database", "table"?, "node"?}: anti-entropy now (R18), against
// `node` or every peer it can verify with; answers per peer and table.
absl::StatusOr<Reply> OpsApi::Verify(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database(/*required=*/true));
  std::optional<std::string> table;
  if (f.Find("table") != nullptr) {
    CAIRN_ASSIGN_OR_RETURN(table, f.Table());
  }
  if (options_.cluster == nullptr) return Error(ErrorCode::kInternal, "no cluster");
  if (node_->catalog->Snapshot()->FindDatabase(db) == nullptr) {
    return Error(ErrorCode::kDatabaseNotFound, absl::StrCat("database '", db, "' not found"));
  }
  if (table.has_value()) {
    CAIRN_RETURN_IF_ERROR(node_->catalog->Snapshot()->FindTable(db, *table).status());
  }
  std::vector<std::string> peers = options_.cluster->VerifyPeers();
  if (f.Find("node") != nullptr) {
    CAIRN_ASSIGN_OR_RETURN(std::string node, f.String("node"));
    if (std::find(peers.begin(), peers.end(), node) == peers.end()) {
      return Error(ErrorCode::kNodeNotFound,
                   absl::StrCat("'", node,
                                "' is not a connected peer this node has a route to and can "
                                "verify with (verify.v1)"));
    }
    peers = {node};
  }
  json answers = json::array();
  uint64_t compared = 0, repaired = 0;
  bool in_sync = true;
  if (f.Find("node") == nullptr) {
    // Routes from here to peers it cannot verify with now: not "in sync", and said why.
    for (const replication::PeerStatus& p : options_.cluster->Status()) {
      if (p.address.empty() || std::find(peers.begin(), peers.end(), p.name) != peers.end()) {
        continue;  // no route from here (it verifies from its side), or verified below
      }
      answers.push_back({{"node", p.name},
                         {"tables", json::array()},
                         {"error", p.connected ? "it does not speak verify.v1"
                                               : "not connected; verify again once it is"}});
      in_sync = false;
    }
  }
  for (const std::string& peer : peers) {
    replication::PeerVerify r = options_.cluster->anti_entropy()->Verify(peer, db, table);
    json tables = json::array();
    for (const replication::TableVerify& t : r.tables) {
      json one{{"table", t.table},
               {"rows_compared", t.rows_compared},
               {"rows_repaired", t.rows_repaired()},
               {"repaired_here", t.repaired_here},
               {"repaired_there", t.repaired_there},
               {"unsettled", t.unsettled},
               {"conflicts", t.conflicts},
               {"in_sync", t.skipped.empty() ? json(t.in_sync()) : json(nullptr)},
               {"bytes_sent", t.bytes_sent},
               {"bytes_received", t.bytes_received},
               {"duration_ms", absl::ToInt64Milliseconds(t.duration)}};
      if (!t.skipped.empty()) one["skipped"] = t.skipped;
      compared += t.rows_compared;
      repaired += t.rows_repaired();
      if (t.skipped.empty() && !t.in_sync()) in_sync = false;
      tables.push_back(std::move(one));
    }
    json answer{{"node", peer}, {"tables", std::move(tables)}};
    if (!r.status.ok()) {
      answer["error"] = std::string(r.status.message());
      in_sync = false;
    }
    answers.push_back(std::move(answer));
  }
  return JsonReply(json{{"database", db},
                        {"peers", std::move(answers)},
                        {"rows_compared", compared},
                        {"rows_repaired", repaired},
                        {"in_sync", in_sync}});
}

absl::StatusOr<Reply> OpsApi::RemoveNode(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.String("name", "node_name"));
  if (options_.cluster == nullptr) return Error(ErrorCode::kInternal, "no cluster");
  CAIRN_RETURN_IF_ERROR(options_.cluster->RemovePeer(name));
  return JsonReply(Message(absl::StrCat("Successfully removed '", name, "' from cluster")));
}

absl::StatusOr<Reply> OpsApi::SetFault(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string spec, f.String("fault"));
  if (options_.faults == nullptr) return Error(ErrorCode::kInternal, "no fault registry");
  CAIRN_RETURN_IF_ERROR(options_.faults->SetFromSpec(spec));
  spdlog::warn("[{}] fault armed: {}", options_.node_name, spec);
  return JsonReply(Message(absl::StrCat("fault '", spec, "' armed")));
}

absl::StatusOr<Reply> OpsApi::ClearFault(const Fields& f) const {
  if (options_.faults == nullptr) return Error(ErrorCode::kInternal, "no fault registry");
  if (f.Find("name") == nullptr) {
    options_.faults->ClearAll();
    return JsonReply(Message("every fault cleared"));
  }
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.String("name"));
  options_.faults->Clear(name);  // releases threads blocked there
  return JsonReply(Message(absl::StrCat("fault '", name, "' cleared")));
}

absl::StatusOr<Reply> OpsApi::FaultHits(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.String("name"));
  if (options_.faults == nullptr) return Error(ErrorCode::kInternal, "no fault registry");
  return JsonReply(json{{"name", name}, {"hits", options_.faults->HitCount(name)}});
}

// Clock faults (issue 19): the node's wall clock runs `offset` from the machine's from now on
// (a jump forward or back, within --max-clock-offset or beyond it). The HLC never goes back
// (HybridClock (1)); a restart sets the offset to 0 again.
absl::StatusOr<Reply> OpsApi::SetClock(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string text, f.String("offset"));
  absl::Duration offset;
  if (!absl::ParseDuration(text, &offset) || offset < -absl::Hours(24) ||
      offset > absl::Hours(24)) {
    return Error(ErrorCode::kBadRequest,
                 absl::StrCat("'offset' must be a duration within a day, such as 250ms or -2s; "
                              "got '",
                              text, "'"));
  }
  if (options_.clock == nullptr) return Error(ErrorCode::kInternal, "no adjustable clock");
  options_.clock->set_offset(offset);
  spdlog::warn("[{}] wall clock offset set to {} (test hook)", options_.node_name,
               absl::FormatDuration(offset));
  return JsonReply(json{{"offset_ms", absl::ToInt64Milliseconds(offset)}});
}

// What every fault point did in this process (buggify's "code probes"): a point that never
// fired across a run is a window the run did not open.
absl::StatusOr<Reply> OpsApi::FaultProbes(const Fields&) const {
  if (options_.faults == nullptr) return Error(ErrorCode::kInternal, "no fault registry");
  json probes = json::array();
  for (const FaultProbe& p : options_.faults->Probes()) {
    probes.push_back({{"name", p.point},
                      {"active", p.active},
                      {"hits", p.hits},
                      {"fired", p.fired},
                      {"errors", p.errors},
                      {"delays", p.delays}});
  }
  return JsonReply(json{{"buggify", options_.faults->buggify()}, {"probes", std::move(probes)}});
}

// Every stored row of a table with its stamps, tombstones included (D4, D5, D7), and the
// name's drop marker (also when the name has no live table): what the cluster checker's model
// compares (SPEC §7). Unbounded: for test clusters.
absl::StatusOr<Reply> OpsApi::ReadRows(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database());
  CAIRN_ASSIGN_OR_RETURN(std::string table, f.Table());
  json rows = json::array();
  const Hlc marker = node_->catalog->Snapshot()->MarkerFor(db, table);
  absl::StatusOr<catalog::TableRef> def = node_->records->ScanStored(
      db, table, [&](const json& key, const storage::v1::StoredRecord& row, const json& record) {
        rows.push_back({{"key", key},
                        {"version", row.version()},
                        {"origin", row.origin()},
                        {"row_generation", row.row_generation()},
                        {"deleted", row.deleted()},
                        {"record", record}});
      });
  if (!def.ok()) {
    // No live table: what a model still needs is the name's marker.
    const ErrorCode code = GetErrorCode(def.status());
    if (code != ErrorCode::kTableNotFound && code != ErrorCode::kDatabaseNotFound &&
        code != ErrorCode::kTableDropping) {
      return def.status();
    }
    return JsonReply(json{{"live", false},
                          {"dropping", code == ErrorCode::kTableDropping},
                          {"dropped_time", marker},
                          {"rows", json::array()}});
  }
  return JsonReply(json{{"live", true},
                        {"replicate", (*def)->replicate()},
                        {"created_time", (*def)->created_time()},
                        {"dropped_time", marker},
                        {"rows", std::move(rows)}});
}

// SPEC §6: a link can be cut and restored per peer. The peer need not be known: a cut made
// before add_node holds once the route exists.
absl::StatusOr<Reply> OpsApi::CutLink(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.String("name", "node_name"));
  if (options_.cluster == nullptr) return Error(ErrorCode::kInternal, "no cluster");
  options_.cluster->CutLink(name);
  return JsonReply(Message(absl::StrCat("link with '", name, "' cut")));
}

absl::StatusOr<Reply> OpsApi::RestoreLink(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.String("name", "node_name"));
  if (options_.cluster == nullptr) return Error(ErrorCode::kInternal, "no cluster");
  options_.cluster->RestoreLink(name);
  return JsonReply(Message(absl::StrCat("link with '", name, "' restored")));
}

}  // namespace cairn::node
