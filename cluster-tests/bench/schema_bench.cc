// schema_bench: what a schema change costs as the catalog grows (issue 23), on three cairnd
// processes from the cluster harness. On n1, --tables tables are created one by one
// (create_table through the operations API), spread round-robin over --databases databases,
// then dropped one by one in the same order. Per bucket of --bucket tables:
//   create, drop     the request's latency on n1, p50 and p99. A drop answers after both peers
//                    answered its forward (R9, R10): every drop here must be "dropped" by both.
//   converge         for every --sample-th create, the time from sending it until both peers
//                    describe the table (polled), p50 and p99.
//   bytes/create     DB_SCHEMA bytes all three nodes sent during the bucket's creates, per
//                    create (cairn_schema_bytes_sent_total): what one change costs the links.
// "Flat" is the bound: last bucket p99 <= 1.5 x first bucket p99 + 1 ms.
//
//   schema_bench [--cairnd PATH] [--tables 2000] [--databases 1] [--bucket 500] [--sample 10]
//                [--json FILE]

#include <cstdio>
#include <string>
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

struct Bucket {
  std::vector<double> create_ms, drop_ms, converge_ms;
  double bytes_per_create = 0;
  double tables_per_create = 0;  // definitions in the schema messages, per create
};

std::string DatabaseOf(int i, int databases) { return absl::StrCat("s", i % databases); }
std::string TableOf(int i) { return absl::StrCat("t", i); }

// The DB_SCHEMA bytes and definitions the three nodes sent so far.
std::pair<double, double> SchemaSent(const std::vector<Target>& nodes) {
  double bytes = 0, tables = 0;
  for (const Target& n : nodes) {
    bytes += cairn::bench::Metric(n, "cairn_schema_bytes_sent_total");
    tables += cairn::bench::Metric(n, "cairn_schema_tables_sent_total");
  }
  return {bytes, tables};
}

json Summary(std::vector<double> v) {
  return {{"p50_ms", Percentile(&v, 0.5)}, {"p99_ms", Percentile(&v, 0.99)}};
}

}  // namespace

int main(int argc, char** argv) {
  int tables = 2000, databases = 1, bucket = 500, sample = 10;
  CLI::App app(
      "schema_bench: create and drop latency, convergence and schema bytes per change "
      "as the catalog grows",
      "schema_bench");
  app.add_option("--tables", tables, "tables created, then dropped")->capture_default_str();
  app.add_option("--databases", databases, "databases they are spread over")->capture_default_str();
  app.add_option("--bucket", bucket, "tables per reported bucket")->capture_default_str();
  app.add_option("--sample", sample, "every n-th create waits for the peers (convergence)")
      ->capture_default_str();
  cairn::bench::CommonFlags flags;
  cairn::bench::AddCommonFlags(&app, &flags);
  CLI11_PARSE(app, argc, argv);
  if (tables <= 0 || databases <= 0 || bucket <= 0 || sample <= 0) Die("sizes must be positive");

  const json machine = cairn::bench::MachineState();
  std::unique_ptr<cairn::harness::Cluster> started = cairn::bench::StartCluster(flags.cairnd);
  cairn::harness::Cluster& cluster = *started;
  const Target n1 = cluster.node("n1").endpoint(), n2 = cluster.node("n2").endpoint(),
               n3 = cluster.node("n3").endpoint();
  auto c1 = NewClient(n1);
  std::vector<std::unique_ptr<httplib::Client>> peers;
  peers.push_back(NewClient(n2));
  peers.push_back(NewClient(n3));

  std::vector<Bucket> buckets((tables + bucket - 1) / bucket);
  std::pair<double, double> sent = SchemaSent({n1, n2, n3});
  for (int i = 0; i < tables; ++i) {
    Bucket& b = buckets[i / bucket];
    const json create = {{"operation", "create_table"},
                         {"database", DatabaseOf(i, databases)},
                         {"table", TableOf(i)},
                         {"primary_key", "id"}};
    std::string body;
    const absl::Time begin = absl::Now();
    if (!Post(c1.get(), create, &body)) Die(absl::StrCat("create_table ", TableOf(i), ": ", body));
    b.create_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - begin));
    if (i % sample == 0) {
      const json describe = {{"operation", "describe_table"},
                             {"database", DatabaseOf(i, databases)},
                             {"table", TableOf(i)}};
      for (auto& peer : peers) {
        const absl::Time deadline = begin + absl::Seconds(30);
        while (!Post(peer.get(), describe)) {
          if (absl::Now() > deadline) Die(absl::StrCat(TableOf(i), " did not reach a peer"));
        }
      }
      b.converge_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - begin));
    }
    if ((i + 1) % bucket == 0 || i + 1 == tables) {
      const std::pair<double, double> now = SchemaSent({n1, n2, n3});
      const double n = static_cast<double>(b.create_ms.size());
      b.bytes_per_create = (now.first - sent.first) / n;
      b.tables_per_create = (now.second - sent.second) / n;
      sent = now;
    }
  }
  for (int i = 0; i < tables; ++i) {
    const absl::Time begin = absl::Now();
    const json reply = cairn::bench::PostJson(c1.get(), {{"operation", "drop_table"},
                                                         {"database", DatabaseOf(i, databases)},
                                                         {"table", TableOf(i)}});
    buckets[i / bucket].drop_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - begin));
    if (!reply.is_object()) Die(absl::StrCat("drop_table ", TableOf(i), " failed"));
    const json& answers = reply.value("replicated", json::array());
    if (answers.size() != 2) Die("a drop without both peers' answers: " + reply.dump());
    for (const json& peer : answers) {
      if (peer.value("status", "") != "dropped") Die("a peer answered a drop: " + peer.dump());
    }
  }

  json rows = json::array();
  std::printf("\n%-8s %9s %9s %9s %9s %10s %10s %12s %10s\n", "tables", "create50", "create99",
              "drop50", "drop99", "converge50", "converge99", "bytes/create", "defs/create");
  for (size_t k = 0; k < buckets.size(); ++k) {
    Bucket& b = buckets[k];
    json row = {{"up_to_tables", std::min<int>((k + 1) * bucket, tables)},
                {"create", Summary(b.create_ms)},
                {"drop", Summary(b.drop_ms)},
                {"converge", Summary(b.converge_ms)},
                {"schema_bytes_per_create", b.bytes_per_create},
                {"schema_definitions_per_create", b.tables_per_create}};
    std::printf("%-8d %9.2f %9.2f %9.2f %9.2f %10.2f %10.2f %12.0f %10.1f\n",
                row["up_to_tables"].get<int>(), row["create"]["p50_ms"].get<double>(),
                row["create"]["p99_ms"].get<double>(), row["drop"]["p50_ms"].get<double>(),
                row["drop"]["p99_ms"].get<double>(), row["converge"]["p50_ms"].get<double>(),
                row["converge"]["p99_ms"].get<double>(), b.bytes_per_create, b.tables_per_create);
    rows.push_back(std::move(row));
  }
  // The figures: the first and last buckets, every drop, the last convergences.
  std::vector<double> all_drops;
  for (const Bucket& b : buckets)
    all_drops.insert(all_drops.end(), b.drop_ms.begin(), b.drop_ms.end());
  const json& first = rows.front();
  const json& last = rows.back();
  const double first_p99 = first["create"]["p99_ms"].get<double>();
  json out = {{"benchmark", "schema_bench"},
              {"machine", machine},
              {"tables", tables},
              {"databases", databases},
              {"bucket", bucket},
              {"summary",
               {{"create_p99_first_ms", first_p99},
                {"create_p99_last_ms", last["create"]["p99_ms"]},
                {"create_p99_flat_bound_ms", 1.5 * first_p99 + 1},
                {"drop_p50_ms", Percentile(&all_drops, 0.5)},
                {"drop_p99_ms", Percentile(&all_drops, 0.99)},
                {"converge_p99_last_ms", last["converge"]["p99_ms"]},
                {"bytes_per_create_first", first["schema_bytes_per_create"]},
                {"bytes_per_create_last", last["schema_bytes_per_create"]}}},
              {"buckets", rows}};
  cairn::bench::EmitJson(out, flags.json);
  return 0;
}
