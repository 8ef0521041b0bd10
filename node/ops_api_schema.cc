// The operations API: databases, tables and attributes (SPEC §5; C1-C15).
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "catalog/schema.h"
#include "common/clock.h"
#include "common/status.h"
#include "node/access.h"
#include "node/internal/ops_api_fields.h"
#include "node/internal/placement_json.h"
#include "node/ops_api.h"

namespace cairn::node {

using internal::BadRequest;
using internal::JsonReply;
using internal::Message;
using internal::PlacementJson;

namespace {

// P11: a placed database's placement, under a key no table can have (C13 reserves names that
// start with '_'). A database on every node describes as it did before placement, so a Harper
// client sees Harper's shape.
void AddPlacement(const catalog::DatabaseDef& d, json* body) {
  if (!catalog::IsEveryNode(d.placement)) (*body)["__placement__"] = PlacementJson(d.placement);
}

}  // namespace

absl::StatusOr<Reply> OpsApi::CreateDatabase(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database(/*required=*/true));
  CAIRN_RETURN_IF_ERROR(f.access().Structure("create_database", db));  // U4
  CAIRN_ASSIGN_OR_RETURN(catalog::PlacementSpec placement, PlacementOf(f, db, /*required=*/false));
  CAIRN_RETURN_IF_ERROR(node_->catalog->CreateDatabase(db, placement));
  return JsonReply(Message(absl::StrCat("database '", db, "' successfully created")));
}

// {"operation": "alter_database", "database", "replicas": [...] | "*" | "replica_count": N}
// (design 0013, P6): a new placement, stamped here, that every node learns in DB_SCHEMA.
absl::StatusOr<Reply> OpsApi::AlterDatabase(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database(/*required=*/true));
  CAIRN_RETURN_IF_ERROR(f.access().Structure("alter_database", db));  // U4
  CAIRN_ASSIGN_OR_RETURN(catalog::PlacementSpec spec, PlacementOf(f, db, /*required=*/true));
  CAIRN_ASSIGN_OR_RETURN(catalog::v1::Placement placement,
                         node_->catalog->AlterPlacement(db, spec));
  json body =
      Message(absl::StrCat("database '", db, "' placed on ", catalog::DescribeMembers(placement)));
  body["placement"] = PlacementJson(placement);
  return JsonReply(body);
}

absl::StatusOr<Reply> OpsApi::DropDatabase(const Fields& f) const {
  // SPEC R9: a client's `replicatedFrom` / `dropped_time` are never read; this is a local
  // drop, stamped here.
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database(/*required=*/true));
  CAIRN_RETURN_IF_ERROR(f.access().Structure("drop_database", db));  // U4
  CAIRN_ASSIGN_OR_RETURN(bool replicated, f.Bool("replicated", true));
  CAIRN_ASSIGN_OR_RETURN(catalog::DropResult dropped,
                         node_->catalog->DropDatabase(db, /*timed=*/replicated));
  json body = Message(absl::StrCat("successfully deleted '", db, "'"));
  body["replicated"] = json::array();
  if (dropped.timed && options_.cluster != nullptr) {
    body["replicated"] = PeerDropStatuses(options_.cluster->ForwardDropDatabase(
        db, dropped.dropped_time, dropped.tables, dropped.database_marker));
  }
  return JsonReply(body);
}

absl::StatusOr<Reply> OpsApi::DescribeDatabase(const Fields& f) const {
  // Harper's default database when absent, as for tables (creating and dropping a database
  // still name it: a default there would act on "data" by accident).
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database());
  const Access& access = f.access();
  // U4: a database the role does not see is answered as Harper answers it.
  CAIRN_RETURN_IF_ERROR(access.MaySee(db));
  catalog::SnapshotRef snap = node_->catalog->Snapshot();
  const catalog::DatabaseDef* d = snap->FindDatabase(db);
  if (d == nullptr) {
    return Error(ErrorCode::kDatabaseNotFound, absl::StrCat("database '", db, "' does not exist"));
  }
  json body = json::object();
  for (const auto& [name, def] : d->tables) {
    if (!access.Sees(db, name)) continue;
    CAIRN_ASSIGN_OR_RETURN(body[name], Describe(*def, access));
  }
  AddPlacement(*d, &body);  // P11
  return JsonReply(body);
}

absl::StatusOr<Reply> OpsApi::DescribeAll(const Fields& f) const {
  const Access& access = f.access();
  catalog::SnapshotRef snap = node_->catalog->Snapshot();
  json body = json::object();
  for (const auto& [db, d] : snap->databases) {
    if (!access.SeesDatabase(db)) continue;  // U4: what the role may see, only
    json tables = json::object();
    for (const auto& [name, def] : d->tables) {
      if (!access.Sees(db, name)) continue;
      CAIRN_ASSIGN_OR_RETURN(tables[name], Describe(*def, access));
    }
    AddPlacement(*d, &tables);  // P11
    body[db] = std::move(tables);
  }
  return JsonReply(body);
}

absl::StatusOr<Reply> OpsApi::CreateTable(const Fields& f) const {
  catalog::TableSpec spec;
  CAIRN_ASSIGN_OR_RETURN(spec.database, f.Database());
  CAIRN_ASSIGN_OR_RETURN(spec.table, f.Table());
  CAIRN_RETURN_IF_ERROR(f.access().Structure("create_table", spec.database));  // U4
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
  const Access& access = f.access();
  // U4: a table the role does not see is answered as Harper answers it.
  CAIRN_RETURN_IF_ERROR(access.MaySee(db, table));
  CAIRN_ASSIGN_OR_RETURN(catalog::TableRef def, node_->catalog->Snapshot()->FindTable(db, table));
  CAIRN_ASSIGN_OR_RETURN(json body, Describe(*def, access));
  return JsonReply(body);
}

absl::StatusOr<json> OpsApi::Describe(const catalog::TableDef& def, const Access& access) const {
  json attributes = json::array();
  for (const catalog::AttributeDef& a : def.attributes()) {
    if (!access.SeesAttribute(def, a.name)) continue;  // U4
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
  CAIRN_RETURN_IF_ERROR(f.access().Structure("drop_table", db));  // U4
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
    json entry = {{"node", p.node}, {"status", replication::DropOutcomeName(p.outcome)}};
    if (!p.reason.empty()) entry["reason"] = p.reason;
    // A peer that refused the drop with an error: its machine code (SPEC §5).
    if (p.code != ErrorCode::kUnspecified) entry["code"] = ErrorCodeName(p.code);
    out.push_back(std::move(entry));
  }
  return out;
}

absl::StatusOr<Reply> OpsApi::CreateAttribute(const Fields& f) const {
  CAIRN_ASSIGN_OR_RETURN(std::string db, f.Database());
  CAIRN_ASSIGN_OR_RETURN(std::string table, f.Table());
  CAIRN_RETURN_IF_ERROR(f.access().Structure("create_attribute", db));  // U4
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
  CAIRN_RETURN_IF_ERROR(f.access().Structure("drop_attribute", db));  // U4
  // The values go in the background (C15, decision 100); readers no longer see them.
  CAIRN_RETURN_IF_ERROR(
      node_->records->DropAttribute(db, table, attribute, /*in_background=*/true).status());
  return JsonReply(Message(absl::StrCat("successfully deleted attribute '", attribute, "'")));
}

}  // namespace cairn::node
