// Placement (design 0013): which nodes hold a database's rows. Pure functions of placements and
// node names; the Catalog stores and merges them (catalog_placement.cc). Thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cairn/catalog/v1/catalog.pb.h"

namespace cairn::catalog {

// At most this many members in a placement, from a client or a peer (a cluster larger than
// this places with replica_count).
inline constexpr size_t kMaxPlacementMembers = 256;
// Every node: the placement of a database nobody placed (P1).
inline bool IsEveryNode(const v1::Placement& p) { return p.members().empty(); }
// Whether `node` holds the database's rows under `p` (P3).
bool IsMember(const v1::Placement& p, absl::string_view node);
// P7: whether `node` is a member that has caught up: it serves the database's operations
// (P4) and counts as holding every row. Under every node ("*") every node is ready.
bool IsReady(const v1::Placement& p, absl::string_view node);
// The listed members that are ready, sorted (empty for every node).
std::vector<std::string> ReadyMembers(const v1::Placement& p);
// P1: whether `a` wins over `b`, last-writer-wins on (stamp, origin) as users and roles (U6).
bool PlacementNewer(const v1::Placement& a, const v1::Placement& b);
// Whether `a` and `b` are copies of one change (the same stamp and origin).
bool SamePlacementChange(const v1::Placement& a, const v1::Placement& b);
// P7: `from` and `*into` copies of one change: `*into` keeps catching up only the members
// `from` has catching up too (a member's announcement that it is ready only ever adds).
// Whether `*into` changed.
bool MergeReadiness(const v1::Placement& from, v1::Placement* into);
// P7: which of `members` (a new placement's) are catching up: those not ready under the
// placement it replaces.
std::vector<std::string> CatchingUpAfter(const v1::Placement& previous,
                                         const std::vector<std::string>& members);
// The members a client gave, sorted and checked: 1..kMaxPlacementMembers valid, distinct
// names. BAD_REQUEST (INVALID_NAME for a bad name) names the problem.
absl::StatusOr<std::vector<std::string>> NormalizeMembers(std::vector<std::string> members);
// A peer's placement (its values are input): valid, sorted, distinct member names, at most
// kMaxPlacementMembers, members catching up among them, and an origin that is a node name or
// "". BAD_REQUEST names the problem.
absl::Status ValidatePeerPlacement(const v1::Placement& p);

// P2: the `count` names of `nodes` with the highest rendezvous hash of (database, name),
// sorted by name. Deterministic: every node given the same names picks the same ones. Requires
// count <= nodes.size() and distinct names.
std::vector<std::string> RendezvousMembers(absl::string_view db, std::vector<std::string> nodes,
                                           size_t count);
// `nodes` in rendezvous order for `db`, highest hash first (P2, and the order P4 tries members).
std::vector<std::string> RendezvousOrder(absl::string_view db, std::vector<std::string> nodes);

struct CatalogSnapshot;
// P6: whether any database of `snap` has members (is not on every node).
bool HoldsPlacedDatabase(const CatalogSnapshot& snap);
// P3: whether `node` holds rows of `db` as `snap` places it. A database `snap` does not know
// is held (its entries wait for its schema, R17, as before placement).
bool HoldsRowsOf(const CatalogSnapshot& snap, absl::string_view db, absl::string_view node);

// "*" for every node, else the members joined by ",". For logs and messages.
std::string DescribeMembers(const v1::Placement& p);
// The schema digest's share of a database's placement and database marker (FNV-1a; the same on
// every node and build): 0 for every node with no marker, so a cluster that places nothing
// digests as before placement existed.
uint64_t PlacementDigest(const v1::Placement& p, uint64_t database_marker);

}  // namespace cairn::catalog
