// replication_bench: three (--nodes) cairnd processes on loopback, every pair linked, writes
// on n1 over the operations API; measures what the cluster's users see (SPEC R5-R8):
//   throughput  records/s replicated to every peer: N records inserted on n1 in batches of 100
//               by 8 clients, from the first write until every peer holds all N; and the
//               peers' entries received per entry applied (design 0004: 1.00 in a full mesh);
//               and the nodes' CPU per 1000 of them, steadier than a rate on a shared machine
//   visibility  time from a write's acknowledgement on n1 until a read on n2 finds it, for
//               probe writes inside a background load of --rate single upserts/s (p50, p99,
//               max), and the nodes' CPU meanwhile
//   catch-up    n3 stopped (SIGTERM), --catchup records written, n3 restarted: time from its
//               ready.json until it holds them all (and from its start)
// Prints a table and JSON (--json FILE). All three nodes and the load generator share the
// machine, as in every figure quoted in docs/.
//
//   replication_bench [--cairnd PATH] [--nodes 3] [--records 300000] [--rate 1000]
//                     [--seconds 5] [--catchup 100000] [--json FILE]

#include <atomic>
#include <cstdio>
#include <fstream>
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

using cairn::bench::CreateTable;
using cairn::bench::Die;
using cairn::bench::InsertAll;
using cairn::bench::NewClient;
using cairn::bench::Percentile;
using cairn::bench::RecordCount;
using cairn::bench::Target;
using cairn::bench::WaitForCount;
using nlohmann::json;

}  // namespace

int main(int argc, char** argv) {
  uint64_t records = 300'000, catchup = 100'000;
  int rate = 1000;
  int nodes = 3;
  double seconds = 5;
  CLI::App app("replication_bench: replicated throughput, visibility and catch-up of 3 nodes",
               "replication_bench");
  app.add_option("--records", records, "records for the throughput run")->capture_default_str();
  app.add_option("--nodes", nodes, "nodes in the full mesh (3 or more)")
      ->check(CLI::Range(3, 9))
      ->capture_default_str();
  app.add_option("--rate", rate, "background writes/s during the visibility run")
      ->capture_default_str();
  app.add_option("--seconds", seconds, "length of the visibility run")->capture_default_str();
  app.add_option("--catchup", catchup, "records a stopped node must catch up on")
      ->capture_default_str();
  cairn::bench::CommonFlags flags;
  cairn::bench::AddCommonFlags(&app, &flags, /*series=*/true);
  CLI11_PARSE(app, argc, argv);

  const json machine = cairn::bench::MachineState();
  // `nodes` nodes, every pair linked, on their own ports (cluster-tests/harness).
  std::vector<std::string> names;
  for (int i = 1; i <= nodes; ++i) names.push_back(absl::StrCat("n", i));
  std::unique_ptr<cairn::harness::Cluster> started =
      cairn::bench::StartCluster(flags.cairnd, names);
  cairn::harness::Cluster& cluster = *started;
  const Target n1 = cluster.node("n1").endpoint(), n2 = cluster.node("n2").endpoint(),
               n3 = cluster.node("n3").endpoint();
  std::vector<Target> peers;  // every node but n1
  for (size_t i = 1; i < names.size(); ++i) peers.push_back(cluster.node(names[i]).endpoint());
  // CPU seconds of every node so far: what a piece of work costs the cluster, which, unlike
  // the rates, hardly moves with other load on the machine.
  auto nodes_cpu = [&] {
    double s = 0;
    for (const std::string& n : names) s += cairn::bench::CpuSeconds(cluster.node(n).pid());
    return s;
  };
  // Entries received per entry applied on the peers (design 0004: 1.00 in a healthy mesh).
  auto entry_totals = [&] {
    std::pair<double, double> t;
    for (const Target& p : peers) {
      t.first += cairn::bench::Metric(p, "cairn_replication_entries_received_total");
      t.second += cairn::bench::Metric(p, "cairn_replication_entries_applied_total");
    }
    return t;
  };

  // --- throughput
  CreateTable(n1, "throughput");
  WaitForCount(peers, "throughput", 0, absl::Seconds(30));
  const std::pair<double, double> totals_before = entry_totals();
  const double cpu_before = nodes_cpu();
  // The plot: records/s committed on each node, sampled every 100 ms.
  cairn::bench::Series throughput(
      {"n1_records_per_s", "n2_records_per_s", "n3_records_per_s"}, cairn::bench::Rates([&] {
        std::vector<double> counts;
        for (const Target* n : {&n1, &n2, &n3}) {
          counts.push_back(
              static_cast<double>(std::max<int64_t>(0, RecordCount(*n, "throughput"))));
        }
        return counts;
      }));
  if (!flags.series.empty()) throughput.Start();
  const absl::Time t0 = absl::Now();
  InsertAll(n1, "throughput", 0, records, 8);
  const absl::Time acked = absl::Now();
  const absl::Time replicated = WaitForCount(peers, "throughput", records, absl::Minutes(5));
  const double cpu_ms_per_1k = (nodes_cpu() - cpu_before) * 1e6 / static_cast<double>(records);
  throughput.Stop();
  // Late copies (a relay's) count too: read once every link has passed the load's entries.
  absl::SleepFor(absl::Seconds(1));  // not a wait for an effect: a settling margin for the ratio
  const std::pair<double, double> totals_after = entry_totals();
  const double applied = totals_after.second - totals_before.second;
  const double copies = applied > 0 ? (totals_after.first - totals_before.first) / applied : 0;
  const double ingest_rps = records / absl::ToDoubleSeconds(acked - t0);
  const double replicated_rps = records / absl::ToDoubleSeconds(replicated - t0);
  std::fprintf(stderr,
               "throughput: %.0f records/s acknowledged, %.0f records/s replicated, %.2f "
               "entries received per entry applied, %.0f ms of the nodes' CPU per 1000 records\n",
               ingest_rps, replicated_rps, copies, cpu_ms_per_1k);

  // --- visibility under a background load
  CreateTable(n1, "visibility");
  WaitForCount({n2, n3}, "visibility", 0, absl::Seconds(30));
  std::atomic<bool> stop{false};
  const double vis_cpu_before = nodes_cpu();
  const absl::Time vis_start = absl::Now();
  std::thread background([&] { cairn::bench::PacedUpserts(n1, "visibility", rate, stop); });
  std::vector<double> visible_ms;
  {
    auto writer = NewClient(n1);
    auto reader = NewClient(n2);
    const absl::Time end = absl::Now() + absl::Seconds(seconds);
    for (uint64_t probe = 0; absl::Now() < end; ++probe) {
      visible_ms.push_back(
          cairn::bench::ProbeVisibleMs(writer.get(), reader.get(), "visibility", probe));
      absl::SleepFor(absl::Milliseconds(10));  // spacing between probes
    }
  }
  stop = true;
  background.join();
  // The nodes' CPU, in cores, while serving --rate writes/s and the probes.
  const double vis_cores =
      (nodes_cpu() - vis_cpu_before) / absl::ToDoubleSeconds(absl::Now() - vis_start);
  const double vis_p50 = Percentile(&visible_ms, 0.50), vis_p99 = Percentile(&visible_ms, 0.99),
               vis_max = Percentile(&visible_ms, 1.0);
  std::fprintf(stderr,
               "visibility: p50 %.2f ms, p99 %.2f ms over %zu probes, nodes' CPU %.2f cores\n",
               vis_p50, vis_p99, visible_ms.size(), vis_cores);

  // --- catch-up after a restart
  CreateTable(n1, "catchup");
  WaitForCount({n2, n3}, "catchup", 0, absl::Seconds(30));
  cluster.Stop("n3");
  InsertAll(n1, "catchup", 0, catchup, 8);
  // The plot: n3's lag behind each peer and its record count while it catches up.
  cairn::bench::Series catching_up(
      {"lag_behind_n1", "lag_behind_n2", "n3_records"},
      [&] {
        std::vector<double> row = cairn::bench::LagEntries(n3, {"n1", "n2"});
        row.push_back(static_cast<double>(RecordCount(n3, "catchup")));
        return row;
      },
      absl::Milliseconds(20));
  const absl::Time restart = absl::Now();
  if (absl::Status s = cluster.Restart("n3"); !s.ok()) Die("n3 did not restart: " + s.ToString());
  const absl::Time ready = absl::Now();
  if (!flags.series.empty()) catching_up.Start();
  const absl::Time caught_up = WaitForCount({n3}, "catchup", catchup, absl::Minutes(5));
  catching_up.Stop();
  const double catchup_s = absl::ToDoubleSeconds(caught_up - ready);
  const double catchup_from_start_s = absl::ToDoubleSeconds(caught_up - restart);
  std::fprintf(stderr, "catch-up: %.2f s after ready (%.2f s after start)\n", catchup_s,
               catchup_from_start_s);

  json out = {{"benchmark", "replication_bench"},
              {"machine", machine},
              {"throughput",
               {{"records", records},
                {"acknowledged_records_per_s", ingest_rps},
                {"replicated_records_per_s", replicated_rps},
                {"nodes", nodes},
                {"entries_received_per_applied", copies},
                {"nodes_cpu_ms_per_1000_records", cpu_ms_per_1k}}},
              {"visibility",
               {{"background_writes_per_s", rate},
                {"probes", visible_ms.size()},
                {"p50_ms", vis_p50},
                {"p99_ms", vis_p99},
                {"max_ms", vis_max},
                {"nodes_cpu_cores", vis_cores}}},
              {"catchup",
               {{"records", catchup},
                {"seconds_after_ready", catchup_s},
                {"seconds_after_start", catchup_from_start_s}}}};
  std::printf("\n%-44s %14s\n", "measure", "result");
  std::printf("%-44s %14.0f\n", "records/s acknowledged on n1 (8 clients)", ingest_rps);
  std::printf("%-44s %14.0f\n",
              absl::StrCat("records/s replicated to all ", nodes - 1, " peers").c_str(),
              replicated_rps);
  std::printf("%-44s %14.2f\n", "entries received per entry applied (peers)", copies);
  std::printf("%-44s %14.0f\n", "nodes' CPU ms per 1000 records replicated", cpu_ms_per_1k);
  std::printf("%-44s %14.2f\n", "visibility on n2, p50 ms", vis_p50);
  std::printf("%-44s %14.2f\n", "visibility on n2, p99 ms", vis_p99);
  std::printf("%-44s %14.2f\n", "visibility on n2, max ms", vis_max);
  std::printf("%-44s %14.2f\n", "nodes' CPU during it, cores", vis_cores);
  std::printf("%-44s %14.2f\n", absl::StrCat("catch-up of ", catchup, " records, s").c_str(),
              catchup_s);
  if (!flags.series.empty() && (!throughput.Write(flags.series + "/replication_throughput.dat") ||
                                !catching_up.Write(flags.series + "/catchup_lag.dat"))) {
    Die("could not write the series into " + flags.series);
  }
  cairn::bench::EmitJson(out, flags.json);
  return 0;  // the cluster's processes and directory go with it
}
