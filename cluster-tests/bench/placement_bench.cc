// placement_bench: what placing databases on some of the nodes buys and costs (issue 44,
// design 0013), on --nodes cairnd processes started by the cluster harness, every pair linked:
//   throughput  --databases databases written at once, each by --clients clients inserting
//               batches of 100 on one node (database i on node i mod --nodes): records/s
//               cluster-wide from the first write until every node that holds the database
//               holds all --records of it. Once with every database on every node, once (on
//               fresh nodes) with database i on --replicas nodes from node i on (each node a
//               member of as many databases as any other). The ratio is what placement buys.
//   forward     single upserts into a database placed on n1..n3, sent to n1 (a member) and
//               to the last node (a non-member, which forwards to a member, P4), alternately:
//               p50 and p99 of each, and the p50 difference, the cost of a forward.
//   confirm     the same upserts on n1 with replicated_confirmation 1 and 2 (P10; 0 is the
//               member's upsert above), alternately: p50 and p99 of each.
//               Every measured upsert starts on a settled cluster (decision 155).
// Every node and the load generator share the machine: on 2 cores the nodes are CPU-bound,
// so the throughput ratio is roughly the copies saved. Prints a table and JSON (--json FILE).
//
//   placement_bench [--cairnd PATH] [--nodes 6] [--replicas 3] [--databases 6]
//                   [--records 30000] [--clients 2] [--probes 500] [--json FILE]
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

struct Setup {
  int nodes = 6, replicas = 3, databases = 6, clients = 2;
  uint64_t records = 30'000;
};

std::vector<std::string> Names(int nodes) {
  std::vector<std::string> names;
  for (int i = 1; i <= nodes; ++i) names.push_back(absl::StrCat("n", i));
  return names;
}

// Creates `db` (placed on `members`, or on every node when empty) with table t; dies when it
// cannot. A placement may add only members linked to the node that takes it (P3): the links
// come up a moment after the nodes, so it is tried again for up to 30 s.
void CreatePlaced(const Target& on, const std::string& db,
                  const std::vector<std::string>& members) {
  auto c = NewClient(on);
  std::string body;
  if (!members.empty()) {
    const json create = {{"operation", "create_database"}, {"database", db}, {"replicas", members}};
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (!Post(c.get(), create, &body)) {
      if (absl::Now() > deadline) Die("create_database " + db + ": " + body);
      absl::SleepFor(absl::Milliseconds(50));  // the links' start, polled
    }
  }
  if (!Post(c.get(), cairn::bench::CreateBenchTable("t", db), &body)) {
    Die("create_table " + db + ".t: " + body);
  }
}

struct Throughput {
  double records_per_s = 0;
  double seconds = 0;
  double nodes_cpu_s = 0;
};

// One throughput run on fresh nodes: `placed` or every database on every node.
Throughput RunThroughput(const std::string& cairnd, const Setup& s, bool placed) {
  const std::vector<std::string> names = Names(s.nodes);
  std::unique_ptr<cairn::harness::Cluster> cluster = cairn::bench::StartCluster(cairnd, names);
  std::vector<Target> nodes;
  for (const std::string& n : names) nodes.push_back(cluster->node(n).endpoint());
  // Database i: written on node i, held by nodes i..i+replicas-1 (placed) or by all.
  std::vector<std::vector<Target>> holders(s.databases);
  for (int d = 0; d < s.databases; ++d) {
    std::vector<std::string> members;
    for (int r = 0; placed && r < s.replicas; ++r) {
      const int n = (d + r) % s.nodes;
      members.push_back(names[n]);
      holders[d].push_back(nodes[n]);
    }
    if (!placed) holders[d] = nodes;
    CreatePlaced(nodes[d % s.nodes], absl::StrCat("d", d), members);
  }
  for (int d = 0; d < s.databases; ++d) {
    cairn::bench::WaitForCount(holders[d], "t", 0, absl::Seconds(30), absl::StrCat("d", d));
  }
  auto nodes_cpu = [&] {
    double cpu = 0;
    for (const std::string& n : names) cpu += cairn::bench::CpuSeconds(cluster->node(n).pid());
    return cpu;
  };
  const double cpu_before = nodes_cpu();
  const absl::Time t0 = absl::Now();
  std::vector<std::thread> writers;
  for (int d = 0; d < s.databases; ++d) {
    writers.emplace_back([&, d] {
      cairn::bench::InsertAll(nodes[d % s.nodes], "t", 0, s.records, s.clients,
                              cairn::bench::BenchRecord, absl::StrCat("d", d));
    });
  }
  for (std::thread& w : writers) w.join();
  absl::Time done = t0;
  for (int d = 0; d < s.databases; ++d) {
    done = std::max(done, cairn::bench::WaitForCount(holders[d], "t", s.records, absl::Minutes(10),
                                                     absl::StrCat("d", d)));
  }
  Throughput out;
  out.seconds = absl::ToDoubleSeconds(done - t0);
  out.records_per_s = static_cast<double>(s.records) * s.databases / out.seconds;
  out.nodes_cpu_s = nodes_cpu() - cpu_before;
  std::fprintf(stderr, "throughput %s: %.0f records/s (%.1f s, nodes' CPU %.1f s)\n",
               placed ? "placed" : "everywhere", out.records_per_s, out.seconds, out.nodes_cpu_s);
  return out;
}

// Milliseconds of one single upsert of `id` into lat.t through `c`, or dies.
double UpsertMs(httplib::Client* c, uint64_t id, int confirmations) {
  json op = {{"operation", "upsert"},
             {"database", "lat"},
             {"table", "t"},
             {"records", {cairn::bench::BenchRecord(id)}}};
  if (confirmations > 0) op["replicated_confirmation"] = confirmations;
  std::string body;
  const absl::Time t0 = absl::Now();
  if (!Post(c, op, &body)) Die("upsert: " + body);
  return absl::ToDoubleMilliseconds(absl::Now() - t0);
}

// Waits until `on` knows lat.t (the schema reaches a non-member like any definition, P1), so
// its first upsert is forwarded rather than refused as TABLE_NOT_FOUND; dies after 30 s.
void WaitForDefinition(const Target& on) {
  auto c = NewClient(on);
  const json describe = {{"operation", "describe_table"}, {"database", "lat"}, {"table", "t"}};
  std::string body;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!Post(c.get(), describe, &body)) {
    if (absl::Now() > deadline) Die("describe_table lat.t on the non-member: " + body);
    absl::SleepFor(absl::Milliseconds(50));  // the schema's arrival, polled
  }
}

json Latencies(std::vector<double>* ms) {
  return {{"p50_ms", Percentile(ms, 0.50)},
          {"p99_ms", Percentile(ms, 0.99)},
          {"max_ms", Percentile(ms, 1.0)},
          {"requests", ms->size()}};
}

}  // namespace

int main(int argc, char** argv) {
  Setup s;
  int probes = 500;
  CLI::App app("placement_bench: placed against full replication, forwards and confirmations",
               "placement_bench");
  app.add_option("--nodes", s.nodes, "nodes, every pair linked")
      ->check(CLI::Range(4, 9))
      ->capture_default_str();
  app.add_option("--replicas", s.replicas, "members of each placed database")
      ->check(CLI::Range(3, 8))
      ->capture_default_str();
  app.add_option("--databases", s.databases, "databases written at once")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--records", s.records, "records written into each database")
      ->check(CLI::Range(uint64_t{100}, uint64_t{10'000'000}))
      ->capture_default_str();
  app.add_option("--clients", s.clients, "clients inserting into each database")
      ->check(CLI::Range(1, 32))
      ->capture_default_str();
  app.add_option("--probes", probes, "single upserts per latency figure")
      ->check(CLI::Range(10, 100'000))
      ->capture_default_str();
  cairn::bench::CommonFlags flags;
  cairn::bench::AddCommonFlags(&app, &flags);
  CLI11_PARSE(app, argc, argv);
  if (s.replicas >= s.nodes) Die("--replicas must be fewer than --nodes");

  const json machine = cairn::bench::MachineState();
  const Throughput everywhere = RunThroughput(flags.cairnd, s, /*placed=*/false);
  const Throughput placed = RunThroughput(flags.cairnd, s, /*placed=*/true);

  // Latencies on fresh nodes: lat placed on n1..n3, a client on n1 and one on the last node.
  const std::vector<std::string> names = Names(s.nodes);
  std::unique_ptr<cairn::harness::Cluster> cluster =
      cairn::bench::StartCluster(flags.cairnd, names);
  const Target n1 = cluster->node("n1").endpoint(), last = cluster->node(names.back()).endpoint();
  CreatePlaced(n1, "lat", {"n1", "n2", "n3"});
  cairn::bench::WaitForCount({cluster->node("n2").endpoint(), cluster->node("n3").endpoint()}, "t",
                             0, absl::Seconds(30), "lat");
  WaitForDefinition(last);
  auto member = NewClient(n1), non_member = NewClient(last);
  for (uint64_t id = 0; id < 50; ++id) {  // warm both paths (connections, the forward channel)
    UpsertMs(member.get(), id, 0);
    UpsertMs(non_member.get(), id, 0);
  }
  // Each measured upsert starts on a settled cluster: the write before it was confirmed by
  // both other members (replicated_confirmation 2, through the node that took it, whose
  // stream to each peer is in order), so no probe pays for the previous one's replication.
  std::vector<double> direct, forwarded;
  std::vector<std::vector<double>> confirmed(3);
  for (int i = 0; i < probes; ++i) {
    const uint64_t id = 1000 + static_cast<uint64_t>(i) * 7;
    direct.push_back(UpsertMs(member.get(), id, 0));  // settled by the last round's
    UpsertMs(member.get(), id + 1, 2);                // settles `direct`
    forwarded.push_back(UpsertMs(non_member.get(), id + 2, 0));
    UpsertMs(non_member.get(), id + 3, 2);  // settles `forwarded`
    confirmed[1].push_back(UpsertMs(member.get(), id + 4, 1));
    UpsertMs(member.get(), id + 5, 2);                          // settles it
    confirmed[2].push_back(UpsertMs(member.get(), id + 6, 2));  // and settles itself
  }
  confirmed[0] = direct;  // the same upsert
  const json direct_json = Latencies(&direct), forwarded_json = Latencies(&forwarded);
  const double forward_overhead_ms =
      forwarded_json["p50_ms"].get<double>() - direct_json["p50_ms"].get<double>();
  json confirm_json = json::object();
  for (int n = 0; n < 3; ++n) confirm_json[absl::StrCat("n", n)] = Latencies(&confirmed[n]);

  const double ratio = placed.records_per_s / everywhere.records_per_s;
  json out = {{"benchmark", "placement_bench"},
              {"machine", machine},
              {"setup",
               {{"nodes", s.nodes},
                {"replicas", s.replicas},
                {"databases", s.databases},
                {"records_per_database", s.records},
                {"clients_per_database", s.clients}}},
              {"throughput",
               {{"everywhere_records_per_s", everywhere.records_per_s},
                {"placed_records_per_s", placed.records_per_s},
                {"placed_over_everywhere", ratio},
                {"everywhere_nodes_cpu_s", everywhere.nodes_cpu_s},
                {"placed_nodes_cpu_s", placed.nodes_cpu_s}}},
              {"forward",
               {{"member", direct_json},
                {"non_member", forwarded_json},
                {"p50_overhead_ms", forward_overhead_ms}}},
              {"confirm", confirm_json}};
  std::printf("\n%-56s %12s\n", "measure", "result");
  std::printf("%-56s %12.0f\n",
              absl::StrCat(s.databases, " databases on all ", s.nodes, " nodes: records/s").c_str(),
              everywhere.records_per_s);
  std::printf("%-56s %12.0f\n",
              absl::StrCat(s.databases, " databases on ", s.replicas, " of ", s.nodes,
                           " nodes each: records/s")
                  .c_str(),
              placed.records_per_s);
  std::printf("%-56s %12.2f\n", "  placed / everywhere", ratio);
  std::printf("%-56s %12.3f\n", "single upsert on a member, p50 ms",
              direct_json["p50_ms"].get<double>());
  std::printf("%-56s %12.3f\n", "single upsert on a non-member (forwarded), p50 ms",
              forwarded_json["p50_ms"].get<double>());
  std::printf("%-56s %12.3f\n", "  forward's p50 overhead, ms", forward_overhead_ms);
  for (int n = 0; n < 3; ++n) {
    const json& l = confirm_json[absl::StrCat("n", n)];
    std::printf(
        "%-56s %5.3f / %5.3f\n",
        absl::StrCat("single upsert, replicated_confirmation ", n, ": p50 / p99 ms").c_str(),
        l["p50_ms"].get<double>(), l["p99_ms"].get<double>());
  }
  cairn::bench::EmitJson(out, flags.json);
  return 0;
}
