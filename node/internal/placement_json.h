// A database's placement as the operations API shows it (design 0013, P11). Only
// node/ops_api*.cc include it.
#pragma once

#include "cairn/catalog/v1/catalog.pb.h"
#include "catalog/placement.h"
#include "nlohmann/json.hpp"

namespace cairn::node::internal {

// {"members": ["n1", ...] | "*", "replica_count"?, "stamp", "origin"}
inline nlohmann::json PlacementJson(const catalog::v1::Placement& p) {
  nlohmann::json out;
  if (catalog::IsEveryNode(p)) {
    out["members"] = "*";
  } else {
    out["members"] = nlohmann::json::array();
    for (const std::string& m : p.members()) out["members"].push_back(m);
  }
  if (p.count() != 0) out["replica_count"] = p.count();
  out["stamp"] = p.stamp();
  out["origin"] = p.origin();
  return out;
}

}  // namespace cairn::node::internal
