// strip_bench: the strip of a dropped attribute (issue 21, SPEC C15) between two nodes. n1 and
// n2 hold the same --records records (loaded on n1, replicated to n2); then:
//   1. foreground inserts on n1 (records without the attribute) for --seconds: the rate alone;
//   2. n1 drops the attribute `customer` (indexed) and the inserts go on for --seconds more:
//      their rate while both nodes strip, as a share of the rate alone; the time until n1
//      answers, and until each node has stripped every row (both strip in the background: n1
//      its own drop, n2 from the marker; cairn_attribute_values_stripped_total), rows/s of
//      each.
//
//   strip_bench [--cairnd PATH] [--records 1000000] [--seconds 10] [--strip-rate R] [--json FILE]

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
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

constexpr char kTable[] = "strip";

// The foreground's records: without the attribute the benchmark drops.
nlohmann::json Record(uint64_t id) { return {{"id", id}, {"qty", static_cast<int64_t>(id % 97)}}; }

// cairn_attribute_values_stripped_total on a node.
uint64_t ValuesStripped(const Target& node) {
  auto c = NewClient(node);
  auto r = c->Get("/metrics");
  if (!r || r->status != 200) Die("GET /metrics");
  const std::string line = "\ncairn_attribute_values_stripped_total ";
  const size_t at = r->body.find(line);
  if (at == std::string::npos) Die("no cairn_attribute_values_stripped_total in /metrics");
  const size_t from = at + line.size();
  double v = 0;
  if (!absl::SimpleAtod(r->body.substr(from, r->body.find('\n', from) - from), &v)) {
    Die("unreadable cairn_attribute_values_stripped_total");
  }
  return static_cast<uint64_t>(v);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t records = 1'000'000;
  double seconds = 10;
  CLI::App app("strip_bench: the strip of a dropped attribute on two nodes (C15)", "strip_bench");
  app.add_option("--records", records, "records both nodes hold")->capture_default_str();
  app.add_option("--seconds", seconds, "foreground write time alone")->capture_default_str();
  std::string strip_rate;
  app.add_option("--strip-rate", strip_rate, "the nodes' --strip-rate (default: theirs)");
  cairn::bench::CommonFlags flags;
  cairn::bench::AddCommonFlags(&app, &flags);
  CLI11_PARSE(app, argc, argv);

  const json machine = cairn::bench::MachineState();
  if (!flags.cairnd.empty()) setenv("CAIRND", flags.cairnd.c_str(), 1);
  cairn::harness::ClusterOptions options;
  options.names = {"n1", "n2"};
  options.args = {"--verify-interval", "0"};
  if (!strip_rate.empty()) {
    options.args.push_back("--strip-rate");
    options.args.push_back(strip_rate);
  }
  auto started = cairn::harness::Cluster::Start(options);
  if (!started.ok()) Die("could not start the nodes: " + started.status().ToString());
  cairn::harness::Cluster& cluster = **started;
  const Target n1 = cluster.node("n1").endpoint();
  const Target n2 = cluster.node("n2").endpoint();
  cairn::bench::CreateTable(n1, kTable);
  const absl::Time load_start = absl::Now();
  cairn::bench::InsertAll(n1, kTable, 0, records, 8);
  cairn::bench::WaitForCount({n2}, kTable, records, absl::Minutes(10));
  std::fprintf(stderr, "loaded and replicated %llu records in %.1f s\n",
               static_cast<unsigned long long>(records),
               absl::ToDoubleSeconds(absl::Now() - load_start));

  // 1. Foreground inserts alone.
  std::atomic<uint64_t> next{records};
  std::atomic<bool> stop{false};
  std::thread timer([&] {
    absl::SleepFor(absl::Seconds(seconds));
    stop = true;
  });
  const uint64_t alone = cairn::bench::InsertUntil(n1, kTable, &next, stop, 4, Record);
  timer.join();

  // 2. The drop, with the inserts going on until both nodes have stripped every row.
  stop = false;
  const uint64_t n1_before = ValuesStripped(n1), n2_before = ValuesStripped(n2);
  // The inserts run for as long as they ran alone, from the drop on: the same window of the
  // same load, the strips running all through it (each takes longer than --seconds at the
  // sizes this runs at; the JSON says if one ended early).
  uint64_t during = 0;
  std::thread inserter(
      [&] { during = cairn::bench::InsertUntil(n1, kTable, &next, stop, 4, Record); });
  std::thread timer2([&] {
    absl::SleepFor(absl::Seconds(seconds));
    stop = true;
  });
  const absl::Time start = absl::Now();
  {
    auto c = NewClient(n1);
    if (PostJson(c.get(), {{"operation", "drop_attribute"},
                           {"database", "bench"},
                           {"table", kTable},
                           {"attribute", "customer"}})
            .is_null()) {
      Die("drop_attribute");
    }
  }
  const double answer_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  // Each node strips in the background; each is done when it has removed every value.
  double n1_seconds = 0, n2_seconds = 0;
  const absl::Time deadline = absl::Now() + absl::Minutes(20);
  while (n1_seconds == 0 || n2_seconds == 0) {
    if (absl::Now() > deadline) Die("the strips never finished");
    const double now = absl::ToDoubleSeconds(absl::Now() - start);
    if (n1_seconds == 0 && ValuesStripped(n1) - n1_before >= records) n1_seconds = now;
    if (n2_seconds == 0 && ValuesStripped(n2) - n2_before >= records) n2_seconds = now;
    absl::SleepFor(absl::Milliseconds(20));
  }
  timer2.join();
  inserter.join();
  const double rate_alone = alone / seconds;
  const double rate_during = during / seconds;
  const bool covered = std::min(n1_seconds, n2_seconds) >= seconds;
  const double share = rate_alone == 0 ? 0 : rate_during / rate_alone;

  json out = {{"benchmark", "strip_bench"},
              {"machine", machine},
              {"records", records},
              {"answer_seconds", answer_seconds},
              {"local", {{"seconds", n1_seconds}, {"rows_per_s", records / n1_seconds}}},
              {"peer", {{"seconds", n2_seconds}, {"rows_per_s", records / n2_seconds}}},
              {"foreground",
               {{"rows_per_s_alone", rate_alone},
                {"rows_per_s_during_strip", rate_during},
                {"share", share},
                {"strips_covered_the_window", covered}}}};
  std::printf("\n%-60s %12s\n", "measure", "value");
  std::printf("%-60s %12.3f\n",
              absl::StrCat("drop_attribute of ", records, " rows, n1 answers, s").c_str(),
              answer_seconds);
  std::printf("%-60s %12.2f\n", "  n1 stripped every row, s", n1_seconds);
  std::printf("%-60s %12.0f\n", "  rows/s (n1's strip)", records / n1_seconds);
  std::printf("%-60s %12.2f\n", "  n2 stripped every row (from the marker), s", n2_seconds);
  std::printf("%-60s %12.0f\n", "  rows/s (n2's strip)", records / n2_seconds);
  std::printf("%-60s %12.0f\n", "inserts/s on n1 alone (4 clients)", rate_alone);
  std::printf("%-60s %12.0f\n", "inserts/s on n1 while both nodes strip (same window)",
              rate_during);
  std::printf("%-60s %11.1f%%\n", "  share kept", 100 * share);
  cairn::bench::EmitJson(out, flags.json);
  return 0;
}
