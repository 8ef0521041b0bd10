#include "replication/anti_entropy.h"

#include <algorithm>
#include <future>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "catalog/placement.h"
#include "common/fault_points.h"
#include "common/status.h"
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
using internal::kMaxKeysPerStep;
using internal::kMaxStepBytes;
using internal::kMaxWaitMs;
using internal::Loses;
using internal::NotApplied;
using internal::Same;
using internal::StampOf;
using storage::v1::ChangeEntry;
using storage::v1::StoredRecord;

namespace {

// A step's deadline beyond its scan and its wait.
constexpr absl::Duration kCallSlack = absl::Seconds(10);
// What a step's deadline assumes the peer holds before its first answer says.
constexpr uint64_t kUnknownPeerRows = 10'000'000;

TableVerify Skipped(const std::string& table, const std::string& why) {
  TableVerify t;
  t.table = table;
  t.skipped = why;
  return t;
}

// The peer skipped the table (VerifyResponse.skipped): recorded in `out`.
bool PeerSkipped(const std::string& peer, const peer::v1::VerifyResponse& response,
                 TableVerify* out) {
  if (response.skipped().empty()) return false;
  out->skipped = absl::StrCat(peer, ": ", response.skipped());
  out->schema_differs = response.schema_differs();
  out->peer_node_local = response.node_local();
  return true;
}

// A peer's page of stamps must move on: keys strictly increasing, all after `after`, and
// none only when it has no more.
absl::Status CheckPage(const std::string& peer, const std::string& after,
                       const std::vector<RowStamp>& remote, bool more) {
  for (size_t i = 0; i < remote.size(); ++i) {
    const std::string& prev = i == 0 ? after : remote[i - 1].key;
    if ((i > 0 || !after.empty()) && remote[i].key <= prev) {
      return absl::DataLossError(absl::StrCat(peer, " answered stamps out of order"));
    }
  }
  if (more && remote.empty()) {
    return absl::DataLossError(absl::StrCat(peer, " answered an empty page with more"));
  }
  return absl::OkStatus();
}

std::vector<std::string> KeysOf(const std::vector<RowStamp>& stamps) {
  std::vector<std::string> keys;
  keys.reserve(stamps.size());
  for (const RowStamp& s : stamps) keys.push_back(s.key);
  return keys;
}

}  // namespace

namespace {

BackgroundPaceOptions VerifyPace(const catalog::LocalNode* node, const AntiEntropyOptions& o) {
  BackgroundPaceOptions p;
  p.rate = o.rate;
  p.busy_share = o.busy_share;
  p.activity = &node->activity;
  return p;
}

}  // namespace

AntiEntropy::AntiEntropy(catalog::LocalNode* node, Cluster* cluster, AntiEntropyOptions options)
    : node_(node), cluster_(cluster), options_(options), pace_(VerifyPace(node, options_)) {}

AntiEntropy::~AntiEntropy() {
  // Cluster::Stop has run Stop(); the Cluster's members may be gone by now, so only the
  // thread is made sure of here.
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (loop_.joinable()) loop_.join();
}

void AntiEntropy::Start() {
  if (options_.interval <= absl::ZeroDuration() || options_.interval == absl::InfiniteDuration()) {
    return;
  }
  loop_ = std::thread([this] { Loop(); });
}

void AntiEntropy::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  cluster_->CancelVerifyCalls();  // calls in flight end now, new ones at once
  if (loop_.joinable()) loop_.join();
}

bool AntiEntropy::BothMembers(const catalog::CatalogSnapshot& snap, const std::string& db,
                              const std::string& peer) const {
  return catalog::HoldsRowsOf(snap, db, node_->records->node_name()) &&
         catalog::HoldsRowsOf(snap, db, peer);
}

bool AntiEntropy::Stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_ || cluster_->stopping();
}

void AntiEntropy::Loop() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), options_.interval)) return;
    }
    for (const std::string& peer : cluster_->VerifyPeers()) {
      catalog::SnapshotRef snap = node_->catalog->Snapshot();
      for (const auto& [db, def] : snap->databases) {
        {
          absl::MutexLock lock(&mu_);
          if (stopping_) return;
        }
        if (!BothMembers(*snap, db, peer)) continue;  // P3
        PeerVerify r = Verify(peer, db);
        if (!r.status.ok()) {
          spdlog::warn("[{}] verify of '{}' with {}: {}", node_->records->node_name(), db, peer,
                       r.status.ToString());
        }
      }
    }
  }
}

Hlc AntiEntropy::SettledBefore() const {
  const absl::Duration retention = node_->engine->options().tombstone_retention;
  if (retention == absl::InfiniteDuration()) return 0;
  // Stamps are the node's clock's (and so is the purge's retention, storage/engine.cc).
  const int64_t ms = absl::ToUnixMillis(node_->hlc->WallNow() - retention / 2);
  return ms <= 0 ? 0 : HybridClock::Make(static_cast<uint64_t>(ms), 0);
}

catalog::DigestScanOptions AntiEntropy::ScanOptions(Hlc settled_before,
                                                    std::function<bool()> cancelled) {
  catalog::DigestScanOptions o;
  o.settled_before = settled_before;
  o.pace = [this, cancelled = std::move(cancelled)](
               uint64_t rows, absl::FunctionRef<absl::Status()> table) -> absl::Status {
    return pace_.Wait(rows, [&]() -> absl::Status {
      if (Stopping()) return absl::CancelledError("this node is shutting down");
      if (cancelled && cancelled()) return absl::CancelledError("the verify call was cancelled");
      return table();  // C9: a drop of the table does not wait for the pace
    });
  };
  return o;
}

PeerVerify AntiEntropy::Verify(const std::string& peer, const std::string& db,
                               const std::optional<std::string>& table, VerifyMode mode) {
  PeerVerify out;
  out.peer = peer;
  out.database = db;
  catalog::SnapshotRef snap = node_->catalog->Snapshot();
  const catalog::DatabaseDef* database = snap->FindDatabase(db);
  if (database == nullptr) {
    out.status = Error(ErrorCode::kDatabaseNotFound, absl::StrCat("database '", db, "' not found"));
    return out;
  }
  if (mode == VerifyMode::kRelease) {
    if (!catalog::IsReady(database->placement, peer)) {
      out.status = Error(ErrorCode::kNotAMember,
                         absl::StrCat(peer, " is not a ready member of database '", db, "'"));
      return out;
    }
  } else if (!BothMembers(*snap, db, peer)) {
    // P3: only members hold the rows, so only members compare them.
    out.status = Error(ErrorCode::kNotAMember,
                       absl::StrCat("database '", db, "' is placed on ",
                                    catalog::DescribeMembers(database->placement), ", not on both ",
                                    node_->records->node_name(), " and ", peer));
    return out;
  }
  std::vector<TableRef> tables;
  if (table.has_value()) {
    auto def = snap->FindTable(db, *table);
    if (!def.ok()) {
      out.status = def.status();
      return out;
    }
    tables.push_back(*def);
  } else {
    for (const auto& [name, def] : database->tables) tables.push_back(def);
    // Resumable: a run that failed part way (a lost connection) starts again where it did.
    std::string resume;
    {
      absl::MutexLock lock(&mu_);
      auto it = records_.find({peer, db});
      if (it != records_.end()) resume = it->second.resume_from;
    }
    auto first = std::find_if(tables.begin(), tables.end(),
                              [&](const TableRef& t) { return t->name() == resume; });
    if (first != tables.end()) std::rotate(tables.begin(), first, tables.end());
  }
  const Exclusions exclusions = cluster_->ExclusionsFor(peer);
  for (const TableRef& def : tables) {
    if (!def->replicate()) {
      out.tables.push_back(Skipped(def->name(), "node-local (C11)"));
      continue;
    }
    if (exclusions.Excludes(db, def->name())) {
      out.tables.push_back(Skipped(def->name(), "excluded by this node's route (R11)"));
      continue;
    }
    absl::Status error;
    out.tables.push_back(VerifyTable(peer, def, mode, &error));
    // A table that fails does not hold the others back; the next run starts at the first
    // that failed. A peer gone or this node stopping ends the run.
    if (!error.ok()) {
      if (out.status.ok()) {
        out.status = error;
        out.resume_from = def->name();
      }
      if (absl::IsUnavailable(error) || absl::IsCancelled(error)) break;
    }
  }
  out.finished = node_->hlc->WallNow();
  if (mode == VerifyMode::kRepair) Record(out, /*whole_database=*/!table.has_value());
  return out;
}

void AntiEntropy::Record(const PeerVerify& result, bool whole_database) {
  runs_total_.fetch_add(1);
  absl::MutexLock lock(&mu_);
  DbRecord& r = records_[{result.peer, result.database}];
  for (const TableVerify& t : result.tables) {
    if (!t.skipped.empty() && !t.schema_differs) {
      r.tables.erase(t.table);  // not compared by rule (node-local, excluded, dropped)
      continue;
    }
    r.tables[t.table] = {result.finished, t.rows_compared, t.rows_repaired(), t.in_sync()};
  }
  r.error = result.status.ok() ? "" : result.status.ToString();
  if (whole_database || !result.resume_from.empty()) {
    r.resume_from = result.resume_from;
  } else if (result.tables.size() == 1 && r.resume_from == result.tables[0].table) {
    r.resume_from.clear();  // the table it stopped at is done now
  }
}

absl::btree_map<std::pair<std::string, std::string>, VerifyRecord> AntiEntropy::Records() const {
  catalog::SnapshotRef snap = node_->catalog->Snapshot();
  absl::MutexLock lock(&mu_);
  absl::btree_map<std::pair<std::string, std::string>, VerifyRecord> out;
  for (const auto& [key, r] : records_) {
    VerifyRecord& v = out[key];
    v.verified_at = absl::InfiniteFuture();
    v.in_sync = r.error.empty();
    v.error = r.error;
    v.resume_from = r.resume_from;
    for (const auto& [table, t] : r.tables) {
      if (!snap->FindTable(key.second, table).ok()) continue;  // dropped since
      v.verified_at = std::min(v.verified_at, t.at);           // every table since then
      v.rows_compared += t.rows_compared;
      v.rows_repaired += t.rows_repaired;
      v.in_sync = v.in_sync && t.in_sync;
    }
    if (v.verified_at == absl::InfiniteFuture()) v.verified_at = absl::InfinitePast();
  }
  return out;
}

absl::Status AntiEntropy::Call(const std::string& peer, const TableRef& def,
                               peer::v1::VerifyRequest* request, peer::v1::VerifyResponse* response,
                               TableVerify* out) {
  peer::v1::VerifyTable* t = request->mutable_table();
  t->set_database(def->database());
  t->set_table(def->name());
  t->set_created_time(def->created_time());
  t->set_marker(node_->catalog->Snapshot()->MarkerFor(def->database(), def->name()));
  if (Stopping()) return absl::CancelledError("this node is shutting down");
  // A step scans the table once at most on the callee, at its rate limit (assumed like ours):
  // as many rows as the larger side holds, or, before the peer said, kUnknownPeerRows.
  absl::Duration timeout = kCallSlack + options_.catch_up_wait;
  if (options_.rate > 0) {
    auto rows = node_->records->RecordCount(*def);
    const uint64_t scanned =
        std::max(rows.ok() ? *rows : 0, out->peer_rows == 0 ? kUnknownPeerRows : out->peer_rows);
    timeout += absl::Seconds(2.0 * static_cast<double>(scanned) / options_.rate);
  }
  out->bytes_sent += request->ByteSizeLong();
  absl::Status s = cluster_->CallVerify(peer, *request, response, timeout);
  out->bytes_received += response->ByteSizeLong();
  return s;
}

TableVerify AntiEntropy::VerifyTable(const std::string& peer, const TableRef& def, VerifyMode mode,
                                     absl::Status* error) {
  const absl::Time start = internal::SteadyNow();
  TableVerify out;
  out.table = def->name();
  out.push_only = mode == VerifyMode::kRelease;
  absl::Status s = CompareTable(peer, def, &out);
  if (Dropping(s)) {  // C9: the table went while we compared it
    out.skipped = "dropped during the verify";
    s = absl::OkStatus();
  }
  *error = s;
  out.duration = internal::SteadyNow() - start;
  rows_compared_total_.fetch_add(out.rows_compared);
  rows_repaired_total_.fetch_add(out.repaired_here);  // the peer counts its own
  micros_total_.fetch_add(static_cast<uint64_t>(absl::ToInt64Microseconds(out.duration)));
  if (out.rows_repaired() > 0 || out.conflicts > 0) {
    spdlog::warn(
        "[{}] verify of {} with {}: {} row(s) repaired here, {} there, {} conflict(s), {} "
        "unsettled{}",
        node_->records->node_name(), def->QualifiedName(), peer, out.repaired_here,
        out.repaired_there, out.conflicts, out.unsettled,
        out.repaired_behind_replication
            ? " (replication had not delivered up to where the rows were read)"
            : "");
  }
  return out;
}

absl::Status AntiEntropy::CompareTable(const std::string& peer, const TableRef& def,
                                       TableVerify* out) {
  const Hlc settled = SettledBefore();
  CAIRN_ASSIGN_OR_RETURN(auto count, node_->records->RecordCount(*def));
  const int depth = catalog::DepthFor(count);
  std::vector<uint32_t> leaves;
  CAIRN_RETURN_IF_ERROR(DifferingLeaves(peer, def, settled, depth, out, &leaves));
  if (leaves.empty()) return absl::OkStatus();  // equal, or skipped
  return CompareStamps(peer, def, settled, depth, leaves, out);
}

absl::Status AntiEntropy::DifferingLeaves(const std::string& peer, const TableRef& def, Hlc settled,
                                          int depth, TableVerify* out,
                                          std::vector<uint32_t>* leaves) {
  // Both sides at once: the peer answers its branches (level depth-1) while this node scans.
  // Equal branches: done, one scan each. Otherwise a second call sends ours and the peer
  // answers the leaves under each branch that differs (a second scan there).
  auto local = std::async(std::launch::async,
                          [&] { return node_->records->Digest(def, depth, ScanOptions(settled)); });
  peer::v1::VerifyRequest request;
  peer::v1::VerifyResponse response;
  peer::v1::VerifyDigest* digest = request.mutable_digest();
  digest->set_depth(static_cast<uint32_t>(depth));
  digest->set_settled_before(settled);
  absl::Status called = Call(peer, def, &request, &response, out);
  auto tree = local.get();
  CAIRN_RETURN_IF_ERROR(called);
  CAIRN_RETURN_IF_ERROR(tree.status());
  if (PeerSkipped(peer, response, out)) return absl::OkStatus();
  const std::vector<uint64_t> branches = tree->Level(depth - 1);
  out->peer_rows = std::max<uint64_t>(1, response.digest().rows());
  out->rows_compared = std::max<uint64_t>(tree->rows(), response.digest().rows());
  if (std::equal(branches.begin(), branches.end(), response.digest().branches().begin(),
                 response.digest().branches().end())) {
    return absl::OkStatus();
  }
  for (uint64_t b : branches) digest->add_branches(b);
  response.Clear();
  CAIRN_RETURN_IF_ERROR(Call(peer, def, &request, &response, out));
  if (PeerSkipped(peer, response, out)) return absl::OkStatus();
  const peer::v1::VerifyDigestAnswer& theirs = response.digest();
  out->rows_compared = std::max<uint64_t>(tree->rows(), theirs.rows());
  constexpr uint32_t kFanout = 1u << catalog::kDigestFanoutBits;
  if (static_cast<size_t>(theirs.leaves_size()) !=
      static_cast<size_t>(theirs.differing_branches_size()) * kFanout) {
    return absl::DataLossError(absl::StrCat(peer, " answered a malformed digest"));
  }
  for (int i = 0; i < theirs.differing_branches_size(); ++i) {
    const uint32_t branch = theirs.differing_branches(i);
    if (branch >= tree->leaf_count() / kFanout) {
      return absl::DataLossError(absl::StrCat(peer, " answered a malformed digest"));
    }
    for (uint32_t j = 0; j < kFanout; ++j) {
      const uint32_t leaf = branch * kFanout + j;
      if (tree->leaves()[leaf] != theirs.leaves(i * kFanout + j)) leaves->push_back(leaf);
    }
  }
  out->differing_leaves = leaves->size();
  return absl::OkStatus();
}

absl::Status AntiEntropy::CompareStamps(const std::string& peer, const TableRef& def, Hlc settled,
                                        int depth, const std::vector<uint32_t>& leaves,
                                        TableVerify* out) {
  // Page by page on both sides at once: each round compares keys up to where the shorter page
  // ends.
  std::string after;
  for (;;) {
    peer::v1::VerifyRequest request;
    peer::v1::VerifyResponse response;
    peer::v1::VerifyStamps* stamps = request.mutable_stamps();
    stamps->set_depth(static_cast<uint32_t>(depth));
    for (uint32_t leaf : leaves) stamps->add_leaves(leaf);
    stamps->set_after_key(after);
    stamps->set_limit(options_.page);
    CAIRN_RETURN_IF_ERROR(Call(peer, def, &request, &response, out));
    if (PeerSkipped(peer, response, out)) return absl::OkStatus();
    CAIRN_ASSIGN_OR_RETURN(
        auto mine,
        node_->records->LeafStamps(def, depth, leaves, after, options_.page, ScanOptions(settled)));
    const uint64_t own_seq = node_->log->ReservedSeq(def->database());
    std::vector<RowStamp> remote;
    for (const ChangeEntry& e : response.stamps().stamps()) remote.push_back(StampOf(e));
    CAIRN_RETURN_IF_ERROR(CheckPage(peer, after, remote, response.stamps().more()));
    std::optional<std::string> end;
    if (response.stamps().more()) end = remote.back().key;
    if (mine.more && !mine.stamps.empty() && (!end || mine.stamps.back().key < *end)) {
      end = mine.stamps.back().key;
    }
    auto beyond = [&](const RowStamp& s) { return end.has_value() && s.key > *end; };
    mine.stamps.erase(std::remove_if(mine.stamps.begin(), mine.stamps.end(), beyond),
                      mine.stamps.end());
    remote.erase(std::remove_if(remote.begin(), remote.end(), beyond), remote.end());
    catalog::StampDiff diff = catalog::DiffStamps(mine.stamps, remote, settled);
    out->conflicts += diff.conflicts;
    CAIRN_RETURN_IF_ERROR(Settle(peer, def, diff, response.stamps().log_id(),
                                 response.stamps().reserved_seq(), own_seq, out));
    if (!end.has_value()) return absl::OkStatus();
    after = *end;
  }
}

absl::Status AntiEntropy::Settle(const std::string& peer, const TableRef& def,
                                 const catalog::StampDiff& diff, uint64_t peer_log_id,
                                 uint64_t peer_seq, uint64_t own_seq, TableVerify* out) {
  if (!out->push_only) {
    CAIRN_RETURN_IF_ERROR(Pull(peer, def, diff.pull, peer_log_id, peer_seq, out));
  }
  return Push(peer, def, diff.push, own_seq, out);
}

// 3. Rows the peer holds newer: once this node's cursor on the peer's log has passed where the
//    peer stood (or replication stopped delivering), those still older here and unchanged
//    there are divergence.
absl::Status AntiEntropy::Pull(const std::string& peer, const TableRef& def,
                               const std::vector<RowStamp>& pull, uint64_t peer_log_id,
                               uint64_t peer_seq, TableVerify* out) {
  if (pull.empty()) return absl::OkStatus();
  const std::string& db = def->database();
  const absl::Duration wait = out->pull_stalled ? absl::ZeroDuration() : options_.catch_up_wait;
  if (!WaitForCursor(peer, db, peer_log_id, peer_seq, wait)) {
    out->repaired_behind_replication = out->pull_stalled = true;
  }
  CAIRN_ASSIGN_OR_RETURN(auto here, node_->records->ReadStored(def, KeysOf(pull)));
  std::vector<const RowStamp*> wanted;
  for (size_t i = 0; i < pull.size(); ++i) {
    if (Loses(here[i], pull[i].version, pull[i].origin)) wanted.push_back(&pull[i]);
  }
  // The peer answers a prefix of the keys asked, within its byte budget; ask again for the rest.
  for (size_t from = 0; from < wanted.size();) {
    peer::v1::VerifyRequest request;
    peer::v1::VerifyResponse response;
    for (size_t i = from; i < wanted.size() && i < from + kMaxKeysPerStep; ++i) {
      request.mutable_rows()->add_keys(wanted[i]->key);
    }
    CAIRN_RETURN_IF_ERROR(Call(peer, def, &request, &response, out));
    if (!response.skipped().empty()) return Error(ErrorCode::kTableDropping, response.skipped());
    const uint32_t answered = response.rows().answered();
    if (answered == 0 || answered > static_cast<uint32_t>(request.rows().keys_size())) {
      return absl::DataLossError(absl::StrCat(peer, " answered no rows of ", wanted.size() - from));
    }
    const size_t end = from + answered;
    std::vector<ChangeEntry> apply;
    size_t next = from;
    for (const ChangeEntry& row : response.rows().rows()) {
      while (next < end && wanted[next]->key != row.key()) {
        ++out->unsettled;  // gone there since
        ++next;
      }
      if (next == end) break;
      if (!Same(row, *wanted[next++])) {
        ++out->unsettled;  // changed there since: in flight again
        continue;
      }
      apply.push_back(row);
      apply.back().set_table(def->name());
    }
    out->unsettled += end - next;
    from = end;
    if (apply.empty()) continue;
    peer::v1::ChangeBatch check;
    for (const ChangeEntry& e : apply) *check.add_entries() = e;
    CAIRN_RETURN_IF_ERROR(cluster_->clock_bound().CheckBatch(check, peer));  // R16
    CAIRN_RETURN_IF_ERROR(
        CAIRN_FAULT(node_->catalog->options().faults, fault_points::kVerifyBeforeRepair));
    std::vector<ChangeEntry> unapplied;
    CAIRN_ASSIGN_OR_RETURN(catalog::ApplyStats stats,
                           node_->records->ApplyPeerEntries(db, apply, nullptr, &unapplied));
    out->repaired_here += stats.applied;
    out->unrepaired += NotApplied(stats);
  }
  return absl::OkStatus();
}

// 4, 5. Rows this node holds newer: the peer says which it still lacks once its cursor on this
//    node's log has passed own_seq (or stopped moving); those unchanged here go to it, in
//    repairs of at most kMaxStepBytes.
absl::Status AntiEntropy::Push(const std::string& peer, const TableRef& def,
                               const std::vector<RowStamp>& push, uint64_t own_seq,
                               TableVerify* out) {
  if (push.empty()) return absl::OkStatus();
  peer::v1::VerifyRequest request;
  peer::v1::VerifyResponse response;
  peer::v1::VerifyBehind* behind = request.mutable_behind();
  for (const RowStamp& s : push) *behind->add_stamps() = EntryOf(def->name(), s);
  behind->set_log_id(node_->log->log_id());
  behind->set_reserved_seq(own_seq);
  behind->set_wait_ms(out->push_stalled
                          ? 0
                          : static_cast<uint32_t>(std::min<int64_t>(
                                absl::ToInt64Milliseconds(options_.catch_up_wait), kMaxWaitMs)));
  CAIRN_RETURN_IF_ERROR(Call(peer, def, &request, &response, out));
  if (!response.skipped().empty()) return Error(ErrorCode::kTableDropping, response.skipped());
  if (!response.behind().caught_up()) out->repaired_behind_replication = out->push_stalled = true;
  std::vector<std::string> keys(response.behind().keys().begin(), response.behind().keys().end());
  if (keys.empty()) return absl::OkStatus();
  absl::flat_hash_map<std::string, const RowStamp*> asked;
  for (const RowStamp& s : push) asked[s.key] = &s;
  if (keys.size() > push.size()) {
    return absl::DataLossError(absl::StrCat(peer, " answered more keys than it was asked"));
  }
  CAIRN_ASSIGN_OR_RETURN(auto here, node_->records->ReadStored(def, keys));
  auto send = [&]() -> absl::Status {
    if (request.repair().rows_size() == 0) return absl::OkStatus();
    CAIRN_RETURN_IF_ERROR(
        CAIRN_FAULT(node_->catalog->options().faults, fault_points::kVerifyBeforeRepair));
    response.Clear();
    CAIRN_RETURN_IF_ERROR(Call(peer, def, &request, &response, out));
    if (!response.skipped().empty()) return Error(ErrorCode::kTableDropping, response.skipped());
    out->repaired_there += response.repair().applied();
    out->unrepaired += response.repair().not_applied();
    request.Clear();
    return absl::OkStatus();
  };
  request.Clear();
  size_t bytes = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto stamp = asked.find(keys[i]);
    if (stamp == asked.end() || !here[i].has_value() ||
        !Same(EntryOf(def->name(), keys[i], *here[i], false), *stamp->second)) {
      ++out->unsettled;  // changed here since (or never asked): in flight again
      continue;
    }
    *request.mutable_repair()->add_rows() = EntryOf(def->name(), keys[i], *here[i], true);
    bytes += here[i]->json().size() + keys[i].size();
    if (bytes >= kMaxStepBytes) {
      CAIRN_RETURN_IF_ERROR(send());
      bytes = 0;
    }
  }
  return send();
}

}  // namespace cairn::replication
