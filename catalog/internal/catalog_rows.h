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
std::string BigEndian(uint64_t v);

AttributeDef FromRow(const v1::AttributeRow& row);
v1::AttributeRow ToRow(const AttributeDef& a);

// The attribute list of a new generation: the primary key first (id 0, the record key itself,
// never in the index family), then the others with ids from 1.
absl::StatusOr<std::vector<AttributeDef>> BuildAttributes(absl::string_view primary_key,
                                                          const std::vector<AttributeSpec>& specs,
                                                          Origin origin);

}  // namespace cairn::catalog::internal
