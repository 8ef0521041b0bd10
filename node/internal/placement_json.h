// A database's placement as the operations API shows it (design 0013, P11). Only
// node/ops_api*.cc include it.
#pragma once

#include "cairn/catalog/v1/catalog.pb.h"
#include "catalog/placement.h"
#include "nlohmann/json.hpp"

namespace cairn::node::internal {

// {"members": ["n1", ...] | "*", "ready"?, "catching_up"?, "replica_count"?, "stamp",
// "origin"}: `ready` and `catching_up` (P7) split the listed members.
inline nlohmann::json PlacementJson(const catalog::v1::Placement& p) {
  nlohmann::json out;
  if (catalog::IsEveryNode(p)) {
    out["members"] = "*";
  } else {
    out["members"] = nlohmann::json::array();
    for (const std::string& m : p.members()) out["members"].push_back(m);
    out["ready"] = catalog::ReadyMembers(p);
    out["catching_up"] = nlohmann::json::array();
    for (const std::string& m : p.catching_up()) out["catching_up"].push_back(m);
  }
  if (p.count() != 0) out["replica_count"] = p.count();
  out["stamp"] = p.stamp();
  out["origin"] = p.origin();
  return out;
}

}  // namespace cairn::node::internal
