// Every named fault point of cairn, in one place so they can be grepped and documented
// (STYLE 2.7). Names are component.operation.moment.
#pragma once

namespace cairn::fault_points {

// catalog/catalog.cc: create (SPEC C1, C2)
inline constexpr char kCreateBeforeCommit[] = "catalog.create.before_commit";
inline constexpr char kCreateAfterCommit[] = "catalog.create.after_commit";  // before publish
// catalog/catalog_attributes.cc: a new definition of a live generation, under its database's
// catalog lock (Catalog::DatabaseLock), before it takes the generation's schema lock exclusively
// (GenerationState (1))
inline constexpr char kSchemaBeforeFence[] = "catalog.schema.before_fence";
// catalog/catalog_drop.cc: drop (SPEC C9, C10)
inline constexpr char kDropAfterTombstone[] = "catalog.drop.after_tombstone";  // step 1 done
inline constexpr char kDropAfterDrain[] = "catalog.drop.after_drain";          // step 2 done
inline constexpr char kDropBeforeFinalCommit[] = "catalog.drop.before_final_commit";
inline constexpr char kDropAfterFinalCommit[] = "catalog.drop.after_final_commit";
// catalog/record_store.cc: record writes (SPEC D3, D4), with an admission token held
// validated, before a dynamic write adds its new attributes to the catalog (D2)
inline constexpr char kWriteBeforeAttributes[] = "records.write.before_attributes";
inline constexpr char kWriteBeforeCommit[] = "records.write.before_commit";
inline constexpr char kWriteAfterCommit[] = "records.write.after_commit";
inline constexpr char kScanRow[] = "records.scan.row";  // each row a search visits
// catalog/record_store_apply.cc, record_store_strip.cc: peer apply (SPEC D5, C8) and strips
// resolved, values older than its markers stripped; before peer-only fields become attributes
inline constexpr char kApplyBeforeAttributes[] = "records.apply.before_attributes";
inline constexpr char kApplyBeforeLock[] = "records.apply.before_lock";  // resolved, unlocked
// RecordStore::LockCurrent (strips, purges): the definition read, its schema lock not taken
inline constexpr char kRefreshBeforeLock[] = "records.refresh.before_lock";
inline constexpr char kApplyLocked[] =
    "records.apply.locked";  // keys and schemas locked, not committed
inline constexpr char kStripAfterCatalog[] = "records.strip.after_catalog";  // values not stripped
// catalog/record_store_strip.cc: a chunk of a strip is about to commit (C15: resumable)
inline constexpr char kStripChunk[] = "records.strip.chunk";
// replication/record_stream_receive.cc, link_session.cc: record streams (SPEC R5-R7)
inline constexpr char kReplApplyBeforeCommit[] = "replication.apply.before_commit";
inline constexpr char kReplApplyAfterCommit[] = "replication.apply.after_commit";  // not acked
inline constexpr char kReplSendBatch[] = "replication.send.batch";  // before a batch is sent
// catalog/change_feed.cc: a subscription took its snapshot and has not read the log after it
// (SPEC W2: a write committing now must reach the subscriber once)
inline constexpr char kFeedAfterSnapshot[] = "records.feed.after_snapshot";
// replication/link_session.cc: a sender round has taken its catalog snapshot and not yet read
// the change log against it (R5 after R3: a schema change may land in between)
inline constexpr char kReplSendAfterSnapshot[] = "replication.send.after_snapshot";
// replication/record_stream.cc: a full copy (R7) is about to read the rows of its next table
inline constexpr char kReplCopyTable[] = "replication.copy.table";
// replication/schema_sync.cc: a peer's marker (C8) or attribute marker (C15) is about to be
// applied (R4 step 1)
inline constexpr char kReplSchemaBeforeMarker[] = "replication.schema.before_marker";
// replication/link_session_schema.cc: a DbSchema from a peer arrived and is about to be applied; an
// error applies nothing of it, as a delta missing a change would (R3: the digest check
// finds the difference and asks for the database whole)
inline constexpr char kReplSchemaReceive[] = "replication.schema.receive";
// replication/link_session.cc: the digest check is about to ask a peer for a database whole
// (SchemaRequest, R3); an error drops the request, standing for one that brings nothing (the
// watch asks again after its backoff)
inline constexpr char kReplSchemaResync[] = "replication.schema.resync";
// replication/anti_entropy.cc: a verify found rows to repair and is about to apply them
// here or send them to its peer (R18)
inline constexpr char kVerifyBeforeRepair[] = "antientropy.repair.before_apply";

// What buggify (FaultRegistry::EnableBuggify) may do at a point besides delaying: `errors`
// when the code treats an injected error as a real failure of that step (nothing half-done,
// the caller answers or retries) rather than ignoring it; `hot` for a point hit once per row,
// which fires at most 1 % of its hits (a scan would otherwise never finish). Every point is
// crash-safe (SPEC §6: SIGKILL at any moment loses no acknowledged write). Keep this list
// complete: a point missing here is never buggified and never reported as a blind spot.
struct PointInfo {
  const char* name;
  bool errors;
  bool hot = false;
};
inline constexpr PointInfo kAll[] = {
    {kCreateBeforeCommit, true},
    {kCreateAfterCommit, false},  // the create is durable; an error is ignored
    // Also hit by FinishStrip after drop_attribute committed: a failure there would answer
    // 500 for a drop that happened.
    {kSchemaBeforeFence, false},
    {kDropAfterTombstone, true},  // the drop stays pending; a retry completes it (C9)
    {kDropAfterDrain, true},
    {kDropBeforeFinalCommit, true},
    {kDropAfterFinalCommit, false},
    {kWriteBeforeAttributes, true},
    {kWriteBeforeCommit, true},  // after new attributes are added they stay (decision 64)
    {kWriteAfterCommit, false},
    // Scans run after commits too (a strip, a marker's purge) and inside streamed answers
    // whose status line is sent: delays only.
    {kScanRow, false, /*hot=*/true},
    {kApplyBeforeAttributes, true},
    {kApplyBeforeLock, true},
    {kApplyLocked, true},
    {kRefreshBeforeLock, false},  // a strip would wait for a restart: delays only
    {kStripAfterCatalog, false},  // the strip would wait for a restart: delays only
    {kStripChunk, false},         // likewise
    {kReplApplyBeforeCommit, true},
    {kReplApplyAfterCommit, false},
    {kReplSendBatch, true},
    {kReplSendAfterSnapshot, true},
    {kReplCopyTable, true},
    {kReplSchemaBeforeMarker, false},
    {kReplSchemaReceive, true},
    {kVerifyBeforeRepair, true},  // the verify ends with the error; the next one repairs
    // Last, so that the seeds of the random schedule keep their choices for the points above.
    // Delays only: a dropped request waits out a backoff that grows to a minute, longer than
    // the schedule's heal allows; tests drop requests on purpose.
    {kReplSchemaResync, false},
    // Added after it, for the same reason.
    {kFeedAfterSnapshot, true},  // the subscription is refused; nothing was sent
};

}  // namespace cairn::fault_points
