// replication_bench: three cairnd processes on loopback, linked both ways, writes on n1 over
// the operations API; measures what the cluster's users see (SPEC R5-R8):
//   throughput  records/s replicated to both peers: N records inserted on n1 in batches of 100
//               by 8 clients, from the first write until both peers hold all N
//   visibility  time from a write's acknowledgement on n1 until a read on n2 finds it, for
//               probe writes inside a background load of --rate single upserts/s (p50, p99, max)
//   catch-up    n3 stopped (SIGTERM), --catchup records written, n3 restarted: time from its
//               ready.json until it holds them all (and from its start)
// Prints a table and JSON (--json FILE). All three nodes and the load generator share the
// machine, as in every figure quoted in docs/.
//
//   replication_bench [--cairnd PATH] [--records 300000] [--rate 1000] [--seconds 5]
//                     [--catchup 100000] [--json FILE]

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

using cairn::bench::NewClient;
using cairn::bench::Percentile;
using cairn::bench::Post;
using cairn::bench::PostJson;
using cairn::bench::Target;
using nlohmann::json;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "replication_bench: %s\n", what.c_str());
  std::exit(1);
}

// -1 while the table is not there.
int64_t RecordCount(const Target& n, const std::string& table) {
  auto c = NewClient(n);
  json d =
      PostJson(c.get(), {{"operation", "describe_table"}, {"database", "bench"}, {"table", table}});
  return d.is_object() ? d.value("record_count", int64_t{0}) : -1;
}

void CreateTable(const Target& n, const std::string& table) {
  auto c = NewClient(n);
  std::string body;
  const json create = cairn::bench::CreateBenchTable(table);
  if (!Post(c.get(), create, &body)) Die("create_table: " + body);
}

// Inserts ids [0, n) of `table` on `node` in batches of 100 from `clients` threads.
void InsertAll(const Target& node, const std::string& table, uint64_t n, int clients) {
  std::atomic<uint64_t> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&] {
      auto c = NewClient(node);
      while (true) {
        const uint64_t first = next.fetch_add(100);
        if (first >= n) return;
        json records = json::array();
        for (uint64_t id = first; id < std::min(n, first + 100); ++id) {
          records.push_back(
              {{"id", id}, {"customer", absl::StrCat("c", id % 1000)}, {"qty", id % 97}});
        }
        std::string body;
        if (!Post(c.get(),
                  {{"operation", "insert"},
                   {"database", "bench"},
                   {"table", table},
                   {"records", std::move(records)}},
                  &body)) {
          Die("insert: " + body);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
}

// Polls until every node holds `n` records of `table`; returns when that happened.
absl::Time WaitForCount(const std::vector<const Target*>& nodes, const std::string& table,
                        uint64_t n, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (const Target* node : nodes) {
    while (RecordCount(*node, table) < static_cast<int64_t>(n)) {
      if (absl::Now() > deadline)
        Die(absl::StrCat("the node at ", node->port, " never caught up on ", table));
      absl::SleepFor(absl::Milliseconds(2));  // the load generator's poll interval
    }
  }
  return absl::Now();
}

}  // namespace

int main(int argc, char** argv) {
  std::string cairnd, json_path;
  uint64_t records = 300'000, catchup = 100'000;
  int rate = 1000;
  double seconds = 5;
  CLI::App app("replication_bench: replicated throughput, visibility and catch-up of 3 nodes",
               "replication_bench");
  app.add_option("--cairnd", cairnd, "cairnd binary to start (default: the one built here)");
  app.add_option("--records", records, "records for the throughput run")->capture_default_str();
  app.add_option("--rate", rate, "background writes/s during the visibility run")
      ->capture_default_str();
  app.add_option("--seconds", seconds, "length of the visibility run")->capture_default_str();
  app.add_option("--catchup", catchup, "records a stopped node must catch up on")
      ->capture_default_str();
  app.add_option("--json", json_path, "write the results as JSON here");
  CLI11_PARSE(app, argc, argv);

  // Three nodes linked both ways, restarted on their own ports (cluster-tests/harness).
  std::unique_ptr<cairn::harness::Cluster> started = cairn::bench::StartCluster(cairnd);
  cairn::harness::Cluster& cluster = *started;
  const Target n1 = cluster.node("n1").endpoint(), n2 = cluster.node("n2").endpoint(),
               n3 = cluster.node("n3").endpoint();
  const std::string load_before = cairn::bench::LoadAverage();

  // --- throughput
  CreateTable(n1, "throughput");
  WaitForCount({&n2, &n3}, "throughput", 0, absl::Seconds(30));
  const absl::Time t0 = absl::Now();
  InsertAll(n1, "throughput", records, 8);
  const absl::Time acked = absl::Now();
  const absl::Time replicated = WaitForCount({&n2, &n3}, "throughput", records, absl::Minutes(5));
  const double ingest_rps = records / absl::ToDoubleSeconds(acked - t0);
  const double replicated_rps = records / absl::ToDoubleSeconds(replicated - t0);
  std::fprintf(stderr, "throughput: %.0f records/s acknowledged, %.0f records/s replicated\n",
               ingest_rps, replicated_rps);

  // --- visibility under a background load
  CreateTable(n1, "visibility");
  WaitForCount({&n2, &n3}, "visibility", 0, absl::Seconds(30));
  std::atomic<bool> stop{false};
  std::thread background([&] {
    auto c = NewClient(n1);
    const absl::Duration step = absl::Seconds(1) / std::max(1, rate);
    absl::Time next = absl::Now();
    for (uint64_t id = 1'000'000'000; !stop.load(); ++id) {
      Post(c.get(), {{"operation", "upsert"},
                     {"database", "bench"},
                     {"table", "visibility"},
                     {"records", {{{"id", id}, {"customer", "bg"}, {"qty", 1}}}}});
      next += step;
      const absl::Time now = absl::Now();
      if (next > now) absl::SleepFor(next - now);  // pacing the load, not waiting for an effect
    }
  });
  std::vector<double> visible_ms;
  {
    auto writer = NewClient(n1);
    auto reader = NewClient(n2);
    const absl::Time end = absl::Now() + absl::Seconds(seconds);
    for (uint64_t probe = 0; absl::Now() < end; ++probe) {
      std::string body;
      if (!Post(writer.get(),
                {{"operation", "upsert"},
                 {"database", "bench"},
                 {"table", "visibility"},
                 {"records", {{{"id", probe}, {"customer", "probe"}, {"qty", 2}}}}},
                &body)) {
        Die("probe: " + body);
      }
      const absl::Time written = absl::Now();
      while (true) {
        json found = PostJson(reader.get(), {{"operation", "search_by_id"},
                                             {"database", "bench"},
                                             {"table", "visibility"},
                                             {"ids", {probe}}});
        if (found.is_array() && !found.empty()) break;
        if (absl::Now() - written > absl::Seconds(30)) Die("a probe never became visible");
      }
      visible_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - written));
      absl::SleepFor(absl::Milliseconds(10));  // spacing between probes
    }
  }
  stop = true;
  background.join();
  const double vis_p50 = Percentile(&visible_ms, 0.50), vis_p99 = Percentile(&visible_ms, 0.99),
               vis_max = Percentile(&visible_ms, 1.0);
  std::fprintf(stderr, "visibility: p50 %.2f ms, p99 %.2f ms over %zu probes\n", vis_p50, vis_p99,
               visible_ms.size());

  // --- catch-up after a restart
  CreateTable(n1, "catchup");
  WaitForCount({&n2, &n3}, "catchup", 0, absl::Seconds(30));
  cluster.Stop("n3");
  InsertAll(n1, "catchup", catchup, 8);
  const absl::Time restart = absl::Now();
  if (absl::Status s = cluster.Restart("n3"); !s.ok()) Die("n3 did not restart: " + s.ToString());
  const absl::Time ready = absl::Now();
  const absl::Time caught_up = WaitForCount({&n3}, "catchup", catchup, absl::Minutes(5));
  const double catchup_s = absl::ToDoubleSeconds(caught_up - ready);
  const double catchup_from_start_s = absl::ToDoubleSeconds(caught_up - restart);
  std::fprintf(stderr, "catch-up: %.2f s after ready (%.2f s after start)\n", catchup_s,
               catchup_from_start_s);

  json out = {{"benchmark", "replication_bench"},
              {"machine",
               {{"cores", std::thread::hardware_concurrency()}, {"loadavg_before", load_before}}},
              {"throughput",
               {{"records", records},
                {"acknowledged_records_per_s", ingest_rps},
                {"replicated_records_per_s", replicated_rps}}},
              {"visibility",
               {{"background_writes_per_s", rate},
                {"probes", visible_ms.size()},
                {"p50_ms", vis_p50},
                {"p99_ms", vis_p99},
                {"max_ms", vis_max}}},
              {"catchup",
               {{"records", catchup},
                {"seconds_after_ready", catchup_s},
                {"seconds_after_start", catchup_from_start_s}}}};
  std::printf("\n%-44s %14s\n", "measure", "result");
  std::printf("%-44s %14.0f\n", "records/s acknowledged on n1 (8 clients)", ingest_rps);
  std::printf("%-44s %14.0f\n", "records/s replicated to n2 and n3", replicated_rps);
  std::printf("%-44s %14.2f\n", "visibility on n2, p50 ms", vis_p50);
  std::printf("%-44s %14.2f\n", "visibility on n2, p99 ms", vis_p99);
  std::printf("%-44s %14.2f\n", "visibility on n2, max ms", vis_max);
  std::printf("%-44s %14.2f\n", absl::StrCat("catch-up of ", catchup, " records, s").c_str(),
              catchup_s);
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
  std::printf("%s\n", out.dump().c_str());
  return 0;  // the cluster's processes and directory go with it
}
