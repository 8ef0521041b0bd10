// search_bench: search_by_conditions on one node (issue 22, SPEC §5, decision 104) over
// --records rows of bench.search {id, customer: String indexed (1,000 values), qty: Int
// indexed (10,000 values), note: String not indexed (7 values)}:
//   equality   customer equals "c42"           records/1,000 rows, through customer's index
//   range      qty between 100 and 199         records/100 rows, through qty's index
//   scan       note equals "n3"                no index: every row read and filtered
// Each query runs --runs times over a keep-alive connection; per query the median ms to the
// first row of the answer (the first streamed bytes holding a row) and to the whole answer,
// the rows answered, and for the scan the rows read per second.
//
//   search_bench [--cairnd PATH] [--records 1000000] [--runs 5] [--json FILE]

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cluster-tests/bench/bench_util.h"
#include "cluster-tests/harness/cluster.h"
#include "httplib.h"
#include "nlohmann/json.hpp"

namespace {

using cairn::bench::Die;
using cairn::bench::NewClient;
using cairn::bench::PostJson;
using cairn::bench::Target;
using nlohmann::json;

constexpr char kTable[] = "search";

json Record(uint64_t id) {
  return {{"id", id},
          {"customer", absl::StrCat("c", id % 1000)},
          {"qty", static_cast<int64_t>(id % 10'000)},
          {"note", absl::StrCat("n", id % 7)}};
}

struct Timing {
  double first_row_ms = 0;
  double whole_ms = 0;
  uint64_t rows = 0;
};

// One search, its answer streamed: when the first row arrived and when the answer ended.
Timing Run(httplib::Client* client, const json& conditions) {
  const json op = {{"operation", "search_by_conditions"},
                   {"database", "bench"},
                   {"table", kTable},
                   {"conditions", conditions}};
  httplib::Request req;
  req.method = "POST";
  req.path = "/";
  req.body = op.dump();
  req.set_header("Content-Type", "application/json");
  std::string body;
  Timing t;
  const absl::Time start = absl::Now();
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    body.append(data, n);
    if (t.first_row_ms == 0 && body.find('{') != std::string::npos) {
      t.first_row_ms = absl::ToDoubleMilliseconds(absl::Now() - start);
    }
    return true;
  };
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  if (!client->send(req, res, error) || res.status != 200) {
    Die(absl::StrCat("search_by_conditions ", conditions.dump(), ": ", res.status, " ", body));
  }
  t.whole_ms = absl::ToDoubleMilliseconds(absl::Now() - start);
  const json rows = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!rows.is_array()) Die("search_by_conditions answered no array");
  t.rows = rows.size();
  if (t.first_row_ms == 0) t.first_row_ms = t.whole_ms;  // an empty answer
  return t;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t records = 1'000'000;
  int runs = 5;
  CLI::App app("search_bench: search_by_conditions through indexes and by a scan", "search_bench");
  app.add_option("--records", records, "rows in the table")->capture_default_str();
  app.add_option("--runs", runs, "runs of each query (the median is kept)")->capture_default_str();
  cairn::bench::CommonFlags flags;
  cairn::bench::AddCommonFlags(&app, &flags);
  CLI11_PARSE(app, argc, argv);
  if (runs < 1) Die("--runs must be at least 1");

  const json machine = cairn::bench::MachineState();
  auto cluster = cairn::bench::StartCluster(flags.cairnd, {"n1"});
  const Target n1 = cluster->node("n1").endpoint();
  auto client = NewClient(n1);
  if (PostJson(client.get(), {{"operation", "create_table"},
                              {"database", "bench"},
                              {"table", kTable},
                              {"primary_key", "id"},
                              {"attributes",
                               {{{"name", "id"}, {"type", "ID"}},
                                {{"name", "customer"}, {"type", "String"}, {"indexed", true}},
                                {{"name", "qty"}, {"type", "Int"}, {"indexed", true}},
                                {{"name", "note"}, {"type", "String"}, {"indexed", false}}}}})
          .is_null()) {
    Die("create_table");
  }
  const absl::Time load_start = absl::Now();
  cairn::bench::InsertAll(n1, kTable, 0, records, 8, Record);
  std::fprintf(stderr, "loaded %llu records in %.1f s\n", static_cast<unsigned long long>(records),
               absl::ToDoubleSeconds(absl::Now() - load_start));

  struct Query {
    const char* name;
    json conditions;
  };
  const std::vector<Query> queries = {
      {"equality", json::array({{{"search_attribute", "customer"},
                                 {"search_type", "equals"},
                                 {"search_value", "c42"}}})},
      {"range", json::array({{{"search_attribute", "qty"},
                              {"search_type", "between"},
                              {"search_value", {100, 199}}}})},
      {"scan",
       json::array(
           {{{"search_attribute", "note"}, {"search_type", "equals"}, {"search_value", "n3"}}})},
  };
  json out = {{"benchmark", "search_bench"}, {"machine", machine}, {"records", records}};
  std::printf("%-10s %12s %12s %10s %14s\n", "query", "first row ms", "whole ms", "rows",
              "rows read/s");
  for (const Query& q : queries) {
    std::vector<double> first, whole;
    uint64_t rows = 0;
    for (int i = 0; i < runs; ++i) {
      const Timing t = Run(client.get(), q.conditions);
      first.push_back(t.first_row_ms);
      whole.push_back(t.whole_ms);
      rows = t.rows;
    }
    const double whole_ms = Median(whole);
    json result = {{"first_row_ms", Median(first)}, {"whole_ms", whole_ms}, {"rows", rows}};
    // The scan reads every row of the table, whatever it answers; the others read what they
    // answer.
    const bool scan = std::string(q.name) == "scan";
    const double read_per_s =
        whole_ms > 0 ? static_cast<double>(scan ? records : rows) / (whole_ms / 1000) : 0;
    result["rows_read_per_s"] = read_per_s;
    std::printf("%-10s %12.1f %12.1f %10llu %14.0f\n", q.name, Median(first), whole_ms,
                static_cast<unsigned long long>(rows), read_per_s);
    out[q.name] = result;
  }
  cairn::bench::EmitJson(out, flags.json);
  return 0;
}
