// Shared pieces of the cluster benchmarks: keep-alive HTTP clients with a node's credentials,
// bulk loads and waits over the operations API, percentiles, resident memory, time series for
// the plots, and the state of the machine. The nodes themselves come from the cluster harness.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cluster-tests/harness/cairnd_process.h"
#include "cluster-tests/harness/cluster.h"
#include "httplib.h"
#include "nlohmann/json.hpp"

namespace cairn::bench {

inline constexpr char kUser[] = "admin";
inline constexpr char kPassword[] = "bench-password";  // of a node given with --node

// A node's operations API and credentials (nodes the benchmark starts come from the cluster
// harness, cluster-tests/harness).
using Target = harness::OpsEndpoint;

// The flags every cluster benchmark takes: --cairnd, --json and (with `series`) --series.
struct CommonFlags {
  std::string cairnd;  // the binary to start; empty: the one built with the harness
  std::string json;    // write the results as JSON here
  std::string series;  // write time series for the plots into this directory
};
void AddCommonFlags(CLI::App* app, CommonFlags* flags, bool series = false);

// Prints "<program>: <what>" and exits 1: a benchmark that cannot measure says why.
[[noreturn]] void Die(const std::string& what);

// Starts the benchmark's nodes through the cluster harness: `names`, linked both ways, no
// test hooks, running `cairnd` (when not empty) instead of the binary built with the harness.
// Exits with a message when they do not come up.
// As above, with the harness's options as given (test hooks, extra flags).
std::unique_ptr<harness::Cluster> StartCluster(const std::string& cairnd,
                                               harness::ClusterOptions options);
std::unique_ptr<harness::Cluster> StartCluster(const std::string& cairnd,
                                               std::vector<std::string> names = {"n1", "n2", "n3"});

// A keep-alive client with the target's credentials.
std::unique_ptr<httplib::Client> NewClient(const Target& t);
// POSTs `op`; true on 200. The answer body (or the error) goes to *body when given.
bool Post(httplib::Client* c, const nlohmann::json& op, std::string* body = nullptr);
// The answer of a 200, or null.
nlohmann::json PostJson(httplib::Client* c, const nlohmann::json& op);

// create_table of <db>.<table>: {id: ID, customer: String (indexed), qty: Int}, the schema
// of every record the benchmarks write.
nlohmann::json CreateBenchTable(const std::string& table, const std::string& db = "bench");
// One record of that schema.
nlohmann::json BenchRecord(uint64_t id);
// Creates bench.<table> on `node`, or dies.
void CreateTable(const Target& node, const std::string& table);

// Inserts batches of 100 new records, ids taken from `next`, into bench.`table` on `clients`
// threads until `stop`; `record(id)` makes each. Returns the records written.
uint64_t InsertUntil(const Target& node, const std::string& table, std::atomic<uint64_t>* next,
                     const std::atomic<bool>& stop, int clients,
                     const std::function<nlohmann::json(uint64_t)>& record = BenchRecord);
// Inserts ids [first, first + n) into <db>.<table> on `node` in batches of 100 from
// `clients` threads, `record(id)` making each, or dies.
void InsertAll(const Target& node, const std::string& table, uint64_t first, uint64_t n,
               int clients, const std::function<nlohmann::json(uint64_t)>& record = BenchRecord,
               const std::string& db = "bench");
// record_count of <db>.<table> on `node` (the rows it holds itself); -1 while the table is
// not there.
int64_t RecordCount(const Target& node, const std::string& table, const std::string& db = "bench");
// Polls until every node holds at least `n` records of <db>.<table>; when that happened.
// Dies after `timeout`.
absl::Time WaitForCount(const std::vector<Target>& nodes, const std::string& table, uint64_t n,
                        absl::Duration timeout, const std::string& db = "bench");
// Upserts single records {id, customer "bg", qty 1} into bench.<table> on `node` at `rate`
// per second (ids from 1,000,000,000 up) until `stop`: the background load of the latency
// measurements.
void PacedUpserts(const Target& node, const std::string& table, int rate,
                  const std::atomic<bool>& stop);
// Upserts probe record `id` into bench.<table> through `writer`, then polls `reader` until
// it finds it: the milliseconds from the write's answer until then. Dies after 60 s.
double ProbeVisibleMs(httplib::Client* writer, httplib::Client* reader, const std::string& table,
                      uint64_t id);

// A counter or gauge of the node's GET /metrics (summed over its label sets); 0 if absent.
double Metric(const Target& node, const std::string& name);
// `node`'s lag behind each peer (cluster_status lag_entries), in the order of `peers`; -1 for
// a peer it has no connection entry for.
std::vector<double> LagEntries(const Target& node, const std::vector<std::string>& peers);

// VmRSS of a process in MiB, 0 if unreadable.
double RssMiB(pid_t pid);
// CPU seconds (user + system) a process has used so far, 0 if unreadable. Unlike a rate, the
// CPU a fixed piece of work costs hardly moves when other load shares the machine.
double CpuSeconds(pid_t pid);

double Percentile(std::vector<double>* v, double p);

// The machine when a benchmark starts: /proc/loadavg and the share of both cores busy over
// one second (/proc/stat). The load average mostly remembers the previous run; the busy share
// says whether something else is running now. Warns on stderr above kBusyWarning.
inline constexpr double kBusyWarning = 0.15;
nlohmann::json MachineState();

// A time series sampled by a background thread for the plots (scripts/bench.sh --plot):
// every `interval` it calls `sample`, which returns one row of numbers, and keeps the row
// with the seconds since Start. Written as a whitespace-separated table gnuplot reads.
class Series {
 public:
  Series(std::vector<std::string> columns, std::function<std::vector<double>()> sample,
         absl::Duration interval = absl::Milliseconds(100));
  ~Series();  // stops the thread
  void Start();
  void Stop();
  // Adds a row now, from the caller's thread (events such as "drop started").
  void Mark(std::vector<double> row);
  // "# t <columns>" then the rows. False if the file cannot be written.
  bool Write(const std::string& path) const;

 private:
  const std::vector<std::string> columns_;
  const std::function<std::vector<double>()> sample_;
  const absl::Duration interval_;
  absl::Time start_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable absl::Mutex mu_;
  std::vector<std::vector<double>> rows_ ABSL_GUARDED_BY(mu_);  // [t, columns...]
};

// A Series sample of per-second rates: each call turns the counters `counts` returns into
// their increase per second since the previous call (zeros the first time).
std::function<std::vector<double>()> Rates(std::function<std::vector<double>()> counts);

// Writes `out` to `path` (when not empty) and prints it on one line after the table.
void EmitJson(const nlohmann::json& out, const std::string& path);

}  // namespace cairn::bench
