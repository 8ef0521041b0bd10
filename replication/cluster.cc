#include "replication/cluster.h"

#include <algorithm>
#include <future>
#include <optional>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "catalog/names.h"
#include "common/status.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "replication/link_session.h"
#include "replication/schema_sync.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"

namespace cairn::replication {
namespace {

constexpr char kNodeHeader[] = "cairn-node";
constexpr char kSecretHeader[] = "cairn-secret";
constexpr char kReplicatedFromHeader[] = "cairn-replicated-from";
// A ChangeBatch holds up to 1 MiB of bodies plus one row; a row may be as large as a request
// body (--max-body-bytes, 10 MiB by default), the default 4 MiB limit is not enough.
constexpr int kMaxMessageBytes = 256 << 20;
// A keepalive ping unanswered this long ends the connection (decision 113).
constexpr int kKeepaliveTimeoutMs = 5'000;

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

absl::Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

std::string Metadata(const grpc::ServerContext& context, const char* key) {
  auto it = context.client_metadata().find(key);
  if (it == context.client_metadata().end()) return "";
  return std::string(it->second.data(), it->second.size());
}

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

class ClientLinkStream : public LinkStream {
 public:
  ClientLinkStream(
      std::shared_ptr<grpc::ClientContext> context,
      std::unique_ptr<grpc::ClientReaderWriter<peer::v1::LinkMessage, peer::v1::LinkMessage>>
          stream)
      : context_(std::move(context)), stream_(std::move(stream)) {}
  bool Read(peer::v1::LinkMessage* m) override { return stream_->Read(m); }
  bool Write(const peer::v1::LinkMessage& m, bool more_follows) override {
    return stream_->Write(
        m, more_follows ? grpc::WriteOptions().set_buffer_hint() : grpc::WriteOptions());
  }
  void Cancel() override { context_->TryCancel(); }
  void Abort() override { context_->TryCancel(); }
  absl::Status Finish() override { return FromGrpc(stream_->Finish()); }

 private:
  std::shared_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReaderWriter<peer::v1::LinkMessage, peer::v1::LinkMessage>> stream_;
};

class ServerLinkStream : public LinkStream {
 public:
  ServerLinkStream(grpc::ServerContext* context,
                   grpc::ServerReaderWriter<peer::v1::LinkMessage, peer::v1::LinkMessage>* stream)
      : context_(context), stream_(stream) {}
  bool Read(peer::v1::LinkMessage* m) override { return stream_->Read(m); }
  bool Write(const peer::v1::LinkMessage& m, bool more_follows) override {
    return stream_->Write(
        m, more_follows ? grpc::WriteOptions().set_buffer_hint() : grpc::WriteOptions());
  }
  void Cancel() override { context_->TryCancel(); }
  void Abort() override {}
  absl::Status Finish() override { return absl::OkStatus(); }  // the handler returns it

 private:
  grpc::ServerContext* context_;
  grpc::ServerReaderWriter<peer::v1::LinkMessage, peer::v1::LinkMessage>* stream_;
};

grpc::Status CutStatus() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the link is cut (test hook)");
}

}  // namespace

// The Peer service: authenticates every call, then runs a LinkSession or a forwarded drop.
class Cluster::Service final : public peer::v1::Peer::Service {
 public:
  explicit Service(Cluster* cluster) : cluster_(cluster) {}

  grpc::Status Link(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<peer::v1::LinkMessage, peer::v1::LinkMessage>* stream) override {
    absl::StatusOr<std::string> peer = cluster_->Authenticate(*context);
    if (!peer.ok()) return ToGrpc(peer.status());
    if (cluster_->stopping()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "stopping");
    if (cluster_->IsCut(*peer)) return CutStatus();
    auto session = std::make_shared<LinkSession>(
        cluster_, std::make_unique<ServerLinkStream>(context, stream), *peer);
    cluster_->Register(session);
    absl::Status s = session->Run();
    cluster_->Unregister(session.get(), s, session->hello_received());
    return ToGrpc(s);
  }

  // R18: one step of a peer's verify, answered from this node's store.
  grpc::Status Verify(grpc::ServerContext* context, const peer::v1::VerifyRequest* request,
                      peer::v1::VerifyResponse* response) override {
    absl::StatusOr<std::string> peer = cluster_->Authenticate(*context);
    if (!peer.ok()) return ToGrpc(peer.status());
    if (cluster_->stopping()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "stopping");
    if (cluster_->IsCut(*peer)) return CutStatus();
    return ToGrpc(cluster_->anti_entropy()->Serve(*peer, *request, response,
                                                  [context] { return context->IsCancelled(); }));
  }

  grpc::Status Forward(grpc::ServerContext* context, const peer::v1::ForwardRequest* request,
                       peer::v1::ForwardResponse* response) override {
    absl::StatusOr<std::string> peer = cluster_->Authenticate(*context);
    if (!peer.ok()) return ToGrpc(peer.status());
    if (cluster_->IsCut(*peer)) return CutStatus();
    // R9: provenance is out of band and must be the authenticated caller.
    const std::string from = Metadata(*context, kReplicatedFromHeader);
    if (from != *peer) {
      spdlog::warn("[{}] refused a forwarded drop from '{}' claiming provenance '{}' (R9)",
                   cluster_->options().node_name, *peer, from);
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          absl::StrCat("cairn-replicated-from '", from,
                                       "' is not the authenticated peer '", *peer, "'"));
    }
    // R16: no stamp from the future is applied or observed.
    if (absl::Status s = cluster_->clock_bound().CheckForward(*request, *peer); !s.ok()) {
      return ToGrpc(s);
    }
    catalog::LocalNode* node = cluster_->node();
    const Exclusions exclusions = cluster_->ExclusionsFor(*peer);
    if (request->has_drop_table()) {
      const peer::v1::DropTable& d = request->drop_table();
      if (exclusions.Excludes(d.database(), d.table())) {  // R11, receiver's side
        response->set_status("kept");
        response->set_reason("excluded by this node's route (R11)");
        return grpc::Status::OK;
      }
      auto r = node->records->ApplyPeerDrop(d.database(), d.table(), d.dropped_time());
      if (!r.ok()) return ToGrpc(r.status());
      response->set_status(std::string(catalog::PeerDropResultName(*r)));
      // The drop's marker may have arrived first, in a snapshot: then this very drop is
      // already in effect here, and the origin should hear "dropped", not "absent".
      if (*r == catalog::PeerDropResult::kAbsent &&
          node->catalog->Snapshot()->MarkerFor(d.database(), d.table()) == d.dropped_time()) {
        response->set_status("dropped");
        response->set_reason("already applied from a schema snapshot");
      }
      spdlog::info("[{}] drop of {}.{} at {} forwarded by {}: {}", cluster_->options().node_name,
                   d.database(), d.table(), d.dropped_time(), *peer, response->status());
      return grpc::Status::OK;
    }
    if (request->has_drop_database()) {
      const peer::v1::DropDatabase& d = request->drop_database();
      absl::flat_hash_map<std::string, Hlc> stamps;  // C7: each table's own stamp
      for (const peer::v1::TableStamp& t : d.tables()) stamps[t.table()] = t.dropped_time();
      const absl::flat_hash_set<std::string> keep(d.keep_tables().begin(), d.keep_tables().end());
      bool excluded = false;
      auto stamp_of = [&](const std::string& t) -> std::optional<Hlc> {
        // R11: neither what this node's route excludes (receiver's side) nor what the
        // sender's does (sender's side): those tables, and so the database, stay.
        if (exclusions.Excludes(d.database(), t) || keep.contains(t)) {
          excluded = true;
          return std::nullopt;
        }
        auto it = stamps.find(t);
        return it == stamps.end() ? d.dropped_time() : it->second;
      };
      auto results = node->catalog->ApplyPeerDropDatabase(d.database(), stamp_of);
      if (!results.ok()) return ToGrpc(results.status());
      bool dropped = false, kept = excluded;
      for (const auto& [table, result] : *results) {
        dropped |= result == catalog::PeerDropResult::kDropped;
        if (result == catalog::PeerDropResult::kKept) {
          kept = true;
          // C8: the kept (newer) table loses rows of the generations the drop retires.
          auto purged = node->records->ApplyPeerDrop(d.database(), table, *stamp_of(table));
          if (!purged.ok()) return ToGrpc(purged.status());
        }
      }
      response->set_status(kept ? "kept" : dropped ? "dropped" : "absent");
      if (excluded) response->set_reason("tables excluded by a route stay (R11)");
      spdlog::info("[{}] drop of database {} forwarded by {}: {}", cluster_->options().node_name,
                   d.database(), *peer, response->status());
      return grpc::Status::OK;
    }
    cluster_->CountUnknownMessage();
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "unknown forwarded operation");
  }

 private:
  Cluster* const cluster_;
};

Cluster::Cluster(catalog::LocalNode* node, ClusterOptions options)
    : node_(node),
      options_(std::move(options)),
      service_(std::make_unique<Service>(this)),
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
  node_->log->SetCommitListener([hook = hook_](absl::string_view db, const std::string* origin) {
    // Shared: concurrent commits do not queue behind one another here (nor in OnCommit).
    absl::ReaderMutexLock lock(&hook->mu);
    if (hook->cluster != nullptr) hook->cluster->OnCommit(db, origin);
  });
  anti_entropy_ = std::make_unique<AntiEntropy>(node_, this, options_.verify);
  absl::MutexLock lock(&mu_);
  for (PeerRoute r : options_.peers) {
    r.id = next_route_id_++;
    peers_[r.name].address = r.address;
    routes_.push_back(std::move(r));
  }
}

Cluster::~Cluster() { Stop(); }

grpc::Service* Cluster::service() { return service_.get(); }

absl::Status Cluster::Start() {
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
  absl::ReaderMutexLock lock(&mu_);
  for (auto& s : sessions_) s->NotifyCommit(db, origin);
}

void Cluster::ConfigureServer(grpc::ServerBuilder* builder) const {
  builder->SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder->SetMaxSendMessageSize(kMaxMessageBytes);
  // Decision 113: a peer's channel pings every `keepalive` on a quiet link (ChannelTo).
  // gRPC's server defaults (a ping without data once per 5 minutes, none without a call) would
  // count those as strikes and close the connection at the third with GOAWAY "too many
  // pings", failing every call on it: the link, and a verify or forwarded drop under way. A
  // peer may ping at twice our own rate (its setting may be shorter, its timer early); one
  // pinging faster still gets the default two strikes, so a flood of pings is still cut off.
  const int ms = static_cast<int>(absl::ToInt64Milliseconds(options_.keepalive));
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                              std::max(1, ms / 2));
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // This side pings too: a dialer that went silent ends the accepted link as well.
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, ms);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
}

Exclusions Cluster::ExclusionsFor(const std::string& peer) const {
  absl::MutexLock lock(&mu_);
  for (const PeerRoute& r : routes_) {
    if (r.name == peer) return r.exclude;
  }
  return {};
}

bool Cluster::HasRouteIdLocked(uint64_t id) const {
  return std::any_of(routes_.begin(), routes_.end(),
                     [&](const PeerRoute& r) { return r.id == id; });
}

bool Cluster::HasRouteLocked(const std::string& name) const {
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
      return Error(ErrorCode::kBadRequest,
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
  anti_entropy_->Stop();
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

std::shared_ptr<grpc::ServerCredentials> Cluster::ServerCredentials() const {
  if (!tls()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  ssl.pem_root_certs = options_.tls_ca;
  ssl.pem_key_cert_pairs.push_back({options_.tls_key, options_.tls_cert});
  return grpc::SslServerCredentials(ssl);
}

namespace {

// "ipv4:10.0.0.2:51234" -> "ipv4:10.0.0.2": a caller's address without its port, the source a
// refusal is counted against.
std::string SourceOf(const std::string& peer) {
  const size_t colon = peer.rfind(':');
  return colon == std::string::npos || colon < 5 ? peer : peer.substr(0, colon);
}

}  // namespace

absl::StatusOr<std::string> Cluster::Authenticate(const grpc::ServerContext& context) const {
  absl::StatusOr<std::string> name = CheckCaller(context);
  if (!name.ok()) {
    // Issue 41: one line per source every kRefusalLogEvery, not one per call (a wrong secret
    // retried in a loop wrote 5,000 lines in 4.4 s).
    const std::string source = SourceOf(context.peer());
    if (std::optional<uint64_t> also = refusals_.Event(source, absl::Now())) {
      spdlog::warn("[{}] refused a peer call from {}: {}{}", options_.node_name, source,
                   std::string(name.status().message()),
                   *also == 0 ? "" : absl::StrCat(" (", *also, " more refused from there before)"));
    }
  }
  return name;
}

absl::StatusOr<std::string> Cluster::CheckCaller(const grpc::ServerContext& context) const {
  if (options_.secret.empty() && !tls()) {
    // R2: nothing a caller sends is applied before it is authenticated, and without a secret
    // or TLS nothing can authenticate it. cairnd never runs so (it generates a secret); a
    // library user who forgot both gets a closed port, not an open one.
    return absl::UnauthenticatedError(
        "this node has no cluster secret and no TLS: it accepts no peer (R2)");
  }
  if (!options_.secret.empty() &&
      !ConstantTimeEquals(Metadata(context, kSecretHeader), options_.secret)) {
    return absl::UnauthenticatedError("wrong or missing cluster secret (R2)");
  }
  const std::string name = Metadata(context, kNodeHeader);
  if (!catalog::ValidateDatabaseName(name).ok()) {
    return absl::UnauthenticatedError("missing or malformed cairn-node");
  }
  if (name == options_.node_name) {
    return absl::PermissionDeniedError("a node does not link to itself (R2)");
  }
  if (tls()) {
    // The claim must be a name the verified client certificate carries.
    std::vector<std::string> names;
    auto auth = context.auth_context();
    for (const char* property : {GRPC_X509_SAN_PROPERTY_NAME, GRPC_X509_CN_PROPERTY_NAME}) {
      for (const grpc::string_ref& v : auth->FindPropertyValues(property)) {
        names.emplace_back(v.data(), v.size());
      }
    }
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return absl::PermissionDeniedError(absl::StrCat("the claimed name '", name,
                                                      "' is not in the client certificate [",
                                                      absl::StrJoin(names, ", "), "] (R2)"));
    }
  }
  return name;
}

void Cluster::AddClientMetadata(grpc::ClientContext* context) const {
  context->AddMetadata(kNodeHeader, options_.node_name);
  if (!options_.secret.empty()) context->AddMetadata(kSecretHeader, options_.secret);
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
    state.last_error = why.ToString();
    spdlog::info("[{}] link with {} ended: {}", options_.node_name, s->peer(), why.ToString());
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

std::shared_ptr<grpc::Channel> Cluster::ChannelTo(const PeerRoute& route) {
  absl::MutexLock lock(&mu_);
  auto& channel = channels_[route.name + "@" + route.address];
  if (channel == nullptr) {
    grpc::ChannelArguments args;
    // gRPC's own reconnect backoff (up to 120 s by default) would outlast ours.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
                static_cast<int>(absl::ToInt64Milliseconds(options_.backoff_initial)));
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
                static_cast<int>(absl::ToInt64Milliseconds(options_.backoff_initial)));
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
                static_cast<int>(absl::ToInt64Milliseconds(options_.backoff_max)));
    // Notice a silent peer (decision 113; the peer's server allows this rate): every
    // `keepalive`, calls or none, data or none (by default gRPC stops after two pings
    // without data, and a quiet link's dead peer would go unnoticed).
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS,
                static_cast<int>(absl::ToInt64Milliseconds(options_.keepalive)));
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
    args.SetMaxReceiveMessageSize(kMaxMessageBytes);
    args.SetMaxSendMessageSize(kMaxMessageBytes);
    std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
    if (tls()) {
      grpc::SslCredentialsOptions ssl;
      ssl.pem_root_certs = options_.tls_ca;
      ssl.pem_private_key = options_.tls_key;
      ssl.pem_cert_chain = options_.tls_cert;
      credentials = grpc::SslCredentials(ssl);
      // The peer's certificate must name the node the route is for, whatever its address.
      args.SetSslTargetNameOverride(route.name);
    }
    channel = grpc::CreateCustomChannel(route.address, credentials, args);
  }
  return channel;
}

void Cluster::Dial(PeerRoute route) {
  DialLoop(route);
  absl::MutexLock lock(&mu_);
  ended_dialers_.push_back(route.id);
}

void Cluster::DialLoop(const PeerRoute& route) {
  std::mt19937_64 rng(std::hash<std::string>()(options_.node_name + route.name));
  absl::Duration backoff = options_.backoff_initial;
  while (!stopping_.load()) {
    auto peer_client = peer::v1::Peer::NewStub(ChannelTo(route));
    auto context = std::make_shared<grpc::ClientContext>();
    AddClientMetadata(context.get());
    {
      absl::MutexLock lock(&mu_);
      // A cut link (test hook) is not dialed until it is restored.
      std::pair<Cluster*, const PeerRoute*> arg(this, &route);
      mu_.Await(absl::Condition(
          +[](std::pair<Cluster*, const PeerRoute*>* a) {
            a->first->mu_.AssertReaderHeld();  // evaluated by a reader unlocking too
            return a->first->stopping_.load() || !a->first->HasRouteIdLocked(a->second->id) ||
                   !a->first->cut_.contains(a->second->name);
          },
          &arg));
      if (stopping_.load() || !HasRouteIdLocked(route.id)) return;  // stopped or removed
      dialing_[route.id] = context;
    }
    const absl::Time start = absl::Now();
    auto session = std::make_shared<LinkSession>(
        this, std::make_unique<ClientLinkStream>(context, peer_client->Link(context.get())),
        route.name);
    Register(session);
    absl::Status why = session->Run();
    Unregister(session.get(), why, session->hello_received());
    {
      absl::MutexLock lock(&mu_);
      dialing_.erase(route.id);
    }
    if (absl::Now() - start > absl::Seconds(10)) backoff = options_.backoff_initial;
    // Capped exponential backoff with jitter (R13): 50-150 % of the current step.
    std::uniform_real_distribution<double> jitter(0.5, 1.5);
    const absl::Duration wait = backoff * jitter(rng);
    backoff = std::min(backoff * 2, options_.backoff_max);
    // Wakes early when stopped or when the route is removed (both change state under mu_).
    std::pair<Cluster*, uint64_t> arg(this, route.id);
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(
        absl::Condition(
            +[](std::pair<Cluster*, uint64_t>* a) {
              a->first->mu_.AssertReaderHeld();  // evaluated by a reader unlocking too
              return a->first->stopping_.load() || !a->first->HasRouteIdLocked(a->second);
            },
            &arg),
        wait);
  }
}

PeerDropStatus Cluster::Forward(const PeerRoute& route, const peer::v1::ForwardRequest& request) {
  PeerDropStatus out;
  out.node = route.name;
  if (IsCut(route.name)) return {route.name, "failed", "the link is cut (test hook)"};
  std::shared_ptr<grpc::Channel> channel = ChannelTo(route);
  bool linked = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = peers_.find(route.name);
    linked = it != peers_.end() && it->second.links > 0;
  }
  if (linked && channel->GetState(/*try_to_connect=*/true) != GRPC_CHANNEL_READY) {
    // A link with the peer is up, so it serves: give this channel a moment to reconnect
    // rather than fail fast from a backoff that predates the peer's restart.
    channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }
  auto peer_client = peer::v1::Peer::NewStub(channel);
  grpc::ClientContext context;
  AddClientMetadata(&context);
  context.AddMetadata(kReplicatedFromHeader, options_.node_name);
  context.set_deadline(std::chrono::system_clock::now() +
                       absl::ToChronoMilliseconds(options_.forward_timeout));
  peer::v1::ForwardResponse response;
  grpc::Status s = peer_client->Forward(&context, request, &response);
  if (!s.ok()) {
    out.status = "failed";
    out.reason = s.error_message().empty() ? "unreachable" : s.error_message();
    return out;
  }
  out.status = response.status();
  out.reason = response.reason();
  return out;
}

std::vector<PeerDropStatus> Cluster::ForwardToAll(const peer::v1::ForwardRequest& request) {
  std::vector<PeerRoute> routes;
  {
    absl::MutexLock lock(&mu_);
    routes = routes_;
  }
  std::vector<std::future<PeerDropStatus>> calls;
  for (const PeerRoute& route : routes) {
    if (request.has_drop_table() &&
        route.exclude.Excludes(request.drop_table().database(), request.drop_table().table())) {
      // R11, sender's side: not sent; the peer keeps its own table of that name.
      calls.push_back(std::async(std::launch::deferred, [name = route.name] {
        return PeerDropStatus{name, "kept", "excluded by the route (R11)"};
      }));
      continue;
    }
    if (request.has_drop_database() && route.exclude.AnyIn(request.drop_database().database())) {
      // R11, sender's side: the peer drops the database minus what this route excludes.
      peer::v1::ForwardRequest narrowed = request;
      peer::v1::DropDatabase* d = narrowed.mutable_drop_database();
      for (const std::string& t : route.exclude.TablesIn(d->database())) d->add_keep_tables(t);
      d->clear_tables();  // and no stamp of an excluded table either
      for (const peer::v1::TableStamp& t : request.drop_database().tables()) {
        if (!route.exclude.Excludes(d->database(), t.table())) *d->add_tables() = t;
      }
      calls.push_back(std::async(std::launch::async,
                                 [this, route, narrowed] { return Forward(route, narrowed); }));
      continue;
    }
    calls.push_back(std::async(std::launch::async,
                               [this, route, &request] { return Forward(route, request); }));
  }
  std::vector<PeerDropStatus> out;
  for (auto& c : calls) out.push_back(c.get());
  return out;
}

std::vector<PeerDropStatus> Cluster::ForwardDropTable(const std::string& db,
                                                      const std::string& table, Hlc dropped_time) {
  peer::v1::ForwardRequest request;
  request.mutable_drop_table()->set_database(db);
  request.mutable_drop_table()->set_table(table);
  request.mutable_drop_table()->set_dropped_time(dropped_time);
  return ForwardToAll(request);
}

std::vector<PeerDropStatus> Cluster::ForwardDropDatabase(
    const std::string& db, Hlc dropped_time,
    const std::vector<std::pair<std::string, Hlc>>& tables) {
  peer::v1::ForwardRequest request;
  request.mutable_drop_database()->set_database(db);
  request.mutable_drop_database()->set_dropped_time(dropped_time);
  for (const auto& [table, stamp] : tables) {
    peer::v1::TableStamp* t = request.mutable_drop_database()->add_tables();
    t->set_table(table);
    t->set_dropped_time(stamp);
  }
  return ForwardToAll(request);
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

std::vector<PeerStatus> Cluster::Status() const {
  catalog::SnapshotRef snap = node_->catalog->Snapshot();
  const catalog::CatalogSnapshot empty;
  const auto verified = anti_entropy_->Records();
  absl::MutexLock lock(&mu_);
  std::vector<PeerStatus> out;
  for (const auto& [name, state] : peers_) {
    PeerStatus p;
    p.name = name;
    p.address = state.address;
    p.connected = state.links > 0;
    p.authenticated = p.connected && (!options_.secret.empty() || tls());
    p.last_error = state.last_error;
    p.capabilities = state.capabilities;
    p.digests = state.digests;
    p.clock_offset_ms = state.clock_offset_ms;
    for (auto it = verified.lower_bound({name, ""});
         it != verified.end() && it->first.first == name; ++it) {
      p.verified[it->first.second] = it->second;
    }
    if (state.receiver != nullptr) {
      for (const auto& session : sessions_) {
        if (session.get() != state.receiver) continue;
        const ReceiveStats r = session->receive_stats();
        p.lag_entries = r.lag_entries;
        p.lag_ms = r.LagMs(absl::Now());
        p.full_copy_active = r.copy_active;
        p.full_copy_percent = r.copy_percent;
        p.full_copy_rows_per_s = r.copy_rows_per_s;
        p.entries_received = r.entries_received;
        p.cursors = r.cursors;
      }
    }
    // R17: counted from storage, linked or not (ParkedRetrier).
    const ParkedRetrier::Counts parked = parked_.CountsOf(name);
    p.parked_entries = parked.entries;
    p.oldest_parked_ms = parked.entries > 0 ? parked.oldest_ms : 0;
    // The clock Parking stamped parked_ms with.
    const absl::Duration parked_for =
        node_->hlc->WallNow() - absl::FromUnixMillis(parked.oldest_ms);
    if (parked.entries > 0 && parked_for > kParkedReportAfter && p.last_error.empty()) {
      // R17: nothing waits silently.
      p.last_error = absl::StrCat(parked.entries, " entr", parked.entries == 1 ? "y" : "ies",
                                  " parked for over ", absl::FormatDuration(kParkedReportAfter),
                                  ", the oldest of ", parked.oldest_table,
                                  ": its table is not defined here, or its drop is stuck (R17)");
    }
    if (p.connected) {
      // In sync when, for every database either side knows, the peer's last digest equals
      // ours now. A database the peer never described counts as empty there.
      p.schema_in_sync = true;
      Exclusions exclusions;
      for (const PeerRoute& r : routes_) {
        if (r.name == name) exclusions = r.exclude;
      }
      absl::btree_map<std::string, uint64_t> theirs = state.digests;
      // A peer that does not take users (R1) is never sent the system database: not counted.
      const bool users = std::find(state.capabilities.begin(), state.capabilities.end(),
                                   kUsersCapability) != state.capabilities.end();
      for (const std::string& db : SchemaDatabases(*snap)) {
        if (users || db != catalog::kSystemDatabase)
          theirs.try_emplace(db, SchemaDigest(empty, db));
      }
      if (!users) theirs.erase(std::string(catalog::kSystemDatabase));
      for (const auto& [db, digest] : theirs) {
        if (digest != SchemaDigest(*snap, db, exclusions)) p.schema_in_sync = false;
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace cairn::replication
