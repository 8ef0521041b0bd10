#include "catalog/internal/catalog_rows.h"

#include <algorithm>

#include "catalog/names.h"
#include "common/status.h"
#include "storage/keys.h"
#include "storage/rocksdb_status.h"

namespace cairn::catalog::internal {

using storage::Cf;
using storage::ToSlice;

std::vector<std::string> SubsumedAttributeMarkers(const CatalogSnapshot& base, absl::string_view db,
                                                  absl::string_view table, Hlc table_marker) {
  std::vector<std::string> names;
  for (const auto& [name, dropped_time] : base.AttributeMarkersFor(db, table)) {
    if (dropped_time <= table_marker) names.push_back(name);
  }
  return names;
}

void DeleteAttributeMarkers(storage::Engine* engine, absl::string_view db, absl::string_view table,
                            const std::vector<std::string>& names, rocksdb::WriteBatch* batch) {
  for (const std::string& name : names) {
    // why ignored: WriteBatch::Delete only fails beyond 4 GiB.
    batch->Delete(engine->cf(Cf::kCatalog), ToSlice(storage::AttributeMarkerKey(db, table, name)))
        .PermitUncheckedError();
  }
}

void EraseAttributeMarkers(CatalogSnapshot* next, absl::string_view db, absl::string_view table,
                           const std::vector<std::string>& names) {
  if (names.empty()) return;
  AttributeStamps& stamps = next->attribute_markers[MarkerId(db, table)];
  for (const std::string& name : names) stamps.erase(name);
}

void PutProto(storage::Engine* engine, rocksdb::WriteBatch* batch, Cf cf, absl::string_view key,
              const google::protobuf::MessageLite& msg) {
  // why ignored: WriteBatch::Put fails only for values over 4 GiB.
  batch->Put(engine->cf(cf), ToSlice(key), msg.SerializeAsString()).PermitUncheckedError();
}

absl::StatusOr<std::vector<std::string>> PeersWithCursorIn(storage::Engine* engine,
                                                           absl::string_view db) {
  std::vector<std::string> peers;
  const std::string prefix(storage::kCursorPrefix);
  auto it = engine->NewIterator(Cf::kMeta, nullptr, storage::PrefixSuccessor(prefix));
  for (it->Seek(ToSlice(prefix)); it->Valid(); it->Next()) {
    absl::string_view key(it->key().data(), it->key().size());
    key.remove_prefix(prefix.size());
    const size_t nul = key.find('\0');
    if (nul != absl::string_view::npos && key.substr(nul + 1) == db) {
      peers.emplace_back(key.substr(0, nul));
    }
  }
  CAIRN_RETURN_IF_ERROR(storage::FromRocks(it->status()));
  return peers;
}

std::string BigEndian(uint64_t v) {
  std::string s;
  storage::PutBigEndian64(v, &s);
  return s;
}

AttributeDef FromRow(const v1::AttributeRow& row) {
  AttributeDef a;
  a.name = row.name();
  a.type = row.type() == v1::ATTRIBUTE_TYPE_UNSPECIFIED ? v1::ANY : row.type();
  a.indexed = row.indexed();
  a.id = row.attribute_id();
  a.is_primary_key = row.is_primary_key();
  a.origin = row.origin();
  a.created_time = row.created_time();
  return a;
}

v1::AttributeRow ToRow(const AttributeDef& a) {
  v1::AttributeRow row;
  row.set_name(a.name);
  row.set_type(a.type);
  row.set_indexed(a.indexed);
  row.set_attribute_id(a.id);
  row.set_is_primary_key(a.is_primary_key);
  row.set_origin(a.origin);
  row.set_created_time(a.created_time);
  return row;
}

absl::StatusOr<std::vector<AttributeDef>> BuildAttributes(absl::string_view primary_key,
                                                          const std::vector<AttributeSpec>& specs,
                                                          Origin origin) {
  std::vector<AttributeDef> out;
  AttributeDef pk;
  pk.name = std::string(primary_key);
  pk.type = v1::ID;
  pk.indexed = true;
  pk.is_primary_key = true;
  pk.origin = origin;
  out.push_back(pk);
  uint32_t next_id = 1;
  for (const AttributeSpec& s : specs) {
    CAIRN_RETURN_IF_ERROR(ValidateAttributeName(s.name));
    if (s.name == primary_key) {
      // D1: a primary key is a string or an integer.
      if (s.type != v1::ANY && s.type != v1::ID && s.type != v1::STRING && s.type != v1::INT) {
        return Error(ErrorCode::kBadRequest, absl::StrCat("primary key '", primary_key,
                                                          "' must be of type ID, String or "
                                                          "Int, not ",
                                                          AttributeTypeName(s.type)));
      }
      if (s.type != v1::ANY) out[0].type = s.type;
      continue;
    }
    auto dup = std::find_if(out.begin(), out.end(),
                            [&](const AttributeDef& a) { return a.name == s.name; });
    if (dup != out.end()) {
      return Error(ErrorCode::kBadRequest,
                   absl::StrCat("attribute '", s.name, "' is listed more than once"));
    }
    AttributeDef a;
    a.name = s.name;
    a.type = s.type;
    a.indexed = s.indexed;
    a.id = next_id++;
    a.origin = s.provisional ? v1::PEER_RECORD : origin;
    a.created_time = s.created_time.value_or(0);
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace cairn::catalog::internal
