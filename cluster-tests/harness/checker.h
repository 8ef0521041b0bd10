// The convergence checker: reads each node's catalog and records over its operations API and
// compares the nodes. After the links settle every node must hold
//   1. the same live replicated tables, each with the same primary key and attributes (name,
//      type, indexed), and
//   2. the same records in each of them (a digest of every record, sorted by key), with the
//      same record_count;
// except node-local tables (`replicate: false`), which are never compared and must exist only
// on the nodes named in CheckOptions::local_tables (when given), and the tables listed in
// CheckOptions::ignore (route exclusions, R11). A node-local table hides a replicated table of
// the same name on that node (C11). created_time is not compared: where creates of a name
// raced, each node stamped its own, and without a drop marker between them they are one table
// (C8). A generation that should have died shows up in the records instead.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cluster-tests/harness/cairnd_process.h"

namespace cairn::harness {

struct CheckOptions {
  std::set<std::string> ignore;  // "db.table": not compared anywhere
  // node -> every node-local "db.table" it must hold. Nodes not named are not checked.
  std::map<std::string, std::set<std::string>> local_tables;
};

// One table as a node describes it.
struct TableView {
  bool replicate = true;
  uint64_t created_time = 0;
  std::string primary_key;
  std::string attributes;  // "name:type:indexed" sorted, comma separated
  int64_t record_count = 0;
  bool member = true;  // the node holds the database's rows (design 0013, P3)
  // A non-member's read found no member to take it (503 NO_MEMBER_REACHABLE): right only
  // while every member's table of the name is node-local (C11, decision 151).
  bool unreadable = false;
  std::map<std::string, std::string> records;  // primary key (JSON) -> record (JSON)
};

// "db.table" -> table, for one node.
using NodeView = std::map<std::string, TableView>;

// Reads every live table and all its records from a node.
absl::StatusOr<NodeView> ReadNode(const CairndProcess& node);

// Compares the views of several nodes (by node name). OK, or a description of every
// difference found (bounded in length).
absl::Status CompareNodes(const std::map<std::string, NodeView>& views,
                          const CheckOptions& options);

}  // namespace cairn::harness
