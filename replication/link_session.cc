#include "replication/link_session.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "replication/cluster.h"
#include "replication/schema_sync.h"
#include "spdlog/spdlog.h"

namespace cairn::replication {

LinkSession::LinkSession(Cluster* cluster, std::unique_ptr<LinkStream> stream, std::string peer)
    : cluster_(cluster), stream_(std::move(stream)), peer_(std::move(peer)) {}

void LinkSession::CatalogChanged() {
  absl::MutexLock lock(&mu_);
  dirty_ = true;
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
  cluster_->OnHello(peer_, hello);
  const auto& caps = hello.capabilities();
  absl::MutexLock lock(&mu_);
  peer_hello_ = true;
  peer_schema_ = std::find(caps.begin(), caps.end(), kSchemaCapability) != caps.end();
  return true;
}

void LinkSession::WriterLoop() {
  peer::v1::LinkMessage hello;
  hello.mutable_hello()->set_node_name(cluster_->options().node_name);
  hello.mutable_hello()->set_protocol_version(kProtocolVersion);
  hello.mutable_hello()->add_capabilities(kSchemaCapability);
  if (!stream_->Write(hello)) return;
  {
    // A peer that accepts the stream and never says Hello would hold this link (and its
    // threads) forever: give it kHelloTimeout.
    absl::MutexLock lock(&mu_);
    const bool answered =
        mu_.AwaitWithTimeout(absl::Condition(
                                 +[](LinkSession* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
                                   return s->done_ || s->peer_hello_;
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
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      // Nothing is sent that the peer did not advertise (R1): wait for its Hello.
      mu_.Await(absl::Condition(
          +[](LinkSession* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
            return s->done_ || (s->peer_hello_ && s->peer_schema_ && s->dirty_);
          },
          this));
      if (done_) return;
      dirty_ = false;
    }
    // One round: the current snapshot of every database. Changes meanwhile set dirty_ again
    // and cause exactly one more round (coalescing, R3).
    catalog::SnapshotRef snap = cluster_->node()->catalog->Snapshot();
    const Exclusions exclusions = cluster_->ExclusionsFor(peer_);  // R11, sender's side
    for (const std::string& db : SchemaDatabases(*snap)) {
      peer::v1::LinkMessage m;
      *m.mutable_db_schema() = BuildDbSchema(*snap, db, exclusions);
      if (!stream_->Write(m)) return;
    }
  }
}

absl::Status LinkSession::Run() {
  std::thread writer([this] {
    WriterLoop();
    absl::MutexLock lock(&mu_);
    writer_done_ = true;
  });
  absl::StatusOr<bool> hello = ReadHello();
  absl::Status why = hello.status();
  while (hello.ok() && *hello && why.ok()) {
    peer::v1::LinkMessage m;
    if (!stream_->Read(&m)) break;
    switch (m.body_case()) {
      case peer::v1::LinkMessage::kDbSchema: {
        SchemaApplyStats stats;
        absl::Status s = ApplyDbSchema(cluster_->node()->catalog.get(),
                                       cluster_->node()->records.get(), m.db_schema(), &stats,
                                       cluster_->ExclusionsFor(peer_));  // R11, receiver's side
        if (!s.ok()) {
          // A snapshot this node cannot apply (a bad name, a full disk) ends the link; the
          // dialer retries with backoff and the peer resends everything.
          why = Annotate(
              s, absl::StrCat("applying DB_SCHEMA of ", m.db_schema().database(), " from ", peer_));
          break;
        }
        cluster_->OnSchema(peer_, m.db_schema().database(), m.db_schema().digest());
        break;
      }
      case peer::v1::LinkMessage::kHello:  // a second Hello changes nothing
        break;
      default:
        cluster_->CountUnknownMessage();  // a newer peer's message kind (R1)
        break;
    }
  }
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
  writer.join();
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
