#include "cluster-tests/harness/ops.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace cairn::harness::ops {

CliRun RunCli(const OpsEndpoint& node, const std::string& args, const std::string& out_path) {
  const std::string cmd = absl::StrCat(
      "CAIRN_ADMIN_USER=", node.user, " CAIRN_ADMIN_PASSWORD=", node.password, " ", CairnCliPath(),
      " --node ", node.host, ":", node.port, " ", args, " >", out_path, " 2>&1");
  CliRun run;
  run.rc = std::system(cmd.c_str());
  std::ifstream in(out_path);
  run.printed.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return run;
}

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

std::set<std::string> RowIds(const std::vector<std::pair<std::string, int>>& runs) {
  std::set<std::string> keys;
  for (const auto& [prefix, n] : runs) {
    for (int i = 0; i < n; ++i) keys.insert(prefix + "-" + std::to_string(i));
  }
  return keys;
}

void ReplaceDataDir(const std::string& data_dir, const std::string& backup) {
  const std::string staged = data_dir + ".restoring";
  std::filesystem::copy(backup, staged, std::filesystem::copy_options::recursive);
  std::filesystem::remove_all(data_dir);
  std::filesystem::rename(staged, data_dir);
}

}  // namespace cairn::harness::ops
