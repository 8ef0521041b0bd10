// Catalog: the node's authoritative list of databases, table generations and drop markers,
// and their lifecycle (SPEC C1-C14). Persisted in the "catalog" family; rebuilt from it on
// start, where interrupted drops are completed (C10). Readers see it only through immutable
// snapshots (C1). Thread-safe.
//
// Locks (C12: "catalog mutations of a database are serialized by one lock"):
//  - A DatabaseLock per database name serializes every mutation of that database: check,
//    batch write and publish are one critical section under it (C1, C6 need that). It is held
//    across catalog batch writes, never across network I/O or a drain (C9 step 2); record
//    reads never take it, record writes only to add attributes. Mutations of different
//    databases run in parallel: a long attribute add in one never stalls another's create.
//  - mu_ is short and in-memory only: it publishes (orders snapshot versions) and guards the
//    process-wide bookkeeping below. Never held across a write or while taking another lock
//    except snapshot_mu_.
// Lock order: DatabaseLock before GenerationState::schema_mu (taken exclusively only to
// publish a new definition) before mu_ before snapshot_mu_; locks_mu_ and Gate::mu_ are leaves.
//
// Invariants:
//  (1) The entries of database D in a snapshot (databases[D], and markers and dropping keyed
//      by D) change only under D's DatabaseLock, and its holder's publish completes before
//      it unlocks. So a holder of D's lock reads D's current state from Snapshot().
//  (2) A publish applies one database's edit to the latest snapshot under mu_: concurrent
//      mutations of different databases never lose each other's changes, and versions
//      increase by one per publish.
//  (3) Generation ids are handed out under mu_, strictly increasing, and never reused across
//      restarts (storage::GenerationHighWaterKey).
//  (4) The journal holds, for every publish since journal_from_, one entry per name whose
//      entries it changed (a table, a user or role of the system database, or "": only the
//      database): a peer sent the state of every name the journal lists since its last round
//      holds everything it was sent before plus every change since (R3, incremental).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "catalog/schema.h"
#include "common/clock.h"
#include "common/fault.h"
#include "storage/engine.h"

namespace cairn::catalog {

struct CatalogOptions {
  std::string node_name;
  HybridClock* hlc = nullptr;                             // required
  FaultRegistry* faults = nullptr;                        // optional
  absl::Duration drop_drain_timeout = absl::Seconds(10);  // C9 step 2 budget
  uint64_t incarnation = 0;  // this process's id (C10); 0: a fresh random one
  // Attributes a table may have from local changes (create_table, create_attribute, dynamic
  // writes): past it they are refused with BAD_REQUEST. Peers' definitions are not limited
  // (the cluster must converge on them).
  size_t max_attributes_per_table = 1000;
};

struct AttributeSpec {
  AttributeSpec() = default;
  AttributeSpec(std::string name, AttributeType type = v1::ANY, bool indexed = true,
                std::optional<Hlc> created_time = std::nullopt)
      : name(std::move(name)), type(type), indexed(indexed), created_time(created_time) {}

  std::string name;
  AttributeType type = v1::ANY;
  bool indexed = true;
  // C15: a peer definition's stamp of the attribute (0: the peer sent none). Unset: the
  // catalog stamps it (Catalog::FreshAttributeStamp); local changes always leave it unset.
  std::optional<Hlc> created_time;
  // A field of a peer's record, or a peer's attribute made from one: added with origin
  // PEER_RECORD, whose type and index a declared peer definition replaces (decision 103).
  bool provisional = false;
};

// A local create_table (C3).
struct TableSpec {
  std::string database;
  std::string table;
  std::string primary_key;
  // Present: schema-defined (D2). Absent: dynamic, with __createdtime__ / __updatedtime__.
  std::optional<std::vector<AttributeSpec>> attributes;
  bool replicate = true;  // false: node-local (C11)
  // Schema-defined only: a record with an attribute the table does not declare is refused
  // (D2); otherwise the attribute is added, as in a dynamic table.
  bool sealed = false;
};

// A table definition received from a peer (C4-C6, R3).
struct PeerTableDef {
  std::string database;
  std::string table;
  Hlc created_time = 0;  // 0: the peer sent no stamp (C5)
  std::string primary_key;
  std::vector<AttributeSpec> attributes;
  bool schema_defined = false;
  bool sealed = false;
};

// A placement a client asked for (design 0013, P1, P2), resolved to names by the node layer,
// which knows the cluster's nodes.
struct PlacementSpec {
  std::vector<std::string> members;  // sorted, distinct (NormalizeMembers); empty: every node
  uint32_t count = 0;                // the replica_count they were resolved from; 0: a list
};

// One publish, as the schema journal remembers it (Catalog::ChangesSince).
struct SchemaChange {
  uint64_t version = 0;  // the snapshot version it published
  std::string database;
  // The table name whose definition, marker or attribute markers it changed; empty when it
  // changed only the database itself (created, removed) or nothing a peer is sent.
  std::string table;
};

// What a peer's drop did here (C8); replication answers it as R10's outcome.
enum class PeerDropResult { kDropped, kKept, kAbsent };

// Drop activity for /metrics.
struct DropStats {
  uint64_t in_progress = 0;     // generations between C9 step 1 and step 3
  uint64_t drains = 0;          // C9 step 2 waits that completed
  uint64_t drain_timeouts = 0;  // ... and that timed out
  absl::Duration drain_time_total;
  // Rows that died with a generation a peer's marker retired, or were purged by one (SPEC §5
  // "Writes into a generation retired later", cairn_rows_retired_total).
  uint64_t rows_retired = 0;
};

struct DropResult {
  bool timed = false;    // a marker was (or will be) recorded
  Hlc dropped_time = 0;  // when timed (drop_database: the earliest of its tables' stamps)
  // drop_database: each table dropped with a marker, and its own stamp (forwarded as is).
  std::vector<std::pair<std::string, Hlc>> tables;
  // drop_database, timed: its database marker (P1), after every stamp in `tables`.
  Hlc database_marker = 0;
};

class UserCatalog;

class Catalog {
 public:
  // Loads the catalog and completes every drop left by an earlier process (C10).
  static absl::StatusOr<std::unique_ptr<Catalog>> Open(storage::Engine* engine,
                                                       CatalogOptions options);
  ~Catalog();

  SnapshotRef Snapshot() const ABSL_LOCKS_EXCLUDED(snapshot_mu_);

  // Called after every publish, outside every catalog lock, with the new snapshot
  // (replication turns this into DB_SCHEMA). Concurrent publishes may be reported out of
  // order: compare CatalogSnapshot::version. Set once, before concurrent use.
  void SetListener(std::function<void(const SnapshotRef&)> listener);

  // The journal of publishes (R3, incremental): appends to `out` every change published
  // after version `after` up to and including `upto`, in version order. False, with `out`
  // untouched, when the journal no longer reaches back to `after` (it keeps the last
  // kJournalEntries changes, and starts at the version loaded at Open): the caller then sends
  // everything.
  static constexpr size_t kJournalEntries = 16384;
  bool ChangesSince(uint64_t after, uint64_t upto, std::vector<SchemaChange>* out) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Called, under catalog locks, whenever a peer's attribute marker or the re-creation of a
  // dropped attribute leaves a strip pending (C15): RecordStore runs those in the background
  // (RecordStore::KickStrips). Must not block. Null: nobody is told.
  void SetStripListener(std::function<void()> listener) ABSL_LOCKS_EXCLUDED(strip_listener_mu_);

  // ---- Local schema authoring (authoritative for this node).
  // C14, P1: a database placed as `placement` says, stamped now and after every drop of the
  // name (its database marker). DATABASE_EXISTS if it exists.
  absl::Status CreateDatabase(absl::string_view db, const PlacementSpec& placement = {})
      ABSL_LOCKS_EXCLUDED(mu_);
  // P1, P6: a new placement of an existing database, in one catalog batch with a fresh stamp
  // (after the one it replaces). Returns it. DATABASE_NOT_FOUND if the database is absent;
  // BAD_REQUEST if no member of it would be ready (P7: every member new or catching up).
  absl::StatusOr<v1::Placement> AlterPlacement(absl::string_view db, const PlacementSpec& spec)
      ABSL_LOCKS_EXCLUDED(mu_);

  // ---- Readiness (P7, catalog_ready.cc).
  // If this node is a member of `db` catching up, and nothing holds it back any more
  // (CatchUpBlocker), announces that it is ready: the same placement (stamp and origin)
  // without this node catching up, in one batch, which peers learn in DB_SCHEMA. Nothing
  // otherwise; cheap when this node is not catching up. Called after every placement change
  // applied here, after every batch a peer's stream applies to `db`, and at start.
  absl::Status MarkReadyIfCaughtUp(absl::string_view db) ABSL_LOCKS_EXCLUDED(mu_);
  // MarkReadyIfCaughtUp for every database (at start).
  absl::Status MarkReadyWhereCaughtUp() ABSL_LOCKS_EXCLUDED(mu_);
  // P7: what keeps this node from being ready for `d`, in words; empty when nothing. It waits
  // on every other ready member: for a cursor into that member's log with no full copy in
  // progress (R7), and for no refetch of a table from it pending (R14).
  absl::StatusOr<std::string> CatchUpBlocker(const DatabaseDef& d) const;

  // ---- Releasing (P8, catalog_release.cc).
  // A database this node was removed from and still holds rows of (storage::ReleaseKey),
  // with the stamp of the placement that removed it.
  struct PendingRelease {
    std::string database;
    Hlc removed_by = 0;
  };
  absl::StatusOr<std::vector<PendingRelease>> PendingReleases() const;
  enum class ReleaseOutcome {
    kReleased,          // the rows are gone
    kCancelled,         // a member again, the database gone, or no release pending
    kPlacementChanged,  // the placement is not the one of `confirmed_stamp`: confirm again
    kBusy,              // an operation admitted before the removal is still running
  };
  // P8 (4): once the remaining members confirmed under the placement of `confirmed_stamp`,
  // removes, in one batch under the database's lock, the rows, index entries, counts,
  // shadows, pending purges, cursors, parked entries and refetch keys of the database's
  // replicated tables here, and the release key; the definitions stay and no marker is
  // written. The change log of the database is the caller's to trim.
  absl::StatusOr<ReleaseOutcome> ReleaseRows(absl::string_view db, Hlc confirmed_stamp)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Whether `d`'s replicated tables have operations in flight (their admission gates).
  static bool OperationsInFlight(const DatabaseDef& d);
  // C1, C2, C3, C13. Creates the database if absent (C14).
  absl::StatusOr<TableRef> CreateTable(const TableSpec& spec) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<TableRef> CreateAttribute(absl::string_view db, absl::string_view table,
                                           const AttributeSpec& spec) ABSL_LOCKS_EXCLUDED(mu_);
  // Removes the attribute from the definition and its index, stamps the drop (HLC, taken
  // behind the schema fence, so every value the attribute had is in a row older than the
  // stamp) and records a pending strip of its values (storage::StripKey, value the stamp; the
  // returned definition's stripping()), and for a replicating table the attribute marker
  // (C15), all in one batch. RecordStore::DropAttribute calls this, strips the values and
  // calls FinishStrip; RecordStore::ResumePendingStrips finishes one after a crash.
  absl::StatusOr<TableRef> RemoveAttribute(absl::string_view db, absl::string_view table,
                                           absl::string_view attribute) ABSL_LOCKS_EXCLUDED(mu_);
  // The strip of `attribute` dropped at `stamp` reached every row of `def`'s generation:
  // forgets the pending strip, durably and in a new definition. Nothing to do if the
  // generation is gone or a later drop of the name has its own strip pending.
  // `attribute_id_at_start` is the id of the name's attribute when the strip began (-1: none):
  // if the name became another attribute meanwhile, rows the strip passed before may need
  // indexing under it, so the strip stays pending and is run again.
  absl::Status FinishStrip(const TableDef& def, absl::string_view attribute, Hlc stamp,
                           int64_t attribute_id_at_start) ABSL_LOCKS_EXCLUDED(mu_);
  // Adds attributes that `def`'s generation lacks (D2 dynamic attributes, peer records).
  // Existing names are left alone. TABLE_DROPPING if the generation is no longer live.
  // `check`, if given, runs on the live definition in the same critical section, before
  // anything is added; its error refuses the call with nothing added.
  absl::StatusOr<TableRef> EnsureAttributes(
      const TableRef& def, const std::vector<AttributeSpec>& attributes, Origin origin,
      const std::function<absl::Status(const TableDef& live)>& check = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_);

  // C7/C9: drops the live generation of db.table. `timed` false is a "replicated: false"
  // drop; a node-local table's drop is never timed (C11). If the name has no live generation
  // but a drop of it is still pending in this process (an earlier drain timed out), re-runs
  // that drain. TABLE_DROPPING when the drain times out: the tombstone stays and a retry
  // completes it.
  absl::StatusOr<DropResult> DropTable(absl::string_view db, absl::string_view table,
                                       bool timed = true) ABSL_LOCKS_EXCLUDED(mu_);
  // C14: drops every table of the database (C7/C9), then the database row. Completes the
  // drops of its names left pending by an earlier drain timeout (C9); TABLE_DROPPING, with
  // the database kept, while any of them still does not drain.
  absl::StatusOr<DropResult> DropDatabase(absl::string_view db, bool timed = true)
      ABSL_LOCKS_EXCLUDED(mu_);

  // ---- Peer entry points (origin cluster). Replication wires these to the network.
  // P1: what a peer's DbSchema says of database `db` itself: its database marker (0: none)
  // and its placement (null: the peer holds no database of the name). In one batch: the
  // marker if newer than the one held; then the placement, last-writer-wins on (stamp,
  // origin), unless stamped before the newest marker (a dropped incarnation's). A placement
  // of a database absent here creates it (every node holds every database's definitions,
  // P12); a database whose placement a newer marker retired loses it: removed when no table
  // of it is left, else placed on every node as of the marker. BAD_REQUEST for a malformed
  // placement (nothing applied).
  absl::Status ApplyPeerPlacement(absl::string_view db, const v1::Placement* placement,
                                  Hlc database_marker) ABSL_LOCKS_EXCLUDED(mu_);
  // C15: a peer's attribute marker. Nothing if a marker as new is held. Otherwise, in one
  // batch: the marker; and for the live replicating table of the name, the attribute
  // removed (unless created at or after the marker) and a pending strip of the values older
  // than the marker, published as a new definition (a schema change that fences peer
  // applies, which strip on apply by the new markers). Returns that definition when a strip
  // is pending (RecordStore::ApplyPeerAttributeDrop runs it), else null. A node-local table
  // of the name is left alone (C11).
  absl::StatusOr<TableRef> ApplyPeerAttributeMarker(absl::string_view db, absl::string_view table,
                                                    absl::string_view attribute, Hlc dropped_time)
      ABSL_LOCKS_EXCLUDED(mu_);
  // C4, C5, C6: TABLE_GENERATION_DROPPED for a dead generation; a node-local table of the
  // same name shadows the peer's and the definition is ignored.
  absl::Status ApplyPeerTable(const PeerTableDef& def) ABSL_LOCKS_EXCLUDED(mu_);
  // C8: a forwarded drop or a snapshot marker. Records the marker if newer; retires the live
  // generation only if it replicates and is older than the marker. The caller purges rows of
  // older row generations from a kept table (RecordStore::ApplyPeerDrop does both). Completes
  // any drop of the name left pending by a drain timeout (C9); "dropped" then, if the name
  // has no live generation.
  absl::StatusOr<PeerDropResult> ApplyPeerDrop(absl::string_view db, absl::string_view table,
                                               Hlc dropped_time) ABSL_LOCKS_EXCLUDED(mu_);
  // C14: C8 table by table; the database survives if any table does. Results per table.
  absl::StatusOr<std::vector<std::pair<std::string, PeerDropResult>>> ApplyPeerDropDatabase(
      absl::string_view db, Hlc dropped_time) ABSL_LOCKS_EXCLUDED(mu_);
  // The same, table by table: `stamp_of(table)` is that table's stamp, or nullopt to leave it
  // alone (R11: a route excludes it); the database then stays.
  using TableStampFn = std::function<std::optional<Hlc>(const std::string& table)>;
  absl::StatusOr<std::vector<std::pair<std::string, PeerDropResult>>> ApplyPeerDropDatabase(
      absl::string_view db, const TableStampFn& stamp_of) ABSL_LOCKS_EXCLUDED(mu_);

  DropStats drop_stats() const ABSL_LOCKS_EXCLUDED(mu_);
  // Counts rows a peer's marker retired (the purge of older rows from a kept generation).
  void CountRetiredRows(uint64_t n) { rows_retired_.fetch_add(n, std::memory_order_relaxed); }

  uint64_t incarnation() const { return options_.incarnation; }
  const CatalogOptions& options() const { return options_; }
  storage::Engine* engine() const { return engine_; }

 private:
  friend class UserCatalog;  // users and roles: the system database's objects (SPEC §7)

  // A generation between drop step 1 and step 3.
  struct PendingDrop {
    TableRef def;
    v1::Tombstone tombstone;
    int drainers = 0;  // threads in DrainAndFinish for it now (0: stalled, awaiting a retry)
  };

  class DatabaseLock;  // C12; functions that need it take it as their first parameter
  struct DatabaseMutex {
    absl::Mutex mu;
    int users = 0;  // DatabaseLocks holding or waiting for it; erased at 0
  };

  Catalog(storage::Engine* engine, CatalogOptions options);
  absl::Status Load() ABSL_LOCKS_EXCLUDED(mu_);

  // Invariant (2): applies `edit` (which changes only the locked database's entries) to the
  // latest snapshot and publishes it with the next version, journaling it as a change of
  // `table` (SchemaChange::table; empty: of the database only). The listener hears of it
  // when `lock` is released, before the mutation returns.
  void Publish(const DatabaseLock& lock, absl::string_view table,
               const std::function<void(CatalogSnapshot*)>& edit) ABSL_LOCKS_EXCLUDED(mu_) {
    Publish(lock, std::vector<std::string>{std::string(table)}, edit);
  }
  // The same for a publish that changed several names of the database (a peer's users and
  // roles, UserCatalog::ApplyPeer): one journal entry per name, all of one version.
  void Publish(const DatabaseLock& lock, const std::vector<std::string>& names,
               const std::function<void(CatalogSnapshot*)>& edit) ABSL_LOCKS_EXCLUDED(mu_);
  SnapshotRef PublishLocked(std::shared_ptr<CatalogSnapshot> next)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Copy-on-write: replaces (or removes, if def is null) one table in `snap`.
  static void PutTable(CatalogSnapshot* snap, absl::string_view db, absl::string_view table,
                       TableRef def);
  // Writes the create batch of a new generation and publishes it (C1, C2).
  absl::StatusOr<TableRef> CreateGeneration(const DatabaseLock& lock, v1::TableRow row,
                                            std::vector<AttributeDef> attributes)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The creation stamp of an attribute added by a local change (create_attribute, a dynamic
  // write) or by a peer's record: now, and after every marker of its name held (C15: a
  // re-created attribute is newer than the drop, as C3 makes a re-created table).
  absl::StatusOr<Hlc> FreshAttributeStamp(const CatalogSnapshot& base, absl::string_view db,
                                          absl::string_view table, absl::string_view attribute);
  // `live`'s attributes without `a`, adding the removal of its catalog row and index range to
  // `batch`.
  std::vector<AttributeDef> WithoutAttribute(const TableDef& live, const AttributeDef& a,
                                             rocksdb::WriteBatch* batch);
  // Adds the removal of attribute `a`'s index entries in `generation` to `batch`.
  void DeleteIndexOf(uint64_t generation, const AttributeDef& a, rocksdb::WriteBatch* batch);
  // Records in `batch` and `stripping` a pending strip of `name`'s values older than `stamp`
  // (the later of it and one already pending: it covers both).
  void AddPendingStrip(const TableDef& live, const std::string& name, Hlc stamp,
                       rocksdb::WriteBatch* batch, AttributeStamps* stripping);
  // BAD_REQUEST when a table of `count` attributes would pass the limit (CatalogOptions).
  absl::Status CheckAttributeCount(absl::string_view table, size_t count) const;
  // Writes new attribute rows for a live generation and publishes the new definition.
  absl::StatusOr<TableRef> AddAttributes(const DatabaseLock& lock, const TableRef& live,
                                         const std::vector<AttributeSpec>& specs, Origin origin)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Commits `batch` and publishes a new definition of `live`'s generation (bumping its schema
  // version under an exclusive schema_mu, GenerationState (1)); `also` edits the snapshot.
  // `fenced`, if given, runs under the exclusive schema_mu before the commit and may add to
  // the batch and edit the new definition's pending strips and attribute markers (which
  // start as `live`'s): every record write validated against an older definition has
  // committed by then, and none can start until the new definition is published.
  using Fenced = std::function<absl::Status(rocksdb::WriteBatch*, AttributeStamps* stripping,
                                            AttributeStamps* markers)>;
  absl::StatusOr<TableRef> ReplaceDefinition(const DatabaseLock& lock, const TableRef& live,
                                             v1::TableRow row, std::vector<AttributeDef> attributes,
                                             rocksdb::WriteBatch* batch,
                                             const std::function<void(CatalogSnapshot*)>& also,
                                             const Fenced& fenced = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_);
  // C14, P1: the row of a new database placed as `spec`. Stamped after the name's database
  // marker: `local`, now (origin this node); else (a peer's table made it) as of the marker,
  // with no origin, so that any placement a peer made wins over it.
  absl::StatusOr<v1::DatabaseRow> NewDatabaseRow(const CatalogSnapshot& base, absl::string_view db,
                                                 const PlacementSpec& spec, bool local);
  static DatabaseRef DatabaseDefOf(const v1::DatabaseRow& row);
  // P1: records `marker` as db's database marker if newer, and retires a placement older
  // than it (see ApplyPeerPlacement); `placement`, if given and not older than the marker,
  // then merges last-writer-wins. One batch and one publish; nothing when nothing changes.
  absl::Status MergePlacement(const DatabaseLock& lock, absl::string_view db,
                              const v1::Placement* placement, Hlc marker) ABSL_LOCKS_EXCLUDED(mu_);
  // C9 step 1: tombstone + publish without the table. `timed` also records the drop's time
  // as the name's marker.
  absl::Status Tombstone(const DatabaseLock& lock, const TableRef& def, bool timed,
                         Hlc dropped_time) ABSL_LOCKS_EXCLUDED(mu_);
  // C9 steps 2 and 3 for every pending drop of db.table (or of one generation).
  absl::Status DrainAndFinish(const std::vector<uint64_t>& generations) ABSL_LOCKS_EXCLUDED(mu_);
  // C9 step 3 / C10: the final batch. Idempotent. Under the lock of row.database().
  absl::Status FinishDrop(const DatabaseLock& lock, const v1::TableRow& row,
                          const v1::Tombstone& tombstone) ABSL_LOCKS_EXCLUDED(mu_);
  // Records a marker durably if newer than the one `base` holds. Returns whether it did; the
  // caller publishes it.
  absl::StatusOr<bool> RecordMarker(const DatabaseLock& lock, const CatalogSnapshot& base,
                                    absl::string_view db, absl::string_view table, Hlc dropped_time)
      ABSL_LOCKS_EXCLUDED(mu_);
  // `stalled_only`: only those no thread is draining now (a drain that timed out).
  std::vector<uint64_t> PendingDropsOf(const DatabaseLock& lock, absl::string_view db,
                                       absl::string_view table, bool stalled_only = false) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // What a drop of database `db` covers: its live tables and every name of it with a drop
  // pending in this process (C9: a drop_database retries those), sorted.
  std::vector<std::string> DropNamesOf(const DatabaseLock& lock, const CatalogSnapshot& base,
                                       absl::string_view db) const ABSL_LOCKS_EXCLUDED(mu_);
  // C14: removes the database row unless a table of it is live or a drop of one of its
  // names is pending.
  absl::Status RemoveDatabaseIfEmpty(absl::string_view db) ABSL_LOCKS_EXCLUDED(mu_);
  // ApplyPeerTable's steps (catalog_peer.cc), under the database's lock with `markers` the
  // attribute markers of the name held here. C5: a new generation of the peer's definition.
  absl::Status CreatePeerTable(const DatabaseLock& lock, const PeerTableDef& peer,
                               const AttributeStamps& markers) ABSL_LOCKS_EXCLUDED(mu_);
  // C4, C15: the peer's definition merged into the live replicated generation `def`.
  absl::Status MergePeerTable(const DatabaseLock& lock, const TableRef& def,
                              const PeerTableDef& peer, const AttributeStamps& markers)
      ABSL_LOCKS_EXCLUDED(mu_);
  // C4: logs a discarded difference once per (generation, attribute, field).
  void LogDiscardOnce(const TableRef& def, absl::string_view attribute, absl::string_view field,
                      absl::string_view local, absl::string_view peer) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether `key` is logged for the first time.
  bool FirstDiscard(std::string key) ABSL_LOCKS_EXCLUDED(mu_);

  storage::Engine* const engine_;
  CatalogOptions options_;
  std::function<void(const SnapshotRef&)> listener_;

  // DatabaseLock's mutexes by database name, while some DatabaseLock uses them.
  absl::Mutex locks_mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<DatabaseMutex>> db_locks_
      ABSL_GUARDED_BY(locks_mu_);

  mutable absl::Mutex mu_ ABSL_ACQUIRED_BEFORE(snapshot_mu_);
  // The latest published snapshot; equal to snapshot_ outside mu_.
  std::shared_ptr<const CatalogSnapshot> current_ ABSL_GUARDED_BY(mu_);
  uint64_t next_generation_id_ ABSL_GUARDED_BY(mu_) = 1;  // invariant (3)
  // Generations tombstoned by this process and not yet finished (C9 steps 2-3). An entry of
  // database D is added and erased only under D's lock; `drainers` changes under mu_ alone.
  absl::flat_hash_map<uint64_t, PendingDrop> pending_drops_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> logged_discards_ ABSL_GUARDED_BY(mu_);  // C4 log-once
  uint64_t next_drop_id_ ABSL_GUARDED_BY(mu_) = 1;
  // Invariant (4): the changes of versions (journal_from_, current_->version], one per name
  // a publish changed, in version order; at most kJournalEntries.
  std::deque<SchemaChange> journal_ ABSL_GUARDED_BY(mu_);
  uint64_t journal_from_ ABSL_GUARDED_BY(mu_) = 0;

  // C9 step 2 counters (drop_stats); updated outside mu_.
  std::atomic<uint64_t> drains_{0};
  std::atomic<uint64_t> drain_timeouts_{0};
  std::atomic<int64_t> drain_micros_total_{0};
  std::atomic<uint64_t> rows_retired_{0};

  // Tells the strip listener (SetStripListener).
  void StripsPending() ABSL_LOCKS_EXCLUDED(strip_listener_mu_);
  absl::Mutex strip_listener_mu_;  // a leaf
  std::function<void()> strip_listener_ ABSL_GUARDED_BY(strip_listener_mu_);

  mutable absl::Mutex snapshot_mu_;
  SnapshotRef snapshot_ ABSL_GUARDED_BY(snapshot_mu_);  // what readers get
};

// Holds the lock of one database's catalog mutations (C12). After unlocking, tells the
// listener about every snapshot published under it, so listener calls never run under a
// catalog lock and have all run when the mutation returns. Functions that must run under it
// take it as a parameter. Clang's thread-safety analysis cannot name a mutex chosen by a
// database name at run time, so the parameter is the static proof and AssertCovers the
// run-time one.
class Catalog::DatabaseLock {
 public:
  DatabaseLock(Catalog* catalog, absl::string_view db);
  ~DatabaseLock();
  DatabaseLock(const DatabaseLock&) = delete;
  DatabaseLock& operator=(const DatabaseLock&) = delete;

  const std::string& database() const { return db_; }
  // Fails the process if `db` is not the locked database: a mutation outside its lock would
  // break invariant (1).
  void AssertCovers(absl::string_view db) const;

 private:
  friend class Catalog;

  Catalog* const catalog_;
  const std::string db_;
  DatabaseMutex* mutex_;
  mutable std::vector<SnapshotRef> published_;  // by this thread, under this lock (Publish)
};

}  // namespace cairn::catalog
