#include "cluster-tests/harness/ops.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace cairn::harness::ops {

absl::StatusOr<bool> HasTable(const Cluster& c, const std::string& node, const std::string& db,
                              const std::string& table) {
  HttpAnswer a = c.Op(node, DescribeTable(db, table));
  if (a.status == 200) return true;
  if (a.status == 404) return false;
  return Error(ErrorCode::kInternal, absl::StrCat(node, ": describe_table ", db, ".", table, " -> ",
                                                  a.status, " ", a.body));
}

absl::StatusOr<std::set<std::string>> Keys(const Cluster& c, const std::string& node,
                                           const std::string& db, const std::string& table) {
  CAIRN_ASSIGN_OR_RETURN(json rows, c.Ok(node, {{"operation", "search_by_value"},
                                                {"database", db},
                                                {"table", table},
                                                {"attribute", "id"},
                                                {"value", "*"},
                                                {"get_attributes", {"id"}}}));
  std::set<std::string> keys;
  for (const json& r : rows) {
    keys.insert(r["id"].is_string() ? r["id"].get<std::string>() : r["id"].dump());
  }
  return keys;
}

}  // namespace cairn::harness::ops
