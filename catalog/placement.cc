#include "catalog/placement.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "catalog/names.h"
#include "catalog/schema.h"
#include "common/fnv1a.h"
#include "common/status.h"

namespace cairn::catalog {

bool IsMember(const v1::Placement& p, absl::string_view node) {
  if (IsEveryNode(p)) return true;
  // Sorted (NormalizeMembers, ValidatePeerPlacement).
  return std::binary_search(p.members().begin(), p.members().end(), node,
                            [](absl::string_view a, absl::string_view b) { return a < b; });
}

bool PlacementNewer(const v1::Placement& a, const v1::Placement& b) {
  return a.stamp() != b.stamp() ? a.stamp() > b.stamp() : a.origin() > b.origin();
}

absl::StatusOr<std::vector<std::string>> NormalizeMembers(std::vector<std::string> members) {
  if (members.empty()) return Error(ErrorCode::kBadRequest, "'replicas' must name a node");
  if (members.size() > kMaxPlacementMembers) {
    return Error(ErrorCode::kBadRequest, absl::StrCat("'replicas' names ", members.size(),
                                                      " nodes; at most ", kMaxPlacementMembers));
  }
  for (const std::string& m : members) CAIRN_RETURN_IF_ERROR(ValidateNodeName(m));
  std::sort(members.begin(), members.end());
  auto dup = std::adjacent_find(members.begin(), members.end());
  if (dup != members.end()) {
    return Error(ErrorCode::kBadRequest, absl::StrCat("'replicas' names '", *dup, "' twice"));
  }
  return members;
}

absl::Status ValidatePeerPlacement(const v1::Placement& p) {
  if (static_cast<size_t>(p.members_size()) > kMaxPlacementMembers) {
    return Error(ErrorCode::kBadRequest,
                 absl::StrCat("a placement of ", p.members_size(), " members"));
  }
  for (int i = 0; i < p.members_size(); ++i) {
    CAIRN_RETURN_IF_ERROR(ValidateNodeName(p.members(i)));
    if (i > 0 && !(p.members(i - 1) < p.members(i))) {
      return Error(ErrorCode::kBadRequest, "a placement's members are not sorted and distinct");
    }
  }
  if (!p.origin().empty()) CAIRN_RETURN_IF_ERROR(ValidateNodeName(p.origin()));
  return absl::OkStatus();
}

namespace {

uint64_t RendezvousHash(absl::string_view db, absl::string_view node) {
  Fnv1a h;
  h.Add(db);
  h.Add(node);
  return h.value();
}

}  // namespace

std::vector<std::string> RendezvousOrder(absl::string_view db, std::vector<std::string> nodes) {
  std::vector<std::pair<uint64_t, std::string>> ranked;
  ranked.reserve(nodes.size());
  for (std::string& n : nodes) ranked.emplace_back(RendezvousHash(db, n), std::move(n));
  // Highest hash first; equal hashes (never in practice) by name, so the order is total.
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<std::string> out;
  out.reserve(ranked.size());
  for (auto& [hash, name] : ranked) out.push_back(std::move(name));
  return out;
}

std::vector<std::string> RendezvousMembers(absl::string_view db, std::vector<std::string> nodes,
                                           size_t count) {
  std::vector<std::string> order = RendezvousOrder(db, std::move(nodes));
  order.resize(std::min(count, order.size()));
  std::sort(order.begin(), order.end());
  return order;
}

bool HoldsPlacedDatabase(const CatalogSnapshot& snap) {
  for (const auto& [name, d] : snap.databases) {
    if (!IsEveryNode(d->placement)) return true;
  }
  return false;
}

bool HoldsRowsOf(const CatalogSnapshot& snap, absl::string_view db, absl::string_view node) {
  const DatabaseDef* d = snap.FindDatabase(db);
  return d == nullptr || IsMember(d->placement, node);
}

std::string DescribeMembers(const v1::Placement& p) {
  return IsEveryNode(p) ? std::string("*") : absl::StrJoin(p.members(), ",");
}

uint64_t PlacementDigest(const v1::Placement& p, uint64_t database_marker) {
  if (IsEveryNode(p) && database_marker == 0) return 0;
  Fnv1a h;
  h.Add("placement");
  if (!IsEveryNode(p)) {
    for (const std::string& m : p.members()) h.Add(m);
    h.Add(p.stamp());
    h.Add(p.origin());
  }
  h.Add(database_marker);
  return h.value();
}

}  // namespace cairn::catalog
