// LinkSession (link_session.h): its threads, the peer's Hello, dispatch of what the peer
// sends, the writer's rounds and the applier. Its schema concerns are link_session_schema.cc.
#include "replication/link_session.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "catalog/placement.h"
#include "common/fault.h"
#include "common/fault_points.h"
#include "common/status.h"
#include "replication/anti_entropy.h"
#include "replication/cluster.h"
#include "replication/internal/steady_clock.h"
#include "replication/schema_sync.h"
#include "replication/user_sync.h"
#include "spdlog/spdlog.h"

namespace cairn::replication {

namespace {

// The cursor the subscriber stores when it applies `b` (peer.proto, ChangeBatch); 0 when the
// batch moves none (a full copy's or a refetch's, before its last).
uint64_t StoredCursor(const peer::v1::ChangeBatch& b) {
  if (b.has_copy()) return b.copy().done() ? b.copy().target_seq() : 0;
  if (b.has_refetch()) return 0;
  return b.has_cursor_seq() ? std::min(b.cursor_seq(), b.last_seq()) : b.last_seq();
}

// How far `b` sent this node's own entries (P10): a log batch's last_seq; 0 for a full
// copy's or a refetch's batch, and for one that says it left some out (origin_gap), though
// a later batch's last_seq passes those all the same, as the stored cursor does.
uint64_t OwnThrough(const peer::v1::ChangeBatch& b) {
  if (b.has_copy() || b.has_refetch() || b.origin_gap()) return 0;
  return b.last_seq();
}

}  // namespace

void LinkSession::RecordsOut::Acked(uint64_t batch_no) {
  while (!unacked.empty() && unacked.front().batch_no <= batch_no) {
    const Unacked& u = unacked.front();
    if (u.cursor > 0) {
      uint64_t& cursor = acked_cursor[u.database];
      cursor = std::max(cursor, u.cursor);
    }
    if (u.own_through > 0) {
      uint64_t& own = acked_own[u.database];
      own = std::max(own, u.own_through);
    }
    unacked.pop_front();
  }
}

google::protobuf::ArenaOptions MessageArena::Options(char* first) {
  google::protobuf::ArenaOptions o;
  o.initial_block = first;
  o.initial_block_size = kFirstBlock;
  o.start_block_size = kFirstBlock;
  o.max_block_size = 64 << 10;  // a batch of megabytes takes tens of blocks
  return o;
}

peer::v1::LinkMessage* MessageArena::Fresh() {
  Clear();  // keeps the first block (ours)
  return google::protobuf::Arena::CreateMessage<peer::v1::LinkMessage>(&arena_);
}

LinkSession::LinkSession(Cluster* cluster, std::unique_ptr<LinkStream> stream, std::string peer)
    : cluster_(cluster), stream_(std::move(stream)), peer_(std::move(peer)) {}

void LinkSession::CatalogChanged() {
  absl::MutexLock lock(&mu_);
  schema_out_.round_due = true;
  records_in_.catalog_changed = true;
}

void LinkSession::NotifyCommit(absl::string_view db, const std::string* origin) {
  absl::MutexLock lock(&mu_);
  // In a full mesh a receiver's applies are all of this kind: waking each link's writer for
  // entries it will not send cost two wakeups per replicated batch.
  RecordsOut& out = records_out_;
  if (origin != nullptr && out.peer_subscribed &&
      (*origin == peer_ ? !out.echoes_asked : out.skipping.contains({std::string(db), *origin}))) {
    out.commits_not_woken = true;
    return;
  }
  out.maybe_more = true;
  ++out.commit_wakes;
}

void LinkSession::NotifyOrigins(bool urgent) {
  absl::MutexLock lock(&mu_);
  adverts_out_.changed = true;
  adverts_out_.urgent = adverts_out_.urgent || urgent;
}

void LinkSession::Cancel() {
  absl::MutexLock lock(&mu_);
  done_ = true;
  if (!finished_) stream_->Cancel();  // under mu_: Run cannot return meanwhile
}

absl::StatusOr<bool> LinkSession::ReadHello() {
  peer::v1::LinkMessage m;
  if (!stream_->Read(&m)) return false;  // the stream says why (Finish)
  if (m.body_case() != peer::v1::LinkMessage::kHello) {
    return absl::FailedPreconditionError("the peer's first message is not Hello");
  }
  const peer::v1::Hello& hello = m.hello();
  if (hello.node_name() != peer_) {
    return absl::PermissionDeniedError(absl::StrCat("the peer says it is '", hello.node_name(),
                                                    "' on a link to '", peer_, "' (R2)"));
  }
  if (hello.protocol_version() != kProtocolVersion) {
    return absl::FailedPreconditionError(absl::StrCat("protocol version ", hello.protocol_version(),
                                                      " (this node speaks ", kProtocolVersion,
                                                      ")"));
  }
  if (hello.wall_ms() > 0) {
    cluster_->RecordClockOffset(peer_, cluster_->clock_bound().OffsetMs(hello.wall_ms()));
  }
  CAIRN_RETURN_IF_ERROR(cluster_->clock_bound().CheckHello(hello, peer_));  // R16
  cluster_->OnHello(peer_, hello);
  const auto& caps = hello.capabilities();
  auto has = [&](const char* cap) {
    return std::find(caps.begin(), caps.end(), cap) != caps.end();
  };
  PeerHello accepted;
  accepted.received = true;
  accepted.schema = has(kSchemaCapability);
  accepted.attribute_markers = accepted.schema && has(kAttributeMarkersCapability);
  accepted.schema_delta = accepted.schema && has(kSchemaDeltaCapability);
  accepted.users = accepted.schema && has(kUsersCapability);
  accepted.placement = accepted.schema && has(kPlacementCapability);
  // P6: a cluster that holds a placed database cannot link a node that would not keep it.
  if (!accepted.placement && catalog::HoldsPlacedDatabase(*cluster_->node()->catalog->Snapshot())) {
    return absl::FailedPreconditionError(
        absl::StrCat("the peer does not advertise ", kPlacementCapability,
                     " and this node holds placed databases (design 0013, P6): upgrade it first"));
  }
  // Records need both: a batch is only applicable after its table's schema.
  accepted.records = accepted.schema && has(kRecordsCapability);
  accepted.echo = accepted.records && has(kEchoCapability);
  accepted.origins = accepted.records && has(kOriginsCapability);
  accepted.log_id = hello.log_id();
  absl::MutexLock lock(&mu_);
  hello_ = accepted;
  return true;
}

bool LinkSession::WorkDue() const {
  return done_ || schema_out_.Due(hello_) || records_in_.Due() || records_out_.RequestsDue() ||
         adverts_out_.Due(hello_, records_in_) || records_out_.BatchesDue();
}

absl::Duration LinkSession::IdleWait(const LogSender& sender) const {
  if (adverts_out_.deferred) return kAdvertInterval;
  if (sender.holding() || records_out_.commits_not_woken || !records_out_.skipping.empty()) {
    return kHoldLimit / 4;
  }
  return absl::Seconds(1);
}

void LinkSession::TakeRound(LogSender* sender, Round* round) {
  // Taken before round_due is cleared below: a change published after it sets round_due
  // again and causes exactly one more round (coalescing, R3).
  round->snap = cluster_->node()->catalog->Snapshot();
  // Records in: this node's Subscribe and Refetches, and the ack of what it applied.
  RecordsIn& in = records_in_;
  while (!in.outbox.empty()) {
    // Adverts follow this link's Subscribe, each one the changes since the one before.
    if (in.outbox.front().has_subscribe()) advert_told_.clear();
    round->control.push_back(std::move(in.outbox.front()));
    in.outbox.pop_front();
  }
  if (in.ack_due) {
    round->control.emplace_back().mutable_ack()->set_batch_no(in.applied_no);
    in.ack_due = false;
    in.ack_now = false;
    in.ack_sent_no = in.applied_no;
  }
  // Adverts out (cheap when nothing changed).
  round->advert_due = in.claimed && hello_.origins;
  adverts_out_.changed = false;
  adverts_out_.urgent = false;
  // Records out: the peer's requests go to the sender.
  RecordsOut& out = records_out_;
  if (out.subscribe.has_value()) {
    out.skipping.clear();  // nothing is skipped until the peer advertises again
    out.echoes_asked = out.subscribe->echo_size() > 0;
    sender->Subscribe(*out.subscribe);
    out.acked_cursor.clear();
    out.acked_own.clear();
    out.unacked.clear();
    for (const peer::v1::DbCursor& cursor : out.subscribe->cursors()) {
      if (!cursor.has_copy()) out.acked_cursor[cursor.database()] = cursor.seq();
    }
    cluster_->OnAck();  // P10: a write waiting may be confirmed by these (confirm_mu_ is a leaf)
    out.subscribe.reset();
    out.peer_subscribed = true;
    schema_out_.round_due = true;  // a fresh DB_SCHEMA round before the first batch
  }
  for (const peer::v1::Refetch& r : out.refetches) {
    out.echoes_asked = out.echoes_asked || r.echo_size() > 0;
    sender->Refetch(r);
    // R14: the peer needs our current definitions before the rows, whether or not they
    // changed since the last round (a marker there just retired its copy).
    for (const peer::v1::TableRefetch& t : r.tables()) schema_out_.whole.insert(t.database());
    schema_out_.round_due = true;
  }
  out.refetches.clear();
  if (out.peer_subscribed) {
    for (const peer::v1::OriginAdvert& a : out.adverts) sender->Advertise(a);
  }
  out.adverts.clear();
  out.maybe_more = false;  // a commit from here on sets it again
  out.commits_not_woken = false;
  round->window = kWindow - std::min(kWindow, out.sent_no - out.acked_no);
  // Schema in: the databases to ask the peer for whole.
  if (std::vector<std::string> due = DueSchemaRequests(
          *round->snap, round->schema_options.exclusions, cluster_->node()->hlc->WallNow());
      !due.empty()) {
    cluster_->CountSchemaResyncs(due.size());
    peer::v1::SchemaRequest* request = round->control.emplace_back().mutable_schema_request();
    for (std::string& db : due) request->add_databases(std::move(db));
  }
  // Schema out.
  round->schema_due = hello_.schema && (schema_out_.round_due || !schema_out_.whole.empty());
  round->deltas = hello_.schema_delta;
  if (round->schema_due) round->whole.swap(schema_out_.whole);
  round->schema_options.attribute_markers = hello_.attribute_markers;
  round->schema_options.users = hello_.users;
  round->schema_options.placement = hello_.placement;
  schema_out_.round_due = false;
}

bool LinkSession::WriteRound(LogSender* sender, uint64_t* schema_version) {
  Round round;
  // R11, sender's side; taken before mu_ (Cluster::mu_ comes first).
  round.schema_options.exclusions = cluster_->ExclusionsFor(peer_);
  {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(this, &LinkSession::WorkDue), IdleWait(*sender));
    if (done_) return false;
    TakeRound(sender, &round);
  }
  return WriteControl(round) && (!round.advert_due || WriteAdvert()) &&
         WriteSchemas(round, *sender, schema_version) &&
         (!sender->subscribed() || WriteBatches(round, sender));
}

bool LinkSession::WriteControl(const Round& round) {
  [[maybe_unused]] FaultRegistry* faults =
      cluster_->node()->catalog->options().faults;  // hooks off: unused
  for (const peer::v1::LinkMessage& m : round.control) {
    // A SchemaRequest an injected error drops: the watch asks again after its backoff.
    if (m.has_schema_request() && !CAIRN_FAULT(faults, fault_points::kReplSchemaResync).ok()) {
      continue;
    }
    if (!stream_->Write(m)) return false;
  }
  return true;
}

bool LinkSession::WriteAdvert() {
  OriginMap told = advert_told_;
  bool urgent = false;
  peer::v1::LinkMessage m;
  *m.mutable_origin_advert() = OriginBook::Diff(cluster_->origins(), peer_, &told, &urgent);
  const absl::Time now = internal::SteadyNow();
  const bool wait =
      m.origin_advert().origins_size() > 0 && !urgent && now - advert_sent_at_ < kAdvertInterval;
  if (m.origin_advert().origins_size() > 0 && !wait) {
    if (!stream_->Write(m)) return false;
    advert_told_ = std::move(told);
    advert_sent_at_ = now;
  }
  // Quiet until the interval ends, after an advert or while one waits: `seq` moves meanwhile
  // go together at its end (the writer's wait times out then).
  absl::MutexLock lock(&mu_);
  adverts_out_.deferred = m.origin_advert().origins_size() > 0;
  return true;
}

bool LinkSession::WriteSchemas(const Round& round, const LogSender& sender,
                               uint64_t* schema_version) {
  const catalog::CatalogSnapshot& snap = *round.snap;
  if (!round.schema_due && !(sender.subscribed() && snap.version > *schema_version)) return true;
  for (peer::v1::DbSchema& schema :
       SchemaRound(snap, *schema_version, round.deltas, round.whole, round.schema_options)) {
    peer::v1::LinkMessage m;
    *m.mutable_db_schema() = std::move(schema);
    cluster_->CountSchemaSent(m.ByteSizeLong(), m.db_schema().tables_size());
    if (!stream_->Write(m)) return false;
  }
  *schema_version = snap.version;
  return true;
}

bool LinkSession::WriteBatches(const Round& round, LogSender* sender) {
  // Batches read against the round's snapshot, whose every table the peer now has (R5 after
  // R3). Each batch is read before the previous one is written, so that one is written with
  // gRPC's buffer hint only when another follows (a hinted write waits for the next one).
  // A schema change landing between the snapshot and the log read (R15 handles it).
  [[maybe_unused]] FaultRegistry* faults = cluster_->node()->catalog->options().faults;
  if (!CAIRN_FAULT(faults, fault_points::kReplSendAfterSnapshot).ok()) return false;
  // Each batch on its own arena (send_arenas_), freed at once when the one after the next is
  // read, not message by message and string by string (bodies taken from the rows are still
  // heap strings the arena deletes): 6–8 % of the writer's time per batch (send_bench).
  peer::v1::LinkMessage* ready = nullptr;
  bool full = true;
  for (uint64_t n = 0; n < round.window; ++n) {
    peer::v1::LinkMessage& m = *send_arenas_[n % 2].Fresh();  // not `ready`'s: that is n - 1's
    absl::StatusOr<bool> produced = sender->Next(*round.snap, m.mutable_change_batch());
    if (!produced.ok()) {
      spdlog::error("[{}] reading the change log for {}: {}", cluster_->options().node_name, peer_,
                    produced.status().ToString());
      return false;
    }
    if (!*produced) {
      full = false;
      break;
    }
    {
      absl::MutexLock lock(&mu_);
      m.mutable_change_batch()->set_batch_no(++records_out_.sent_no);
      // P10: a confirmed write of the database waits for this batch's ack.
      if (cluster_->ConfirmationsPending(m.change_batch().database())) {
        m.mutable_change_batch()->set_ack_now(true);
      }
      const uint64_t cursor = StoredCursor(m.change_batch());
      const uint64_t own = OwnThrough(m.change_batch());
      if (cursor > 0 || own > 0) {
        records_out_.unacked.push_back(
            {records_out_.sent_no, m.change_batch().database(), cursor, own});
      }
      records_out_.log_needs = sender->Needs();  // a copy just started keeps its tail from now on
    }
    if (ready != nullptr && !stream_->Write(*ready, /*more_follows=*/true)) return false;
    if (!CAIRN_FAULT(faults, fault_points::kReplSendBatch).ok()) return false;
    ready = &m;
  }
  if (ready != nullptr && !stream_->Write(*ready)) return false;
  for (MessageArena& arena : send_arenas_) arena.Clear();  // an idle link keeps no batch
  // The window filled: there may be more once it opens. Or the sender stopped before an
  // entry of a table the snapshot lacks (R15): the next round sends a newer snapshot, then it.
  const bool stale = sender->TakeStaleSnapshot(), more = sender->TakeMore();
  const bool again = stale || more || full;
  absl::btree_map<std::string, uint64_t> needs = sender->Needs();
  auto skipping = sender->Skipping();  // after this round's adverts and timeouts
  absl::MutexLock lock(&mu_);
  RecordsOut& out = records_out_;
  if (again) out.maybe_more = true;
  out.log_needs = std::move(needs);
  if (skipping != out.skipping) {
    // A wake skipped under the old set may have been for entries it now sends: read again.
    if (out.commits_not_woken) out.maybe_more = true;
    out.skipping = std::move(skipping);
  }
  return true;
}

void LinkSession::WriterLoop() {
  peer::v1::LinkMessage hello;
  hello.mutable_hello()->set_node_name(cluster_->options().node_name);
  hello.mutable_hello()->set_protocol_version(kProtocolVersion);
  hello.mutable_hello()->add_capabilities(kSchemaCapability);
  hello.mutable_hello()->add_capabilities(kRecordsCapability);
  hello.mutable_hello()->add_capabilities(kEchoCapability);
  hello.mutable_hello()->add_capabilities(kOriginsCapability);
  hello.mutable_hello()->add_capabilities(kVerifyCapability);
  hello.mutable_hello()->add_capabilities(kAttributeMarkersCapability);
  hello.mutable_hello()->add_capabilities(kSchemaDeltaCapability);
  hello.mutable_hello()->add_capabilities(kUsersCapability);
  hello.mutable_hello()->add_capabilities(kPlacementCapability);
  hello.mutable_hello()->add_capabilities(kForwardCapability);
  hello.mutable_hello()->set_log_id(cluster_->node()->log->log_id());
  hello.mutable_hello()->set_wall_ms(absl::ToUnixMillis(cluster_->node()->hlc->WallNow()));
  if (!stream_->Write(hello)) return;
  {
    // A peer that accepts the stream and never says Hello would hold this link (and its
    // threads) forever: give it kHelloTimeout.
    absl::MutexLock lock(&mu_);
    const bool answered =
        mu_.AwaitWithTimeout(absl::Condition(
                                 +[](LinkSession* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
                                   return s->done_ || s->hello_.received;
                                 },
                                 this),
                             kHelloTimeout);
    if (done_) return;
    if (!answered) {
      spdlog::warn("[{}] no Hello from {} within {}; closing the link",
                   cluster_->options().node_name, peer_, absl::FormatDuration(kHelloTimeout));
      stream_->Cancel();
      return;
    }
  }
  // Nothing is sent that the peer did not advertise (R1): schema only to schema.v1 peers,
  // batches only once the peer subscribed (which only a records.v1 peer does).
  StreamLimits limits;
  limits.hold_limit = cluster_->options().hold_limit;
  LogSender sender(cluster_->node(), peer_, cluster_->ExclusionsFor(peer_), limits);
  uint64_t schema_version = 0;
  while (WriteRound(&sender, &schema_version)) {
  }
  // A failed round (a log read, a send) ends the link, not just this writer: a stream left
  // open with no writer looks connected and idle to the peer, which then waits for ever with
  // lag 0 (found by the buggified schedule). The dialer reconnects and the peer subscribes
  // again from its stored cursors. After a failed stream write, or at shutdown, this is a
  // no-op.
  {
    absl::MutexLock lock(&mu_);
    if (done_) return;
  }
  spdlog::info("[{}] ending the link with {}: a send round failed", cluster_->options().node_name,
               peer_);
  stream_->Cancel();
}

bool LinkSession::ApplyWithRetry(ReceiverState* receiver, const peer::v1::ChangeBatch& batch) {
  // R16: a batch with a version from the future ends the link, before anything is applied.
  if (absl::Status s = cluster_->clock_bound().CheckBatch(batch, peer_); !s.ok()) {
    absl::MutexLock lock(&mu_);
    applier_error_ = s;
    return false;
  }
  absl::Duration backoff = absl::Milliseconds(10);
  for (int attempt = 1;; ++attempt) {
    catalog::ApplyStats stats;
    absl::Status s = receiver->Apply(batch, &stats);
    if (s.ok()) {
      cluster_->CountReceived(static_cast<uint64_t>(batch.entries_size()), stats);
      return true;
    }
    const ErrorCode code = GetErrorCode(s);
    // The table's schema has not been applied yet (it is on its way: DB_SCHEMA precedes the
    // rows on this stream, but a drop here may still be completing), or the schema moved
    // under the apply: wait and retry. Anything else ends the link; the dialer reconnects
    // and the batch comes again from the stored cursor.
    const bool transient = code == ErrorCode::kTableNotFound || code == ErrorCode::kTableDropping ||
                           s.code() == absl::StatusCode::kAborted;
    if (!transient) {
      absl::MutexLock lock(&mu_);
      applier_error_ =
          Annotate(s, absl::StrCat("applying a batch of '", batch.database(), "' from ", peer_));
      return false;
    }
    if (attempt == 50) {
      spdlog::warn("[{}] a batch of '{}' from {} still waits: {}", cluster_->options().node_name,
                   batch.database(), peer_, s.ToString());
    }
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&done_), backoff);
    if (done_) return false;
    backoff = std::min(backoff * 2, absl::Seconds(1));
  }
}

void LinkSession::ApplierLoop() {
  uint64_t log_id = 0;
  bool echo = false, origins = false;
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](LinkSession* s)
             ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) { return s->done_ || s->hello_.received; },
        this));
    if (done_ || !hello_.records) return;
    log_id = hello_.log_id;
    echo = hello_.echo;
    origins = hello_.origins;
  }
  // One link per peer subscribes (two routes make two links): exactly-once needs one
  // applier per peer cursor (R6). Another link may hold the claim until it ends.
  while (!cluster_->ClaimReceiver(peer_, this)) {
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(&done_), absl::Milliseconds(200))) return;
  }
  ReceiverState receiver(cluster_->node(), peer_, log_id, cluster_->ExclusionsFor(peer_),
                         cluster_->parked());
  receiver.set_echo(echo);
  receiver.set_origins(origins);
  absl::StatusOr<peer::v1::Subscribe> subscribe = receiver.BuildSubscribe();
  if (!subscribe.ok()) {
    cluster_->ReleaseReceiver(peer_, this);  // before mu_: Cluster::mu_ comes first
    absl::MutexLock lock(&mu_);
    applier_error_ = subscribe.status();
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    *records_in_.outbox.emplace_back().mutable_subscribe() = std::move(*subscribe);
    records_in_.claimed = true;
  }
  while (true) {
    InboundBatch in;
    {
      absl::MutexLock lock(&mu_);
      const bool woken = mu_.AwaitWithTimeout(
          absl::Condition(
              +[](LinkSession* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
                return s->done_ || !s->records_in_.inbox.empty() || s->records_in_.catalog_changed;
              },
              this),
          Parking::kRetryInterval);
      if (done_) break;
      RecordsIn& r = records_in_;
      if (!woken || r.catalog_changed || r.inbox.empty()) {
        r.catalog_changed = false;
      } else {
        in = std::move(r.inbox.front());
        r.inbox.pop_front();
      }
    }
    if (in.batch == nullptr) {
      // The catalog changed (or a while passed): a marker may have retired a generation that
      // held this peer's newer rows (R14); ask for them on this link now, not at the next
      // reconnect. (Parked entries are the node's ParkedRetrier's, R17.)
      absl::StatusOr<peer::v1::Refetch> refetch = receiver.NewRefetches();
      if (refetch.ok() && refetch->tables_size() > 0) {
        absl::MutexLock lock(&mu_);
        *records_in_.outbox.emplace_back().mutable_refetch() = std::move(*refetch);
      }
      continue;
    }
    const peer::v1::ChangeBatch& batch = *in.batch;
    if (!ApplyWithRetry(&receiver, batch)) break;
    // Before the ack: the peer's next batch may be held for an advert of this one.
    cluster_->UpdateOrigin(peer_, batch.database(), receiver.Direct(batch.database()));
    absl::MutexLock lock(&mu_);
    records_in_.applied_no = batch.batch_no();
    records_in_.ack_due = true;
    records_in_.ack_now = records_in_.ack_now || batch.ack_now();  // P10
    records_in_.stats = receiver.Stats(internal::SteadyNow());
  }
  cluster_->ReleaseReceiver(peer_, this);
}

absl::Status LinkSession::Run() {
  std::thread writer([this] {
    WriterLoop();
    absl::MutexLock lock(&mu_);
    writer_done_ = true;
  });
  std::thread applier([this] {
    ApplierLoop();
    absl::MutexLock lock(&mu_);
    if (!applier_error_.ok() && !finished_) stream_->Cancel();  // ends the reads below
  });
  absl::StatusOr<bool> hello = ReadHello();
  absl::Status why = hello.status();
  std::unique_ptr<MessageArena> arena;
  while (hello.ok() && *hello && why.ok()) {
    if (arena == nullptr) arena = std::make_unique<MessageArena>();  // the last went with a batch
    peer::v1::LinkMessage& m = *arena->Fresh();
    if (!stream_->Read(&m)) break;
    why = Dispatch(m, &arena);
  }
  return Finish(std::move(why), &writer, &applier);
}

absl::Status LinkSession::Dispatch(peer::v1::LinkMessage& m, std::unique_ptr<MessageArena>* arena) {
  switch (m.body_case()) {
    case peer::v1::LinkMessage::kDbSchema: {
      // R16 first: nothing of a snapshot with a stamp from the future is applied.
      absl::Status s = cluster_->clock_bound().CheckSchema(m.db_schema(), peer_);
      if (s.ok()) s = ApplySchema(m.db_schema());
      // A snapshot this node cannot apply (a bad name, a full disk) ends the link; the
      // dialer retries with backoff and the peer resends everything.
      if (!s.ok()) {
        return Annotate(
            s, absl::StrCat("applying DB_SCHEMA of ", m.db_schema().database(), " from ", peer_));
      }
      return absl::OkStatus();
    }
    case peer::v1::LinkMessage::kSchemaRequest: {
      absl::MutexLock lock(&mu_);
      for (const std::string& db : m.schema_request().databases()) schema_out_.whole.insert(db);
      schema_out_.round_due = true;
      return absl::OkStatus();
    }
    case peer::v1::LinkMessage::kHello:  // a second Hello changes nothing
      return absl::OkStatus();
    case peer::v1::LinkMessage::kSubscribe: {
      absl::MutexLock lock(&mu_);
      records_out_.subscribe = std::move(*m.mutable_subscribe());  // the writer serves it
      return absl::OkStatus();
    }
    case peer::v1::LinkMessage::kChangeBatch: {
      absl::MutexLock lock(&mu_);
      // Only a subscriber gets batches; the sender's window bounds the inbox (R12).
      if (records_in_.claimed) {
        records_in_.inbox.push_back(InboundBatch{std::move(*arena), &m.change_batch()});
      }
      return absl::OkStatus();
    }
    case peer::v1::LinkMessage::kRefetch: {
      absl::MutexLock lock(&mu_);
      records_out_.refetches.push_back(std::move(*m.mutable_refetch()));
      return absl::OkStatus();
    }
    case peer::v1::LinkMessage::kOriginAdvert: {
      absl::MutexLock lock(&mu_);
      records_out_.adverts.push_back(std::move(*m.mutable_origin_advert()));
      return absl::OkStatus();
    }
    case peer::v1::LinkMessage::kAck: {
      {
        absl::MutexLock lock(&mu_);
        RecordsOut& out = records_out_;
        out.acked_no = std::max(out.acked_no, std::min(m.ack().batch_no(), out.sent_no));
        out.Acked(out.acked_no);
      }
      cluster_->OnAck();  // P10: confirmed writes look at the cursors again
      return absl::OkStatus();
    }
    default:
      cluster_->CountUnknownMessage();  // a newer peer's message kind (R1)
      return absl::OkStatus();
  }
}

absl::Status LinkSession::Finish(absl::Status why, std::thread* writer, std::thread* applier) {
  {
    // The writer stops at its next wait. Cancelling the stream would replace the reason the
    // peer hears (PERMISSION_DENIED, say) with CANCELLED, so only a writer stuck in a Write
    // (a peer that stopped reading) is cancelled out of it.
    absl::MutexLock lock(&mu_);
    done_ = true;
    const bool stopped = mu_.AwaitWithTimeout(
        absl::Condition(
            +[](LinkSession* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) { return s->writer_done_; },
            this),
        absl::Seconds(1));
    if (!stopped) stream_->Cancel();
  }
  writer->join();
  applier->join();  // it sees done_; an apply in progress finishes first
  {
    absl::MutexLock lock(&mu_);
    if (why.ok() && !applier_error_.ok()) why = applier_error_;
  }
  if (!why.ok()) stream_->Abort();
  absl::Status finished = stream_->Finish();
  {
    absl::MutexLock lock(&mu_);
    finished_ = true;
  }
  if (!why.ok()) return why;
  return finished.ok() ? absl::UnavailableError("the peer closed the link") : finished;
}

}  // namespace cairn::replication
