// Helpers shared by the catalog's files (catalog/catalog*.cc): catalog rows to and from the
// in-memory model, and the small encodings they use. Thread-compatible free functions.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "catalog/catalog.h"
#include "catalog/schema.h"
#include "google/protobuf/message_lite.h"
#include "rocksdb/write_batch.h"
#include "storage/engine.h"

namespace cairn::catalog::internal {

inline std::string Qualified(absl::string_view db, absl::string_view table) {
  return absl::StrCat(db, ".", table);
}

// The key of a name in CatalogSnapshot::markers and ::dropping.
inline std::pair<std::string, std::string> MarkerId(absl::string_view db, absl::string_view table) {
  return {std::string(db), std::string(table)};
}

void PutProto(storage::Engine* engine, rocksdb::WriteBatch* batch, storage::Cf cf,
              absl::string_view key, const google::protobuf::MessageLite& msg);

// R14: the peers this node applied rows of `db` from (those with a cursor in it).
absl::StatusOr<std::vector<std::string>> PeersWithCursorIn(storage::Engine* engine,
                                                           absl::string_view db);

// C15 with C6 (issue 41, point 13): an attribute marker at or before its name's table marker
// is subsumed by it. Every generation of the name that survives the table marker was created
// at or after it, so its attributes are no older than the marker (none is removed by the
// attribute marker) and its rows are newer (none is stripped by it); rows and definitions of
// older generations die with the table marker. So such attribute markers go when the table
// marker is recorded, in its batch, and one that arrives after it is not recorded: markers of
// dropped attributes do not outlive their table's drop by a timed marker.
//
// The names of the attribute markers of (db, table) that `table_marker` subsumes in `base`.
std::vector<std::string> SubsumedAttributeMarkers(const CatalogSnapshot& base, absl::string_view db,
                                                  absl::string_view table, Hlc table_marker);
// Deletes those markers' rows in `batch` (catalog family).
void DeleteAttributeMarkers(storage::Engine* engine, absl::string_view db, absl::string_view table,
                            const std::vector<std::string>& names, rocksdb::WriteBatch* batch);
// Removes them from a snapshot being published.
void EraseAttributeMarkers(CatalogSnapshot* next, absl::string_view db, absl::string_view table,
                           const std::vector<std::string>& names);
std::string BigEndian(uint64_t v);

AttributeDef FromRow(const v1::AttributeRow& row);
v1::AttributeRow ToRow(const AttributeDef& a);

// The attribute list of a new generation: the primary key first (id 0, the record key itself,
// never in the index family), then the others with ids from 1.
absl::StatusOr<std::vector<AttributeDef>> BuildAttributes(absl::string_view primary_key,
                                                          const std::vector<AttributeSpec>& specs,
                                                          Origin origin);

}  // namespace cairn::catalog::internal
