// Cluster: the node's peers and their links, the core (SPEC R2, R3, R12, R13). Construction,
// start and stop; membership (add_node / remove_node); the sessions and what they report
// (Hello, digests, the receiver claim, origins); fan-out of catalog changes and commits to
// every link; change-log retention; the link-cut test hook. The rest of Cluster by concern:
// peer_service.cc (the Peer service, authentication), cluster_dial.cc (dialers, channels),
// cluster_forward.cc (forwarded drops, both ways), cluster_verify.cc (anti-entropy's calls),
// cluster_status.cc (cluster_status).
#include "replication/cluster.h"

#include <algorithm>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "catalog/names.h"
#include "catalog/placement.h"
#include "common/status.h"
#include "grpcpp/grpcpp.h"
#include "replication/internal/peer_call.h"
#include "replication/link_session.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"

namespace cairn::replication {

Cluster::Cluster(catalog::LocalNode* node, ClusterOptions options)
    : node_(node),
      options_(std::move(options)),
      service_(NewService(this)),
      clock_bound_(node_->hlc.get(), options_.max_clock_offset) {
  {
    absl::MutexLock lock(&hook_->mu);
    hook_->cluster = this;
  }
  // Before any server serves, so no catalog change goes unannounced (R3).
  node_->catalog->SetListener([hook = hook_](const catalog::SnapshotRef&) {
    absl::MutexLock lock(&hook->mu);
    if (hook->cluster != nullptr) hook->cluster->OnCatalogChange();
  });
  node_->log->AddCommitListener([hook = hook_](absl::string_view db, const std::string* origin) {
    // Shared: concurrent commits do not queue behind one another here (nor in OnCommit).
    absl::ReaderMutexLock lock(&hook->mu);
    if (hook->cluster != nullptr) hook->cluster->OnCommit(db, origin);
  });
  anti_entropy_ = std::make_unique<AntiEntropy>(node_, this, options_.verify);
  releaser_ = std::make_unique<Releaser>(node_, this, options_.release_interval);
  absl::MutexLock lock(&mu_);
  for (PeerRoute r : options_.peers) {
    r.id = next_route_id_++;
    peers_[r.name].address = r.address;
    routes_.push_back(std::move(r));
  }
}

Cluster::~Cluster() { Stop(); }

absl::Status Cluster::Start() {
  // P7: a copy that completed just before a crash may have left this node caught up but not
  // yet announced.
  CAIRN_RETURN_IF_ERROR(node_->catalog->MarkReadyWhereCaughtUp());
  // Peers added at run time (add_node), unless the configuration names them too.
  std::vector<PeerRoute> stored;
  storage::Engine* engine = node_->engine.get();
  auto it = engine->NewIterator(storage::Cf::kCatalog, nullptr,
                                storage::PrefixSuccessor(storage::kPeerPrefix));
  for (it->Seek(std::string(storage::kPeerPrefix)); it->Valid(); it->Next()) {
    catalog::v1::PeerRow row;
    if (!row.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      return absl::DataLossError(absl::StrCat("unreadable peer row ", it->key().ToString()));
    }
    PeerRoute route{row.name(), row.address(), {}};
    for (const std::string& t : row.exclude()) {
      const size_t dot = t.find('.');
      if (dot != std::string::npos) route.exclude.Add(t.substr(0, dot), t.substr(dot + 1));
    }
    stored.push_back(std::move(route));
  }
  if (!it->status().ok()) return absl::InternalError(it->status().ToString());
  absl::MutexLock lock(&mu_);
  for (PeerRoute& r : stored) {
    if (HasRouteLocked(r.name)) continue;
    r.id = next_route_id_++;
    peers_[r.name].address = r.address;
    routes_.push_back(std::move(r));
  }
  started_ = true;
  for (const PeerRoute& route : routes_) {
    dialers_[route.id] = std::thread([this, route] { Dial(route); });
  }
  trimmer_ = std::thread([this] { TrimLoop(); });
  anti_entropy_->Start();
  releaser_->Start();
  parked_.Start();
  return absl::OkStatus();
}

void Cluster::TrimLoop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(
                                   +[](Cluster* c) { return c->stopping_.load(); }, this),
                               options_.trim_interval)) {
        return;
      }
    }
    TrimOnce();
  }
}

void Cluster::TrimOnce() {
  // What linked peers still need (a full copy's tail, above all): kept while the log may
  // grow to twice its retention (R12, R17), so a copy under write load does not restart.
  absl::flat_hash_map<std::string, uint64_t> keep_from;
  std::vector<std::shared_ptr<LinkSession>> sessions;
  {
    absl::MutexLock lock(&mu_);
    sessions = sessions_;
  }
  for (const auto& s : sessions) {
    for (const auto& [db, need] : s->log_needs()) {
      auto [it, inserted] = keep_from.try_emplace(db, need);
      if (!inserted) it->second = std::min(it->second, need);
    }
  }
  // The log's own clock (the engine's), as it stamps logged_ms and ages tombstones (D5).
  const uint64_t oldest_ms = static_cast<uint64_t>(std::max<int64_t>(
      0, absl::ToUnixMillis(node_->engine->clock()->Now() - options_.log_retention_age)));
  for (const std::string& db : node_->log->Databases()) {
    auto need = keep_from.find(db);
    absl::StatusOr<uint64_t> trimmed = node_->log->Trim(
        db, options_.log_retention_entries, oldest_ms, need == keep_from.end() ? 0 : need->second);
    if (!trimmed.ok()) {
      spdlog::warn("[{}] trimming the change log of '{}': {}", options_.node_name, db,
                   trimmed.status().ToString());
    } else if (*trimmed > 0) {
      spdlog::info("[{}] trimmed {} change-log entr{} of '{}' (retention, R12)", options_.node_name,
                   *trimmed, *trimmed == 1 ? "y" : "ies", db);
    }
  }
}

std::optional<uint64_t> Cluster::HighestOverLinks(
    const std::string& peer, const std::function<std::optional<uint64_t>(LinkSession&)>& of) const {
  std::vector<std::shared_ptr<LinkSession>> sessions;
  {
    absl::MutexLock lock(&mu_);
    sessions = sessions_;
  }
  std::optional<uint64_t> out;
  for (const auto& s : sessions) {
    if (s->peer() != peer) continue;
    if (std::optional<uint64_t> v = of(*s); v.has_value()) out = std::max(out.value_or(0), *v);
  }
  return out;
}

std::optional<uint64_t> Cluster::AckedCursor(const std::string& peer, const std::string& db) const {
  return HighestOverLinks(peer, [&](LinkSession& s) { return s.acked_cursor(db); });
}

std::optional<uint64_t> Cluster::AckedOwnWrites(const std::string& peer,
                                                const std::string& db) const {
  return HighestOverLinks(peer, [&](LinkSession& s) { return s.acked_own_writes(db); });
}

std::optional<uint64_t> Cluster::CommitWakes(const std::string& peer) const {
  return HighestOverLinks(peer, [](LinkSession& s) { return s.commit_wakes(); });
}

bool Cluster::ClaimReceiver(const std::string& peer, const LinkSession* s) {
  absl::MutexLock lock(&mu_);
  PeerState& state = peers_[peer];
  if (state.receiver == nullptr) state.receiver = s;
  return state.receiver == s;
}

void Cluster::ReleaseReceiver(const std::string& peer, const LinkSession* s) {
  absl::MutexLock lock(&mu_);
  auto it = peers_.find(peer);
  if (it == peers_.end() || it->second.receiver != s) return;
  it->second.receiver = nullptr;
  // Under mu_: a link that claims it next cannot advertise it before this withdrawal.
  if (origin_book_.Withdraw(peer)) {
    for (auto& session : sessions_) session->NotifyOrigins(/*urgent=*/true);
  }
}

void Cluster::UpdateOrigin(const std::string& peer, const std::string& db,
                           const std::optional<DirectOrigin>& direct) {
  bool urgent = true;
  if (!origin_book_.Update(peer, db, direct, &urgent)) return;
  absl::ReaderMutexLock lock(&mu_);
  for (auto& session : sessions_) session->NotifyOrigins(urgent);
}

void Cluster::OnCommit(absl::string_view db, const std::string* origin) {
  // P3: a peer that holds no rows of `db` is sent none of its entries, so its writer is not
  // woken for them (with a database on 3 of 6 nodes, 3 of every member's 5 writers would
  // wake per commit for nothing). Should the peer become a member, the catalog change wakes
  // it (CatalogChanged), and its round reads the log from there on.
  const catalog::SnapshotRef snap = node_->catalog->Snapshot();
  absl::ReaderMutexLock lock(&mu_);
  for (auto& s : sessions_) {
    if (catalog::HoldsRowsOf(*snap, db, s->peer())) s->NotifyCommit(db, origin);
  }
}

Exclusions Cluster::ExclusionsFor(const std::string& peer) const {
  absl::MutexLock lock(&mu_);
  for (const PeerRoute& r : routes_) {
    if (r.name == peer) return r.exclude;
  }
  return {};
}

bool Cluster::HasRouteIdLocked(uint64_t id) const {
  mu_.AssertReaderHeld();
  return std::any_of(routes_.begin(), routes_.end(),
                     [&](const PeerRoute& r) { return r.id == id; });
}

bool Cluster::HasRouteLocked(const std::string& name) const {
  mu_.AssertReaderHeld();
  return std::any_of(routes_.begin(), routes_.end(),
                     [&](const PeerRoute& r) { return r.name == name; });
}

absl::Status Cluster::AddPeer(const PeerRoute& route, bool persist) {
  if (route.name == options_.node_name) {
    return Error(ErrorCode::kBadRequest, "a node does not link to itself (R2)");
  }
  CAIRN_RETURN_IF_ERROR(catalog::ValidateDatabaseName(route.name));
  absl::MutexLock membership(&membership_mu_);  // held across the (maybe synced) write
  ReapDialers();
  {
    absl::MutexLock lock(&mu_);
    if (HasRouteLocked(route.name)) {
      return Error(ErrorCode::kNodeExists,
                   absl::StrCat("peer '", route.name, "' is already known"));
    }
  }
  if (persist) {
    catalog::v1::PeerRow row;
    row.set_name(route.name);
    row.set_address(route.address);
    CAIRN_ASSIGN_OR_RETURN(const Hlc added, node_->hlc->Now());
    row.set_added_time(added);
    for (const std::string& t : route.exclude.List()) row.add_exclude(t);
    rocksdb::WriteBatch batch;
    batch.Put(node_->engine->cf(storage::Cf::kCatalog), storage::PeerKey(route.name),
              row.SerializeAsString());
    CAIRN_RETURN_IF_ERROR(node_->engine->Write(&batch));
  }
  absl::MutexLock lock(&mu_);
  PeerRoute added = route;
  added.id = next_route_id_++;
  routes_.push_back(added);
  peers_[route.name].address = route.address;
  if (started_ && !stopping_.load()) {
    dialers_[added.id] = std::thread([this, added] { Dial(added); });
  }
  return absl::OkStatus();
}

void Cluster::ReapDialers() {
  std::vector<std::thread> ended;
  {
    absl::MutexLock lock(&mu_);
    for (uint64_t id : ended_dialers_) {
      auto it = dialers_.find(id);
      if (it == dialers_.end()) continue;
      ended.push_back(std::move(it->second));
      dialers_.erase(it);
    }
    ended_dialers_.clear();
  }
  for (std::thread& t : ended) t.join();  // each has returned, or is about to
}

absl::Status Cluster::RemovePeer(const std::string& name) {
  absl::MutexLock membership(&membership_mu_);  // held across the (maybe synced) write
  {
    absl::MutexLock lock(&mu_);
    if (!HasRouteLocked(name)) {
      return Error(ErrorCode::kNodeNotFound, absl::StrCat("no peer named '", name, "'"));
    }
  }
  rocksdb::WriteBatch batch;
  batch.Delete(node_->engine->cf(storage::Cf::kCatalog), storage::PeerKey(name));
  CAIRN_RETURN_IF_ERROR(node_->engine->Write(&batch));
  {
    absl::MutexLock lock(&mu_);
    for (const PeerRoute& r : routes_) {
      if (r.name != name) continue;
      auto d = dialing_.find(r.id);
      if (d != dialing_.end()) d->second->TryCancel();  // its dialer sees no route and ends
    }
    routes_.erase(std::remove_if(routes_.begin(), routes_.end(),
                                 [&](const PeerRoute& r) { return r.name == name; }),
                  routes_.end());
    PeerState& state = peers_[name];
    state.address.clear();
    if (state.links == 0) peers_.erase(name);
  }
  ReapDialers();  // earlier removals' (this one's dialer may still be on its way out)
  return absl::OkStatus();
}

void Cluster::Stop() {
  std::vector<std::shared_ptr<LinkSession>> sessions;
  {
    absl::MutexLock lock(&hook_->mu);
    hook_->cluster = nullptr;  // the catalog outlives this Cluster
  }
  {
    absl::MutexLock lock(&mu_);
    if (stopping_.exchange(true)) return;
    sessions = sessions_;
    for (auto& [name, context] : dialing_) context->TryCancel();
  }
  for (auto& s : sessions) s->Cancel();
  {
    absl::MutexLock lock(&confirm_mu_);
    acked_.SignalAll();  // confirmed writes waiting answer now (P10)
  }
  anti_entropy_->Stop();  // first: a release's comparison in flight ends with its calls
  releaser_->Stop();
  parked_.Stop();
  std::vector<std::thread> dialers;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [id, t] : dialers_) dialers.push_back(std::move(t));
    dialers_.clear();
    ended_dialers_.clear();
  }
  for (std::thread& t : dialers) t.join();
  if (trimmer_.joinable()) trimmer_.join();
}

void Cluster::Register(const std::shared_ptr<LinkSession>& s) {
  absl::MutexLock lock(&mu_);
  sessions_.push_back(s);
}

void Cluster::Unregister(const LinkSession* s, const absl::Status& why, bool connected) {
  absl::MutexLock lock(&mu_);
  sessions_.erase(std::remove_if(sessions_.begin(), sessions_.end(),
                                 [s](const auto& p) { return p.get() == s; }),
                  sessions_.end());
  PeerState& state = peers_[s->peer()];
  if (connected) --state.links;
  if (!why.ok() && !stopping_.load()) {
    links_failed_.fetch_add(1);
    state.last_error = internal::Describe(why);
    spdlog::info("[{}] link with {} ended: {}", options_.node_name, s->peer(), state.last_error);
  }
  if (state.links == 0) state.digests.clear();
}

void Cluster::OnHello(const std::string& peer, const peer::v1::Hello& hello) {
  absl::MutexLock lock(&mu_);
  PeerState& state = peers_[peer];
  ++state.links;  // a link counts as connected once the peer's Hello is accepted
  state.capabilities.assign(hello.capabilities().begin(), hello.capabilities().end());
  state.last_error.clear();
  // The peer is evidently up (it may have dialed us after a restart): our channels to it
  // reconnect now instead of at the end of their backoff, so a forwarded drop reaches it.
  const std::string prefix = peer + "@";
  for (auto& [key, channel] : channels_) {
    if (absl::StartsWith(key, prefix))
      grpc::experimental::ChannelResetConnectionBackoff(channel.get());
  }
}

void Cluster::RecordClockOffset(const std::string& peer, int64_t offset_ms) {
  absl::MutexLock lock(&mu_);
  peers_[peer].clock_offset_ms = offset_ms;
}

void Cluster::OnSchema(const std::string& peer, const std::string& db, uint64_t digest) {
  absl::MutexLock lock(&mu_);
  peers_[peer].digests[db] = digest;
}

void Cluster::OnCatalogChange() {
  std::vector<std::shared_ptr<LinkSession>> sessions;
  {
    absl::MutexLock lock(&mu_);
    sessions = sessions_;
  }
  for (auto& s : sessions) s->CatalogChanged();
  parked_.Wake();  // a parked entry's table may be live now (R17)
}

void Cluster::CutLink(const std::string& peer) {
  std::vector<std::shared_ptr<LinkSession>> sessions;
  {
    absl::MutexLock lock(&mu_);
    if (!cut_.insert(peer).second) return;
    for (const auto& s : sessions_) {
      if (s->peer() == peer) sessions.push_back(s);
    }
    for (const PeerRoute& r : routes_) {
      auto it = dialing_.find(r.id);
      if (r.name == peer && it != dialing_.end()) it->second->TryCancel();
    }
  }
  spdlog::warn("[{}] link with {} cut (test hook)", options_.node_name, peer);
  for (auto& s : sessions) s->Cancel();
}

void Cluster::RestoreLink(const std::string& peer) {
  absl::MutexLock lock(&mu_);  // the dialers waiting on cut_ wake when it changes
  if (cut_.erase(peer) > 0) {
    spdlog::warn("[{}] link with {} restored (test hook)", options_.node_name, peer);
  }
}

bool Cluster::IsCut(const std::string& peer) const {
  absl::MutexLock lock(&mu_);
  return cut_.contains(peer);
}

}  // namespace cairn::replication
