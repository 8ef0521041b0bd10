// AntiEntropy, the callee's side (SPEC R18, design 0007): one Verify step a peer runs against
// this node. Every value of the request is input to check (its limits: verify_steps.h); a
// table not comparable here answers `skipped` (with `schema_differs` when the schemas are
// what differ), and a drop that starts meanwhile (C9) turns the answer into a skip, not an
// error. The caller's side is anti_entropy.cc.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "catalog/placement.h"
#include "common/status.h"
#include "replication/anti_entropy.h"
#include "replication/cluster.h"
#include "replication/internal/steady_clock.h"
#include "replication/internal/verify_steps.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"

namespace cairn::replication {

using catalog::RowStamp;
using catalog::TableRef;
using internal::Dropping;
using internal::EntryOf;
using internal::kDefaultStampsPage;
using internal::kMaxKeysPerStep;
using internal::kMaxStampLeaves;
using internal::kMaxStepBytes;
using internal::kMaxWaitMs;
using internal::Loses;
using internal::NotApplied;
using storage::v1::ChangeEntry;

namespace {

constexpr absl::Duration kCursorPoll = absl::Milliseconds(20);
// A cursor that has not moved for this long while behind is not going to deliver.
constexpr absl::Duration kCursorStall = absl::Seconds(5);

bool DepthOk(uint32_t depth) { return depth >= 1 && depth <= catalog::kMaxDigestDepth; }

}  // namespace

absl::Status AntiEntropy::Serve(const std::string& peer, const peer::v1::VerifyRequest& request,
                                peer::v1::VerifyResponse* response,
                                std::function<bool()> cancelled) {
  TableRef def = ServedTable(peer, request.table(), response);
  if (def == nullptr) return absl::OkStatus();  // skipped
  absl::Status s;
  switch (request.step_case()) {
    case peer::v1::VerifyRequest::kDigest:
      s = ServeDigest(def, request.digest(), cancelled, response->mutable_digest());
      break;
    case peer::v1::VerifyRequest::kStamps:
      s = ServeStamps(def, request.table(), request.stamps(), cancelled,
                      response->mutable_stamps());
      break;
    case peer::v1::VerifyRequest::kRows:
      s = ServeRows(def, request.rows(), response->mutable_rows());
      break;
    case peer::v1::VerifyRequest::kBehind:
      s = ServeBehind(peer, def, request.behind(), response->mutable_behind());
      break;
    case peer::v1::VerifyRequest::kRepair:
      s = ServeRepair(peer, def, request.repair(), response->mutable_repair());
      break;
    case peer::v1::VerifyRequest::STEP_NOT_SET:
      return absl::InvalidArgumentError("verify: no step (a newer peer's request?)");
  }
  if (Dropping(s)) {  // C9: the table went while we answered
    response->Clear();
    response->set_skipped("dropped during the verify");
    return absl::OkStatus();
  }
  return s;
}

TableRef AntiEntropy::ServedTable(const std::string& peer, const peer::v1::VerifyTable& t,
                                  peer::v1::VerifyResponse* response) {
  if (cluster_->ExclusionsFor(peer).Excludes(t.database(), t.table())) {
    response->set_skipped("excluded by its route (R11)");  // whatever it holds of the name
    return nullptr;
  }
  catalog::SnapshotRef snap = node_->catalog->Snapshot();
  if (!catalog::HoldsRowsOf(*snap, t.database(), node_->records->node_name())) {
    // Design 0013, P3, P9: only a member compares its rows. A peer whose view of the
    // placement is older asks a node that is no longer a member here; above all, a member
    // releasing the database (P8) must not take this node, which may be releasing it too,
    // for one that holds its rows. Not a schema difference: the caller confirms nothing.
    response->set_skipped("not a member of the database here (design 0013, P3)");
    return nullptr;
  }
  auto found = snap->FindTable(t.database(), t.table());
  if (!found.ok()) {
    const bool dropping = Dropping(found.status());
    response->set_skipped(dropping ? "dropping" : "not live here");
    response->set_schema_differs(!dropping);
    return nullptr;
  }
  TableRef def = *found;
  std::string why;
  if (!def->replicate()) {
    why = "node-local here (C11)";
    response->set_node_local(true);
  } else if (const Hlc marker = snap->MarkerFor(t.database(), t.table());
             catalog::IsDeadGeneration(t.created_time(), marker)) {
    why = absl::StrCat("your generation is retired here (created_time ", t.created_time(),
                       ", drop marker ", marker, ", C8)");
  } else if (catalog::IsDeadGeneration(def->created_time(), t.marker())) {
    why = absl::StrCat("this node's generation (created_time ", def->created_time(),
                       ") is older than your drop marker ", t.marker(), " (C8)");
  } else {
    // Equal generations, or two that no marker parts (concurrent creates, C8): one table,
    // whose rows flow both ways and carry their row generations (D7) into the digest.
    return def;
  }
  response->set_skipped(why);
  response->set_schema_differs(true);
  return nullptr;
}

absl::Status AntiEntropy::ServeDigest(const TableRef& def, const peer::v1::VerifyDigest& d,
                                      const std::function<bool()>& cancelled,
                                      peer::v1::VerifyDigestAnswer* a) {
  constexpr uint32_t kFanout = 1u << catalog::kDigestFanoutBits;
  if (!DepthOk(d.depth())) return absl::InvalidArgumentError("verify digest: bad depth");
  const size_t branches = size_t{1} << (catalog::kDigestFanoutBits * (d.depth() - 1));
  if (d.branches_size() != 0 && static_cast<size_t>(d.branches_size()) != branches) {
    return absl::InvalidArgumentError("verify digest: bad branch count");
  }
  CAIRN_ASSIGN_OR_RETURN(auto tree,
                         node_->records->Digest(def, static_cast<int>(d.depth()),
                                                ScanOptions(d.settled_before(), cancelled)));
  a->set_rows(tree.rows());
  const std::vector<uint64_t> mine = tree.Level(static_cast<int>(d.depth()) - 1);
  if (d.branches_size() == 0) {  // the first call: our branches
    for (uint64_t b : mine) a->add_branches(b);
    return absl::OkStatus();
  }
  for (size_t b = 0; b < mine.size(); ++b) {
    if (mine[b] == d.branches(static_cast<int>(b))) continue;
    a->add_differing_branches(static_cast<uint32_t>(b));
    for (uint32_t j = 0; j < kFanout; ++j) a->add_leaves(tree.leaves()[b * kFanout + j]);
  }
  return absl::OkStatus();
}

absl::Status AntiEntropy::ServeStamps(const TableRef& def, const peer::v1::VerifyTable& t,
                                      const peer::v1::VerifyStamps& s,
                                      const std::function<bool()>& cancelled,
                                      peer::v1::VerifyStampsAnswer* a) {
  if (!DepthOk(s.depth()) || static_cast<size_t>(s.leaves_size()) > kMaxStampLeaves ||
      s.limit() > kMaxKeysPerStep) {
    return absl::InvalidArgumentError("verify stamps: bad depth, leaves or limit");
  }
  std::vector<uint32_t> leaves(s.leaves().begin(), s.leaves().end());
  CAIRN_ASSIGN_OR_RETURN(
      auto page, node_->records->LeafStamps(def, static_cast<int>(s.depth()), leaves, s.after_key(),
                                            s.limit() == 0 ? kDefaultStampsPage : s.limit(),
                                            ScanOptions(0, cancelled)));
  for (const RowStamp& stamp : page.stamps) *a->add_stamps() = EntryOf(t.table(), stamp);
  a->set_more(page.more);
  a->set_log_id(node_->log->log_id());
  a->set_reserved_seq(node_->log->ReservedSeq(t.database()));  // after the scan
  return absl::OkStatus();
}

absl::Status AntiEntropy::ServeRows(const TableRef& def, const peer::v1::VerifyRows& r,
                                    peer::v1::VerifyRowsAnswer* a) {
  if (static_cast<size_t>(r.keys_size()) > kMaxKeysPerStep) {
    return absl::InvalidArgumentError("verify rows: too many keys");
  }
  std::vector<std::string> wanted(r.keys().begin(), r.keys().end());
  CAIRN_ASSIGN_OR_RETURN(auto rows, node_->records->ReadStored(def, wanted));
  size_t bytes = 0;
  size_t i = 0;
  for (; i < wanted.size() && (i == 0 || bytes < kMaxStepBytes); ++i) {
    if (!rows[i].has_value()) continue;
    *a->add_rows() = EntryOf(def->name(), wanted[i], *rows[i], true);
    bytes += rows[i]->json().size() + wanted[i].size();
  }
  a->set_answered(static_cast<uint32_t>(i));
  return absl::OkStatus();
}

absl::Status AntiEntropy::ServeBehind(const std::string& peer, const TableRef& def,
                                      const peer::v1::VerifyBehind& b,
                                      peer::v1::VerifyBehindAnswer* a) {
  if (static_cast<size_t>(b.stamps_size()) > kMaxKeysPerStep) {
    return absl::InvalidArgumentError("verify behind: too many stamps");
  }
  a->set_caught_up(WaitForCursor(peer, def->database(), b.log_id(), b.reserved_seq(),
                                 absl::Milliseconds(std::min(b.wait_ms(), kMaxWaitMs))));
  std::vector<std::string> keys;
  for (const ChangeEntry& e : b.stamps()) keys.push_back(e.key());
  CAIRN_ASSIGN_OR_RETURN(auto rows, node_->records->ReadStored(def, keys));
  for (size_t i = 0; i < keys.size(); ++i) {
    const ChangeEntry& e = b.stamps(static_cast<int>(i));
    if (Loses(rows[i], e.version(), e.origin())) a->add_keys(keys[i]);
  }
  return absl::OkStatus();
}

absl::Status AntiEntropy::ServeRepair(const std::string& peer, const TableRef& def,
                                      const peer::v1::VerifyRepair& r,
                                      peer::v1::VerifyRepairAnswer* a) {
  if (static_cast<size_t>(r.rows_size()) > kMaxKeysPerStep) {
    return absl::InvalidArgumentError("verify repair: too many rows");
  }
  peer::v1::ChangeBatch check;
  std::vector<ChangeEntry> apply;
  for (const ChangeEntry& e : r.rows()) {
    apply.push_back(e);
    apply.back().set_table(def->name());  // only this table is repaired by this step
    *check.add_entries() = apply.back();
  }
  CAIRN_RETURN_IF_ERROR(cluster_->clock_bound().CheckBatch(check, peer));  // R16
  std::vector<ChangeEntry> unapplied;
  CAIRN_ASSIGN_OR_RETURN(
      auto stats, node_->records->ApplyPeerEntries(def->database(), apply, nullptr, &unapplied));
  a->set_applied(stats.applied);
  a->set_not_applied(NotApplied(stats));
  rows_repaired_total_.fetch_add(stats.applied);
  if (stats.applied > 0) {
    spdlog::warn("[{}] verify by {}: {} row(s) of {} repaired here", node_->records->node_name(),
                 peer, stats.applied, def->QualifiedName());
  }
  return absl::OkStatus();
}

bool AntiEntropy::WaitForCursor(const std::string& peer, const std::string& db, uint64_t log_id,
                                uint64_t seq, absl::Duration wait) {
  const absl::Time deadline = internal::SteadyNow() + wait;
  const std::string key = storage::CursorKey(peer, db);
  std::string last;
  absl::Time moved = internal::SteadyNow();
  for (;;) {
    std::string value;
    bool found = false;
    storage::v1::ReplicaCursor cursor;
    if (node_->engine->Get(storage::Cf::kMeta, key, &value, &found).ok() && found &&
        cursor.ParseFromString(value) && cursor.log_id() == log_id && !cursor.has_copy() &&
        cursor.seq() >= seq) {
      return true;
    }
    if (seq == 0 && log_id != 0) return true;  // the peer's log was empty
    const absl::Time now = internal::SteadyNow();
    if (value != last) {
      last = value;
      moved = now;
    }
    // Replication is not delivering (paused, cut, a peer that lost its cursor): waiting longer
    // changes nothing.
    if (now - moved >= kCursorStall || now >= deadline || Stopping()) return false;
    absl::SleepFor(kCursorPoll);
  }
}

}  // namespace cairn::replication
