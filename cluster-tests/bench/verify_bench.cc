// verify_bench: anti-entropy between two nodes (issue 20, SPEC R18). n1 and n2 hold the same
// --records records (loaded on n1, replicated to n2); then, from n1:
//   1. a verify of the identical table: seconds, rows/s, bytes on the wire against the
//      table's size, at the node's --verify-rate and with no limit (--verify-rate 0);
//   2. foreground inserts on n1 for --seconds without a verify, then as long again while
//      verifies run back to back: the share of the write rate a verify leaves;
//   3. --divergent of the rows (1 %) changed on n1 while its senders are held (a test-hook
//      fault, so replication cannot deliver them), then a verify repairs them on n2.
//
//   verify_bench [--cairnd PATH] [--records 1000000] [--seconds 10] [--divergent 0.01]
//                [--verify-rate 200000] [--json FILE]

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cluster-tests/bench/bench_util.h"
#include "cluster-tests/harness/cluster.h"
#include "nlohmann/json.hpp"

namespace {

using cairn::bench::Die;
using cairn::bench::NewClient;
using cairn::bench::PostJson;
using cairn::bench::Target;
using nlohmann::json;

constexpr char kTable[] = "verify";

struct VerifyRun {
  double seconds = 0;
  json table;  // the answer's one table with its one peer
};

VerifyRun VerifyOnce(const Target& node) {
  auto c = NewClient(node);
  c->set_read_timeout(600, 0);
  const absl::Time start = absl::Now();
  json answer = PostJson(
      c.get(), {{"operation", "verify"}, {"database", "bench"}, {"table", kTable}, {"node", "n2"}});
  VerifyRun run;
  run.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (!answer.is_object() || answer["peers"].size() != 1 || answer["peers"][0].contains("error") ||
      answer["peers"][0]["tables"].size() != 1) {
    Die("verify failed: " + answer.dump());
  }
  run.table = answer["peers"][0]["tables"][0];
  return run;
}

void SetFault(const Target& node, const std::string& spec) {
  auto c = NewClient(node);
  if (PostJson(c.get(), {{"operation", "set_fault"}, {"fault", spec}}).is_null()) {
    Die("set_fault " + spec);
  }
}

void ClearFault(const Target& node, const std::string& name) {
  auto c = NewClient(node);
  if (PostJson(c.get(), {{"operation", "clear_fault"}, {"name", name}}).is_null()) {
    Die("clear_fault " + name);
  }
}

// Both nodes have applied everything the other wrote.
void WaitCaughtUp(const Target& n1, const Target& n2) {
  const absl::Time deadline = absl::Now() + absl::Minutes(10);
  while (cairn::bench::LagEntries(n1, {"n2"})[0] != 0 ||
         cairn::bench::LagEntries(n2, {"n1"})[0] != 0) {
    if (absl::Now() > deadline) Die("the nodes never caught up");
    absl::SleepFor(absl::Milliseconds(100));
  }
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t records = 1'000'000;
  double seconds = 10;
  double divergent = 0.01;
  uint64_t verify_rate = 200'000;
  CLI::App app("verify_bench: anti-entropy between two nodes (R18)", "verify_bench");
  app.add_option("--records", records, "records both nodes hold")->capture_default_str();
  app.add_option("--seconds", seconds, "foreground write time, without and with verifies")
      ->capture_default_str();
  app.add_option("--divergent", divergent, "share of rows made to differ for the repair")
      ->capture_default_str();
  app.add_option("--verify-rate", verify_rate, "the nodes' --verify-rate (rows/s)")
      ->capture_default_str();
  cairn::bench::CommonFlags flags;
  cairn::bench::AddCommonFlags(&app, &flags);
  CLI11_PARSE(app, argc, argv);

  const json machine = cairn::bench::MachineState();
  cairn::harness::ClusterOptions options;
  options.names = {"n1", "n2"};
  options.test_hooks = true;  // set_fault holds the senders for the repair measurement
  options.args = {"--verify-interval", "0", "--verify-rate", absl::StrCat(verify_rate)};
  std::unique_ptr<cairn::harness::Cluster> started =
      cairn::bench::StartCluster(flags.cairnd, std::move(options));
  cairn::harness::Cluster& cluster = *started;
  const Target n1 = cluster.node("n1").endpoint();
  const Target n2 = cluster.node("n2").endpoint();
  cairn::bench::CreateTable(n1, kTable);
  const absl::Time load_start = absl::Now();
  cairn::bench::InsertAll(n1, kTable, 0, records, 8);
  cairn::bench::WaitForCount({n2}, kTable, records, absl::Minutes(10));
  WaitCaughtUp(n1, n2);
  std::fprintf(stderr, "loaded and replicated %llu records in %.1f s\n",
               static_cast<unsigned long long>(records),
               absl::ToDoubleSeconds(absl::Now() - load_start));
  // What the table's rows weigh on the wire in a full copy: their JSON bodies.
  const double table_bytes =
      static_cast<double>(records) *
      static_cast<double>(cairn::bench::BenchRecord(records / 2).dump().size());

  // 1. Identical tables.
  const VerifyRun identical = VerifyOnce(n1);
  const double wire =
      identical.table.value("bytes_sent", 0.0) + identical.table.value("bytes_received", 0.0);
  if (identical.table.value("rows_repaired", 1) != 0) Die("identical tables: a repair");

  // 2. Foreground writes without and with verifies running.
  std::atomic<uint64_t> next{records};
  std::atomic<bool> stop{false};
  std::thread timer([&] {
    absl::SleepFor(absl::Seconds(seconds));
    stop = true;
  });
  const uint64_t alone = cairn::bench::InsertUntil(n1, kTable, &next, stop, 4);
  timer.join();
  stop = false;
  std::atomic<int> verifies{0};
  std::thread verifier([&] {
    while (!stop.load()) {
      VerifyOnce(n1);
      ++verifies;
    }
  });
  std::thread timer2([&] {
    absl::SleepFor(absl::Seconds(seconds));
    stop = true;
  });
  const uint64_t during = cairn::bench::InsertUntil(n1, kTable, &next, stop, 4);
  timer2.join();
  verifier.join();
  const double share = alone == 0 ? 0 : static_cast<double>(during) / static_cast<double>(alone);
  WaitCaughtUp(n1, n2);

  // 3. Repair of `divergent` of the rows: changed on n1 while its senders are held.
  const uint64_t changed = static_cast<uint64_t>(static_cast<double>(records) * divergent);
  SetFault(n1, "replication.send.batch=block");
  {
    auto c = NewClient(n1);
    const uint64_t stride = changed == 0 ? 1 : records / changed;
    for (uint64_t i = 0; i < changed; i += 100) {
      json batch = json::array();
      for (uint64_t j = i; j < std::min(changed, i + 100); ++j) {
        json r = cairn::bench::BenchRecord(j * stride);
        r["qty"] = -1;
        batch.push_back(std::move(r));
      }
      if (PostJson(c.get(), {{"operation", "upsert"},
                             {"database", "bench"},
                             {"table", kTable},
                             {"records", std::move(batch)}})
              .is_null()) {
        Die("upsert of the divergent rows");
      }
    }
  }
  const VerifyRun repair = VerifyOnce(n1);
  ClearFault(n1, "replication.send.batch");
  const uint64_t repaired = repair.table.value("rows_repaired", uint64_t{0});

  const double rows_per_s = records / identical.seconds;
  json out = {{"benchmark", "verify_bench"},
              {"machine", machine},
              {"records", records},
              {"verify_rate", verify_rate},
              {"identical",
               {{"seconds", identical.seconds},
                {"rows_per_s", rows_per_s},
                {"bytes_on_wire", wire},
                {"share_of_table_bytes", wire / table_bytes}}},
              {"foreground",
               {{"rows_per_s_alone", alone / seconds},
                {"rows_per_s_during_verify", during / seconds},
                {"share", share},
                {"verifies", verifies.load()}}},
              {"repair",
               {{"rows_changed", changed},
                {"rows_repaired", repaired},
                {"seconds", repair.seconds},
                {"bytes_on_wire", repair.table.value("bytes_sent", 0.0) +
                                      repair.table.value("bytes_received", 0.0)}}}};
  std::printf("\n%-60s %12s\n", "measure", "value");
  std::printf("%-60s %12.2f\n", absl::StrCat("verify of ", records, " identical rows, s").c_str(),
              identical.seconds);
  std::printf("%-60s %12.0f\n", "  rows/s", rows_per_s);
  std::printf("%-60s %12.0f\n", "  bytes on the wire", wire);
  std::printf("%-60s %11.3f%%\n", "  share of the table's bytes", 100 * wire / table_bytes);
  std::printf("%-60s %12.0f\n", "inserts/s on n1 alone (4 clients)", alone / seconds);
  std::printf("%-60s %12.0f\n", "inserts/s on n1 while verifies run", during / seconds);
  std::printf("%-60s %11.1f%%\n", "  share kept", 100 * share);
  std::printf("%-60s %12llu\n", "rows changed behind held senders",
              static_cast<unsigned long long>(changed));
  std::printf("%-60s %12llu\n", "  repaired by one verify",
              static_cast<unsigned long long>(repaired));
  std::printf("%-60s %12.2f\n", "  verify with repair, s", repair.seconds);
  if (repaired != changed) Die(absl::StrCat("repaired ", repaired, " of ", changed, " rows"));
  cairn::bench::EmitJson(out, flags.json);
  return 0;
}
