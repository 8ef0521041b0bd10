// The sending side of record replication on one thread: a link's writer reads a ChangeBatch
// from the change log (LogSender::Next: the log entries, then their rows in one MultiGet) and,
// once it is written, frees it. Issue 23 part 3 builds the batch on an arena (MessageArena,
// reset whole) instead of the heap (freed entry by entry); `arena` picks which. Unlike
// replication_bench, whose rate moves by a third with this shared VM's state, this measures
// the one thread's CPU per batch, so the two can be compared.
//
//   build/bench/send_bench     # mean, median and spread of 5 repetitions of each
//
// Records as in record_bench (~110-byte JSON, one indexed attribute); 1000 entries a batch
// (StreamLimits' default).
#include <benchmark/benchmark.h>

#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "catalog/catalog.h"
#include "catalog/record_store.h"
#include "nlohmann/json.hpp"
#include "replication/link_session.h"
#include "replication/record_stream.h"
#include "tests/testing/local_node.h"
#include "tests/testing/testing.h"

namespace cairn {
namespace {

using nlohmann::json;

constexpr int64_t kRecords = 1000;  // one batch

catalog::TableSpec Orders() {
  catalog::TableSpec spec;
  spec.database = "bench";
  spec.table = "orders";
  spec.primary_key = "id";
  spec.attributes = std::vector<catalog::AttributeSpec>{{"name", catalog::v1::STRING, true},
                                                        {"qty", catalog::v1::INT, false},
                                                        {"sku", catalog::v1::STRING, false},
                                                        {"note", catalog::v1::STRING, false}};
  return spec;
}

// One batch of the log read from the start and freed, `kRecords` entries, per iteration.
void BM_SendBatch(benchmark::State& state) {
  const bool on_arena = state.range(0) != 0;
  testing::TempDir dir;
  auto node = testing::LocalNode::Open(dir.path());
  if (!node.ok()) return state.SkipWithError(node.status().ToString().c_str());
  catalog::LocalNode& local = **node;
  if (!local.catalog->CreateTable(Orders()).ok()) return state.SkipWithError("create failed");
  json records = json::array();
  for (int64_t id = 0; id < kRecords; ++id) {
    records.push_back({{"id", id},
                       {"name", absl::StrCat("customer-", id % 1000)},
                       {"qty", id % 97},
                       {"sku", absl::StrCat("SKU-", id % 5000)},
                       {"note", "bench record payload ........"}});
  }
  if (!local.records->Write("bench", "orders", records, catalog::WriteMode::kInsert).ok()) {
    return state.SkipWithError("load failed");
  }
  const catalog::SnapshotRef snap = local.catalog->Snapshot();
  peer::v1::Subscribe subscribe;
  subscribe.add_cursors()->set_database("bench");  // from the log's start
  replication::MessageArena arena;
  int64_t entries = 0;
  std::optional<replication::LogSender> sender;  // a fresh one per batch, outside the timing
  for (auto _ : state) {
    state.PauseTiming();
    sender.reset();
    sender.emplace(&local, "peer", replication::Exclusions());
    sender->Subscribe(subscribe);
    state.ResumeTiming();
    absl::StatusOr<bool> produced;
    if (on_arena) {
      peer::v1::ChangeBatch* batch = arena.Fresh()->mutable_change_batch();
      produced = sender->Next(*snap, batch);
      entries += batch->entries_size();
      arena.Clear();
    } else {
      auto batch = std::make_unique<peer::v1::ChangeBatch>();
      produced = sender->Next(*snap, batch.get());
      entries += batch->entries_size();
    }
    if (!produced.ok() || !*produced) {
      state.SkipWithError("no batch");
      break;
    }
  }
  state.SetItemsProcessed(entries);
}
// CPU time of the benchmark's thread (the default), the median of five repetitions.
BENCHMARK(BM_SendBatch)
    ->ArgName("arena")
    ->Arg(0)
    ->Arg(1)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

}  // namespace
}  // namespace cairn

BENCHMARK_MAIN();
