#include "cluster-tests/bench/bench_util.h"

#include <errno.h>   // program_invocation_short_name
#include <unistd.h>  // sysconf

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace cairn::bench {

void AddCommonFlags(CLI::App* app, CommonFlags* flags, bool series) {
  app->add_option("--cairnd", flags->cairnd,
                  "cairnd binary to start (default: the one built here)");
  app->add_option("--json", flags->json, "write the results as JSON here");
  if (series) {
    app->add_option("--series", flags->series,
                    "write time series for the plots into this directory");
  }
}

void Die(const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, what.c_str());
  std::exit(1);
}

std::unique_ptr<harness::Cluster> StartCluster(const std::string& cairnd,
                                               harness::ClusterOptions options) {
  if (!cairnd.empty()) setenv("CAIRND", cairnd.c_str(), 1);  // harness::CairndPath()
  auto cluster = harness::Cluster::Start(std::move(options));
  if (!cluster.ok()) Die("could not start the nodes: " + cluster.status().ToString());
  return std::move(*cluster);
}

std::unique_ptr<harness::Cluster> StartCluster(const std::string& cairnd,
                                               std::vector<std::string> names) {
  harness::ClusterOptions options;
  options.names = std::move(names);
  options.test_hooks = false;
  return StartCluster(cairnd, std::move(options));
}

std::unique_ptr<httplib::Client> NewClient(const Target& t) {
  auto c = std::make_unique<httplib::Client>(t.host, t.port);
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);
  if (!t.password.empty()) c->set_basic_auth(t.user, t.password);
  c->set_read_timeout(60, 0);
  return c;
}

bool Post(httplib::Client* c, const nlohmann::json& op, std::string* body) {
  auto res = c->Post("/", op.dump(), "application/json");
  if (body != nullptr) *body = res ? res->body : httplib::to_string(res.error());
  return res && res->status == 200;
}

nlohmann::json PostJson(httplib::Client* c, const nlohmann::json& op) {
  std::string body;
  if (!Post(c, op, &body)) return nullptr;
  return nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
}

nlohmann::json CreateBenchTable(const std::string& table, const std::string& db) {
  return {{"operation", "create_table"},
          {"database", db},
          {"table", table},
          {"primary_key", "id"},
          {"attributes",
           {{{"name", "id"}, {"type", "ID"}},
            {{"name", "customer"}, {"type", "String"}, {"indexed", true}},
            {{"name", "qty"}, {"type", "Int"}}}}};
}

nlohmann::json BenchRecord(uint64_t id) {
  return {{"id", id},
          {"customer", absl::StrCat("c", id % 1000)},
          {"qty", static_cast<int64_t>(id % 97)}};
}

namespace {

// One insert of `records` into <db>.<table>, or dies naming the table.
void InsertOrDie(httplib::Client* c, const std::string& table, nlohmann::json records,
                 const std::string& db = "bench") {
  std::string body;
  if (!Post(c,
            {{"operation", "insert"},
             {"database", db},
             {"table", table},
             {"records", std::move(records)}},
            &body)) {
    Die("insert into " + table + ": " + body);
  }
}

}  // namespace

void PacedUpserts(const Target& node, const std::string& table, int rate,
                  const std::atomic<bool>& stop) {
  auto c = NewClient(node);
  const absl::Duration step = absl::Seconds(1) / std::max(1, rate);
  absl::Time next = absl::Now();
  for (uint64_t id = 1'000'000'000; !stop.load(); ++id) {
    Post(c.get(), {{"operation", "upsert"},
                   {"database", "bench"},
                   {"table", table},
                   {"records", {{{"id", id}, {"customer", "bg"}, {"qty", 1}}}}});
    next += step;
    const absl::Time now = absl::Now();
    if (next > now) absl::SleepFor(next - now);  // pacing the load, not waiting for an effect
  }
}

double ProbeVisibleMs(httplib::Client* writer, httplib::Client* reader, const std::string& table,
                      uint64_t id) {
  std::string body;
  if (!Post(writer,
            {{"operation", "upsert"},
             {"database", "bench"},
             {"table", table},
             {"records", {{{"id", id}, {"customer", "probe"}, {"qty", 2}}}}},
            &body)) {
    Die("probe: " + body);
  }
  const absl::Time written = absl::Now();
  while (true) {
    nlohmann::json found = PostJson(
        reader,
        {{"operation", "search_by_id"}, {"database", "bench"}, {"table", table}, {"ids", {id}}});
    if (found.is_array() && !found.empty()) break;
    if (absl::Now() - written > absl::Seconds(60)) Die(absl::StrCat("probe ", id, " never came"));
  }
  return absl::ToDoubleMilliseconds(absl::Now() - written);
}

uint64_t InsertUntil(const Target& node, const std::string& table, std::atomic<uint64_t>* next,
                     const std::atomic<bool>& stop, int clients,
                     const std::function<nlohmann::json(uint64_t)>& record) {
  std::atomic<uint64_t> written{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&] {
      auto c = NewClient(node);
      while (!stop.load()) {
        const uint64_t from = next->fetch_add(100);
        nlohmann::json records = nlohmann::json::array();
        for (uint64_t id = from; id < from + 100; ++id) records.push_back(record(id));
        InsertOrDie(c.get(), table, std::move(records));
        written.fetch_add(100);
      }
    });
  }
  for (auto& t : threads) t.join();
  return written.load();
}

void CreateTable(const Target& node, const std::string& table) {
  auto c = NewClient(node);
  std::string body;
  if (!Post(c.get(), CreateBenchTable(table), &body)) Die("create_table " + table + ": " + body);
}

void InsertAll(const Target& node, const std::string& table, uint64_t first, uint64_t n,
               int clients, const std::function<nlohmann::json(uint64_t)>& record,
               const std::string& db) {
  std::atomic<uint64_t> next{first};
  const uint64_t end = first + n;
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&] {
      auto c = NewClient(node);
      while (true) {
        const uint64_t from = next.fetch_add(100);
        if (from >= end) return;
        nlohmann::json records = nlohmann::json::array();
        for (uint64_t id = from; id < std::min(end, from + 100); ++id) {
          records.push_back(record(id));
        }
        InsertOrDie(c.get(), table, std::move(records), db);
      }
    });
  }
  for (auto& t : threads) t.join();
}

int64_t RecordCount(const Target& node, const std::string& table, const std::string& db) {
  auto c = NewClient(node);
  nlohmann::json d =
      PostJson(c.get(), {{"operation", "describe_table"}, {"database", db}, {"table", table}});
  return d.is_object() ? d.value("record_count", int64_t{0}) : -1;
}

absl::Time WaitForCount(const std::vector<Target>& nodes, const std::string& table, uint64_t n,
                        absl::Duration timeout, const std::string& db) {
  const absl::Time deadline = absl::Now() + timeout;
  for (const Target& node : nodes) {
    while (RecordCount(node, table, db) < static_cast<int64_t>(n)) {
      if (absl::Now() > deadline) {
        Die(absl::StrCat("the node at port ", node.port, " never held ", n, " records of ", table));
      }
      absl::SleepFor(absl::Milliseconds(5));  // the load generator's poll interval
    }
  }
  return absl::Now();
}

double Metric(const Target& node, const std::string& name) {
  auto c = NewClient(node);
  auto res = c->Get("/metrics");
  if (!res || res->status != 200) return 0;
  double sum = 0;
  for (absl::string_view line : absl::StrSplit(res->body, '\n')) {
    if (line.empty() || line[0] == '#' || !absl::StartsWith(line, name)) continue;
    const absl::string_view rest = line.substr(name.size());
    if (!rest.empty() && rest[0] != ' ' && rest[0] != '{') continue;  // a longer name
    double v = 0;
    if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) sum += v;
  }
  return sum;
}

std::vector<double> LagEntries(const Target& node, const std::vector<std::string>& peers) {
  std::vector<double> out(peers.size(), -1);
  auto c = NewClient(node);
  c->set_read_timeout(2, 0);
  nlohmann::json status = PostJson(c.get(), {{"operation", "cluster_status"}});
  if (!status.is_object() || !status["connections"].is_array()) return out;
  for (const nlohmann::json& conn : status["connections"]) {
    for (size_t i = 0; i < peers.size(); ++i) {
      if (conn.value("name", "") == peers[i]) out[i] = conn.value("lag_entries", 0.0);
    }
  }
  return out;
}

double RssMiB(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) != 0) continue;
    int64_t kib = 0;
    std::string digits;
    for (char ch : line) {
      if (ch >= '0' && ch <= '9') digits.push_back(ch);
    }
    if (absl::SimpleAtoi(digits, &kib)) return kib / 1024.0;
  }
  return 0;
}

double CpuSeconds(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command's closing parenthesis (the command may hold spaces): state is
  // field 3, utime and stime fields 14 and 15.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(stat).substr(close + 2), ' ');
  uint64_t utime = 0, stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) ||
      !absl::SimpleAtoi(fields[12], &stime)) {
    return 0;
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double Percentile(std::vector<double>* v, double p) {
  if (v->empty()) return 0;
  const size_t k = std::min(v->size() - 1, static_cast<size_t>(p * v->size()));
  std::nth_element(v->begin(), v->begin() + k, v->end());
  return (*v)[k];
}

namespace {

// Jiffies of the "cpu" line of /proc/stat: {busy, total}.
std::pair<uint64_t, uint64_t> CpuJiffies() {
  std::ifstream in("/proc/stat");
  std::string label;
  in >> label;
  uint64_t total = 0, idle = 0, v = 0;
  for (int field = 0; field < 8 && in >> v; ++field) {
    total += v;
    if (field == 3 || field == 4) idle += v;  // idle, iowait
  }
  return {total - idle, total};
}

}  // namespace

nlohmann::json MachineState() {
  std::ifstream in("/proc/loadavg");
  std::string loadavg;
  std::getline(in, loadavg);
  const auto [busy0, total0] = CpuJiffies();
  absl::SleepFor(absl::Seconds(1));  // the window the busy share is measured over
  const auto [busy1, total1] = CpuJiffies();
  const double busy =
      total1 > total0 ? static_cast<double>(busy1 - busy0) / static_cast<double>(total1 - total0)
                      : 0;
  if (busy > kBusyWarning) {
    std::fprintf(stderr,
                 "%s: WARNING: the machine is busy (%.0f%% of its cores in use before the run, "
                 "load average %s); figures will be low\n",
                 program_invocation_short_name, 100 * busy, loadavg.c_str());
  }
  return {{"cores", std::thread::hardware_concurrency()},
          {"loadavg_before", loadavg},
          {"busy_before", std::round(busy * 1000) / 1000},
          {"busy_warning", busy > kBusyWarning}};
}

Series::Series(std::vector<std::string> columns, std::function<std::vector<double>()> sample,
               absl::Duration interval)
    : columns_(std::move(columns)),
      sample_(std::move(sample)),
      interval_(interval),
      start_(absl::Now()) {}

Series::~Series() { Stop(); }

void Series::Start() {
  thread_ = std::thread([this] {
    absl::Time next = absl::Now();
    while (!stop_.load()) {
      std::vector<double> row = sample_();
      Mark(std::move(row));
      next += interval_;
      const absl::Time now = absl::Now();
      if (next > now) absl::SleepFor(next - now);  // the sampling period
    }
  });
}

void Series::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Series::Mark(std::vector<double> row) {
  row.insert(row.begin(), absl::ToDoubleSeconds(absl::Now() - start_));
  absl::MutexLock lock(&mu_);
  rows_.push_back(std::move(row));
}

bool Series::Write(const std::string& path) const {
  std::ofstream out(path);
  out << "# t";
  for (const std::string& c : columns_) out << ' ' << c;
  out << '\n';
  absl::MutexLock lock(&mu_);
  for (const std::vector<double>& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i) out << (i == 0 ? "" : " ") << row[i];
    out << '\n';
  }
  return static_cast<bool>(out);
}

std::function<std::vector<double>()> Rates(std::function<std::vector<double>()> counts) {
  struct Last {
    absl::Time when;
    std::vector<double> counts;
  };
  auto last = std::make_shared<Last>();
  return [counts = std::move(counts), last] {
    const absl::Time now = absl::Now();
    std::vector<double> current = counts(), rates(current.size(), 0);
    if (last->counts.size() == current.size()) {
      const double seconds = absl::ToDoubleSeconds(now - last->when);
      for (size_t i = 0; i < current.size(); ++i) {
        rates[i] = (current[i] - last->counts[i]) / seconds;
      }
    }
    *last = {now, std::move(current)};
    return rates;
  };
}

void EmitJson(const nlohmann::json& out, const std::string& path) {
  if (!path.empty()) std::ofstream(path) << out.dump(2) << "\n";
  std::printf("%s\n", out.dump().c_str());
}

}  // namespace cairn::bench
