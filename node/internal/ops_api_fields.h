// What the operations API's files share (node/ops_api*.cc, split by concern as RocksDB splits
// db_impl_*.cc): the request's fields read by name (OpsApi::Fields) and the small builders of
// answers. Thread-compatible; only node/ops_api*.cc include it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "catalog/names.h"
#include "catalog/record_store.h"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "node/access.h"
#include "node/ops_api.h"
#include "storage/value_codec.h"

namespace cairn::node {
namespace internal {

// BAD_REQUEST with `message`.
absl::Status BadRequest(absl::string_view message);
// A JSON value's type in a client's words ("integer" for an integer, else the library's name).
std::string JsonTypeName(const nlohmann::json& j);
// {"message": text}
nlohmann::json Message(absl::string_view text);
// A 200 answer with `body`, invalid UTF-8 replaced.
Reply JsonReply(const nlohmann::json& body);
// The answer of a write, in Harper's shape: `key` lists what was written; `skipped_hashes`
// what was not, except for an upsert (it skips nothing, and Harper's answer has no such key);
// a delete answers only those three keys (Harper's tests compare the whole object). With test
// hooks, "written_as" adds each written record's stamps (D4, D7) for the cluster checker's
// model: the full HLC, which txn_time (ms) rounds away.
Reply WriteReply(const std::string& message, const char* key, catalog::WriteResult result,
                 catalog::WriteMode mode, bool is_delete, const OpsApiOptions& options);

}  // namespace internal

using nlohmann::json;

// The request body's fields, read by name with their Harper aliases. Every accessor answers
// BAD_REQUEST naming the field when it is missing or of the wrong type, and INVALID_NAME for
// a name that breaks C13.
class OpsApi::Fields {
 public:
  // `caller`: who sent the request (SPEC U4); a part of a body read on its own (an attribute
  // of create_table) has an in-process caller.
  explicit Fields(const json& body, const Caller& caller = InProcess(),
                  Deadline* deadline = nullptr)
      : body_(body), caller_(caller), access_(caller), deadline_(deadline) {}

  const Caller& caller() const { return caller_; }
  // The request's deadline (issue 41); null: none.
  Deadline* deadline() const { return deadline_; }
  // OK while a write may still begin: its deadline has not passed (no deadline: always). A
  // write received whole is applied whether or not its client still waits for the answer.
  absl::Status CheckWriteDeadline() const {
    return deadline_ != nullptr ? deadline_->CheckTime() : absl::OkStatus();
  }
  // The whole request body (an object).
  const json* Body() const { return &body_; }
  // The caller's role enforced on this request (U4).
  const Access& access() const { return access_; }

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
    return internal::BadRequest(absl::StrCat("'", name, "' is required"));
  }

  absl::StatusOr<std::string> String(absl::string_view name, absl::string_view alias = {}) const {
    std::string used;
    const json* v = Find(name, alias, &used);
    if (v == nullptr) return Required(name);
    if (!v->is_string()) return internal::BadRequest(absl::StrCat("'", used, "' must be a string"));
    return v->get<std::string>();
  }

  absl::StatusOr<bool> Bool(absl::string_view name, bool default_value) const {
    const json* v = Find(name);
    if (v == nullptr || v->is_null()) return default_value;
    if (!v->is_boolean()) {
      return internal::BadRequest(
          absl::StrCat("'", name, "' must be true or false, not ", internal::JsonTypeName(*v)));
    }
    return v->get<bool>();
  }

  absl::StatusOr<uint64_t> Count(absl::string_view name) const {
    const json* v = Find(name);
    if (v == nullptr || v->is_null()) return 0;
    if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<int64_t>() >= 0)) {
      return internal::BadRequest(absl::StrCat("'", name, "' must be a non-negative integer"));
    }
    return v->get<uint64_t>();
  }

  absl::StatusOr<const json*> Array(absl::string_view name, absl::string_view alias = {}) const {
    std::string used;
    const json* v = Find(name, alias, &used);
    if (v == nullptr) return Required(name);
    if (!v->is_array()) return internal::BadRequest(absl::StrCat("'", used, "' must be an array"));
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
      return internal::BadRequest(message);
    }
    CAIRN_RETURN_IF_ERROR(catalog::ValidateDatabaseName(db));
    return db;
  }

  absl::StatusOr<std::string> Table(bool records = false) const {
    const json* v = Find("table");
    if (v == nullptr) return Required("table");
    std::string table;
    if (!NameOf(*v, records, &table)) return internal::BadRequest("'table' must be a string");
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
    if (!v->is_array()) return internal::BadRequest("'get_attributes' must be an array");
    for (const json& a : *v) {
      if (!a.is_string())
        return internal::BadRequest("'get_attributes' must be an array of attribute names");
      out.push_back(a.get<std::string>());
    }
    return out;
  }

 private:
  static const Caller& InProcess() {
    static const Caller* internal = new Caller(Caller::Internal());
    return *internal;
  }

  const json& body_;
  const Caller& caller_;
  const Access access_;
  Deadline* const deadline_;
};

}  // namespace cairn::node
