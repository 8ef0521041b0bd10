// What every record path shares (catalog/record_store*.cc): the state of one record key while
// a batch is built (Slot), the read of stored rows in one MultiGet, and the batch that writes
// changed rows with their index differences, counts and change-log entries (SPEC D3, D4).
// Thread-compatible.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cairn/storage/v1/records.pb.h"
#include "catalog/schema.h"
#include "common/deadline.h"
#include "common/fault.h"
#include "nlohmann/json.hpp"
#include "rocksdb/iterator.h"
#include "rocksdb/write_batch.h"
#include "storage/change_log.h"
#include "storage/engine.h"

namespace cairn::catalog::internal {

inline constexpr size_t kChunk = 256;  // keys per batch of a maintenance scan

// A record body as stored JSON text (invalid UTF-8 replaced, never throws).
std::string Dump(const nlohmann::json& j);

// A stored or received record body. Anything but a JSON object reads as an empty object, so
// no later merge or erase can throw on it.
nlohmann::json ParseStored(const std::string& text);

// (version, origin) ordering of SPEC D5.
int CompareVersions(Hlc va, absl::string_view oa, Hlc vb, absl::string_view ob);

absl::Status IteratorStatus(const rocksdb::Iterator& it);

// SPEC C9: OK, or TABLE_DROPPING once a drop of `def`'s generation began (its gate is
// closing): what a scan asks at each row (ScanCheckpoint) and a paced scan while it waits.
absl::Status NotDropping(const TableDef& def);

// SPEC C9: every scan of a generation (searches, attribute strips, purges) calls Visit() at
// each row it reads, matching or not, so a drop's drain never waits for a scan to reach its
// end. Visit() hits the fault point records.scan.row, then answers TABLE_DROPPING once the
// generation's gate is closing, and REQUEST_TIMEOUT once a request's deadline passed or its
// client left (issue 41). The drop check is one relaxed atomic load and the deadline's a clock
// read, so both run at every row (C9 asks for at least every 1,000).
class ScanCheckpoint {
 public:
  // `deadline`: the request's (issue 41); null for the node's own scans.
  ScanCheckpoint(const TableDef& def, FaultRegistry* faults, Deadline* deadline = nullptr)
      : def_(def), faults_(faults), deadline_(deadline) {}
  absl::Status Visit();

 private:
  const TableDef& def_;
  FaultRegistry* const faults_;
  Deadline* const deadline_;
};

// The state of one record key while a batch is built: what is stored, and what the batch
// will leave.
struct Slot {
  const TableDef* def = nullptr;
  std::string key;  // record key
  std::string encoded_pk;
  // Stored before the batch.
  bool stored = false;  // a row (live or tombstone) exists
  storage::v1::StoredRecord original;
  bool original_live = false;
  nlohmann::json original_json;  // parsed only when live
  // After the batch so far. next_json points at next_owned, or at a request's own record
  // when the write needs no merge (no copy on the common insert path).
  bool changed = false;
  storage::v1::StoredRecord next;
  // Where `next` sits in its origin's log, when a peer's entry put it here (ChangeEntry
  // origin_seq / origin_log_id; 0: a local write or unknown). Logged with it.
  uint64_t origin_seq = 0;
  uint64_t origin_log_id = 0;
  nlohmann::json next_owned;
  const nlohmann::json* next_json = nullptr;
  bool live() const { return changed ? !next.deleted() : original_live; }
  const nlohmann::json& current_json() const { return changed ? *next_json : original_json; }
  const storage::v1::StoredRecord* current() const {
    return changed ? &next : (stored ? &original : nullptr);
  }
  void SetNext(nlohmann::json j) {
    next_owned = std::move(j);
    next_json = &next_owned;
  }
};

// Shadows (storage::ShadowKey, SPEC C8, D7): rows that a peer row of an OLDER row generation
// replaced under last-writer-wins. Until a marker says which generations live, either may be
// the one that counts; when a purge removes the replacing row, the newest surviving shadow
// takes its place, so a retired generation's write never erases a live one.
//
// Adds `replaced` to `*shadows` and keeps only rows no other (`current` included) beats with
// an equal or newer row generation and a greater (version, origin): whatever retires such a
// row retires nothing that beats it.
void MergeShadows(const std::vector<storage::v1::StoredRecord>& replaced,
                  const storage::v1::StoredRecord& current, storage::v1::ShadowedRows* shadows);
// The shadows of one record key; empty if none.
absl::Status LoadShadows(storage::Engine* engine, uint64_t generation, absl::string_view encoded_pk,
                         storage::v1::ShadowedRows* shadows);

// Reads the stored rows of `slots` in one MultiGet.
absl::Status LoadSlots(storage::Engine* engine, std::vector<Slot>* slots,
                       const rocksdb::Snapshot* snapshot = nullptr);

// Adds the changed slots to `batch`: record rows, index differences, record counts, and one
// change-log entry each (D3, D4), under sequence numbers reserved in `db`'s log. The returned
// reservation must live until the batch has committed (or failed): it holds the watermark.
// Fails (adding nothing) when the log cannot reserve numbers (ChangeLog::Reserve).
absl::StatusOr<storage::ChangeLog::Reservation> EmitSlots(storage::Engine* engine,
                                                          storage::ChangeLog* log,
                                                          absl::string_view db,
                                                          const std::vector<Slot>& slots,
                                                          rocksdb::WriteBatch* batch);

// Whether `d` is its generation's newest definition, for a caller holding d's schema_mu
// shared through a lock the analysis cannot follow (one per table of a peer batch, held in a
// vector; RecordStore::LockCurrent's, held by its result). GenerationState invariant (1).
inline bool SchemaIsCurrentUnderDynamicLock(const TableDef& d) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  return d.state()->schema_version() == d.schema_version();
}

}  // namespace cairn::catalog::internal
