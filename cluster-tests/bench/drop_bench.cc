// drop_bench: what a drop under load costs (issue 7 (f), SPEC C9), on three cairnd processes
// from the cluster harness. On n1, 8 writers upsert single records into bench.victim and 8
// more into bench.other without pause. Each round recreates bench.victim, lets the load run,
// and drops it:
//   drop        the drop_table request's latency on n1: the drain of in-flight writes (C9
//               step 2, from the node's cairn_drop_drain_seconds_total), then the tombstone,
//               the final commit and the forward to both peers. p50 / p99 / max of the whole
//               drop and of the part after the drain.
//   other       the other table's writers' throughput while drops run, as a share of their
//               throughput in the same length of time just before each drop.
// With --series DIR it also writes, for scripts/bench.sh --plot: each peer's lag behind n1
// and the other table's writes per second (drop_lag.dat) and the drops' intervals
// (drop_events.dat).
//
//   drop_bench [--cairnd PATH] [--rounds 20] [--writers 8] [--json FILE] [--series DIR]

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
using cairn::bench::Percentile;
using cairn::bench::Post;
using cairn::bench::Target;
using nlohmann::json;

constexpr absl::Duration kSteady = absl::Milliseconds(600);    // load before each drop
constexpr absl::Duration kBaseline = absl::Milliseconds(300);  // ... of which measured

json UpsertOne(const std::string& table, uint64_t id) {
  return {{"operation", "upsert"},
          {"database", "bench"},
          {"table", table},
          {"records", {cairn::bench::BenchRecord(id)}}};
}

struct Interval {
  absl::Time begin, end;
};

}  // namespace

int main(int argc, char** argv) {
  int rounds = 20, writers = 8;
  CLI::App app("drop_bench: drop latency under load and the other table's throughput",
               "drop_bench");
  app.add_option("--rounds", rounds, "drops measured")->capture_default_str();
  app.add_option("--writers", writers, "writers on each table")->capture_default_str();
  cairn::bench::CommonFlags flags;
  cairn::bench::AddCommonFlags(&app, &flags, /*series=*/true);
  CLI11_PARSE(app, argc, argv);

  const json machine = cairn::bench::MachineState();
  std::unique_ptr<cairn::harness::Cluster> started = cairn::bench::StartCluster(flags.cairnd);
  cairn::harness::Cluster& cluster = *started;
  const Target n1 = cluster.node("n1").endpoint(), n2 = cluster.node("n2").endpoint(),
               n3 = cluster.node("n3").endpoint();
  cairn::bench::CreateTable(n1, "other");
  cairn::bench::WaitForCount({n2, n3}, "other", 0, absl::Seconds(30));

  // Each writer keeps the times its upserts completed (the other table's) or just runs.
  std::atomic<bool> stop{false};
  std::vector<std::vector<absl::Time>> done(writers);
  std::atomic<uint64_t> other_writes{0}, victim_writes{0}, victim_refused{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 2 * writers; ++w) {
    threads.emplace_back([&, w] {
      const bool victim = w >= writers;
      auto c = NewClient(n1);
      for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        const uint64_t id = (static_cast<uint64_t>(w) << 40) | i;
        std::string body;
        const bool ok = Post(c.get(), UpsertOne(victim ? "victim" : "other", id), &body);
        if (!victim) {
          if (!ok) Die("a write to the other table failed: " + body);
          done[w].push_back(absl::Now());
          ++other_writes;
        } else if (ok) {
          ++victim_writes;
        } else {
          // Between a drop and the recreate: TABLE_NOT_FOUND (or TABLE_DROPPING).
          ++victim_refused;
          absl::SleepFor(absl::Milliseconds(2));  // pacing the retries, not waiting for one
        }
      }
    });
  }

  // Plots: each peer's lag behind n1, and the other table's writes/s over the last sample.
  std::unique_ptr<cairn::bench::Series> lag, events;
  if (!flags.series.empty()) {
    auto rate = cairn::bench::Rates([&] { return std::vector<double>{1.0 * other_writes}; });
    lag = std::make_unique<cairn::bench::Series>(
        std::vector<std::string>{"n2_lag_entries", "n3_lag_entries", "other_writes_per_s"},
        [&, rate] {
          return std::vector<double>{cairn::bench::LagEntries(n2, {"n1"})[0],
                                     cairn::bench::LagEntries(n3, {"n1"})[0], rate()[0]};
        });
    events = std::make_unique<cairn::bench::Series>(std::vector<std::string>{"dropping"},
                                                    [] { return std::vector<double>{}; });
    lag->Start();
  }

  auto admin = NewClient(n1);
  std::vector<double> drop_ms, after_drain_ms, drain_ms;
  std::vector<Interval> drops, baselines;
  for (int r = 0; r < rounds; ++r) {
    std::string body;
    if (!Post(admin.get(), cairn::bench::CreateBenchTable("victim"), &body)) {
      Die("create_table victim: " + body);
    }
    absl::SleepFor(kSteady);  // the load runs on both tables (the measurement's window)
    baselines.push_back({absl::Now() - kBaseline, absl::Now()});
    const double drained_before = cairn::bench::Metric(n1, "cairn_drop_drain_seconds_total");
    const double peers_drained_before = cairn::bench::Metric(n2, "cairn_drop_drain_seconds_total") +
                                        cairn::bench::Metric(n3, "cairn_drop_drain_seconds_total");
    if (events) events->Mark({1});
    const absl::Time begin = absl::Now();
    const json reply = cairn::bench::PostJson(
        admin.get(), {{"operation", "drop_table"}, {"database", "bench"}, {"table", "victim"}});
    const absl::Time end = absl::Now();
    if (events) events->Mark({0});
    if (!reply.is_object()) Die("drop_table victim failed");
    for (const json& peer : reply.value("replicated", json::array())) {
      if (peer.value("status", "") != "dropped") Die("a peer answered the drop: " + peer.dump());
    }
    const double drain =
        1000 * (cairn::bench::Metric(n1, "cairn_drop_drain_seconds_total") - drained_before);
    drops.push_back({begin, end});
    const double ms = absl::ToDoubleMilliseconds(end - begin);
    // Each round on stderr, to see where one slow drop went (the peers' drains finish before
    // the reply when the forward drained them, after it when their schema update did).
    const double peers_drain =
        1000 * (cairn::bench::Metric(n2, "cairn_drop_drain_seconds_total") +
                cairn::bench::Metric(n3, "cairn_drop_drain_seconds_total") - peers_drained_before);
    std::fprintf(stderr, "round %d: drop %.2f ms, n1's drain %.2f ms, the peers' drains %.2f ms\n",
                 r, ms, drain, peers_drain);
    drop_ms.push_back(ms);
    drain_ms.push_back(drain);
    after_drain_ms.push_back(ms - drain);
  }
  stop = true;
  for (std::thread& t : threads) t.join();
  if (lag) lag->Stop();

  // The other table's writes completed inside the drops, and inside the baseline windows.
  auto rate_in = [&](const std::vector<Interval>& spans) {
    uint64_t n = 0;
    double seconds = 0;
    for (const Interval& s : spans) {
      seconds += absl::ToDoubleSeconds(s.end - s.begin);
      for (const auto& times : done) {
        for (absl::Time t : times) n += (t >= s.begin && t < s.end) ? 1 : 0;
      }
    }
    return seconds > 0 ? n / seconds : 0.0;
  };
  const double during = rate_in(drops), before = rate_in(baselines);
  const double share = before > 0 ? during / before : 0;

  const double p50 = Percentile(&drop_ms, 0.5), p99 = Percentile(&drop_ms, 0.99),
               max = Percentile(&drop_ms, 1.0), ad50 = Percentile(&after_drain_ms, 0.5),
               ad99 = Percentile(&after_drain_ms, 0.99), dr50 = Percentile(&drain_ms, 0.5),
               dr99 = Percentile(&drain_ms, 0.99);
  json out = {
      {"benchmark", "drop_bench"},
      {"machine", machine},
      {"rounds", rounds},
      {"writers_per_table", writers},
      {"drop",
       {{"p50_ms", p50},
        {"p99_ms", p99},
        {"max_ms", max},
        {"drain_p50_ms", dr50},
        {"drain_p99_ms", dr99},
        {"after_drain_p50_ms", ad50},
        {"after_drain_p99_ms", ad99}}},
      {"other_table",
       {{"writes_per_s_before", before},
        {"writes_per_s_during_drops", during},
        {"share_during_drops", share}}},
      {"victim_writes", {{"ok", victim_writes.load()}, {"refused", victim_refused.load()}}}};
  std::printf("\n%-52s %10s\n", "measure", "value");
  std::printf("%-52s %10.1f\n", "drop with 8 writers on the table, p50 ms", p50);
  std::printf("%-52s %10.1f\n", "drop, p99 ms", p99);
  std::printf("%-52s %10.1f\n", "drop, max ms", max);
  std::printf("%-52s %10.1f\n", "drain of in-flight writes, p99 ms", dr99);
  std::printf("%-52s %10.1f\n", "drop after the drain, p50 ms", ad50);
  std::printf("%-52s %10.1f\n", "drop after the drain, p99 ms", ad99);
  std::printf("%-52s %10.0f\n", "other table, writes/s before drops", before);
  std::printf("%-52s %10.0f\n", "other table, writes/s during drops", during);
  std::printf("%-52s %10.2f\n", "other table, share kept during drops", share);
  if (!flags.series.empty()) {
    if (!lag->Write(flags.series + "/drop_lag.dat") ||
        !events->Write(flags.series + "/drop_events.dat")) {
      Die("could not write the series into " + flags.series);
    }
  }
  cairn::bench::EmitJson(out, flags.json);
  return 0;
}
