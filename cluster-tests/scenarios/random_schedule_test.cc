// Scenario 9: a seeded random schedule of schema changes, writes and failures, then heal and
// check (SPEC §7's randomized fault schedule with a convergence checker).
//
// The schedule is a function of the seed alone: the same seed replays the same steps
// (CAIRN_TEST_SEED=<seed>). CI runs a few fixed seeds with CAIRN_SCHEDULE_STEPS steps (default
// 200); `scripts/test.sh --long` runs longer schedules with fresh seeds.
//
// Every node runs buggified (--buggify-seed, derived from the schedule's seed; CAIRN_BUGGIFY=0
// turns it off): its fault points delay and fail on their own, so race windows that are
// microseconds wide on loopback open; and nodes' clocks jump (set_clock). The heal turns
// buggify off and sets the clocks right (the cluster heals quietly); after the check the
// probes, what each point did, are printed: a point that fired nowhere is a window this seed
// did not open.
#include <cstdlib>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cluster-tests/harness/ops.h"
#include "cluster-tests/harness/scenario.h"

namespace cairn::harness {
namespace {

using nlohmann::json;

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

class RandomScheduleTest : public ScenarioTest, public ::testing::WithParamInterface<uint64_t> {};

// Sums every running node's probes (fault_probes) and prints them; returns the points that
// fired nowhere.
std::vector<std::string> ReportProbes(Cluster& c) {
  struct Sum {
    int active = 0;
    int64_t hits = 0, fired = 0, errors = 0;
  };
  std::map<std::string, Sum> sums;
  for (const std::string& n : c.running()) {
    auto probes = c.Ok(n, {{"operation", "fault_probes"}});
    if (!probes.ok()) continue;
    for (const json& p : (*probes)["probes"]) {
      Sum& s = sums[p["name"].get<std::string>()];
      s.active += p["active"].get<bool>() ? 1 : 0;
      s.hits += p["hits"].get<int64_t>();
      s.fired += p["fired"].get<int64_t>();
      s.errors += p["errors"].get<int64_t>();
    }
  }
  std::vector<std::string> blind;
  std::cerr << "probes (point: nodes active, hits, fired, errors):\n";
  for (const auto& [name, s] : sums) {
    std::cerr << "  " << name << ": " << s.active << ", " << s.hits << ", " << s.fired << ", "
              << s.errors << "\n";
    if (s.fired == 0) blind.push_back(name);
  }
  std::cerr << "never fired: " << (blind.empty() ? "none" : absl::StrJoin(blind, " ")) << "\n";
  return blind;
}

TEST_P(RandomScheduleTest, HealsAndConverges) {
  // A fixed seed per instance in CI; CAIRN_TEST_SEED (printed on failure) replays any.
  if (std::getenv("CAIRN_TEST_SEED") == nullptr && std::getenv("CAIRN_FRESH_SEEDS") == nullptr) {
    seed_ = GetParam();
  }
  const int steps = EnvInt("CAIRN_SCHEDULE_STEPS", 200);
  const bool buggify = EnvInt("CAIRN_BUGGIFY", 1) != 0;
  std::cerr << "random schedule: seed " << seed_ << ", " << steps << " steps"
            << (buggify ? ", buggified" : "") << "\n";
  ClusterOptions options;
  if (buggify) {
    // One buggify seed per node, from the schedule's; kept across the node's restarts.
    options.configure = [this](const std::string& name, CairndOptions* o) {
      o->args.push_back("--buggify-seed");
      o->args.push_back(absl::StrCat(seed_ * 1000 + std::hash<std::string>{}(name) % 1000 + 1));
    };
  }
  ASSERT_OK(StartCluster(std::move(options)));
  Cluster& c = cluster();
  std::mt19937_64 rng(seed_);
  auto pick = [&](const std::vector<std::string>& from) { return from[rng() % from.size()]; };
  const std::vector<std::string> dbs = {"alpha", "beta"};
  const std::vector<std::string> tables = {"t1", "t2", "t3"};
  // Answers a step may get besides 200: the table or database is absent or draining, or
  // exists already. Anything else (a 500, a dropped connection) fails the scenario.
  const std::set<std::string> expected_errors = {"TABLE_NOT_FOUND", "DATABASE_NOT_FOUND",
                                                 "TABLE_EXISTS", "TABLE_DROPPING",
                                                 "TABLE_GENERATION_DROPPED"};
  // Background load: writers on every node's operations API all through the schedule,
  // whatever happens to the node (its answers are not checked; the checker is).
  std::vector<OpsEndpoint> endpoints;
  for (const std::string& n : c.names()) endpoints.push_back(c.node(n).endpoint());
  Workers load;
  for (int w = 0; w < 2; ++w) {
    load.Run([&, w](const std::atomic<bool>& stopping) {
      std::mt19937_64 load_rng(seed_ + 1 + w);
      for (int i = 0; !stopping.load(); ++i) {
        json records = json::array();
        for (int r = 0; r < 5; ++r) {
          records.push_back({{"id", absl::StrCat("k", load_rng() % 40)},
                             {"name", absl::StrCat("load", w, "-", i)}});
        }
        endpoints[load_rng() % endpoints.size()].Post(
            ops::Upsert(dbs[load_rng() % dbs.size()], tables[load_rng() % tables.size()], records),
            absl::Seconds(5));
      }
    });
  }
  // Clock faults draw from their own stream, so the steps above stay those of the seed:
  // now and then a node's clock jumps ahead within --max-clock-offset (500 ms), ahead beyond
  // it, back, or is set right (R16; the HLC never goes back).
  std::mt19937_64 clock_rng(seed_ ^ 0xc10c);
  const std::vector<absl::Duration> jumps = {absl::Milliseconds(200), absl::Milliseconds(1500),
                                             absl::Milliseconds(-1500), absl::ZeroDuration()};
  int key_counter = 0;
  for (int step = 0; step < steps; ++step) {
    if (clock_rng() % 100 < 4) {
      const std::vector<std::string> running = c.running();
      const std::string n = running[clock_rng() % running.size()];
      const absl::Duration offset = jumps[clock_rng() % jumps.size()];
      ASSERT_OK(c.SetClock(n, offset));
      std::cerr << "step " << step << ": clock " << n << " " << absl::FormatDuration(offset)
                << "\n";
    }
    const std::vector<std::string> up = c.running();
    std::vector<std::string> down;
    for (const std::string& n : c.names()) {
      if (c.state(n) == NodeState::kDown) down.push_back(n);
    }
    const std::string node = pick(up);
    const std::string db = pick(dbs), table = pick(tables);
    const int action = static_cast<int>(rng() % 100);
    std::string what;
    json op;
    if (action < 15) {
      op = ops::CreateTable(db, table, {{"id", "ID"}, {"name", "String"}});
    } else if (action < 17) {
      // A node-local table of a shared name (C11): it hides the peers' table here.
      op = ops::CreateTable(db, table, {{"id", "ID"}, {"name", "String"}}, /*replicate=*/false);
    } else if (action < 25) {
      op = ops::DropTable(db, table);
    } else if (action < 27) {
      op = ops::DropTable(db, table, /*replicated=*/false);  // a local-only drop
    } else if (action < 65) {
      json records = json::array();
      const int n = 1 + static_cast<int>(rng() % 20);
      for (int i = 0; i < n; ++i) {
        // A small key space, so writes on different nodes overwrite each other (D5).
        records.push_back({{"id", absl::StrCat("k", rng() % 40)},
                           {"name", absl::StrCat(node, "-", ++key_counter)}});
      }
      op = ops::Upsert(db, table, records);
    } else if (action < 72) {
      op = {{"operation", "delete"},
            {"database", db},
            {"table", table},
            {"ids", {absl::StrCat("k", rng() % 40), absl::StrCat("k", rng() % 40)}}};
    } else if (action < 80) {
      if (up.size() > 1) {
        what = absl::StrCat("kill ", node);
        c.Kill(node);
      }
    } else if (action < 88) {
      if (!down.empty()) {
        const std::string back = pick(down);
        what = absl::StrCat("restart ", back);
        ASSERT_OK(c.Restart(back));
      }
    } else if (action < 95) {
      const std::string other = pick(c.names());
      if (other != node) {
        what = absl::StrCat("cut ", node, " ", other);
        ASSERT_OK(c.Cut(node, other));
      }
    } else {
      const std::string other = pick(c.names());
      if (other != node) {
        what = absl::StrCat("restore ", node, " ", other);
        ASSERT_OK(c.Restore(node, other));
      }
    }
    if (!op.is_null()) {
      HttpAnswer a = c.Op(node, op);
      what = absl::StrCat(node, " ", op["operation"].get<std::string>(), " ", db, ".", table,
                          " -> ", a.status, " ", a.error_code());
      // A failure buggify injected is a 500 that says so; nothing else may be.
      const bool injected =
          a.error_code() == "INTERNAL" && a.body.find("injected fault") != std::string::npos;
      ASSERT_TRUE(a.status == 200 || expected_errors.count(a.error_code()) > 0 || injected)
          << "step " << step << ": " << node << ": " << op.dump() << " -> " << a.status << " "
          << a.body;
    }
    if (!what.empty()) std::cerr << "step " << step << ": " << what << "\n";
  }
  load.Stop();
  ASSERT_OK(c.Heal());  // also ends buggify and sets every clock right
  EXPECT_OK(c.WaitConverged({}, absl::Seconds(120)));
  if (buggify) ReportProbes(c);
}

// 1-5: the first fixed seeds. The rest found defects (kept as regressions):
// 1796127316251673017: a failed send round left the link open with no writer (R5).
// 1796127829290826512: a write in flight at a local-only drop never came back (decision 86).
INSTANTIATE_TEST_SUITE_P(Seeds, RandomScheduleTest,
                         ::testing::Values(1, 2, 3, 4, 5, uint64_t{1796127316251673017u},
                                           uint64_t{1796127829290826512u}));

}  // namespace
}  // namespace cairn::harness
