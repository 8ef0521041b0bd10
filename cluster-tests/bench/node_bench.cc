// node_bench: drives one cairn node over its HTTP operations API and measures what a client
// sees: records/s and per-request latency (p50, p99) for
//   batch100  insert of 100-record batches (new keys)
//   upsert    single-record upserts (new keys)
// with 1, 8 and 32 concurrent keep-alive clients. Prints a table and writes JSON.
//
//   node_bench [--cairnd PATH | --node HOST:PORT] [--seconds 5] [--clients 1,8,32]
//              [--workloads batch100,upsert] [--role none|table|attribute] [--json FILE]
//
// --role: the clients log in as a user whose role grants what the workload needs on each
// table, by table or attribute by attribute, instead of as the admin (a super user, whom
// enforcement never looks at): the cost of enforcing a role (SPEC U4) on these rows.
//
// Without --node it starts its own cairnd through the cluster harness (port 0, a fresh data
// directory under /tmp, removed at the end with the process). The load generator shares the machine
// with the node, as in every figure quoted in docs/.

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cluster-tests/bench/bench_util.h"
#include "cluster-tests/harness/cluster.h"
#include "httplib.h"
#include "nlohmann/json.hpp"

namespace {

using cairn::bench::kPassword;
using cairn::bench::NewClient;
using cairn::bench::Percentile;
using cairn::bench::Post;
using cairn::bench::Target;
using nlohmann::json;

constexpr char kRoleUser[] = "bench_user";
constexpr char kRolePassword[] = "bench-user-password";

// --role: the role of the clients' user, granting each table as it is made.
struct RoleMode {
  std::string kind = "none";     // none, table, attribute
  json tables = json::object();  // what the role grants so far
  bool made = false;
};

// Grants `table` to the role (making the role and the user first), as the admin.
void Grant(httplib::Client* admin, RoleMode* mode, const std::string& table) {
  json access = {{"read", true},
                 {"insert", true},
                 {"update", true},
                 {"delete", false},
                 {"attribute_permissions", json::array()}};
  if (mode->kind == "attribute") {
    for (const char* a : {"id", "customer", "qty"}) {
      access["attribute_permissions"].push_back(
          {{"attribute_name", a}, {"read", true}, {"insert", true}, {"update", true}});
    }
  }
  mode->tables[table] = std::move(access);
  const json permission = {{"bench", {{"tables", mode->tables}}}};
  std::string error;
  const json role =
      mode->made
          ? json{{"operation", "alter_role"}, {"id", "bench_role"}, {"permission", permission}}
          : json{{"operation", "add_role"}, {"role", "bench_role"}, {"permission", permission}};
  if (!Post(admin, role, &error)) cairn::bench::Die("granting " + table + ": " + error);
  if (!mode->made && !Post(admin,
                           {{"operation", "add_user"},
                            {"username", kRoleUser},
                            {"password", kRolePassword},
                            {"role", "bench_role"},
                            {"active", true}},
                           &error)) {
    cairn::bench::Die("add_user: " + error);
  }
  mode->made = true;
}

struct Result {
  std::string workload;
  int clients = 0;
  uint64_t requests = 0, records = 0, errors = 0;
  double seconds = 0, p50_ms = 0, p99_ms = 0;
};

Result Run(const Target& target, const std::string& workload, int clients, double seconds,
           RoleMode* role) {
  const std::string table = absl::StrCat(workload, "_", clients);
  auto admin = NewClient(target);
  std::string error;
  const json create = cairn::bench::CreateBenchTable(table);
  if (!Post(admin.get(), create, &error)) {
    std::fprintf(stderr, "create_table %s: %s\n", table.c_str(), error.c_str());
    std::exit(1);
  }
  Target load = target;
  if (role->kind != "none") {
    Grant(admin.get(), role, table);
    load.user = kRoleUser;
    load.password = kRolePassword;
  }
  const int per_request = workload == "batch100" ? 100 : 1;
  const char* operation = workload == "batch100" ? "insert" : "upsert";

  std::atomic<bool> measuring{false}, stop{false};
  std::vector<std::vector<double>> latencies(clients);
  std::vector<uint64_t> errors(clients, 0);
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      auto client = NewClient(load);
      uint64_t next = 0;
      // One request body per iteration, built outside the timed section.
      while (!stop.load(std::memory_order_relaxed)) {
        json records = json::array();
        for (int i = 0; i < per_request; ++i) {
          const uint64_t id = (static_cast<uint64_t>(c) << 40) | next++;
          records.push_back({{"id", id},
                             {"customer", absl::StrCat("c", id % 1000)},
                             {"qty", static_cast<int64_t>(id % 97)}});
        }
        const std::string body = json{
            {"operation", operation},
            {"database", "bench"},
            {"table", table},
            {"records",
             std::move(records)}}.dump();
        const bool counted = measuring.load(std::memory_order_relaxed);
        const absl::Time start = absl::Now();
        auto res = client->Post("/", body, "application/json");
        const double ms = absl::ToDoubleMilliseconds(absl::Now() - start);
        if (!counted || stop.load(std::memory_order_relaxed)) continue;
        if (res && res->status == 200) {
          latencies[c].push_back(ms);
        } else {
          ++errors[c];
        }
      }
    });
  }
  absl::SleepFor(absl::Milliseconds(500));  // warm-up: connections, memtables, caches
  measuring = true;
  const absl::Time start = absl::Now();
  absl::SleepFor(absl::Seconds(seconds));
  stop = true;
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
  for (auto& t : threads) t.join();

  Result r;
  r.workload = workload;
  r.clients = clients;
  r.seconds = elapsed;
  std::vector<double> all;
  for (int c = 0; c < clients; ++c) {
    all.insert(all.end(), latencies[c].begin(), latencies[c].end());
    r.errors += errors[c];
  }
  r.requests = all.size();
  r.records = r.requests * per_request;
  r.p50_ms = Percentile(&all, 0.50);
  r.p99_ms = Percentile(&all, 0.99);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string node, clients_list = "1,8,32", workloads_list = "batch100,upsert";
  double seconds = 5;
  CLI::App app("node_bench: records/s and latency of one cairn node over HTTP", "node_bench");
  app.add_option("--node", node,
                 "HOST:PORT of a running node instead (password: " + std::string(kPassword) + ")");
  app.add_option("--seconds", seconds, "measured seconds per run")->capture_default_str();
  app.add_option("--clients", clients_list, "concurrent clients, comma separated")
      ->capture_default_str();
  app.add_option("--workloads", workloads_list, "batch100,upsert")->capture_default_str();
  RoleMode role;
  app.add_option("--role", role.kind,
                 "none (as the admin), or as a user whose role grants the tables (table) or "
                 "each attribute (attribute)")
      ->check(CLI::IsMember({"none", "table", "attribute"}))
      ->capture_default_str();
  cairn::bench::CommonFlags flags;
  cairn::bench::AddCommonFlags(&app, &flags);
  CLI11_PARSE(app, argc, argv);

  std::unique_ptr<cairn::harness::Cluster> own;
  Target target;
  if (node.empty()) {
    own = cairn::bench::StartCluster(flags.cairnd, {"bench"});
    target = own->node("bench").endpoint();
  } else {
    const size_t colon = node.rfind(':');
    target.host = node.substr(0, colon);
    target.port = std::stoi(node.substr(colon + 1));
    target.user = cairn::bench::kUser;
    target.password = kPassword;
  }

  const json machine = cairn::bench::MachineState();
  std::vector<Result> results;
  const std::vector<std::string> workloads = absl::StrSplit(workloads_list, ',');
  const std::vector<std::string> client_counts = absl::StrSplit(clients_list, ',');
  for (const std::string& w : workloads) {
    for (const std::string& c : client_counts) {
      results.push_back(Run(target, w, std::stoi(c), seconds, &role));
      const Result& r = results.back();
      std::fprintf(stderr, "%-9s %3d clients: %9.0f records/s\n", r.workload.c_str(), r.clients,
                   r.records / r.seconds);
    }
  }

  json out = {{"benchmark", "node_bench"},
              {"machine", machine},
              {"role", role.kind},
              {"seconds_per_run", seconds},
              {"results", json::array()}};
  std::printf("\n%-9s %7s %12s %12s %9s %9s %7s\n", "workload", "clients", "records/s",
              "requests/s", "p50 ms", "p99 ms", "errors");
  for (const Result& r : results) {
    std::printf("%-9s %7d %12.0f %12.0f %9.3f %9.3f %7llu\n", r.workload.c_str(), r.clients,
                r.records / r.seconds, r.requests / r.seconds, r.p50_ms, r.p99_ms,
                static_cast<unsigned long long>(r.errors));
    out["results"].push_back({{"workload", r.workload},
                              {"clients", r.clients},
                              {"records_per_s", r.records / r.seconds},
                              {"requests_per_s", r.requests / r.seconds},
                              {"p50_ms", r.p50_ms},
                              {"p99_ms", r.p99_ms},
                              {"requests", r.requests},
                              {"errors", r.errors},
                              {"seconds", r.seconds}});
  }
  cairn::bench::EmitJson(out, flags.json);
  return 0;
}
