#include "storage/engine.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "cairn/storage/v1/records.pb.h"
#include "common/status.h"
#include "rocksdb/cache.h"
#include "rocksdb/compaction_filter.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/merge_operator.h"
#include "rocksdb/table.h"
#include "rocksdb/utilities/checkpoint.h"
#include "rocksdb/write_buffer_manager.h"
#include "storage/keys.h"
#include "storage/rocksdb_status.h"

namespace cairn::storage {
namespace {

constexpr const char* kCfNames[kNumCfs] = {"catalog", "records", "indexes", "changelog", "meta"};

// Sums little-endian int64 deltas: exact per-generation record counts (describe_table's
// record_count) kept in the same batch as the records they count.
class CountAddOperator : public rocksdb::AssociativeMergeOperator {
 public:
  bool Merge(const rocksdb::Slice& /*key*/, const rocksdb::Slice* existing,
             const rocksdb::Slice& value, std::string* new_value,
             rocksdb::Logger* /*logger*/) const override {
    int64_t sum = DecodeCount({value.data(), value.size()});
    if (existing != nullptr) sum += DecodeCount({existing->data(), existing->size()});
    *new_value = EncodeCountDelta(sum);
    return true;
  }
  const char* Name() const override { return "cairn.CountAdd"; }
};

// Drops delete tombstones older than the retention (SPEC D5), by the local time they were
// written (the change log's clock), and only those logged before the horizon: no retained
// log entry names them. A removed key becomes a deletion marker in RocksDB, so older versions
// below it stay hidden.
class TombstonePurgeFilter : public rocksdb::CompactionFilter {
 public:
  TombstonePurgeFilter(Clock* clock, absl::Duration retention,
                       const std::atomic<int64_t>* horizon_ms)
      : clock_(clock), retention_(retention), horizon_ms_(horizon_ms) {}

  bool Filter(int /*level*/, const rocksdb::Slice& /*key*/, const rocksdb::Slice& value,
              std::string* /*new_value*/, bool* /*value_changed*/) const override {
    cairn::storage::v1::StoredRecord rec;
    if (!rec.ParseFromArray(value.data(), static_cast<int>(value.size())) || !rec.deleted()) {
      return false;
    }
    // Rows from before logged_ms existed age by their version, as they always did.
    const int64_t written_ms = rec.logged_ms() != 0
                                   ? static_cast<int64_t>(rec.logged_ms())
                                   : static_cast<int64_t>(HybridClock::PhysicalMs(rec.version()));
    if (written_ms >= horizon_ms_->load(std::memory_order_acquire)) return false;
    const int64_t now_ms = absl::ToUnixMillis(clock_->Now());
    // Written as an age, so an infinite retention ("inf") keeps every tombstone.
    return written_ms < now_ms && now_ms - written_ms > absl::ToInt64Milliseconds(retention_);
  }
  const char* Name() const override { return "cairn.TombstonePurge"; }

 private:
  Clock* const clock_;
  const absl::Duration retention_;
  const std::atomic<int64_t>* const horizon_ms_;  // Engine::tombstone_horizon_ms_
};

}  // namespace

std::string EncodeCountDelta(int64_t delta) {
  std::string out(8, '\0');
  uint64_t u = static_cast<uint64_t>(delta);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((u >> (8 * i)) & 0xFF);
  return out;
}

int64_t DecodeCount(absl::string_view value) {
  if (value.size() != 8) return 0;
  uint64_t u = 0;
  for (int i = 7; i >= 0; --i) u = (u << 8) | static_cast<uint8_t>(value[i]);
  return static_cast<int64_t>(u);
}

absl::StatusOr<std::unique_ptr<Engine>> Engine::Open(const EngineOptions& options) {
  std::unique_ptr<Engine> engine(new Engine(options));
  Clock* clock = options.clock != nullptr ? options.clock : SystemClock::Default();
  engine->clock_ = clock;

  rocksdb::DBOptions db_options;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  if (options.env != nullptr) db_options.env = options.env;
  db_options.max_background_jobs = 2;
  db_options.bytes_per_sync = 1 << 20;
  // Shared memory bounds for every family (SPEC §2a).
  auto cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  db_options.write_buffer_manager =
      std::make_shared<rocksdb::WriteBufferManager>(options.write_buffer_bytes, cache);

  rocksdb::BlockBasedTableOptions table_options;
  table_options.block_cache = cache;
  table_options.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  std::shared_ptr<rocksdb::TableFactory> table_factory(
      rocksdb::NewBlockBasedTableFactory(table_options));

  static CountAddOperator* const count_op = new CountAddOperator();
  auto purge = std::make_shared<TombstonePurgeFilter>(clock, options.tombstone_retention,
                                                      &engine->tombstone_horizon_ms_);

  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  descriptors.emplace_back(rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions());
  for (int i = 0; i < kNumCfs; ++i) {
    rocksdb::ColumnFamilyOptions cf_options;
    cf_options.table_factory = table_factory;
    if (i == static_cast<int>(Cf::kMeta)) {
      cf_options.merge_operator =
          std::shared_ptr<rocksdb::MergeOperator>(count_op, [](rocksdb::MergeOperator*) {});
    }
    if (i == static_cast<int>(Cf::kRecords)) {
      // Owned by engine->purge_filter_, which outlives the DB.
      cf_options.compaction_filter = purge.get();
      // Every write reads its keys first, and most inserts are of new keys: a memtable bloom
      // filter answers "absent" without a skiplist search.
      cf_options.memtable_prefix_bloom_size_ratio = 0.05;
      cf_options.memtable_whole_key_filtering = true;
    }
    descriptors.emplace_back(kCfNames[i], cf_options);
  }

  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(db_options, options.path, descriptors, &handles, &raw);
  if (!s.ok()) return Annotate(FromRocks(s), absl::StrCat("opening ", options.path));
  engine->db_.reset(raw);
  engine->purge_filter_ = std::move(purge);
  engine->default_cf_ = handles[0];
  for (int i = 0; i < kNumCfs; ++i) engine->handles_[i] = handles[i + 1];
  engine->write_options_.sync = options.sync_writes;
  // Writers put each family's keys in order (RecordStore): resume inserts from the last one.
  engine->write_options_.memtable_insert_hint_per_batch = true;
  engine->no_hint_options_ = engine->write_options_;
  engine->no_hint_options_.memtable_insert_hint_per_batch = false;
  return engine;
}

Engine::~Engine() {
  if (db_ == nullptr) return;
  for (auto* h : handles_) {
    if (h != nullptr) db_->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  }
  if (default_cf_ != nullptr) db_->DestroyColumnFamilyHandle(default_cf_).PermitUncheckedError();
  // why ignored: nothing can be done about a failed close; the WAL already holds every
  // acknowledged write.
  db_->Close().PermitUncheckedError();
  db_.reset();
}

absl::Status Engine::Write(rocksdb::WriteBatch* batch) {
  // RocksDB 7.8 reuses a batch's per-memtable insert hint for range deletions, which live in
  // the memtable's other skiplist: with concurrent writers that corrupts it. Batches with a
  // range delete (drops, purges) go without the hint (EngineTest.BatchesWithRangeDeletes...).
  return WriteWith(batch->HasDeleteRange() ? no_hint_options_ : write_options_, batch);
}

absl::Status Engine::SyncedWrite(rocksdb::WriteBatch* batch) {
  rocksdb::WriteOptions synced = no_hint_options_;
  synced.sync = true;
  return WriteWith(synced, batch);
}

absl::Status Engine::WriteWith(const rocksdb::WriteOptions& options, rocksdb::WriteBatch* batch) {
  {
    absl::MutexLock lock(&mu_);
    if (!bg_error_.ok()) return bg_error_;
  }
  rocksdb::Status s = db_->Write(options, batch);
  if (s.ok()) {
    if (batch->HasDeleteRange()) CountRangeDeletes(batch);
    return absl::OkStatus();
  }
  absl::Status err = FromRocks(s);
  absl::MutexLock lock(&mu_);
  if (bg_error_.ok()) bg_error_ = err;
  return err;
}

void Engine::CountRangeDeletes(rocksdb::WriteBatch* batch) {
  class Counter : public rocksdb::WriteBatch::Handler {
   public:
    std::array<int, kNumCfs + 1> by_id{};  // by column family id: 0 is the default family
    rocksdb::Status DeleteRangeCF(uint32_t id, const rocksdb::Slice&,
                                  const rocksdb::Slice&) override {
      if (id < by_id.size()) ++by_id[id];
      return rocksdb::Status::OK();
    }
    rocksdb::Status PutCF(uint32_t, const rocksdb::Slice&, const rocksdb::Slice&) override {
      return rocksdb::Status::OK();
    }
    rocksdb::Status DeleteCF(uint32_t, const rocksdb::Slice&) override {
      return rocksdb::Status::OK();
    }
    rocksdb::Status SingleDeleteCF(uint32_t, const rocksdb::Slice&) override {
      return rocksdb::Status::OK();
    }
    rocksdb::Status MergeCF(uint32_t, const rocksdb::Slice&, const rocksdb::Slice&) override {
      return rocksdb::Status::OK();
    }
    void LogData(const rocksdb::Slice&) override {}
  } counter;
  // why ignored: the handler never fails, and the batch has committed.
  batch->Iterate(&counter).PermitUncheckedError();
  for (int i = 0; i < kNumCfs; ++i) {
    const uint32_t id = handles_[i]->GetID();
    const int n = id < counter.by_id.size() ? counter.by_id[id] : 0;
    if (n == 0) continue;
    if (range_deletes_[i].fetch_add(n) + n < kRangeDeletesBeforeFlush) continue;
    // One writer asks: the one whose exchange finds the count still over the bound.
    if (range_deletes_[i].exchange(0) < kRangeDeletesBeforeFlush) continue;
    rocksdb::FlushOptions flush;
    flush.wait = false;
    flush.allow_write_stall = true;
    // why ignored: an optimisation; a flush that cannot start now happens with the next one.
    db_->Flush(flush, handles_[i]).PermitUncheckedError();
  }
}

absl::Status Engine::Get(Cf c, absl::string_view key, std::string* value, bool* found,
                         const rocksdb::Snapshot* snapshot) {
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  rocksdb::Status s = db_->Get(ro, cf(c), rocksdb::Slice(key.data(), key.size()), value);
  *found = s.ok();
  if (s.ok() || s.IsNotFound()) return absl::OkStatus();
  return FromRocks(s);
}

std::unique_ptr<rocksdb::Iterator> Engine::NewIterator(Cf c, const rocksdb::Snapshot* snapshot,
                                                       absl::string_view upper_bound,
                                                       absl::string_view lower_bound) {
  // The bound slices must outlive the iterator: they are owned by the wrapper below.
  class BoundedIterator : public rocksdb::Iterator {
   public:
    BoundedIterator(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* h,
                    const rocksdb::Snapshot* snapshot, std::string upper, std::string lower)
        : bound_(std::move(upper)),
          lower_(std::move(lower)),
          bound_slice_(bound_),
          lower_slice_(lower_) {
      rocksdb::ReadOptions ro;
      ro.snapshot = snapshot;
      if (!bound_.empty()) ro.iterate_upper_bound = &bound_slice_;
      if (!lower_.empty()) ro.iterate_lower_bound = &lower_slice_;
      it_.reset(db->NewIterator(ro, h));
    }
    bool Valid() const override { return it_->Valid(); }
    void SeekToFirst() override { it_->SeekToFirst(); }
    void SeekToLast() override { it_->SeekToLast(); }
    void Seek(const rocksdb::Slice& t) override { it_->Seek(t); }
    void SeekForPrev(const rocksdb::Slice& t) override { it_->SeekForPrev(t); }
    void Next() override { it_->Next(); }
    void Prev() override { it_->Prev(); }
    rocksdb::Slice key() const override { return it_->key(); }
    rocksdb::Slice value() const override { return it_->value(); }
    rocksdb::Status status() const override { return it_->status(); }

   private:
    std::string bound_;
    std::string lower_;
    rocksdb::Slice bound_slice_;
    rocksdb::Slice lower_slice_;
    std::unique_ptr<rocksdb::Iterator> it_;
  };
  return std::make_unique<BoundedIterator>(db_.get(), cf(c), snapshot, std::string(upper_bound),
                                           std::string(lower_bound));
}

absl::Status Engine::Checkpoint(const std::string& dir) {
  rocksdb::Checkpoint* raw = nullptr;
  CAIRN_RETURN_IF_ERROR(FromRocks(rocksdb::Checkpoint::Create(db_.get(), &raw)));
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  // log_size_for_flush 0: flush the memtables first, so the copy needs no WAL replay.
  return FromRocks(checkpoint->CreateCheckpoint(dir, /*log_size_for_flush=*/0));
}

absl::Status Engine::Flush() {
  CAIRN_RETURN_IF_ERROR(FromRocks(db_->FlushWAL(/*sync=*/true)));
  rocksdb::FlushOptions fo;
  fo.wait = true;
  std::vector<rocksdb::ColumnFamilyHandle*> all(handles_.begin(), handles_.end());
  return FromRocks(db_->Flush(fo, all));
}

absl::Status Engine::health() const {
  absl::MutexLock lock(&mu_);
  return bg_error_;
}

}  // namespace cairn::storage
