// hostile_bench: what authenticated but hostile clients cost everyone else (issue 41). One
// node, bench.hostile with --records rows. A probe client upserts one row at a time over a
// keep-alive connection, and its latency is measured in three phases of --seconds each:
//   idle         nothing else runs
//   slow         64 clients each read a streamed search of the whole table slowly: 4 KiB every
//                100 ms through a 16 KiB receive buffer, reconnecting when the node ends their
//                answer (design 0008, guarantee 8)
//   worst        8 clients loop the costliest searches the limits allow: an `or` of 1,000
//                `contains` conditions (each row checked against every one) and a sort of
//                the whole table (held up to --max-sort-bytes)
// The node's RSS is sampled every 100 ms throughout. The aims (issue 41): the probe's p99 in
// each hostile phase within 2x of idle, RSS at most 512 MiB. The attackers' threads run at
// nice 19 (--attackers-nice): here they share the node's two cores, where real ones would
// run on machines of their own.
//
//   hostile_bench [--cairnd PATH] [--records 200000] [--seconds 10] [--phases slow,worst]
//                 [--attackers-nice 19] [--json FILE]
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cluster-tests/bench/bench_util.h"

namespace {

using cairn::bench::Die;
using cairn::bench::NewClient;
using cairn::bench::Percentile;
using cairn::bench::Target;
using nlohmann::json;

constexpr char kTable[] = "hostile";
constexpr int kSlowReaders = 64;
constexpr int kWorstClients = 8;

// The bytes of one POST / with the target's credentials.
std::string RawRequest(const Target& t, const json& op) {
  const std::string body = op.dump();
  return absl::StrCat("POST / HTTP/1.1\r\nHost: cairn\r\nAuthorization: Basic ",
                      absl::Base64Escape(absl::StrCat(t.user, ":", t.password)),
                      "\r\nContent-Type: application/json\r\nContent-Length: ", body.size(),
                      "\r\n\r\n", body);
}

// A socket to the node on loopback with a small receive buffer (so the kernel does not read
// the answer ahead for the client), or -1.
int Dial(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  const int rcvbuf = 16 << 10;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The nice value of the attackers' threads (see the top; --attackers-nice 0 measures the
// benchmark's own clients as well as the node).
int attackers_nice = 19;
void LowerAttackerPriority() {
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), attackers_nice);
}

// One slow reader until `stop`: the whole table's search, 4 KiB per 100 ms, again and again.
void SlowReader(const Target& t, const std::atomic<bool>& stop, std::atomic<uint64_t>* streams) {
  const std::string request = RawRequest(t, {{"operation", "search_by_value"},
                                             {"database", "bench"},
                                             {"table", kTable},
                                             {"search_attribute", "id"},
                                             {"search_value", "*"}});
  LowerAttackerPriority();
  std::vector<char> buffer(4 << 10);
  while (!stop.load()) {
    const int fd = Dial(t.port);
    if (fd < 0) continue;
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      streams->fetch_add(1);
      while (!stop.load() && ::recv(fd, buffer.data(), buffer.size(), 0) > 0) {
        absl::SleepFor(absl::Milliseconds(100));  // the attack's pace, not a wait for an effect
      }
    }
    ::close(fd);
  }
}

// One client of the worst searches until `stop`, alternating the two.
void WorstSearcher(const Target& t, int seed, const std::atomic<bool>& stop,
                   std::atomic<uint64_t>* searches, std::atomic<uint64_t>* refused) {
  LowerAttackerPriority();
  json wide = json::array();
  for (int i = 0; i < 1000; ++i) {
    wide.push_back({{"search_attribute", "customer"},
                    {"search_type", "contains"},
                    {"search_value", absl::StrCat("zz", seed, "-", i)}});
  }
  const json or_search = {{"operation", "search_by_conditions"},
                          {"database", "bench"},
                          {"table", kTable},
                          {"operator", "or"},
                          {"conditions", wide}};
  const json sort_search = {{"operation", "search_by_conditions"},
                            {"database", "bench"},
                            {"table", kTable},
                            {"conditions", json::array()},
                            {"sort", {{"attribute", "customer"}, {"next", {{"attribute", "qty"}}}}},
                            {"limit", 100000}};
  auto client = NewClient(t);
  client->set_read_timeout(120, 0);
  for (uint64_t n = 0; !stop.load(); ++n) {
    const json& op = n % 2 == 0 ? or_search : sort_search;
    auto res = client->Post("/", op.dump(), "application/json");
    if (res && res->status == 200) {
      searches->fetch_add(1);
    } else {
      refused->fetch_add(1);  // 400 over a limit, 503 at the deadline: the limits at work
    }
  }
}

struct Phase {
  std::string name;
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
  uint64_t upserts = 0;
  double rss_max_mib = 0;
};

}  // namespace

int main(int argc, char** argv) {
  uint64_t records = 200000;
  int seconds = 10;
  CLI::App app("hostile_bench: other clients' upsert latency under hostile authenticated load",
               "hostile_bench");
  app.add_option("--records", records, "rows in the table")->capture_default_str();
  app.add_option("--seconds", seconds, "length of each phase")->capture_default_str();
  app.add_option("--attackers-nice", attackers_nice,
                 "the nice value of the attacking clients' threads (0: as the probe's)")
      ->check(CLI::Range(0, 19))
      ->capture_default_str();
  std::vector<std::string> hostile = {"slow", "worst"};
  app.add_option("--phases", hostile, "the hostile phases to run after idle")
      ->delimiter(',')
      ->check(CLI::IsMember({"slow", "worst"}))
      ->capture_default_str();
  cairn::bench::CommonFlags flags;
  cairn::bench::AddCommonFlags(&app, &flags);
  CLI11_PARSE(app, argc, argv);
  if (seconds < 1) Die("--seconds must be at least 1");

  const json machine = cairn::bench::MachineState();
  auto cluster = cairn::bench::StartCluster(flags.cairnd, {"n1"});
  const Target n1 = cluster->node("n1").endpoint();
  const pid_t pid = cluster->node("n1").pid();
  cairn::bench::CreateTable(n1, kTable);
  cairn::bench::InsertAll(n1, kTable, 0, records, 8);

  // RSS, sampled until the end.
  std::atomic<bool> done{false};
  std::atomic<double> rss_max{0};
  std::thread sampler([&] {
    while (!done.load()) {
      const double rss = cairn::bench::RssMiB(pid);
      if (rss > rss_max.load()) rss_max.store(rss);
      absl::SleepFor(absl::Milliseconds(100));  // the sampling period
    }
  });

  auto probe = NewClient(n1);
  uint64_t next_id = records;
  auto measure = [&](const std::string& name) {
    std::fprintf(stderr, "hostile_bench: %s for %d s\n", name.c_str(), seconds);
    rss_max.store(cairn::bench::RssMiB(pid));
    std::vector<double> ms;
    const absl::Time end = absl::Now() + absl::Seconds(seconds);
    while (absl::Now() < end) {
      const json op = {{"operation", "upsert"},
                       {"database", "bench"},
                       {"table", kTable},
                       {"records", json::array({cairn::bench::BenchRecord(next_id++)})}};
      const absl::Time start = absl::Now();
      auto res = probe->Post("/", op.dump(), "application/json");
      if (!res || res->status != 200) Die(absl::StrCat("the probe's upsert failed in ", name));
      ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - start));
    }
    Phase p;
    p.name = name;
    p.upserts = ms.size();
    p.p50_ms = Percentile(&ms, 0.50);
    p.p99_ms = Percentile(&ms, 0.99);
    p.max_ms = Percentile(&ms, 1.0);
    p.rss_max_mib = rss_max.load();
    return p;
  };

  std::vector<Phase> phases;
  phases.push_back(measure("idle"));

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> streams{0}, searches{0}, refused{0};
  std::vector<std::thread> attackers;
  auto runs = [&](const char* phase) {
    return std::find(hostile.begin(), hostile.end(), phase) != hostile.end();
  };
  if (runs("slow")) {
    for (int i = 0; i < kSlowReaders; ++i) {
      attackers.emplace_back([&] { SlowReader(n1, stop, &streams); });
    }
    phases.push_back(measure("64 slow readers"));
    stop = true;
    for (std::thread& t : attackers) t.join();
    attackers.clear();
  }
  if (runs("worst")) {
    stop = false;
    for (int i = 0; i < kWorstClients; ++i) {
      attackers.emplace_back([&, i] { WorstSearcher(n1, i, stop, &searches, &refused); });
    }
    phases.push_back(measure("8 worst-case searchers"));
    stop = true;
    for (std::thread& t : attackers) t.join();
  }
  done = true;
  sampler.join();

  const double idle_p99 = phases[0].p99_ms;
  std::printf("\n%-26s %9s %9s %9s %9s %10s %9s\n", "probe upserts while", "upserts", "p50 ms",
              "p99 ms", "max ms", "p99/idle", "RSS MiB");
  json rows = json::array();
  double rss_most = 0;
  for (const Phase& p : phases) {
    const double ratio = idle_p99 > 0 ? p.p99_ms / idle_p99 : 0;
    std::printf("%-26s %9llu %9.2f %9.2f %9.2f %10.2f %9.0f\n", p.name.c_str(),
                static_cast<unsigned long long>(p.upserts), p.p50_ms, p.p99_ms, p.max_ms, ratio,
                p.rss_max_mib);
    rss_most = std::max(rss_most, p.rss_max_mib);
    rows.push_back({{"phase", p.name},
                    {"upserts", p.upserts},
                    {"p50_ms", p.p50_ms},
                    {"p99_ms", p.p99_ms},
                    {"max_ms", p.max_ms},
                    {"p99_over_idle", ratio},
                    {"rss_max_mib", p.rss_max_mib}});
  }
  std::printf(
      "slow-reader streams opened: %llu; worst searches answered: %llu, refused or cut: "
      "%llu\n",
      static_cast<unsigned long long>(streams.load()),
      static_cast<unsigned long long>(searches.load()),
      static_cast<unsigned long long>(refused.load()));
  cairn::bench::EmitJson({{"benchmark", "hostile_bench"},
                          {"machine", machine},
                          {"records", records},
                          {"seconds", seconds},
                          {"phases", rows},
                          {"rss_max_mib", rss_most},
                          {"slow_reader_streams", streams.load()},
                          {"worst_searches", searches.load()},
                          {"worst_refused", refused.load()}},
                         flags.json);
  return 0;
}
