// handover_bench: a relay taking over a cut direct link (design 0004, one copy of each write).
// Three cairnd processes in a full mesh (test hooks on, to cut links), a background load of
// --rate single upserts/s on n1:
//   before     entries received per entry applied on n2 over --window seconds (1.00: n2 gets
//              n1's writes from n1 only)
//   takeover   n1 and n2 cut (SPEC §6) for --cut-seconds; probes written on n1 meanwhile, each
//              timed until n2 finds it (only n3 can bring it): the first probe, p50, p99, max
//   after      the link restored; once it carries n1's writes again, the ratio over --window
//   no loss    the load stopped: n2 ends with exactly n1's records
// Prints a table and JSON (--json FILE).
//
//   handover_bench [--cairnd PATH] [--rate 1000] [--cut-seconds 10] [--window 3] [--json FILE]
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

namespace {

using cairn::bench::Die;
using cairn::bench::Metric;
using cairn::bench::NewClient;
using cairn::bench::Percentile;
using cairn::bench::PostJson;
using cairn::bench::RecordCount;
using cairn::bench::Target;
using nlohmann::json;

constexpr char kTable[] = "handover";

// Entries received per entry applied on `node` while `fn` runs.
double CopiesDuring(const Target& node, const std::function<void()>& fn) {
  const double received = Metric(node, "cairn_replication_entries_received_total");
  const double applied = Metric(node, "cairn_replication_entries_applied_total");
  fn();
  const double did = Metric(node, "cairn_replication_entries_applied_total") - applied;
  return did > 0 ? (Metric(node, "cairn_replication_entries_received_total") - received) / did : 0;
}

// OK when `node`'s cluster_status shows a connected link to `peer`.
absl::Status Connected(const Target& node, const std::string& peer) {
  auto c = NewClient(node);
  json status = PostJson(c.get(), {{"operation", "cluster_status"}});
  if (status.is_object() && status["connections"].is_array()) {
    for (const json& conn : status["connections"]) {
      if (conn.value("name", "") == peer && conn.value("connected", false)) {
        return absl::OkStatus();
      }
    }
  }
  return absl::UnavailableError(absl::StrCat("no link to ", peer));
}

}  // namespace

int main(int argc, char** argv) {
  int rate = 1000;
  double cut_seconds = 10, window = 3;
  CLI::App app("handover_bench: a relay taking over a cut direct link, and one copy after it",
               "handover_bench");
  app.add_option("--rate", rate, "background writes/s on n1")->capture_default_str();
  app.add_option("--cut-seconds", cut_seconds, "how long n1 and n2 stay cut")
      ->capture_default_str();
  app.add_option("--window", window, "seconds over which the copies ratio is read")
      ->capture_default_str();
  cairn::bench::CommonFlags flags;
  cairn::bench::AddCommonFlags(&app, &flags);
  CLI11_PARSE(app, argc, argv);

  const json machine = cairn::bench::MachineState();
  cairn::harness::ClusterOptions options;
  options.names = {"n1", "n2", "n3"};
  options.test_hooks = true;  // cut_link
  std::unique_ptr<cairn::harness::Cluster> started =
      cairn::bench::StartCluster(flags.cairnd, std::move(options));
  cairn::harness::Cluster& cluster = *started;
  const Target n1 = cluster.node("n1").endpoint(), n2 = cluster.node("n2").endpoint(),
               n3 = cluster.node("n3").endpoint();
  cairn::bench::CreateTable(n1, kTable);
  cairn::bench::WaitForCount({n2, n3}, kTable, 0, absl::Seconds(30));

  std::atomic<bool> stop{false};
  std::thread background([&] { cairn::bench::PacedUpserts(n1, kTable, rate, stop); });
  // Pacing the measurement windows below, not waiting for effects.
  auto pause = [](double s) { absl::SleepFor(absl::Seconds(s)); };
  pause(1);
  const double before = CopiesDuring(n2, [&] { pause(window); });

  auto writer = NewClient(n1);
  auto reader = NewClient(n2);
  uint64_t probe = 0;
  if (absl::Status s = cluster.Cut("n1", "n2"); !s.ok()) Die("cut: " + s.ToString());
  std::vector<double> cut_ms;
  const absl::Time cut_end = absl::Now() + absl::Seconds(cut_seconds);
  while (absl::Now() < cut_end) {
    cut_ms.push_back(cairn::bench::ProbeVisibleMs(writer.get(), reader.get(), kTable, ++probe));
    absl::SleepFor(absl::Milliseconds(10));  // spacing between probes
  }
  const double first_ms = cut_ms.empty() ? 0 : cut_ms.front();
  if (absl::Status s = cluster.Restore("n1", "n2"); !s.ok()) Die("restore: " + s.ToString());
  if (absl::Status s = cairn::harness::Cluster::WaitFor("n2 linked to n1 again",
                                                        [&] { return Connected(n2, "n1"); });
      !s.ok()) {
    Die(s.ToString());
  }
  pause(1);
  const double after = CopiesDuring(n2, [&] { pause(window); });
  stop = true;
  background.join();
  const int64_t on_n1 = RecordCount(n1, kTable);
  cairn::bench::WaitForCount({n2, n3}, kTable, static_cast<uint64_t>(on_n1), absl::Minutes(1));
  const bool no_loss = RecordCount(n2, kTable) == on_n1 && RecordCount(n3, kTable) == on_n1;

  const double p50 = Percentile(&cut_ms, 0.50), p99 = Percentile(&cut_ms, 0.99),
               max = Percentile(&cut_ms, 1.0);
  json out = {{"benchmark", "handover_bench"},
              {"machine", machine},
              {"background_writes_per_s", rate},
              {"copies_before", before},
              {"cut",
               {{"seconds", cut_seconds},
                {"probes", cut_ms.size()},
                {"first_ms", first_ms},
                {"p50_ms", p50},
                {"p99_ms", p99},
                {"max_ms", max}}},
              {"copies_after", after},
              {"records", on_n1},
              {"no_loss", no_loss}};
  std::printf("\n%-52s %14s\n", "measure", "result");
  std::printf("%-52s %14.2f\n", "entries received per applied on n2, before", before);
  std::printf("%-52s %14.2f\n", "cut n1-n2: first probe visible on n2, ms", first_ms);
  std::printf("%-52s %14.2f\n", "  probes visible on n2 through n3, p50 ms", p50);
  std::printf("%-52s %14.2f\n", "  p99 ms", p99);
  std::printf("%-52s %14.2f\n", "  max ms", max);
  std::printf("%-52s %14.2f\n", "entries received per applied on n2, after", after);
  std::printf("%-52s %14s\n", "n2 and n3 hold every record of n1", no_loss ? "yes" : "NO");
  cairn::bench::EmitJson(out, flags.json);
  return no_loss ? 0 : 1;
}
