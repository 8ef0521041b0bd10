// node_bench: drives one cairn node over its HTTP operations API and measures what a client
// sees: records/s and per-request latency (p50, p99) for
//   batch100  insert of 100-record batches (new keys)
//   upsert    single-record upserts (new keys)
// with 1, 8 and 32 concurrent keep-alive clients. Prints a table and writes JSON.
//
//   node_bench [--cairnd PATH | --node HOST:PORT] [--seconds 5] [--clients 1,8,32]
//              [--workloads batch100,upsert] [--json FILE]
//
// Without --node it starts its own cairnd (port 0, a fresh data directory under /tmp) and
// stops it with SIGTERM at the end. The load generator shares the machine with the node, as
// in every figure quoted in docs/.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "node/ready_file.h"

namespace {

using nlohmann::json;

constexpr char kUser[] = "admin";
constexpr char kPassword[] = "bench-password";

struct Target {
  std::string host;
  int port = 0;
};

struct Result {
  std::string workload;
  int clients = 0;
  uint64_t requests = 0, records = 0, errors = 0;
  double seconds = 0, p50_ms = 0, p99_ms = 0;
};

// A cairnd started for the run.
struct OwnNode {
  pid_t pid = -1;
  std::string dir;
  ~OwnNode() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      int status = 0;
      waitpid(pid, &status, 0);
    }
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }
};

bool StartNode(const std::string& cairnd, OwnNode* node, Target* target) {
  char tmpl[] = "/tmp/cairn-bench-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return false;
  node->dir = tmpl;
  const std::string data = node->dir + "/node";
  const std::string log = node->dir + "/cairnd.log";
  node->pid = fork();
  if (node->pid == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stderr);
    (void)f;
    setenv("CAIRN_ADMIN_PASSWORD", kPassword, 1);
    execl(cairnd.c_str(), cairnd.c_str(), "--name", "bench", "--data-dir", data.c_str(),
          "--ops-listen", "127.0.0.1:0", "--peer-listen", "127.0.0.1:0", nullptr);
    _exit(127);
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    auto ready = cairn::node::ReadReadyFile(data + "/ready.json");
    if (ready.ok() && ready->pid == node->pid) {
      const size_t colon = ready->ops.rfind(':');
      target->host = ready->ops.substr(0, colon);
      target->port = std::stoi(ready->ops.substr(colon + 1));
      return true;
    }
    int status = 0;
    if (waitpid(node->pid, &status, WNOHANG) == node->pid) {
      node->pid = -1;
      return false;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return false;
}

std::unique_ptr<httplib::Client> NewClient(const Target& t) {
  auto c = std::make_unique<httplib::Client>(t.host, t.port);
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);
  c->set_basic_auth(kUser, kPassword);
  c->set_read_timeout(60, 0);
  return c;
}

bool Post(httplib::Client* c, const json& op, std::string* error = nullptr) {
  auto res = c->Post("/", op.dump(), "application/json");
  if (res && res->status == 200) return true;
  if (error != nullptr) *error = res ? res->body : httplib::to_string(res.error());
  return false;
}

double Percentile(std::vector<double>* v, double p) {
  if (v->empty()) return 0;
  const size_t k = std::min(v->size() - 1, static_cast<size_t>(p * v->size()));
  std::nth_element(v->begin(), v->begin() + k, v->end());
  return (*v)[k];
}

Result Run(const Target& target, const std::string& workload, int clients, double seconds) {
  const std::string table = absl::StrCat(workload, "_", clients);
  auto admin = NewClient(target);
  std::string error;
  json create = {{"operation", "create_table"},
                 {"database", "bench"},
                 {"table", table},
                 {"primary_key", "id"},
                 {"attributes",
                  {{{"name", "id"}, {"type", "ID"}},
                   {{"name", "customer"}, {"type", "String"}, {"indexed", true}},
                   {{"name", "qty"}, {"type", "Int"}}}}};
  if (!Post(admin.get(), create, &error)) {
    std::fprintf(stderr, "create_table %s: %s\n", table.c_str(), error.c_str());
    std::exit(1);
  }
  const int per_request = workload == "batch100" ? 100 : 1;
  const char* operation = workload == "batch100" ? "insert" : "upsert";

  std::atomic<bool> measuring{false}, stop{false};
  std::vector<std::vector<double>> latencies(clients);
  std::vector<uint64_t> errors(clients, 0);
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      auto client = NewClient(target);
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

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a;
  std::getline(in, a);
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cairnd = CAIRND_PATH, node, json_path, clients_list = "1,8,32",
              workloads_list = "batch100,upsert";
  double seconds = 5;
  CLI::App app("node_bench: records/s and latency of one cairn node over HTTP", "node_bench");
  app.add_option("--cairnd", cairnd, "cairnd binary to start")->capture_default_str();
  app.add_option("--node", node,
                 "HOST:PORT of a running node instead (password: " + std::string(kPassword) + ")");
  app.add_option("--seconds", seconds, "measured seconds per run")->capture_default_str();
  app.add_option("--clients", clients_list, "concurrent clients, comma separated")
      ->capture_default_str();
  app.add_option("--workloads", workloads_list, "batch100,upsert")->capture_default_str();
  app.add_option("--json", json_path, "write the results as JSON here");
  CLI11_PARSE(app, argc, argv);

  OwnNode own;
  Target target;
  if (node.empty()) {
    if (!StartNode(cairnd, &own, &target)) {
      std::fprintf(stderr, "could not start %s\n", cairnd.c_str());
      return 1;
    }
  } else {
    const size_t colon = node.rfind(':');
    target.host = node.substr(0, colon);
    target.port = std::stoi(node.substr(colon + 1));
  }

  const std::string load_before = LoadAverage();
  std::vector<Result> results;
  const std::vector<std::string> workloads = absl::StrSplit(workloads_list, ',');
  const std::vector<std::string> client_counts = absl::StrSplit(clients_list, ',');
  for (const std::string& w : workloads) {
    for (const std::string& c : client_counts) {
      results.push_back(Run(target, w, std::stoi(c), seconds));
      const Result& r = results.back();
      std::fprintf(stderr, "%-9s %3d clients: %9.0f records/s\n", r.workload.c_str(), r.clients,
                   r.records / r.seconds);
    }
  }

  json out = {{"benchmark", "node_bench"},
              {"machine",
               {{"cores", std::thread::hardware_concurrency()}, {"loadavg_before", load_before}}},
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
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
