// cluster_bench: what a cluster costs beside its data path (issue 7 (e), (g)), on three
// cairnd processes started by the cluster harness and linked both ways:
//   schema   every node creates the same table in each of 10 new databases at once (the
//            create race of SPEC C4/C5); the time from the first create until every node
//            describes all 10 with the same attributes. p50 / p99 / max over --repeats.
//   rss      resident memory of each node (VmRSS) when idle after start, and after --records
//            records were written on n1 and replicated to both peers.
// Prints a table and the JSON (also to --json FILE).
//
//   cluster_bench [--cairnd PATH] [--repeats 20] [--records 200000] [--json FILE]
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
using cairn::bench::PostJson;
using cairn::bench::RssMiB;
using cairn::bench::Target;
using nlohmann::json;

constexpr int kDatabases = 10;

json CreateOp(const std::string& db) {
  return {
      {"operation", "create_table"},
      {"database", db},
      {"table", "t"},
      {"primary_key", "id"},
      {"attributes", {{{"name", "id"}, {"type", "ID"}}, {{"name", "name"}, {"type", "String"}}}}};
}

// True when `node` describes every database of the round with its table's two attributes.
bool Agrees(httplib::Client* c, int round) {
  json all = PostJson(c, {{"operation", "describe_all"}});
  if (!all.is_object()) return false;
  for (int d = 0; d < kDatabases; ++d) {
    const std::string db = absl::StrCat("conv", round, "_", d);
    if (!all.contains(db) || !all[db].contains("t")) return false;
    const json& attrs = all[db]["t"]["attributes"];
    if (!attrs.is_array() || attrs.size() != 2) return false;
  }
  return true;
}

// One round: all three nodes create the round's tables at once; seconds until all agree.
double ConvergenceRound(const std::vector<Target>& nodes, int round) {
  std::vector<std::thread> creators;
  const absl::Time start = absl::Now();
  for (const Target& n : nodes) {
    creators.emplace_back([&n, round] {
      auto c = NewClient(n);
      for (int d = 0; d < kDatabases; ++d) {
        Post(c.get(), CreateOp(absl::StrCat("conv", round, "_", d)));  // or TABLE_EXISTS
      }
    });
  }
  std::vector<std::unique_ptr<httplib::Client>> clients;
  for (const Target& n : nodes) clients.push_back(NewClient(n));
  const absl::Time deadline = start + absl::Seconds(60);
  for (auto& c : clients) {
    while (!Agrees(c.get(), round)) {
      if (absl::Now() > deadline) Die(absl::StrCat("round ", round, " did not converge"));
      absl::SleepFor(absl::Milliseconds(1));  // the measurement's poll interval
    }
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  for (std::thread& t : creators) t.join();
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 20;
  int64_t records = 200'000;
  CLI::App app("cluster_bench: schema convergence and memory of a 3-node cluster", "cluster_bench");
  app.add_option("--repeats", repeats, "schema convergence rounds")->capture_default_str();
  app.add_option("--records", records, "records written before the loaded RSS")
      ->capture_default_str();
  cairn::bench::CommonFlags flags;
  cairn::bench::AddCommonFlags(&app, &flags);
  CLI11_PARSE(app, argc, argv);

  const json machine = cairn::bench::MachineState();
  std::unique_ptr<cairn::harness::Cluster> started = cairn::bench::StartCluster(flags.cairnd);
  cairn::harness::Cluster& cluster = *started;
  std::vector<Target> nodes;
  std::vector<pid_t> pids;
  for (const std::string& n : cluster.names()) {
    nodes.push_back(cluster.node(n).endpoint());
    pids.push_back(cluster.node(n).pid());
  }
  if (!cairn::harness::Cluster::WaitFor("links", [&] { return cluster.LinksSettled(); }).ok()) {
    Die("the links did not come up");
  }
  auto rss = [&] {
    std::vector<double> out;
    for (pid_t p : pids) out.push_back(RssMiB(p));
    return out;
  };
  const std::vector<double> idle = rss();

  // --- schema convergence
  std::vector<double> rounds_ms;
  for (int r = 0; r < repeats; ++r) rounds_ms.push_back(1000 * ConvergenceRound(nodes, r));
  std::vector<double> sorted = rounds_ms;
  const double conv_p50 = Percentile(&sorted, 0.50), conv_p99 = Percentile(&sorted, 0.99),
               conv_max = Percentile(&sorted, 1.0);

  // --- loaded memory: records written on n1 in 100-record batches, replicated to both peers
  {
    auto c = NewClient(nodes[0]);
    if (!Post(c.get(), {{"operation", "create_table"},
                        {"database", "load"},
                        {"table", "t"},
                        {"primary_key", "id"}})) {
      Die("create_table load.t failed");
    }
    std::vector<std::thread> writers;
    constexpr int kWriters = 8;
    for (int w = 0; w < kWriters; ++w) {
      writers.emplace_back([&, w] {
        auto wc = NewClient(nodes[0]);
        for (int64_t b = w; b * 100 < records; b += kWriters) {
          json batch = json::array();
          for (int i = 0; i < 100; ++i) {
            batch.push_back({{"id", b * 100 + i}, {"payload", std::string(100, 'x')}});
          }
          Post(wc.get(),
               {{"operation", "insert"}, {"database", "load"}, {"table", "t"}, {"records", batch}});
        }
      });
    }
    for (std::thread& t : writers) t.join();
    if (!cairn::harness::Cluster::WaitFor(
             "replication", [&] { return cluster.LinksSettled(); }, absl::Minutes(5))
             .ok()) {
      Die("the peers did not catch up");
    }
  }
  const std::vector<double> loaded = rss();

  json out = {{"benchmark", "cluster_bench"},
              {"machine", machine},
              {"schema_convergence",
               {{"databases_per_round", kDatabases},
                {"rounds", repeats},
                {"p50_ms", conv_p50},
                {"p99_ms", conv_p99},
                {"max_ms", conv_max}}},
              {"rss_mib", {{"idle", idle}, {"loaded", loaded}, {"records", records}}}};
  std::printf("%-52s %10s\n", "measure", "value");
  std::printf("%-52s %10.1f\n", "schema convergence, 10 dbs x 3 nodes, p50 ms", conv_p50);
  std::printf("%-52s %10.1f\n", "schema convergence, p99 ms", conv_p99);
  std::printf("%-52s %10.1f\n", "schema convergence, max ms", conv_max);
  for (size_t i = 0; i < pids.size(); ++i) {
    std::printf("%-52s %10.1f\n", absl::StrCat("RSS idle, n", i + 1, " MiB").c_str(), idle[i]);
  }
  for (size_t i = 0; i < pids.size(); ++i) {
    std::printf("%-52s %10.1f\n",
                absl::StrCat("RSS after ", records, " records, n", i + 1, " MiB").c_str(),
                loaded[i]);
  }
  cairn::bench::EmitJson(out, flags.json);
  return 0;
}
