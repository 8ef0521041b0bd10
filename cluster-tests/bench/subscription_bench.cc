// subscription_bench: change subscriptions under a write load (SPEC §8, issue 43):
//   fan-out   one node; --clients writers insert 100-record batches into a fresh table for
//             --seconds, first with no subscriber, then with 1, then with --subscribers (100),
//             then with none again. Subscribers follow that table from before the first write
//             (current=false) and are read by one thread polling them all
//             (cluster-tests/harness/subscriber.h, data left unparsed). Per phase: the writers'
//             records/s; the events/s the subscribers received while the writers ran (all of
//             them together); how long after the writers stopped the last subscriber had every
//             event; and whether every subscriber received every record's event once, in cursor
//             order, with no end event (W5: no overflow). The writers' rate with the subscribers
//             as a share of their rate with none (the mean of the runs before and after, which
//             brackets the drift of the node's storage): the aim is 90 % (W5: a subscriber never
//             slows writers).
//   latency   three nodes; one subscriber on n3 of a table written on n1: single upserts at
//             --rate per second for --latency-seconds, each timed from the moment it is sent
//             until its event arrives on n3 (p50, p99, max; the aim is a p99 of 5 ms).
// Prints a table and JSON (--json FILE). The nodes, the writers and the subscribers share the
// machine, as in every figure quoted in docs/.
//
//   subscription_bench [--cairnd PATH] [--seconds 4] [--clients 8] [--subscribers 100]
//                      [--rate 1000] [--latency-seconds 10] [--drain-timeout 10] [--json FILE]
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cluster-tests/bench/bench_util.h"
#include "cluster-tests/harness/cluster.h"
#include "cluster-tests/harness/subscriber.h"
#include "nlohmann/json.hpp"

namespace {

using cairn::bench::Die;
using cairn::bench::Percentile;
using cairn::bench::Target;
using cairn::harness::CursorSeq;
using cairn::harness::SseEvent;
using cairn::harness::Subscriber;
using cairn::harness::SubscribeRequest;
using nlohmann::json;

constexpr uint64_t kUnknown = std::numeric_limits<uint64_t>::max();

// A subscriber of bench.<table> with changes from now on (current=false), its stream open
// (`: subscribed`: every write acknowledged after this is in it, W2), or dies.
std::unique_ptr<Subscriber> Subscribe(const Target& node, const std::string& table, bool parse) {
  SubscribeRequest r;
  r.database = "bench";
  r.table = table;
  r.current = false;
  r.parse_data = parse;
  absl::StatusOr<std::unique_ptr<Subscriber>> s = Subscriber::Open(node, r);
  if (!s.ok()) Die("subscribing to bench." + table + ": " + s.status().ToString());
  if (absl::Status opened = (*s)->AwaitOpened(absl::Now() + absl::Seconds(30)); !opened.ok()) {
    Die("subscribing to bench." + table + ": " + opened.ToString());
  }
  return std::move(*s);
}

// One subscriber of the fan-out and what it received.
struct Reader {
  std::unique_ptr<Subscriber> sub;
  uint64_t puts = 0;
  uint64_t last_seq = 0;
  bool in_order = true;  // every cursor above the one before: nothing twice (W3)
  std::string end;       // the end event that came, or a read's error; empty: none
};

// Reads every reader from one thread, polling them all, until each has `expected` events (a
// number once the writers stopped) or ended, or the clock passes `give_up_ns` (Unix ns).
// `received` counts events as they come; `*done` is when the last reader completed.
void ReadAll(std::vector<Reader>* readers, std::atomic<uint64_t>* received,
             const std::atomic<uint64_t>& expected, const std::atomic<int64_t>& give_up_ns,
             absl::Time* done) {
  std::vector<pollfd> fds(readers->size());
  std::vector<SseEvent> batch;
  for (;;) {
    const uint64_t want = expected.load();
    bool all = true;
    for (const Reader& r : *readers) {
      if (r.end.empty() && r.puts < want) {
        all = false;
        break;
      }
    }
    if (all || absl::ToUnixNanos(absl::Now()) > give_up_ns.load()) {
      *done = absl::Now();
      return;
    }
    for (size_t i = 0; i < readers->size(); ++i) {
      const Reader& r = (*readers)[i];
      fds[i] = pollfd{r.end.empty() ? r.sub->fd() : -1, POLLIN, 0};
    }
    if (poll(fds.data(), fds.size(), 20) <= 0) continue;
    for (size_t i = 0; i < readers->size(); ++i) {
      if (fds[i].revents == 0) continue;
      Reader& r = (*readers)[i];
      batch.clear();
      const absl::Status s = r.sub->Read(absl::InfinitePast(), &batch);  // what is there now
      for (const SseEvent& e : batch) {
        if (e.name != "put") {
          r.end = e.name;
          continue;
        }
        ++r.puts;
        const std::optional<uint64_t> seq = CursorSeq(e.id);
        if (!seq.has_value() || *seq <= r.last_seq) r.in_order = false;
        if (seq.has_value()) r.last_seq = std::max(r.last_seq, *seq);
      }
      received->fetch_add(batch.size(), std::memory_order_relaxed);
      if (!s.ok()) {
        r.end = s.ToString();
      } else if (r.end.empty() && r.sub->ended()) {
        r.end = "the stream ended";
      }
    }
  }
}

struct FanOutPhase {
  int subscribers = 0;
  uint64_t records = 0;
  double seconds = 0;  // the writers' run
  double records_per_s = 0;
  uint64_t events_during = 0;  // received while the writers ran, all subscribers together
  uint64_t events = 0;         // received in all
  double events_per_s = 0;     // events_during / seconds
  double drain_s = 0;          // from the writers' stop until every subscriber had every event
  double delivered_share = 0;  // events received in order / (subscribers x records)
  bool complete = true;
  std::string first_problem;

  json ToJson() const {
    json j = {{"subscribers", subscribers},
              {"records", records},
              {"seconds", seconds},
              {"records_per_s", records_per_s}};
    if (subscribers > 0) {
      j["events_during_writes"] = events_during;
      j["events"] = events;
      j["events_per_s"] = events_per_s;
      j["drain_s"] = drain_s;
      j["delivered_share"] = delivered_share;
      j["complete"] = complete;
      if (!first_problem.empty()) j["first_problem"] = first_problem;
    }
    return j;
  }
};

FanOutPhase FanOut(const Target& node, const std::string& table, int subscribers, int clients,
                   double seconds, absl::Duration drain_timeout) {
  cairn::bench::CreateTable(node, table);
  FanOutPhase p;
  p.subscribers = subscribers;
  std::vector<Reader> readers(static_cast<size_t>(subscribers));
  for (Reader& r : readers) r.sub = Subscribe(node, table, /*parse=*/false);
  std::atomic<uint64_t> received{0}, expected{kUnknown};
  std::atomic<int64_t> give_up_ns{std::numeric_limits<int64_t>::max()};
  absl::Time done;
  std::thread reading;
  if (subscribers > 0) {
    reading = std::thread([&] { ReadAll(&readers, &received, expected, give_up_ns, &done); });
  }

  std::atomic<uint64_t> next{0};
  std::atomic<bool> stop{false};
  uint64_t written = 0;
  const absl::Time start = absl::Now();
  std::thread writers(
      [&] { written = cairn::bench::InsertUntil(node, table, &next, stop, clients); });
  absl::SleepFor(absl::Seconds(seconds));  // the length of the run, not a wait for an effect
  stop = true;
  writers.join();
  const absl::Time stopped = absl::Now();
  p.events_during = received.load();
  p.records = written;
  p.seconds = absl::ToDoubleSeconds(stopped - start);
  p.records_per_s = static_cast<double>(written) / p.seconds;
  if (subscribers == 0) return p;

  give_up_ns = absl::ToUnixNanos(stopped + drain_timeout);
  expected = written;
  reading.join();
  p.events = received.load();
  p.events_per_s = static_cast<double>(p.events_during) / p.seconds;
  p.drain_s = std::max(0.0, absl::ToDoubleSeconds(done - stopped));
  uint64_t delivered = 0;
  for (const Reader& r : readers) {
    delivered += r.in_order ? std::min(r.puts, written) : 0;
    std::string problem;
    if (!r.end.empty()) {
      problem = "a subscriber's stream ended: " + r.end;
    } else if (!r.in_order) {
      problem = "a subscriber received a cursor not above the one before";
    } else if (r.puts != written) {
      problem = absl::StrCat("a subscriber received ", r.puts, " of ", written, " events");
    }
    if (!problem.empty()) {
      p.complete = false;
      if (p.first_problem.empty()) p.first_problem = problem;
    }
  }
  p.delivered_share =
      written > 0 ? static_cast<double>(delivered) / (static_cast<double>(written) * subscribers)
                  : 1.0;
  std::fprintf(stderr,
               "fan-out, %d subscriber%s: %.0f records/s written, %.0f events/s received while "
               "writing, every event delivered %.2f s after the writers stopped%s%s\n",
               subscribers, subscribers == 1 ? "" : "s", p.records_per_s, p.events_per_s, p.drain_s,
               p.complete ? "" : "; INCOMPLETE: ", p.first_problem.c_str());
  return p;
}

struct LatencyResult {
  uint64_t writes = 0, missing = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
  double write_p50_ms = 0;  // the upsert's own round trip on n1, for scale
  std::string end;          // an end event or error of the subscription; empty: none
};

// Three nodes; a subscriber on n3; single upserts on n1 at `rate` per second for `seconds`.
LatencyResult MeasureLatency(const std::string& cairnd, int rate, double seconds) {
  std::unique_ptr<cairn::harness::Cluster> cluster = cairn::bench::StartCluster(cairnd);
  const Target n1 = cluster->node("n1").endpoint(), n3 = cluster->node("n3").endpoint();
  cairn::bench::CreateTable(n1, "latency");
  cairn::bench::WaitForCount({n3}, "latency", 0, absl::Seconds(30));
  std::unique_ptr<Subscriber> sub = Subscribe(n3, "latency", /*parse=*/true);

  const auto capacity = static_cast<size_t>(rate * seconds * 1.5) + 1000;
  std::vector<std::atomic<int64_t>> sent_ns(capacity);  // when write `id` was sent (Unix ns)
  for (auto& t : sent_ns) t.store(0);
  std::vector<double> ms(capacity, -1);  // its event's arrival after that; the reader's
  std::atomic<uint64_t> sent{0};
  std::atomic<bool> writing{true};
  LatencyResult result;
  std::thread reader([&] {
    std::vector<SseEvent> batch;
    uint64_t got = 0;
    absl::Time give_up = absl::InfiniteFuture();
    for (;;) {
      if (!writing.load()) {
        if (got >= sent.load()) return;
        if (give_up == absl::InfiniteFuture()) give_up = absl::Now() + absl::Seconds(30);
        if (absl::Now() > give_up) return;
      }
      batch.clear();
      const absl::Status s = sub->Read(absl::Now() + absl::Milliseconds(100), &batch);
      const int64_t now = absl::ToUnixNanos(absl::Now());
      for (const SseEvent& e : batch) {
        if (e.name != "put") {
          result.end = e.name;
          continue;
        }
        const json& id = e.data.is_object() && e.data.contains("id") ? e.data["id"] : json();
        if (!id.is_number_unsigned()) continue;
        const auto i = id.get<uint64_t>();
        if (i >= capacity || ms[i] >= 0) continue;
        ms[i] = static_cast<double>(now - sent_ns[i].load()) / 1e6;
        ++got;
      }
      if (!s.ok() || sub->ended()) {
        if (result.end.empty()) result.end = s.ok() ? "the stream ended" : s.ToString();
        return;
      }
    }
  });

  auto client = cairn::bench::NewClient(n1);
  const absl::Duration step = absl::Seconds(1) / std::max(1, rate);
  std::vector<double> write_ms;
  absl::Time next = absl::Now();
  const absl::Time end = next + absl::Seconds(seconds);
  for (uint64_t id = 0; id < capacity && absl::Now() < end; ++id) {
    const absl::Time t = absl::Now();
    sent_ns[id].store(absl::ToUnixNanos(t));
    std::string body;
    if (!cairn::bench::Post(client.get(),
                            {{"operation", "upsert"},
                             {"database", "bench"},
                             {"table", "latency"},
                             {"records", {{{"id", id}, {"customer", "sub"}, {"qty", 1}}}}},
                            &body)) {
      Die("upsert on n1: " + body);
    }
    write_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t));
    sent.store(id + 1);
    next += step;
    const absl::Time now = absl::Now();
    if (next > now) absl::SleepFor(next - now);  // pacing the load, not waiting for an effect
  }
  writing = false;
  reader.join();
  std::vector<double> arrived;
  for (uint64_t i = 0; i < sent.load(); ++i) {
    if (ms[i] >= 0) arrived.push_back(ms[i]);
  }
  result.writes = sent.load();
  result.missing = result.writes - arrived.size();
  result.p50_ms = Percentile(&arrived, 0.50);
  result.p99_ms = Percentile(&arrived, 0.99);
  result.max_ms = Percentile(&arrived, 1.0);
  result.write_p50_ms = Percentile(&write_ms, 0.50);
  std::fprintf(stderr,
               "latency: %llu writes on n1, their events on n3 p50 %.2f ms, p99 %.2f ms, max "
               "%.2f ms, %llu missing%s%s\n",
               static_cast<unsigned long long>(result.writes), result.p50_ms, result.p99_ms,
               result.max_ms, static_cast<unsigned long long>(result.missing),
               result.end.empty() ? "" : "; the stream ended: ", result.end.c_str());
  return result;  // the cluster's processes and directory go with it
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 4, latency_seconds = 10, drain_timeout = 10;
  int clients = 8, subscribers = 100, rate = 1000;
  CLI::App app(
      "subscription_bench: change subscriptions under a write load, and write-to-event latency",
      "subscription_bench");
  app.add_option("--seconds", seconds, "length of each fan-out run")->capture_default_str();
  app.add_option("--clients", clients, "writer clients (100-record batches) in the fan-out")
      ->capture_default_str();
  app.add_option("--subscribers", subscribers, "subscribers of the fan-out's large run")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  app.add_option("--drain-timeout", drain_timeout,
                 "seconds the subscribers get after the writers stop to receive every event")
      ->capture_default_str();
  app.add_option("--rate", rate, "writes/s of the latency run")->capture_default_str();
  app.add_option("--latency-seconds", latency_seconds, "length of the latency run")
      ->capture_default_str();
  cairn::bench::CommonFlags flags;
  cairn::bench::AddCommonFlags(&app, &flags);
  CLI11_PARSE(app, argc, argv);

  const json machine = cairn::bench::MachineState();
  FanOutPhase none, one, many, none_after;
  {
    // One node: what subscribers cost the node the writers write to.
    std::unique_ptr<cairn::harness::Cluster> cluster =
        cairn::bench::StartCluster(flags.cairnd, std::vector<std::string>{"n1"});
    const Target n1 = cluster->node("n1").endpoint();
    const absl::Duration drain = absl::Seconds(drain_timeout);
    none = FanOut(n1, "fan_none", 0, clients, seconds, drain);
    one = FanOut(n1, "fan_one", 1, clients, seconds, drain);
    many = FanOut(n1, "fan_many", subscribers, clients, seconds, drain);
    none_after = FanOut(n1, "fan_none_after", 0, clients, seconds, drain);
  }
  const double baseline = (none.records_per_s + none_after.records_per_s) / 2;
  const double one_share = baseline > 0 ? one.records_per_s / baseline : 0;
  const double many_share = baseline > 0 ? many.records_per_s / baseline : 0;
  const LatencyResult latency = MeasureLatency(flags.cairnd, rate, latency_seconds);

  json one_json = one.ToJson(), many_json = many.ToJson();
  one_json["writers_share"] = one_share;
  many_json["writers_share"] = many_share;
  const json out = {{"benchmark", "subscription_bench"},
                    {"machine", machine},
                    {"clients", clients},
                    {"none", none.ToJson()},
                    {"one", one_json},
                    {"many", many_json},
                    {"none_after", none_after.ToJson()},
                    {"baseline_records_per_s", baseline},
                    {"latency",
                     {{"rate", rate},
                      {"writes", latency.writes},
                      {"missing", latency.missing},
                      {"p50_ms", latency.p50_ms},
                      {"p99_ms", latency.p99_ms},
                      {"max_ms", latency.max_ms},
                      {"write_p50_ms", latency.write_p50_ms},
                      {"complete", latency.missing == 0 && latency.end.empty()}}}};

  std::printf("\n%-52s %14s\n", "measure", "result");
  std::printf("%-52s %14.0f\n",
              absl::StrCat("records/s written, ", clients, " clients, no subscriber").c_str(),
              baseline);
  for (const FanOutPhase* p : {&one, &many}) {
    const std::string who =
        absl::StrCat(p->subscribers, p->subscribers == 1 ? " subscriber" : " subscribers");
    std::printf("%-52s %14.0f\n", absl::StrCat("events/s received by ", who).c_str(),
                p->events_per_s);
    std::printf("%-52s %14.2f\n", absl::StrCat("  writers' rate / none, with ", who).c_str(),
                p == &one ? one_share : many_share);
    std::printf("%-52s %14.2f\n", "  seconds to deliver the rest after the writes", p->drain_s);
    std::printf("%-52s %14s\n", "  every event delivered to every subscriber",
                p->complete ? "yes" : "NO");
    std::printf("%-52s %14.2f\n", "  events delivered in order / written x subscribers",
                p->delivered_share);
  }
  std::printf("%-52s %14.2f\n",
              absl::StrCat("write on n1 to its event on n3 at ", rate, "/s, p50 ms").c_str(),
              latency.p50_ms);
  std::printf("%-52s %14.2f\n", "write on n1 to its event on n3, p99 ms", latency.p99_ms);
  std::printf("%-52s %14.2f\n", "write on n1 to its event on n3, max ms", latency.max_ms);
  std::printf("%-52s %14llu\n", "  writes whose event never came",
              static_cast<unsigned long long>(latency.missing));
  cairn::bench::EmitJson(out, flags.json);
  return 0;
}
