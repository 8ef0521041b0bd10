// copy_bench: how fast a new node gets a full copy (issue 7 (d), SPEC R7). One cairnd from the
// cluster harness takes --records records (100-record batches, 8 clients); then n2 joins
// (Cluster::Add: started and wired both ways) and the time from its ready.json until it
// holds every record is the copy: rows/s. n2's cluster_status shows the copy's progress
// meanwhile; with --series DIR the samples go to copy_progress.dat for the plots.
//
//   copy_bench [--cairnd PATH] [--records 1000000] [--json FILE] [--series DIR]

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
using cairn::bench::PostJson;
using cairn::bench::Target;
using nlohmann::json;

// n2's full copy from n1 as its cluster_status shows it: {percent, rows_per_s}, zeros when
// there is none.
std::vector<double> CopyProgress(const Target& node) {
  auto c = NewClient(node);
  c->set_read_timeout(2, 0);
  json status = PostJson(c.get(), {{"operation", "cluster_status"}});
  if (status.is_object() && status["connections"].is_array()) {
    for (const json& conn : status["connections"]) {
      if (conn.value("name", "") != "n1" || !conn["full_copy"].is_object()) continue;
      return {conn["full_copy"].value("percent", 0.0), conn["full_copy"].value("rows_per_s", 0.0)};
    }
  }
  return {0, 0};
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t records = 1'000'000;
  CLI::App app("copy_bench: a full copy of a node's records to a new node", "copy_bench");
  app.add_option("--records", records, "records the new node copies")->capture_default_str();
  cairn::bench::CommonFlags flags;
  cairn::bench::AddCommonFlags(&app, &flags, /*series=*/true);
  CLI11_PARSE(app, argc, argv);

  const json machine = cairn::bench::MachineState();
  std::unique_ptr<cairn::harness::Cluster> started =
      cairn::bench::StartCluster(flags.cairnd, {"n1"});
  cairn::harness::Cluster& cluster = *started;
  const Target n1 = cluster.node("n1").endpoint();
  cairn::bench::CreateTable(n1, "copy");
  const absl::Time load_start = absl::Now();
  cairn::bench::InsertAll(n1, "copy", 0, records, 8);
  const double load_s = absl::ToDoubleSeconds(absl::Now() - load_start);
  std::fprintf(stderr, "loaded %llu records on n1 in %.1f s\n",
               static_cast<unsigned long long>(records), load_s);

  const absl::Time join = absl::Now();
  if (absl::Status s = cluster.Add("n2"); !s.ok()) Die("n2 did not join: " + s.ToString());
  const absl::Time ready = absl::Now();
  const Target n2 = cluster.node("n2").endpoint();
  cairn::bench::Series progress({"percent", "rows_per_s", "n2_records"}, [&] {
    std::vector<double> row = CopyProgress(n2);
    row.push_back(static_cast<double>(cairn::bench::RecordCount(n2, "copy")));
    return row;
  });
  if (!flags.series.empty()) progress.Start();
  const absl::Time copied = cairn::bench::WaitForCount({n2}, "copy", records, absl::Minutes(10));
  progress.Stop();
  const double copy_s = absl::ToDoubleSeconds(copied - ready);
  const double rows_per_s = records / copy_s;

  json out = {{"benchmark", "copy_bench"},
              {"machine", machine},
              {"records", records},
              {"load_records_per_s", records / load_s},
              {"full_copy",
               {{"seconds_after_ready", copy_s},
                {"seconds_after_start", absl::ToDoubleSeconds(copied - join)},
                {"rows_per_s", rows_per_s}}}};
  std::printf("\n%-52s %12s\n", "measure", "value");
  std::printf("%-52s %12.0f\n", "records/s loaded on n1 (100-record batches, 8 clients)",
              records / load_s);
  std::printf("%-52s %12.2f\n", absl::StrCat("full copy of ", records, " records to n2, s").c_str(),
              copy_s);
  std::printf("%-52s %12.0f\n", "full copy, rows/s", rows_per_s);
  if (!flags.series.empty() && !progress.Write(flags.series + "/copy_progress.dat")) {
    Die("could not write the series into " + flags.series);
  }
  cairn::bench::EmitJson(out, flags.json);
  return 0;
}
