#include "catalog/local_node.h"

#include "common/status.h"

namespace cairn::catalog {

absl::StatusOr<std::unique_ptr<LocalNode>> LocalNode::Open(const std::string& path,
                                                           const LocalNodeOptions& options) {
  auto node = std::make_unique<LocalNode>();
  Clock* clock = options.clock != nullptr ? options.clock : SystemClock::Default();
  node->hlc = std::make_unique<HybridClock>(clock);
  storage::EngineOptions eo;
  eo.path = path;
  eo.sync_writes = options.sync_writes;
  eo.tombstone_retention = options.tombstone_retention;
  eo.clock = clock;
  CAIRN_ASSIGN_OR_RETURN(node->engine, storage::Engine::Open(eo));
  if (options.restored)
    CAIRN_RETURN_IF_ERROR(storage::ChangeLog::ForgetIdentity(node->engine.get()));
  node->log = std::make_unique<storage::ChangeLog>(node->engine.get());
  CAIRN_RETURN_IF_ERROR(node->log->Recover());
  CatalogOptions co;
  co.node_name = options.name;
  co.hlc = node->hlc.get();
  co.faults = options.faults;
  co.drop_drain_timeout = options.drop_drain_timeout;
  co.max_attributes_per_table = options.max_attributes_per_table;
  CAIRN_ASSIGN_OR_RETURN(node->catalog, Catalog::Open(node->engine.get(), co));
  node->users = std::make_unique<UserCatalog>(node->catalog.get());
  RecordStoreOptions ro;
  ro.node_name = options.name;
  ro.hlc = node->hlc.get();
  ro.faults = options.faults;
  ro.strip_rate = options.strip_rate;
  ro.busy_share = options.background_busy_share;
  ro.activity = &node->activity;
  node->records =
      std::make_unique<RecordStore>(node->engine.get(), node->log.get(), node->catalog.get(), ro);
  CAIRN_RETURN_IF_ERROR(node->records->ResumePendingStrips());
  CAIRN_RETURN_IF_ERROR(node->records->ResumePendingPurges());
  return node;
}

absl::Status LocalNode::Flush() { return engine->Flush(); }

LocalNode::~LocalNode() {
  // Reverse order of dependency.
  records.reset();
  users.reset();
  catalog.reset();
  log.reset();
  engine.reset();
}

}  // namespace cairn::catalog
