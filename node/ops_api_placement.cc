// The operations API: placements (design 0013, P2, P6, P11). A placement is given as
// `replicas` (node names, or "*" for every node) or `replica_count` (resolved here, once, to
// the nodes with the highest rendezvous hash of the database's name, P2).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "catalog/placement.h"
#include "common/status.h"
#include "node/internal/ops_api_fields.h"
#include "node/internal/placement_json.h"
#include "node/ops_api.h"

namespace cairn::node {

using internal::BadRequest;

absl::StatusOr<catalog::PlacementSpec> OpsApi::PlacementOf(const Fields& f, absl::string_view db,
                                                           bool required) const {
  CAIRN_ASSIGN_OR_RETURN(catalog::PlacementSpec spec, ResolvePlacement(f, db, required));
  CAIRN_RETURN_IF_ERROR(CheckNewMembersLinked(db, spec));
  return spec;
}

absl::StatusOr<catalog::PlacementSpec> OpsApi::ResolvePlacement(const Fields& f,
                                                                absl::string_view db,
                                                                bool required) const {
  const json* replicas = f.Find("replicas");
  const json* count = f.Find("replica_count");
  if (replicas != nullptr && replicas->is_null()) replicas = nullptr;
  if (count != nullptr && count->is_null()) count = nullptr;
  if (replicas == nullptr && count == nullptr) {
    if (required) return BadRequest("'replicas' or 'replica_count' is required");
    return catalog::PlacementSpec{};  // every node
  }
  if (replicas != nullptr && count != nullptr) {
    return BadRequest("give 'replicas' or 'replica_count', not both");
  }
  if (replicas != nullptr && replicas->is_string() && replicas->get<std::string>() == "*") {
    return catalog::PlacementSpec{};  // back to every node
  }
  // P6: a peer that would not keep a placement must not be linked while one exists.
  std::vector<std::string> nodes{options_.node_name};
  if (options_.cluster != nullptr) {
    std::vector<std::string> old = options_.cluster->PeersWithoutPlacement();
    if (!old.empty()) {
      return BadRequest(absl::StrCat("peer(s) ", absl::StrJoin(old, ", "),
                                     " do not support placement (placement.v1): upgrade them "
                                     "before placing a database"));
    }
    nodes = options_.cluster->KnownNodes();
  }
  catalog::PlacementSpec spec;
  if (count != nullptr) {
    CAIRN_ASSIGN_OR_RETURN(const uint64_t n, f.Count("replica_count"));
    if (n < 1 || n > nodes.size()) {
      return BadRequest(absl::StrCat("'replica_count' must be 1..", nodes.size(),
                                     " (the nodes this node knows: ", absl::StrJoin(nodes, ", "),
                                     "), not ", count->dump()));
    }
    spec.members = catalog::RendezvousMembers(db, nodes, n);  // P2
    spec.count = static_cast<uint32_t>(n);
    return spec;
  }
  if (!replicas->is_array()) {
    return BadRequest("'replicas' must be an array of node names or \"*\"");
  }
  std::vector<std::string> names;
  for (const json& r : *replicas) {
    if (!r.is_string()) return BadRequest("'replicas' must be an array of node names");
    names.push_back(r.get<std::string>());
  }
  CAIRN_ASSIGN_OR_RETURN(spec.members, catalog::NormalizeMembers(std::move(names)));
  for (const std::string& m : spec.members) {
    if (!std::binary_search(nodes.begin(), nodes.end(), m)) {
      return BadRequest(absl::StrCat("'replicas' names '", m,
                                     "', which is not a node this node "
                                     "knows (",
                                     absl::StrJoin(nodes, ", "), ")"));
    }
  }
  return spec;
}

// Members hold rows and stream them only to each other (P3): a non-member relays nothing, so
// members linked only through a non-member would never get each other's writes. This node can
// check only its own links; the members' links to each other are the operator's part
// (docs/operations.md). Only the members the placement adds are checked, so a member that is
// down can still be placed away. A check, not a guarantee: a link may drop a moment later,
// and then R8 relays (among the members) and Verify (R18) make up once it is back.
absl::Status OpsApi::CheckNewMembersLinked(absl::string_view db,
                                           const catalog::PlacementSpec& spec) const {
  if (spec.members.empty()) return absl::OkStatus();  // every node: every node relays
  const catalog::SnapshotRef snap = node_->catalog->Snapshot();
  const catalog::DatabaseDef* current = snap->FindDatabase(db);
  std::vector<std::string> linked;
  if (options_.cluster != nullptr) linked = options_.cluster->LinkedPeers();
  std::vector<std::string> unlinked;
  for (const std::string& m : spec.members) {
    const bool listed = current != nullptr && !catalog::IsEveryNode(current->placement) &&
                        catalog::IsMember(current->placement, m);
    if (m == options_.node_name || listed) continue;
    if (!std::binary_search(linked.begin(), linked.end(), m)) unlinked.push_back(m);
  }
  if (unlinked.empty()) return absl::OkStatus();
  return BadRequest(absl::StrCat(
      "this node has no live link to ", absl::StrJoin(unlinked, ", "),
      ": a placement may add only members linked to the node that takes it (members must be "
      "linked to each other directly; a node outside the placement relays none of its rows)"));
}

}  // namespace cairn::node
