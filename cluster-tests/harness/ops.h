// Operation bodies and small reads the scenarios share: what a client of the operations API
// (SPEC §5) sends, built in one place.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "cluster-tests/harness/cluster.h"
#include "nlohmann/json.hpp"

namespace cairn::harness::ops {

using nlohmann::json;

// create_table; `attributes` as (name, type) pairs, none: a dynamic table.
inline json CreateTable(const std::string& db, const std::string& table,
                        const std::vector<std::pair<std::string, std::string>>& attributes = {},
                        bool replicate = true) {
  json op = {
      {"operation", "create_table"}, {"database", db}, {"table", table}, {"primary_key", "id"}};
  if (!attributes.empty()) {
    op["attributes"] = json::array();
    for (const auto& [name, type] : attributes) {
      op["attributes"].push_back({{"name", name}, {"type", type}});
    }
  }
  if (!replicate) op["replicate"] = false;
  return op;
}

inline json DropTable(const std::string& db, const std::string& table, bool replicated = true) {
  json op = {{"operation", "drop_table"}, {"database", db}, {"table", table}};
  if (!replicated) op["replicated"] = false;
  return op;
}

inline json Upsert(const std::string& db, const std::string& table, json records) {
  return {{"operation", "upsert"}, {"database", db}, {"table", table}, {"records", records}};
}

// Records {id: "<prefix>-<i>", name: "<prefix>"} for i in [0, n).
inline json Rows(const std::string& prefix, int n) {
  json records = json::array();
  for (int i = 0; i < n; ++i) {
    records.push_back({{"id", prefix + "-" + std::to_string(i)}, {"name", prefix}});
  }
  return records;
}

// The ids ops::Rows makes for each (prefix, n) run, as ops::Keys returns them.
std::set<std::string> RowIds(const std::vector<std::pair<std::string, int>>& runs);

inline json DescribeTable(const std::string& db, const std::string& table) {
  return {{"operation", "describe_table"}, {"database", db}, {"table", table}};
}

// True if the node has the table live, false on TABLE_NOT_FOUND / DATABASE_NOT_FOUND.
absl::StatusOr<bool> HasTable(const Cluster& c, const std::string& node, const std::string& db,
                              const std::string& table);

// The primary keys (as strings) of every record of a table on a node.
absl::StatusOr<std::set<std::string>> Keys(const Cluster& c, const std::string& node,
                                           const std::string& db, const std::string& table);

// Runs the CLI (`cairn --node <node> <args>`) with the node's credentials; its exit status
// and what it printed (stdout and stderr, kept in `out_path`).
struct CliRun {
  int rc = -1;
  std::string printed;
};
CliRun RunCli(const OpsEndpoint& node, const std::string& args, const std::string& out_path);

// The operator's restore (docs/operations.md): with the node down, its data directory is
// replaced by a copy of `backup` (which may live under it, in <data-dir>/backups).
void ReplaceDataDir(const std::string& data_dir, const std::string& backup);

}  // namespace cairn::harness::ops
