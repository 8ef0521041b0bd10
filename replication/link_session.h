// LinkSession: one Link stream between this node and a peer, on either end (SPEC R1-R4).
//
// Protocol, both ends alike:
//   1. send Hello {node_name, protocol_version, capabilities};
//   2. read the peer's Hello first: its name must be the one the link was authenticated or
//      routed for (else PERMISSION_DENIED, R2), its protocol version one we speak;
//   3. then, only if the peer advertised "schema.v1": send a DbSchema per database now and
//      again after every catalog change. Changes coalesce: while a round of snapshots is being
//      sent, further changes set one flag and cause one more round (R3). To a peer with
//      "schema.delta.v1" a round after the first sends deltas: per database changed since
//      the previous round, the state of each name changed (Catalog::ChangesSince), and a
//      whole DbSchema of each database the peer asked for (SchemaRequest) or whose tables
//      it refetches; everything again when the catalog's journal no longer reaches back;
//   4. apply every DbSchema that arrives (markers, then definitions, R4); count and ignore
//      messages of unknown kinds (R1). A database whose digest stays apart from the peer's
//      for kSchemaResyncAfter, or whose DbSchema could not be applied whole, is asked for
//      again whole (SchemaRequest, backing off; DigestWatch); one that a whole DbSchema
//      leaves apart is sent to the peer whole, once per pair of digests;
//   5. records (both advertised "records.v1"): the applier thread claims this peer's
//      subscription (one link per peer subscribes, Cluster::ClaimReceiver) and sends
//      Subscribe; it applies each ChangeBatch with its cursor (ReceiverState) and acks it.
//      The writer serves the peer's Subscribe (LogSender): every batch goes after a DB_SCHEMA
//      round of a catalog snapshot at least as new as the one the batch was read against, so
//      a peer always knows a table before its rows; at most kWindow batches are unacked (R12).
//      A commit wakes the writer (NotifyCommit), unless it only applied writes of an origin
//      whose entries the writer would skip for this peer, or its database is placed on nodes
//      that do not include the peer (P3: Cluster::OnCommit does not call it then).
// Threads: Run's reads every message and hands it to its concern (Dispatch), and applies
// DbSchemas itself; the writer (WriterLoop) sends what each concern has due, one WriteRound
// at a time; the applier (ApplierLoop) holds this node's subscription and applies batches.
// Their shared state is grouped by concern under mu_ (PeerHello, SchemaOut, SchemaIn,
// RecordsIn, AdvertsOut, RecordsOut), each saying when it has work for the writer (Due), as
// the writer's wait names each reason (WorkDue). The session ends when the stream does, or on
// Cancel().
//
// Lock order: Cluster::mu_ before mu_ (the writer takes Cluster::ExclusionsFor before mu_).
// mu_ is never held across a stream Write or Read, nor across a catalog or storage write.
#pragma once

#include <algorithm>
#include <array>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cairn/peer/v1/peer.pb.h"
#include "google/protobuf/arena.h"
#include "replication/origin_book.h"
#include "replication/record_stream.h"
#include "replication/schema_sync.h"

namespace cairn::replication {

class Cluster;

inline constexpr uint32_t kProtocolVersion = 1;
inline constexpr char kSchemaCapability[] = "schema.v1";
inline constexpr char kRecordsCapability[] = "records.v1";
// Subscribe.echo and Refetch.echo (decision 86).
inline constexpr char kEchoCapability[] = "records.echo.v1";
// DbSchema attribute markers and attribute stamps (SPEC C15).
inline constexpr char kAttributeMarkersCapability[] = "schema.attribute_markers.v1";
// DbSchema deltas and SchemaRequest (R3, incremental).
inline constexpr char kSchemaDeltaCapability[] = "schema.delta.v1";
// OriginAdvert, ChangeBatch.cursor_seq and origin_gap (design 0004, one copy of each write).
inline constexpr char kOriginsCapability[] = "records.origins.v1";
// DbSchema of the system database: users, roles, their markers, the signing key (SPEC U6).
inline constexpr char kUsersCapability[] = "schema.users.v1";
// Design 0013, P1, P6: DbSchema placements and database markers.
inline constexpr char kPlacementCapability[] = "placement.v1";
// Design 0013, P4, P5: the Operate call (operations forwarded to a member).
inline constexpr char kForwardCapability[] = "placement.forward.v1";
// An advert that only moves origins' `seq` goes at most this often per link (a withdrawal or
// a new `since` goes at once): each one may cost the peer a batch that moves the cursor.
inline constexpr absl::Duration kAdvertInterval = absl::Milliseconds(10);
// Unacknowledged ChangeBatches a sender keeps in flight per link (R12).
inline constexpr uint64_t kWindow = 8;
// The receiver acks once this many batches applied since its last ack, or with anything else
// its writer sends first (an advert, a batch of its own): the sender's window never waits on
// it, and a trickle of single-write batches does not cost a message and two thread wakeups
// per batch back to the sender.
inline constexpr uint64_t kAckEvery = kWindow / 2;
static_assert(kAckEvery >= 1 && kAckEvery <= kWindow,
              "a sender with a full window must always have an ack on its way (R12)");
// How long a database's digest may differ from the peer's before this end asks for the
// peer's whole DbSchema of it, and the longest it then waits between two requests.
inline constexpr absl::Duration kSchemaResyncAfter = absl::Seconds(2);
inline constexpr absl::Duration kSchemaResyncMaxBackoff = absl::Seconds(60);

// R3, incremental, receiving side: a database whose digest here differs from the one the peer
// last sent, or whose DbSchema from the peer skipped something (a drop draining here). Its
// times are the node's clock (decision 136), so a test advances them instead of waiting.
struct DigestWatch {
  absl::Time since;     // when it was first seen apart
  uint64_t theirs = 0;  // the peer's last digest of it
  // Something of the peer's was not applied (a table skipped while its drop drains here):
  // kept until a whole DbSchema of the database applies cleanly.
  bool retry = false;
  absl::Time asked_at;            // when this end last asked for it whole
  uint64_t asked_at_version = 0;  // the local catalog version then (or when last updated)
  // The digests (theirs, ours) right after a whole DbSchema of it applied whole: the same
  // pair later means a whole one has nothing more to give (the nodes really differ: a
  // node-local table of the name, C11, or routes excluding different tables, R11), so no
  // request is made until either digest moves. A new such pair sends the peer our whole
  // database once, for what this node holds and the peer lacks.
  std::optional<std::pair<uint64_t, uint64_t>> settled;
  absl::Time next_request;  // not before this
  absl::Duration backoff = kSchemaResyncAfter;

  // The node's clock may be set back (an operator's correction, a test hook's clock fault):
  // times after `now` come back to it, so no wait is longer from now than its timer's length.
  void ClampTo(absl::Time now) {
    since = std::min(since, now);
    asked_at = std::min(asked_at, now);
    next_request = std::min(next_request, now + backoff);
  }
};

// The two ends of a Link stream behind one interface. Read and Write may run on different
// threads; Write is called from one thread at a time.
class LinkStream {
 public:
  virtual ~LinkStream() = default;
  virtual bool Read(peer::v1::LinkMessage* m) = 0;
  // `more_follows`: the caller writes again right away, so the transport may hold this one
  // back to coalesce (gRPC's buffer hint).
  virtual bool Write(const peer::v1::LinkMessage& m, bool more_follows = false) = 0;
  virtual void Cancel() = 0;
  // Ends a stream this end refused (after the writer stopped): the client cancels its call;
  // the server returns the refusal from its handler instead, so it does nothing here.
  virtual void Abort() = 0;
  // Why the stream ended (after Read returned false and writing stopped).
  virtual absl::Status Finish() = 0;
};

// An arena for one LinkMessage at a time (issue 23 part 3), whose first block is its own, so a
// small message (an ack) allocates nothing and a ChangeBatch's entries take a few blocks
// instead of several allocations each. The link's reader parses each message into one; a
// batch goes to the applier with its arena, which frees it whole. The writer builds its
// batches in two, alternately (it writes a batch only after reading the next, so that one
// is written with gRPC's buffer hint).
class MessageArena {
 public:
  MessageArena() : arena_(Options(first_block_)) {}
  MessageArena(const MessageArena&) = delete;
  MessageArena& operator=(const MessageArena&) = delete;
  // An empty LinkMessage on the arena, after freeing whatever the arena held.
  peer::v1::LinkMessage* Fresh();
  // Frees whatever the arena held but its first block.
  void Clear() { arena_.Reset(); }

 private:
  static google::protobuf::ArenaOptions Options(char* first);
  static constexpr size_t kFirstBlock = 8 << 10;
  alignas(16) char first_block_[kFirstBlock];
  google::protobuf::Arena arena_;
};

// A ChangeBatch as read, on its arena: the applier's.
struct InboundBatch {
  std::unique_ptr<MessageArena> arena;
  const peer::v1::ChangeBatch* batch = nullptr;  // on *arena
};

class LinkSession {
 public:
  // `peer`: the route's name (outbound) or the authenticated caller's name (inbound).
  LinkSession(Cluster* cluster, std::unique_ptr<LinkStream> stream, std::string peer);

  // Runs the protocol above until the stream ends. Returns why it ended.
  absl::Status Run() ABSL_LOCKS_EXCLUDED(mu_);
  // The catalog changed: send another round of snapshots.
  void CatalogChanged() ABSL_LOCKS_EXCLUDED(mu_);
  // A commit moved `db`'s change log: the writer looks for entries to send. When every entry
  // is `origin`'s own (non-null) and the peer gets none of them from this link (it is that
  // origin, or advertised it: design 0004), the writer is not woken for them: it reads them
  // within kHoldLimit / 4 (to hold what no advert covers yet), or sooner for another reason.
  void NotifyCommit(absl::string_view db, const std::string* origin) ABSL_LOCKS_EXCLUDED(mu_);
  // The origins this node receives directly changed (Cluster::origins): the link holding
  // this node's subscription to the peer tells it (OriginAdvert). `urgent`: more than an
  // origin's `seq` moved (OriginBook::Update); else the advert may wait kAdvertInterval.
  void NotifyOrigins(bool urgent) ABSL_LOCKS_EXCLUDED(mu_);
  // Commits NotifyCommit woke the writer for (several may coalesce into one of its rounds),
  // since the link began.
  uint64_t commit_wakes() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return records_out_.commit_wakes;
  }
  // What this link received and applied (meaningful on the peer's claimed link).
  ReceiveStats receive_stats() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return records_in_.stats;
  }
  // What the peer still needs of this node's log, per database (LogSender::Needs), as of the
  // writer's last round; empty before it subscribed.
  absl::btree_map<std::string, uint64_t> log_needs() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return records_out_.log_needs;
  }
  // Design 0013, P8: how far the peer has applied this node's log of `db`, as far as this
  // link knows: the cursor it stores, as it subscribed or as the last batch it acked set it.
  // None before the peer subscribed on this link or when it has no cursor of `db`.
  std::optional<uint64_t> acked_cursor(const std::string& db) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = records_out_.acked_cursor.find(db);
    if (it == records_out_.acked_cursor.end()) return std::nullopt;
    return it->second;
  }
  // Design 0013, P10: how far this node's own writes of `db` have reached the peer, as far as
  // this link knows: the higher of acked_cursor and the last_seq of each log batch the peer
  // acked. A batch sends every entry of this node's origin through its last_seq but those
  // a newer write of the key supersedes and those the route excludes (R11), which the stored
  // cursor passes as well (known gaps, design 0013); origin holds keep back only other
  // origins' entries, and with them the stored cursor (ChangeBatch.cursor_seq), for as long
  // as the peer's advert takes.
  std::optional<uint64_t> acked_own_writes(const std::string& db) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto cursor = records_out_.acked_cursor.find(db);
    auto own = records_out_.acked_own.find(db);
    if (cursor == records_out_.acked_cursor.end() && own == records_out_.acked_own.end()) {
      return std::nullopt;
    }
    return std::max(cursor == records_out_.acked_cursor.end() ? 0 : cursor->second,
                    own == records_out_.acked_own.end() ? 0 : own->second);
  }
  // Ends the session. Safe from any thread, also once Run has returned (then a no-op: an
  // inbound stream's context is gone by then).
  void Cancel() ABSL_LOCKS_EXCLUDED(mu_);
  const std::string& peer() const { return peer_; }
  bool hello_received() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return hello_.received;
  }

 private:
  // The peer's Hello as accepted (ReadHello): what it speaks. Nothing is sent that it did not
  // advertise (R1).
  struct PeerHello {
    bool received = false;
    bool schema = false;             // schema.v1
    bool attribute_markers = false;  // ... and C15's markers
    bool schema_delta = false;       // ... and schema.delta.v1
    bool users = false;              // ... and schema.users.v1 (U6)
    bool placement = false;          // ... and placement.v1 (design 0013, P1, P6)
    bool records = false;            // records.v1 (with schema.v1: rows need their table)
    bool echo = false;               // ... and records.echo.v1: it can be asked for echoes
    bool origins = false;            // ... and records.origins.v1 (adverts, design 0004)
    uint64_t log_id = 0;
  };

  // Schema out (R3): rounds of DbSchemas to the peer, written by the writer.
  struct SchemaOut {
    bool round_due = true;  // the catalog changed (or the peer asked) since the last round
    // Databases to send whole in the next round: the peer asked (SchemaRequest), it
    // refetches their tables (R14: it needs their definitions again), or a whole one from it
    // left the digests apart (DigestWatch::settled).
    absl::btree_set<std::string> whole;
    bool Due(const PeerHello& peer) const { return peer.schema && round_due; }
  };

  // Schema in (R3, R4): what the peer's DbSchemas told. Run's thread applies them and
  // records this; the writer marks databases asked for whole (DueSchemaRequests).
  struct SchemaIn {
    // Per database, the state of each name as the peer last sent it (StatesOf; a whole
    // DbSchema replaces the database's). A delta out leaves out a name whose state here is
    // that one: the peer holds it, so it is not echoed back (R3 incremental). Whole DbSchemas
    // leave out nothing, so a peer that lost a name since still gets it through the digest
    // check.
    absl::flat_hash_map<std::string, NameStates> told;
    absl::btree_map<std::string, DigestWatch> apart;  // databases whose digests differ
  };

  // Records in: this node's subscription to the peer's log (R5-R7), the applier's.
  struct RecordsIn {
    // This link holds this node's claim on the peer (Cluster::ClaimReceiver) and queued its
    // Subscribe: batches that arrive here are applied.
    bool claimed = false;
    std::deque<peer::v1::LinkMessage> outbox;  // Subscribe and Refetch, for the writer
    std::deque<InboundBatch> inbox;            // for the applier
    bool catalog_changed = false;              // the applier looks for new refetches (R14)
    uint64_t applied_no = 0;                   // the last batch applied
    uint64_t ack_sent_no = 0;                  // the last batch acked to the peer
    bool ack_due = false;                      // applied_no is not acked yet
    bool ack_now = false;  // ... and a batch applied since asked for its ack at once (P10)
    ReceiveStats stats;
    // Something for the writer: a message to send, or enough batches applied to ack (R12).
    bool Due() const {
      return !outbox.empty() || (ack_due && (ack_now || applied_no - ack_sent_no >= kAckEvery));
    }
  };

  // Adverts out: the origins this node receives directly, told to the peer on the link that
  // holds this node's subscription (OriginAdvert, design 0004).
  struct AdvertsOut {
    bool changed = false;  // the origins changed (NotifyOrigins)
    bool urgent = false;   // ... and more than a `seq` moved
    // Within kAdvertInterval of the last advert: a `seq` move waits for the interval's end
    // (only an urgent change wakes the writer before it).
    bool deferred = false;
    bool Due(const PeerHello& peer, const RecordsIn& in) const {
      return in.claimed && peer.origins && (urgent || (changed && !deferred));
    }
  };

  // Records out: the peer's subscription to this node's log, served by the writer (R5, R12).
  struct RecordsOut {
    // The peer's requests, read by Run's thread and not yet handed to the LogSender.
    std::optional<peer::v1::Subscribe> subscribe;
    std::vector<peer::v1::Refetch> refetches;
    std::vector<peer::v1::OriginAdvert> adverts;
    bool peer_subscribed = false;    // the peer subscribed on this link: this end serves it
    bool maybe_more = true;          // a commit (or a full window) since the last read
    bool commits_not_woken = false;  // commits NotifyCommit did not wake the writer for
    uint64_t commit_wakes = 0;       // commits NotifyCommit woke the writer for, ever
    // A mirror of what the writer's LogSender knows, for NotifyCommit: the (database, origin)
    // pairs whose entries it skips for the peer (OriginHolds::Skipping, after each round),
    // and whether the peer asked for its own writes back (echoes, decision 86).
    absl::flat_hash_set<std::pair<std::string, std::string>> skipping;
    bool echoes_asked = false;
    uint64_t sent_no = 0;                              // the last batch sent
    uint64_t acked_no = 0;                             // the last batch the peer acked
    absl::btree_map<std::string, uint64_t> log_needs;  // LogSender::Needs, as of the last round
    // P8: per database, the cursor the peer stores as of its Subscribe and its last ack; and
    // per batch sent and not acked yet, the cursor the peer stores with it (StoredCursor).
    absl::flat_hash_map<std::string, uint64_t> acked_cursor;
    // P10: per database, the highest last_seq of an acked log batch without origin_gap.
    absl::flat_hash_map<std::string, uint64_t> acked_own;
    struct Unacked {
      uint64_t batch_no = 0;
      std::string database;
      uint64_t cursor = 0;
      uint64_t own_through = 0;  // this node's entries sent through here (OwnThrough)
    };
    std::deque<Unacked> unacked;
    void Acked(uint64_t batch_no);
    bool RequestsDue() const {
      return subscribe.has_value() || !refetches.empty() || !adverts.empty();
    }
    bool BatchesDue() const {
      return peer_subscribed && maybe_more && sent_no - acked_no < kWindow;
    }
  };

  // What one WriteRound sends, taken under mu_ in one step (TakeRound).
  struct Round {
    catalog::SnapshotRef snap;
    std::vector<peer::v1::LinkMessage> control;  // Subscribe, Refetch, Ack, SchemaRequest
    bool advert_due = false;
    bool schema_due = false;
    bool deltas = false;
    absl::btree_set<std::string> whole;  // databases sent whole this round
    SchemaOptions schema_options;
    uint64_t window = 0;  // batches the peer's acks allow now
  };

  void WriterLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Sends what is due after the peer's Hello, in phases: wait for a reason (WorkDue), take
  // what is due (TakeRound), then control messages, an advert, a schema round, batches.
  // False when the stream broke or the session ends.
  bool WriteRound(LogSender* sender, uint64_t* schema_version) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether the writer has something to do now: one reason per concern.
  bool WorkDue() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // How long the writer waits without a reason: a periodic look for databases created
  // meanwhile; sooner while entries are held for the peer (OriginHolds::Expire) or may be
  // (NotifyCommit may skip a wake for them), or an advert waits.
  absl::Duration IdleWait(const LogSender& sender) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes what is due into `round` and clears the reasons it answers. Hands the peer's
  // requests to `sender`.
  void TakeRound(LogSender* sender, Round* round) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool WriteControl(const Round& round) ABSL_LOCKS_EXCLUDED(mu_);
  bool WriteAdvert() ABSL_LOCKS_EXCLUDED(mu_);
  bool WriteSchemas(const Round& round, const LogSender& sender, uint64_t* schema_version)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Batches read against the round's snapshot, up to its window.
  bool WriteBatches(const Round& round, LogSender* sender) ABSL_LOCKS_EXCLUDED(mu_);
  // The DbSchemas of a round at `snap` (R3): everything when `*schema_version` is 0 (the
  // first round), the peer takes no deltas or the journal no longer reaches back; else the
  // deltas since it, and the whole databases in `full`.
  std::vector<peer::v1::DbSchema> SchemaRound(const catalog::CatalogSnapshot& snap,
                                              uint64_t schema_version, bool deltas,
                                              const absl::btree_set<std::string>& full,
                                              const SchemaOptions& options)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Whether the catalog journal names `db` after `version` (or no longer reaches back).
  bool DatabaseChangedSince(const std::string& db, uint64_t version) const;
  // Applies a DbSchema from the peer and watches its digest (DigestWatch). Not OK: the link
  // ends.
  absl::Status ApplySchema(const peer::v1::DbSchema& schema) ABSL_LOCKS_EXCLUDED(mu_);
  // The databases whose whole DbSchema is due from the peer now (DigestWatch), marked asked.
  std::vector<std::string> DueSchemaRequests(const catalog::CatalogSnapshot& snap,
                                             const Exclusions& exclusions, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplierLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Applies one batch, retrying while its table's schema is not here yet. False: give up.
  bool ApplyWithRetry(ReceiverState* receiver, const peer::v1::ChangeBatch& batch)
      ABSL_LOCKS_EXCLUDED(mu_);
  // True once the peer's Hello is accepted; false when the stream ended before one came.
  absl::StatusOr<bool> ReadHello() ABSL_LOCKS_EXCLUDED(mu_);
  // Hands one message read from the peer to the concern it is for. Not OK: the link ends.
  absl::Status Dispatch(peer::v1::LinkMessage& m, std::unique_ptr<MessageArena>* arena)
      ABSL_LOCKS_EXCLUDED(mu_);
  // After the reads ended: stops the writer and the applier and says why the link ended.
  absl::Status Finish(absl::Status why, std::thread* writer, std::thread* applier)
      ABSL_LOCKS_EXCLUDED(mu_);

  Cluster* const cluster_;
  const std::unique_ptr<LinkStream> stream_;
  const std::string peer_;

  absl::Mutex mu_;
  PeerHello hello_ ABSL_GUARDED_BY(mu_);
  SchemaOut schema_out_ ABSL_GUARDED_BY(mu_);
  SchemaIn schema_in_ ABSL_GUARDED_BY(mu_);
  RecordsIn records_in_ ABSL_GUARDED_BY(mu_);
  AdvertsOut adverts_out_ ABSL_GUARDED_BY(mu_);
  RecordsOut records_out_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;           // the session ends (Cancel, or the reads)
  bool finished_ ABSL_GUARDED_BY(mu_) = false;       // Run returned: the stream may be gone
  bool writer_done_ ABSL_GUARDED_BY(mu_) = false;    // WriterLoop returned
  absl::Status applier_error_ ABSL_GUARDED_BY(mu_);  // ends the session

  // The writer's alone. What this link told the peer of the origins this node receives
  // directly, since the Subscribe it sent (OriginBook::Diff), and when.
  OriginMap advert_told_;
  absl::Time advert_sent_at_ = absl::InfinitePast();
  // Where the writer builds its ChangeBatches (WriteBatches), alternately.
  std::array<MessageArena, 2> send_arenas_;
};

// How long a link waits for the peer's Hello before giving up on it.
inline constexpr absl::Duration kHelloTimeout = absl::Seconds(10);

}  // namespace cairn::replication
