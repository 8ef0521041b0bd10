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
#include "google/protobuf/repeated_ptr_field.h"

namespace cairn::catalog {

namespace {

bool SortedHas(const google::protobuf::RepeatedPtrField<std::string>& names,
               absl::string_view name) {
  return std::binary_search(names.begin(), names.end(), name,
                            [](absl::string_view a, absl::string_view b) { return a < b; });
}

// Sorted, distinct, valid node names (a peer's list).
absl::Status ValidateNameList(const google::protobuf::RepeatedPtrField<std::string>& names,
                              absl::string_view what) {
  for (int i = 0; i < names.size(); ++i) {
    CAIRN_RETURN_IF_ERROR(ValidateNodeName(names[i]));
    if (i > 0 && !(names[i - 1] < names[i])) {
      return Error(ErrorCode::kBadRequest,
                   absl::StrCat("a placement's ", what, " are not sorted and distinct"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool IsMember(const v1::Placement& p, absl::string_view node) {
  // Sorted (NormalizeMembers, ValidatePeerPlacement).
  return IsEveryNode(p) || SortedHas(p.members(), node);
}

bool IsReady(const v1::Placement& p, absl::string_view node) {
  return IsMember(p, node) && !SortedHas(p.catching_up(), node);
}

std::vector<std::string> ReadyMembers(const v1::Placement& p) {
  std::vector<std::string> out;
  for (const std::string& m : p.members()) {
    if (!SortedHas(p.catching_up(), m)) out.push_back(m);
  }
  return out;
}

bool PlacementNewer(const v1::Placement& a, const v1::Placement& b) {
  return a.stamp() != b.stamp() ? a.stamp() > b.stamp() : a.origin() > b.origin();
}

bool SamePlacementChange(const v1::Placement& a, const v1::Placement& b) {
  return a.stamp() == b.stamp() && a.origin() == b.origin();
}

bool MergeReadiness(const v1::Placement& from, v1::Placement* into) {
  if (!SamePlacementChange(from, *into)) return false;
  google::protobuf::RepeatedPtrField<std::string> kept;
  for (const std::string& m : into->catching_up()) {
    if (SortedHas(from.catching_up(), m)) kept.Add(std::string(m));
  }
  if (kept.size() == into->catching_up_size()) return false;
  into->mutable_catching_up()->Swap(&kept);
  return true;
}

std::vector<std::string> CatchingUpAfter(const v1::Placement& previous,
                                         const std::vector<std::string>& members) {
  std::vector<std::string> out;
  for (const std::string& m : members) {
    if (!IsReady(previous, m)) out.push_back(m);
  }
  return out;
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
  CAIRN_RETURN_IF_ERROR(ValidateNameList(p.members(), "members"));
  CAIRN_RETURN_IF_ERROR(ValidateNameList(p.catching_up(), "members catching up"));
  for (const std::string& m : p.catching_up()) {
    if (IsEveryNode(p) || !SortedHas(p.members(), m)) {
      return Error(ErrorCode::kBadRequest,
                   absl::StrCat("a placement has '", m, "' catching up, which is not a member"));
    }
  }
  // P7: no placement a node makes has every member catching up (AlterPlacement refuses it),
  // and merging only makes members ready.
  if (!IsEveryNode(p) && p.catching_up_size() == p.members_size()) {
    return Error(ErrorCode::kBadRequest, "a placement with every member catching up");
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
    // P7; nothing when every member is ready, so such placements digest as before.
    for (const std::string& m : p.catching_up()) {
      h.Add("catching_up");
      h.Add(m);
    }
  }
  h.Add(database_marker);
  return h.value();
}

}  // namespace cairn::catalog
