// RecordStore: records of every table generation (SPEC D1-D7) and the write side of the
// change log (R5). Writes go: catalog snapshot -> table generation -> admission token ->
// validate -> key latches -> one WriteBatch (record + index entries + log entry + count).
// Reads iterate; nothing loads a whole table into memory. Thread-safe.
//
// Lock order: a Catalog::DatabaseLock (only to add attributes, never held below) before
// KeyLatches before GenerationState::schema_mu (shared) before ChangeLog locks.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "cairn/storage/v1/records.pb.h"
#include "catalog/catalog.h"
#include "catalog/internal/key_latches.h"
#include "catalog/search_conditions.h"
#include "catalog/table_digest.h"
#include "common/background_pace.h"
#include "common/clock.h"
#include "common/deadline.h"
#include "common/fault.h"
#include "nlohmann/json.hpp"
#include "storage/change_log.h"
#include "storage/engine.h"

namespace cairn::catalog {

struct RecordStoreOptions {
  std::string node_name;       // origin of local writes (D4, D5)
  HybridClock* hlc = nullptr;  // required
  FaultRegistry* faults = nullptr;
  size_t latch_stripes = 4096;
  // Rows a strip of dropped attribute values reads per second, at most (0: no limit), so that
  // foreground writes keep their share of the machine (C15); `busy_share` of it while the
  // node's `activity` shows foreground work (common/background_pace.h, decision 156).
  uint64_t strip_rate = 0;
  double busy_share = 1.0;
  const ForegroundActivity* activity = nullptr;  // null: never busy
};

enum class WriteMode { kInsert, kUpsert, kUpdate };

struct WriteResult {
  nlohmann::json written = nlohmann::json::array();  // primary keys, original JSON types
  nlohmann::json skipped = nlohmann::json::array();
  std::vector<std::string> new_attributes;  // added by this write (D2)
  Hlc version = 0;                          // of every record the write changed
  // The generation written to: its created_time, each record's row generation (D7), and
  // whether it replicates (C11). Test hooks show them to the cluster checker's model.
  Hlc row_generation = 0;
  bool replicate = true;
  // The last change-log sequence number of the write's batch in its database's log; 0 when
  // nothing was logged (design 0013, P10: a confirmed write waits for the members' acks of it).
  uint64_t log_seq = 0;
};

struct SearchOptions {
  std::vector<std::string> get_attributes;  // empty or ["*"]: every attribute
  uint64_t limit = 0;                       // 0: no limit
  uint64_t offset = 0;
  bool reverse = false;  // the rows in the opposite order (Harper's `reverse`)
  // What a sort may hold of sort values and keys, in bytes (0: no bound); past it the search
  // is refused, 400 naming the limit (--max-sort-bytes, issue 41).
  uint64_t max_sort_bytes = 0;
  // The request's deadline, checked at every row read (with the drop gate, C9); null: none.
  // Not owned; outlives the search.
  Deadline* deadline = nullptr;
  // Check the request (table, attribute, value, ids, projection) and visit nothing: lets a
  // caller that streams its answer report errors before it commits to a status.
  bool validate_only = false;
};

// What ApplyPeerEntries did, entry by entry (counts add up to the input size).
struct ApplyStats {
  uint64_t applied = 0;
  uint64_t duplicates = 0;       // same version and origin (D5 identity tie)
  uint64_t older = 0;            // lost last-writer-wins
  uint64_t dead_generation = 0;  // row generation older than the name's drop marker (C6, D7)
  uint64_t node_local = 0;       // the name is a node-local table here (C11)
  // Unknown op, a key that is not an encoded primary key (D1, D8), a table name that breaks
  // C13, a body that is not a JSON object, bad attribute names.
  uint64_t malformed = 0;
  uint64_t parked = 0;  // its table not live here yet, left to the caller (R17)
  // Design 0013, P3: the database's placement does not name this node; every entry is
  // dropped (and `extra` still runs, so cursors and parked keys move as for any skip).
  uint64_t not_member = 0;
  // Values of dropped attributes removed from applied rows (C15); not an entry count.
  uint64_t values_stripped = 0;
};

// How an anti-entropy scan reads (SPEC R18, catalog/table_digest.h).
struct DigestScanOptions {
  Hlc settled_before = 0;  // tombstones older than this are left out of digests
  // Called with the rows read since its last call, every kPaceRows rows: the caller's rate
  // limit (it may block) and its way to cancel the scan (an error ends it with that error).
  // `table` says whether the scan may go on (TABLE_DROPPING once a drop of the table began):
  // a pace that waits asks it as it waits, so a drop's drain never waits for the pace (C9).
  // Null: no limit.
  std::function<absl::Status(uint64_t rows, absl::FunctionRef<absl::Status()> table)> pace;
  static constexpr uint64_t kPaceRows = 256;
};

// A page of stamps (RecordStore::LeafStamps).
struct StampPage {
  std::vector<RowStamp> stamps;  // in key order
  bool more = false;             // the scan stopped at the limit; resume after the last key
  uint64_t rows_scanned = 0;
};

class RecordStore {
 public:
  RecordStore(storage::Engine* engine, storage::ChangeLog* log, Catalog* catalog,
              RecordStoreOptions options);
  ~RecordStore();  // stops the strip worker (StopStrips)
  const std::string& node_name() const { return options_.node_name; }
  FaultRegistry* faults() const { return options_.faults; }

  // The live table for a client's reads and writes of rows: NOT_A_MEMBER (503, naming the
  // members) for a replicated table of a database this node does not hold (design 0013, P3)
  // or holds but is still catching up on (P7); OpsApi forwards such a request (P4). A
  // node-local table (C11) is served where it is.
  absl::StatusOr<TableRef> ResolveRows(absl::string_view db, absl::string_view table) const;
  // Admission to `def`'s rows (C9), then ResolveRows again (P8: a release may have begun
  // since the table was resolved). Every operation on rows takes its token here.
  absl::StatusOr<Gate::Token> AdmitRows(const TableRef& def) const;

  // insert / upsert / update of a JSON array of objects (SPEC §5). All or nothing: any
  // invalid record refuses the whole batch with nothing written.
  absl::StatusOr<WriteResult> Write(absl::string_view db, absl::string_view table,
                                    const nlohmann::json& records, WriteMode mode);
  // Deletes by primary key, leaving versioned tombstones (D5).
  absl::StatusOr<WriteResult> Delete(absl::string_view db, absl::string_view table,
                                     const nlohmann::json& ids);

  // Calls `visit` per record found, in key order for searches, in request order for ids;
  // `visit` returns false to stop. A drop of the table cancels a running search with
  // TABLE_DROPPING (C9).
  using Visitor = std::function<bool(const nlohmann::json& record)>;
  absl::Status SearchById(absl::string_view db, absl::string_view table, const nlohmann::json& ids,
                          const SearchOptions& options, const Visitor& visit);
  // `value` "*" matches every record; a `*` at either end or both makes a pattern (decision
  // 7). One condition of SearchByConditions.
  absl::Status SearchByValue(absl::string_view db, absl::string_view table,
                             absl::string_view attribute, const nlohmann::json& value,
                             const SearchOptions& options, const Visitor& visit);
  // search_by_conditions (decision 104): the rows that match `search`, read through the
  // primary key or an index where a condition allows (equality, range, prefix; an `or` whose
  // every branch does), else by a filtered scan; each row once. Unsorted, rows come in the
  // order the reads find them and the answer streams; a sort holds the sort values and keys
  // of the matching rows (at most offset + limit of them with a limit), so without a limit
  // a table of more than kMaxSortRows rows is refused.
  absl::Status SearchByConditions(absl::string_view db, absl::string_view table,
                                  ConditionSearch search, const SearchOptions& options,
                                  const Visitor& visit);
  static constexpr uint64_t kMaxSortRows = 1'000'000;
  // Every stored row of the table's live generation in key order, tombstones included, with
  // the stamps it carries (D4, D5, D7) and its body as stored (null for a tombstone; values a
  // strip has still to remove included, which searches do not show). For the test hook read_rows:
  // the cluster checker's model. Returns the generation read. Cancelled by a drop like a search
  // (C9).
  using StoredVisitor =
      std::function<void(const nlohmann::json& key, const storage::v1::StoredRecord& row,
                         const nlohmann::json& record)>;
  absl::StatusOr<TableRef> ScanStored(absl::string_view db, absl::string_view table,
                                      const StoredVisitor& visit);
  // Exact count of live records (maintained in the write batches, not estimated).
  absl::StatusOr<uint64_t> RecordCount(absl::string_view db, absl::string_view table);
  // ... of that generation, whatever the name holds now.
  absl::StatusOr<uint64_t> RecordCount(const TableDef& def);

  // drop_attribute: the catalog change, stamped after every stored version (and the attribute
  // marker, C15), then the values stripped from stored records: here, or with `in_background`
  // by the strip worker, the call returning once the change is durable (readers treat the
  // values as gone from then on). Reads the generation twice (decision 57). Returns the
  // drop's stamp.
  absl::StatusOr<Hlc> DropAttribute(absl::string_view db, absl::string_view table,
                                    absl::string_view attribute, bool in_background = false);
  // Finishes every strip a crash interrupted. Call once after opening, before serving.
  absl::Status ResumePendingStrips();
  // Has the strip worker (a thread, started on first use) run every pending strip soon: the
  // catalog calls it when a peer's attribute marker or a re-created attribute leaves one
  // (Catalog::SetStripListener). Never blocks.
  void KickStrips() ABSL_LOCKS_EXCLUDED(strip_mu_);
  // Cancels a running strip (it stays pending) and ends the worker. Idempotent.
  void StopStrips() ABSL_LOCKS_EXCLUDED(strip_mu_);
  // C15 in full: Catalog::ApplyPeerAttributeMarker, then the strip it left pending. A drop of
  // the table cancels the strip (C9) without an error; a crash leaves it for the restart.
  absl::Status ApplyPeerAttributeDrop(absl::string_view db, absl::string_view table,
                                      absl::string_view attribute, Hlc dropped_time);
  // Values of dropped attributes removed since the start: by strips, and from peers' rows on
  // apply (C15; /metrics cairn_attribute_values_stripped_total).
  uint64_t values_stripped() const { return values_stripped_.load(std::memory_order_relaxed); }

  // ---- Anti-entropy (SPEC R18): scans at one RocksDB snapshot, admitted like searches and
  // cancelled by a drop of the table (C9). `def` is the generation to read; TABLE_DROPPING
  // once it is not the live one.
  // The digest tree of every row of the generation.
  absl::StatusOr<DigestTree> Digest(const TableRef& def, int depth,
                                    const DigestScanOptions& options);
  // The stamps (settled tombstones included) of the rows in `leaves` (a tree of 16^depth
  // leaves) with keys after `after_key` (empty: from the start), at most `limit` of them.
  absl::StatusOr<StampPage> LeafStamps(const TableRef& def, int depth,
                                       const std::vector<uint32_t>& leaves,
                                       absl::string_view after_key, size_t limit,
                                       const DigestScanOptions& options);
  // The stored rows (bodies included) of `keys` (encoded primary keys); nullopt where none.
  absl::StatusOr<std::vector<std::optional<storage::v1::StoredRecord>>> ReadStored(
      const TableRef& def, const std::vector<std::string>& keys);

  // ---- Replication (peer) side.
  // Applies entries of one database from a peer under last-writer-wins (D5), logging each
  // applied entry for relay (R5, R8). `extra` adds to the same batch (the peer's cursor, R6),
  // so the cursor advances even when every entry is skipped (ApplyStats). An entry whose
  // table is neither live here nor provably dead (its schema has not arrived, or its drop is
  // completing) is not applied: with `unapplied` null the whole batch is refused with
  // TABLE_NOT_FOUND, nothing written; otherwise such entries are left out, added to
  // *unapplied (before `extra` runs, which may store them: R17 parking) and the rest applies.
  // The entries are read in place, not copied (a received batch's, on its arena).
  absl::StatusOr<ApplyStats> ApplyPeerEntries(
      absl::string_view db, absl::Span<const storage::v1::ChangeEntry* const> entries,
      const std::function<void(rocksdb::WriteBatch*)>& extra,
      std::vector<storage::v1::ChangeEntry>* unapplied = nullptr);
  absl::StatusOr<ApplyStats> ApplyPeerEntries(
      absl::string_view db, const std::vector<storage::v1::ChangeEntry>& entries,
      const std::function<void(rocksdb::WriteBatch*)>& extra,
      std::vector<storage::v1::ChangeEntry>* unapplied = nullptr);
  // C8 in full: Catalog::ApplyPeerDrop, then, from a generation it keeps, every row whose
  // row generation the marker retires.
  absl::StatusOr<PeerDropResult> ApplyPeerDrop(absl::string_view db, absl::string_view table,
                                               Hlc dropped_time);
  // C14 in full: Catalog::ApplyPeerDropDatabase (C8 table by table; `stamp_of` as there),
  // then the purge of every generation it keeps. Results per table.
  absl::StatusOr<std::vector<std::pair<std::string, PeerDropResult>>> ApplyPeerDropDatabase(
      absl::string_view db, const Catalog::TableStampFn& stamp_of);
  // Runs every purge a marker left pending (storage::PurgeKey): after ApplyPeerDrop, and once
  // after opening, before serving (a crash between the marker and its purge).
  absl::Status ResumePendingPurges();
  // Deletes every row of `def`'s generation with row_generation < marker, then clears its
  // pending purge and the row generations it removed. Returns the count.
  absl::StatusOr<uint64_t> PurgeRowsBefore(const TableRef& def, Hlc marker);

 private:
  // One chunk of PurgeRowsBefore (record_store_purge.cc): the rows at `keys`, read again under
  // their latches, removed if `marker` still leaves them dead (C8), in one batch; how many.
  absl::StatusOr<uint64_t> PurgeChunk(const TableRef& def, Hlc marker,
                                      std::vector<std::string> keys);
  // One attempt of ApplyPeerEntries, in its steps (record_store_apply.cc): what each step
  // found, for the next.
  struct PeerApply;
  // Step 1: each entry's table and body, with `unapplied` as ApplyPeerEntries takes it.
  absl::Status ResolvePeerEntries(absl::string_view db, const CatalogSnapshot& snap,
                                  absl::Span<const storage::v1::ChangeEntry* const> entries,
                                  std::vector<storage::v1::ChangeEntry>* unapplied, PeerApply* a);
  // Step 1 for the body of the PUT entry `i` of a live `def`: parsed, stripped of values an
  // attribute marker retires (C15), its fields not in `def` noted to add. False: malformed.
  static bool ParsePeerBody(const storage::v1::ChangeEntry& e, const TableDef& def, size_t i,
                            PeerApply* a);
  // Step 2: locks every key, then every generation's schema; false when a definition is no
  // longer current (the attempt starts over).
  bool LockPeerKeys(absl::Span<const storage::v1::ChangeEntry* const> entries, PeerApply* a);
  // Step 3: last-writer-wins per entry, in stream order (D5).
  absl::Status MergePeerEntries(absl::Span<const storage::v1::ChangeEntry* const> entries,
                                PeerApply* a);
  // Step 4: one batch of the merged rows, their log entries and `extra`, written.
  absl::Status WritePeerBatch(absl::string_view db,
                              const std::function<void(rocksdb::WriteBatch*)>& extra, PeerApply* a);
  // The newest version of any row of `def`'s generation (0 if none): a scan, cancelled by a
  // drop (C9).
  absl::StatusOr<Hlc> NewestVersion(const TableRef& def);
  // Removes `attribute`'s values from every record of `def`'s generation, then clears its
  // pending strip.
  absl::Status StripAttribute(const TableRef& def, absl::string_view attribute);
  // Commits a local write's batch between its two fault points (records.write.*).
  absl::Status CommitLocal(rocksdb::WriteBatch* batch);
  absl::StatusOr<TableRef> Resolve(absl::string_view db, absl::string_view table) const;
  // Re-reads `def`'s generation from the current snapshot after a schema change.
  absl::StatusOr<TableRef> Refresh(const TableRef& def) const;
  // The newest definition of `def`'s generation, with its schema lock held shared until the
  // result is destroyed, and current under it (GenerationState invariant (1)): no schema
  // change of the generation commits meanwhile, so index entries and strips made by it stay
  // exact. For maintenance scans (strips, purges), whose rows were found before a schema
  // change may have published. TABLE_DROPPING if the generation is gone.
  struct LockedDef {
    TableRef def;
    std::unique_ptr<absl::ReaderMutexLock> schema;
  };
  absl::StatusOr<LockedDef> LockCurrent(const TableRef& def) const;
  absl::Status ProjectInto(const TableDef& def, const SearchOptions& options,
                           std::vector<std::string>* fields) const;

  storage::Engine* const engine_;
  storage::ChangeLog* const log_;
  Catalog* const catalog_;
  const RecordStoreOptions options_;
  internal::KeyLatches latches_;
  std::atomic<uint64_t> values_stripped_{0};

  // The strip worker (KickStrips). strip_mu_ is a leaf.
  void StripWorker() ABSL_LOCKS_EXCLUDED(strip_mu_);
  // Blocks as long as `rows` more rows read need to stay within strip_rate.
  // TABLE_DROPPING as soon as `def`'s drop begins (C9: the drain never waits for it).
  absl::Status PaceStrip(const TableDef& def, size_t rows);
  absl::Mutex strip_mu_;
  bool strips_due_ ABSL_GUARDED_BY(strip_mu_) = false;
  std::atomic<bool> stop_strips_{false};  // written under strip_mu_, read anywhere
  std::thread strip_worker_;              // started and joined under the rules above
  BackgroundPace strip_pace_;             // strip_rate
};

}  // namespace cairn::catalog
