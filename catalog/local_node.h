// LocalNode: one node's storage engine, change log, catalog and record store, opened on a
// directory and wired together in dependency order. cairnd serves one; tests and benchmarks
// use it directly when they need the single-node core without a server.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "catalog/catalog.h"
#include "catalog/record_store.h"
#include "catalog/user_catalog.h"
#include "common/background_pace.h"
#include "common/clock.h"
#include "common/fault.h"
#include "storage/change_log.h"
#include "storage/engine.h"

namespace cairn::catalog {

struct LocalNodeOptions {
  std::string name = "node-a";
  bool sync_writes = false;
  absl::Duration drop_drain_timeout = absl::Seconds(10);
  absl::Duration tombstone_retention = absl::Hours(24 * 7);  // SPEC D5
  Clock* clock = nullptr;                                    // null: the system clock
  FaultRegistry* faults = nullptr;                           // null: none
  size_t max_attributes_per_table = 1000;                    // CatalogOptions
  uint64_t strip_rate = 0;                                   // RecordStoreOptions
  // Of the strip and verify rates, while the node serves foreground work (decision 156).
  double background_busy_share = 1.0;
  // The database is a restored copy: take a new log identity and forget every cursor on a
  // peer's log before anything else (storage::ChangeLog::ForgetIdentity).
  bool restored = false;
};

struct LocalNode {
  static absl::StatusOr<std::unique_ptr<LocalNode>> Open(const std::string& path,
                                                         const LocalNodeOptions& options = {});
  ~LocalNode();

  // Syncs the WAL and flushes memtables, so the next open replays nothing (clean shutdown).
  absl::Status Flush();

  // Foreground work (client requests, peers' batches) noted for background work's pace
  // (common/background_pace.h). First, so it outlives every part that reads it.
  ForegroundActivity activity;
  std::unique_ptr<HybridClock> hlc;
  std::unique_ptr<storage::Engine> engine;
  std::unique_ptr<storage::ChangeLog> log;
  std::unique_ptr<Catalog> catalog;
  std::unique_ptr<RecordStore> records;
  std::unique_ptr<UserCatalog> users;  // SPEC §7
};

}  // namespace cairn::catalog
