// Scenario 9: a seeded random schedule of schema changes, writes and failures, then heal and
// check (SPEC §7's randomized fault schedule with a model checker).
//
// The schedule is a function of the seed alone: the same seed replays the same steps
// (CAIRN_TEST_SEED=<seed>; a failure prints the line). 3 to 5 nodes (the seed picks), writers
// on two databases all through the run, and steps drawn from: creates (replicated and
// node-local), drops (timed and local-only), drop_database, drops and creates of an attribute
// (C15), upserts and deletes, kills,
// pauses, cuts, restarts, clock jumps, once an add_node of a fresh node (a full copy under
// load), placement changes of either database (design 0013: alter_database by names, count or
// "*"; CAIRN_PLACEMENT_STEPS percent of steps, default 4), and writes that ask for
// confirmations (P10; CAIRN_CONFIRMED_WRITES percent of the schedule's writes). CI runs a few fixed
// seeds with CAIRN_SCHEDULE_STEPS steps (default 200); `scripts/test.sh --long` and
// cluster-tests/soak.sh run fresh seeds; CAIRN_NODE_ARGS adds flags to every node (CAIRND=<path>
// runs another cairnd).
//
// Every node runs buggified (--buggify-seed, derived from the schedule's seed, with
// --buggify-crashes; CAIRN_BUGGIFY=0 turns it off): its fault points delay, fail and crash
// (exit 85) on their own, so race windows that are microseconds wide on loopback open. A node
// that exits by itself with anything but 85 fails the run. The heal turns buggify off and
// sets the clocks right (the cluster heals quietly); then the nodes must converge and satisfy
// the model (harness/model.h): every acknowledged write present or beaten by last-writer-wins,
// nothing resurrected, identical rows with identical stamps, no lag, nothing parked. After the
// check the probes, what each point did, are printed: a point that fired nowhere is a window
// this seed did not open.
#include <cstdlib>
#include <map>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cluster-tests/harness/model.h"
#include "cluster-tests/harness/ops.h"
#include "cluster-tests/harness/scenario.h"
#include "cluster-tests/harness/windows.h"

namespace cairn::harness {
namespace {

using nlohmann::json;

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

// The exit status of a crash fault point (common/fault.h).
constexpr int kCrashExit = 85;

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

// Sends a write or delete, recording it and its answer in the model.
HttpAnswer Write(Model& model, const OpsEndpoint& to, const json& op, absl::Duration timeout) {
  const Model::Ticket ticket = model.Issue();
  HttpAnswer a = to.Post(op, timeout);
  model.Answered(op, ticket, a);
  return a;
}

TEST_P(RandomScheduleTest, HealsAndConverges) {
  // A fixed seed per instance in CI; CAIRN_TEST_SEED (printed on failure) replays any.
  if (std::getenv("CAIRN_TEST_SEED") == nullptr && std::getenv("CAIRN_FRESH_SEEDS") == nullptr) {
    seed_ = GetParam();
  }
  const int steps = EnvInt("CAIRN_SCHEDULE_STEPS", 200);
  const bool buggify = EnvInt("CAIRN_BUGGIFY", 1) != 0;
  // Verify steps run while senders stall (buggify, cuts, pauses): their repairs of rows in
  // flight are expected. After the heal, rule (8) allows none.
  expect_repairs_ = true;
  std::mt19937_64 rng(seed_);
  // 3-5 nodes as the seed picks (the draw is made either way, so CAIRN_SCHEDULE_NODES keeps
  // the rest of the seed's schedule).
  int initial_nodes = 3 + static_cast<int>(rng() % 3);
  if (const int n = EnvInt("CAIRN_SCHEDULE_NODES", 0); n >= 2 && n <= 5) initial_nodes = n;
  const bool crashes = EnvInt("CAIRN_BUGGIFY_CRASHES", 1) != 0;
  std::string knobs;  // what else the replay needs
  for (const char* knob :
       {"CAIRN_SCHEDULE_NODES", "CAIRN_BUGGIFY_CRASHES", "CAIRN_BUGGIFY", "CAIRN_WINDOW_OPENERS",
        "CAIRN_WINDOW_OPENER", "CAIRN_PLACEMENT_STEPS", "CAIRN_CONFIRMED_WRITES"}) {
    if (const char* v = std::getenv(knob); v != nullptr) absl::StrAppend(&knobs, knob, "=", v, " ");
  }
  std::cerr << "random schedule: seed " << seed_ << ", " << steps << " steps, " << initial_nodes
            << " nodes" << (buggify ? ", buggified" : "")
            << (buggify && !crashes ? " without crashes" : "") << "\nreplay: " << knobs
            << "CAIRN_TEST_SEED=" << seed_ << " CAIRN_SCHEDULE_STEPS=" << steps
            << " build/cluster-tests/random_schedule_test"
            << " --gtest_filter='Seeds/RandomScheduleTest.HealsAndConverges/0'\n";
  ClusterOptions options;
  // Your configuration: flags for every node (CAIRND=<path> runs your cairnd).
  absl::Duration clock_bound = absl::Milliseconds(500);
  if (const char* extra = std::getenv("CAIRN_NODE_ARGS"); extra != nullptr) {
    options.args = absl::StrSplit(extra, ' ', absl::SkipEmpty());
    // The model's clock bound is the nodes' (rule 7): `--max-clock-offset D` or `=D`.
    for (size_t i = 0; i < options.args.size(); ++i) {
      std::string value;
      if (options.args[i] == "--max-clock-offset" && i + 1 < options.args.size()) {
        value = options.args[i + 1];
      } else if (absl::StartsWith(options.args[i], "--max-clock-offset=")) {
        value = options.args[i].substr(std::string("--max-clock-offset=").size());
      } else {
        continue;
      }
      if (value == "inf") {
        clock_bound = absl::InfiniteDuration();
      } else {
        ASSERT_TRUE(absl::ParseDuration(value, &clock_bound)) << "--max-clock-offset " << value;
      }
    }
    std::cerr << "node flags: " << extra << "\n";
  }
  options.names.clear();
  for (int i = 1; i <= initial_nodes; ++i) options.names.push_back(absl::StrCat("n", i));
  // A node may crash at a buggified point while the cluster is wired: start it again, each
  // attempt with other buggify seeds (the same seeds would crash the same way), so a replay of
  // the schedule's seed makes the same attempts.
  int attempt = 0;
  if (buggify) {
    // One buggify seed per node, from the schedule's; kept across the node's restarts.
    options.configure = [this, crashes, &attempt](const std::string& name, CairndOptions* o) {
      o->args.push_back("--buggify-seed");
      o->args.push_back(absl::StrCat(seed_ * 1000 + std::hash<std::string>{}(name) % 1000 + 1 +
                                     static_cast<uint64_t>(attempt) * 7919));
      if (crashes) o->args.push_back("--buggify-crashes");
    };
  }
  absl::Status started;
  for (; attempt < 3; ++attempt) {
    started = StartCluster(options);
    if (started.ok() || !buggify) break;
    std::cerr << "starting the cluster failed (" << started << "); again\n";
  }
  ASSERT_OK(started);
  Cluster& c = cluster();
  Model model(clock_bound);
  auto pick = [&](const std::vector<std::string>& from) { return from[rng() % from.size()]; };
  const std::vector<std::string> dbs = {"alpha", "beta"};
  const std::vector<std::string> tables = {"t1", "t2", "t3"};
  // Answers a step may get besides 200: the table or database is absent or draining, or
  // exists already. Anything else (a 500, a dropped connection) fails the scenario.
  // UNKNOWN_ATTRIBUTE: a write with `name` after its drop (C15), or a drop of it again;
  // ATTRIBUTE_EXISTS: a create of it while it is there.
  const std::set<std::string> expected_errors = {
      "TABLE_NOT_FOUND",          "DATABASE_NOT_FOUND", "TABLE_EXISTS",    "TABLE_DROPPING",
      "TABLE_GENERATION_DROPPED", "UNKNOWN_ATTRIBUTE",  "ATTRIBUTE_EXISTS"};
  // Background load: writers on every first node's operations API all through the schedule,
  // whatever happens to the node; the model records what they were told.
  std::vector<OpsEndpoint> endpoints;
  for (const std::string& n : c.names()) endpoints.push_back(c.node(n).endpoint());
  Workers load;
  for (int w = 0; w < 2; ++w) {
    load.Run([&, w](const std::atomic<bool>& stopping) {
      std::mt19937_64 load_rng(seed_ + 1 + w);
      for (int i = 0; !stopping.load(); ++i) {
        json records = json::array();
        for (int r = 0; r < 5; ++r) {
          // Mostly a small key space, where writes overwrite each other (D5); one key each
          // time that is written once, so a write lost is a row missing for good.
          const std::string key =
              r == 0 ? absl::StrCat("w", w, "-", i) : absl::StrCat("k", load_rng() % 40);
          records.push_back({{"id", key}, {"name", absl::StrCat("load", w, "-", i, "-", r)}});
        }
        Write(
            model, endpoints[load_rng() % endpoints.size()],
            ops::Upsert(dbs[load_rng() % dbs.size()], tables[load_rng() % tables.size()], records),
            absl::Seconds(5));
      }
    });
  }
  // Clock faults draw from their own stream: now and then a node's clock jumps ahead within
  // --max-clock-offset (500 ms), ahead beyond it, back, or is set right (R16; the HLC never
  // goes back).
  std::mt19937_64 clock_rng(seed_ ^ 0xc10c);
  const std::vector<absl::Duration> jumps = {absl::Milliseconds(200), absl::Milliseconds(1500),
                                             absl::Milliseconds(-1500), absl::ZeroDuration()};
  // A node that exits by itself must have crashed at a buggified crash point.
  auto reap = [&](int step) {
    for (const auto& [n, code] : c.Reap()) {
      std::cerr << "step " << step << ": " << n << " exited with " << code << "\n";
      EXPECT_TRUE(buggify && code == kCrashExit) << n << " exited with " << code;
    }
  };
  // A harness step (cut, restore, pause, restart, add) that failed because a node crashed at
  // a buggified point meanwhile is not a finding. The connection ends before the process is
  // gone, and the node that failed to answer may be another than the step's (add_node is
  // sent by every peer): wait a moment for any node's exit status.
  auto crashed_meanwhile = [&](const absl::Status& s, int step) {
    if (s.ok() || !buggify) return false;
    const absl::Time deadline = absl::Now() + absl::Seconds(5);
    while (absl::Now() < deadline) {
      const std::map<std::string, int> exited = c.Reap();
      for (const auto& [n, code] : exited) {
        std::cerr << "step " << step << ": " << n << " exited with " << code << "\n";
        EXPECT_EQ(code, kCrashExit) << n << " exited";
      }
      if (!exited.empty()) return true;
      absl::SleepFor(absl::Milliseconds(50));  // polling for an exit, with a deadline
    }
    // A node that exits while it starts is reaped by the harness itself.
    return absl::StrContains(s.message(), absl::StrCat("exited with ", kCrashExit));
  };
  // ASSERT_OK, unless a node crashed meanwhile.
#define SCHEDULE_OK(expr)               \
  do {                                  \
    absl::Status _s = (expr);           \
    if (!crashed_meanwhile(_s, step)) { \
      ASSERT_OK(_s);                    \
    }                                   \
  } while (false)
  // Cluster::Heal, which also ends buggify and sets every clock right. A node may crash at a
  // buggified point before its buggify ends: restart it and heal again.
  auto heal = [&](int step) {
    absl::Status healed;
    for (int attempt = 0; attempt < 10; ++attempt) {
      reap(step);
      healed = c.Heal();
      if (healed.ok()) break;
    }
    return healed;
  };
  // Window openers (harness/windows.h) draw from their own stream too, and take about one
  // step in 33: each makes one sequence of events happen around a slow point that random steps
  // almost never line up (CAIRN_WINDOW_OPENERS: percent of steps; 0 turns them off).
  std::mt19937_64 opener_rng(seed_ ^ 0x0be9e5);
  // Issue 20: now and then a node verifies a database with one peer while buggify runs
  // (R18). Repairs mid-run take the path replicated rows take, so whatever they do the model
  // must still hold after the heal. Its own RNG stream: the other steps of a seed stay put.
  std::mt19937_64 verify_rng(seed_ ^ 0x5e7e1f);
  const int verify_percent = EnvInt("CAIRN_VERIFY_STEPS", 2);  // percent of steps
  // Issue 21: now and then a node drops the attribute `name` of a table, or creates it again
  // (C15: attribute markers; rule (9)). Its own stream too.
  std::mt19937_64 attribute_rng(seed_ ^ 0xa77d);
  const int attribute_percent = EnvInt("CAIRN_ATTRIBUTE_STEPS", 3);  // percent of steps
  // Issue 44: now and then a node places a database on some nodes, by name or count, or on
  // every node again (design 0013, P1, P2, P6); and some of the schedule's writes ask for
  // confirmations (P10). Their own streams. CAIRN_PLACEMENT_STEPS=0 turns placement off.
  std::mt19937_64 placement_rng(seed_ ^ 0x91ace);
  const int placement_percent = EnvInt("CAIRN_PLACEMENT_STEPS", 4);  // percent of steps
  std::mt19937_64 confirm_rng(seed_ ^ 0xc0f1);
  const int confirm_percent = EnvInt("CAIRN_CONFIRMED_WRITES", 25);  // percent of writes
  const int opener_percent = EnvInt("CAIRN_WINDOW_OPENERS", 3);
  const char* only_opener = std::getenv("CAIRN_WINDOW_OPENER");  // one of them only
  WindowOpeners windows(c, model, expected_errors, buggify);
  int key_counter = 0;
  bool added = false;
  for (int step = 0; step < steps && !HasFailure(); ++step) {
    reap(step);
    if (clock_rng() % 100 < 4) {
      const std::vector<std::string> running = c.running();
      if (!running.empty()) {
        const std::string n = running[clock_rng() % running.size()];
        const absl::Duration offset = jumps[clock_rng() % jumps.size()];
        model.ClockSet(n, offset, /*done=*/false);
        if (c.SetClock(n, offset).ok()) {
          model.ClockSet(n, offset, /*done=*/true);
          std::cerr << "step " << step << ": clock " << n << " " << absl::FormatDuration(offset)
                    << "\n";
        }
      }
    }
    if (verify_rng() % 100 < static_cast<uint64_t>(verify_percent)) {
      const std::vector<std::string> running = c.running();
      if (running.size() >= 2) {
        const std::string n = running[verify_rng() % running.size()];
        std::vector<std::string> others;
        for (const std::string& o : running) {
          if (o != n) others.push_back(o);
        }
        const std::string peer = others[verify_rng() % others.size()];
        const std::string vdb = dbs[verify_rng() % dbs.size()];
        HttpAnswer a = c.Op(n, {{"operation", "verify"}, {"database", vdb}, {"node", peer}});
        std::cerr << "step " << step << ": " << n << " verify " << vdb << " with " << peer << " -> "
                  << a.status << " " << a.error_code() << " repaired "
                  << (a.json.is_object() ? a.json.value("rows_repaired", json(0)).dump() : "?")
                  << "\n";
        // Not found (the database, or the peer not linked yet), a node draining, an injected
        // failure, or a buggified crash (reaped with the next step).
        const bool injected =
            a.error_code() == "INTERNAL" && a.body.find("injected fault") != std::string::npos;
        EXPECT_TRUE(a.status == 200 || a.status == 404 || a.status == 503 || a.status == 0 ||
                    injected)
            << "step " << step << ": verify -> " << a.status << " " << a.body;
      }
    }
    if (attribute_rng() % 100 < static_cast<uint64_t>(attribute_percent)) {
      const std::vector<std::string> running = c.running();
      if (!running.empty()) {
        const std::string n = running[attribute_rng() % running.size()];
        const std::string adb = dbs[attribute_rng() % dbs.size()];
        const std::string atable = tables[attribute_rng() % tables.size()];
        const bool drop = attribute_rng() % 2 == 0;
        json op = {{"operation", drop ? "drop_attribute" : "create_attribute"},
                   {"database", adb},
                   {"table", atable},
                   {"attribute", "name"}};
        if (!drop) op["type"] = "String";
        HttpAnswer a = c.Op(n, op);
        std::cerr << "step " << step << ": " << n << " " << op["operation"].get<std::string>()
                  << " " << adb << "." << atable << ".name -> " << a.status << " " << a.error_code()
                  << "\n";
        // As the schema steps below: expected refusals, an injected failure, or a buggified
        // crash (no answer; reaped with the next step).
        const bool injected =
            a.error_code() == "INTERNAL" && a.body.find("injected fault") != std::string::npos;
        EXPECT_TRUE(a.status == 200 || expected_errors.count(a.error_code()) > 0 || injected ||
                    (a.status == 0 && buggify))
            << "step " << step << ": " << op.dump() << " -> " << a.status << " " << a.body;
      }
    }
    if (placement_rng() % 100 < static_cast<uint64_t>(placement_percent)) {
      const std::vector<std::string> running = c.running();
      if (!running.empty()) {
        const std::string n = running[placement_rng() % running.size()];
        const std::string pdb = dbs[placement_rng() % dbs.size()];
        json op = {{"operation", "alter_database"}, {"database", pdb}};
        const int kind = static_cast<int>(placement_rng() % 10);
        // Named members: mostly of the nodes `n` has a live link to (a placement may add only
        // those, P3), now and then of every node, up or not (mostly refused).
        std::vector<std::string> from = c.names();
        if (kind < 4) {
          from = {n};
          if (absl::StatusOr<json> s = c.Ok(n, {{"operation", "cluster_status"}}); s.ok()) {
            for (const json& link : (*s)["connections"]) {
              if (link.value("connected", false)) from.push_back(link.value("name", ""));
            }
          }
        }
        if (kind < 5) {
          json members = json::array();
          for (const std::string& m : from) {
            if (placement_rng() % 2 == 0) members.push_back(m);
          }
          if (members.empty()) members.push_back(from[placement_rng() % from.size()]);
          op["replicas"] = members;
        } else if (kind < 7) {
          const std::vector<std::string> all = c.names();
          op["replica_count"] = 1 + placement_rng() % all.size();  // P2: resolved by `n`
        } else {
          op["replicas"] = "*";
        }
        HttpAnswer a = c.Op(n, op);
        // No answer (a crash, status 0) has no JSON body to quote.
        const json detail = a.json.is_object()
                                ? a.json.value(a.status == 200 ? "placement" : "error", json())
                                : json();
        std::cerr << "step " << step << ": " << n << " alter_database " << op.dump() << " -> "
                  << a.status << " " << a.error_code() << " " << detail.dump() << "\n";
        // Refused (400: a member not linked to `n`, or none ready, P3/P8), the database
        // absent, an injected failure, or a buggified crash (no answer; reaped next step).
        // Not a disruption: no acknowledged write may be lost by a move (P9).
        const bool injected =
            a.error_code() == "INTERNAL" && a.body.find("injected fault") != std::string::npos;
        EXPECT_TRUE(a.status == 200 || a.error_code() == "BAD_REQUEST" ||
                    a.error_code() == "DATABASE_NOT_FOUND" || injected ||
                    (a.status == 0 && buggify))
            << "step " << step << ": " << op.dump() << " -> " << a.status << " " << a.body;
      }
    }
    const std::vector<std::string> up = c.running();
    std::vector<std::string> down, paused;
    for (const std::string& n : c.names()) {
      if (c.state(n) == NodeState::kDown) down.push_back(n);
      if (c.state(n) == NodeState::kPaused) paused.push_back(n);
    }
    if (up.empty()) {
      // Every node crashed: bring one back (it may crash again; the next step tries again).
      if (!down.empty()) {
        const std::string back = pick(down);
        std::cerr << "step " << step << ": restart " << back << " (none up)\n";
        SCHEDULE_OK(c.Restart(back));
      } else if (!paused.empty()) {
        SCHEDULE_OK(c.Resume(pick(paused)));
      }
      continue;
    }
    if (opener_rng() % 100 < static_cast<uint64_t>(opener_percent)) {
      absl::StatusOr<std::string> opened =
          windows.RunOne(opener_rng, up[opener_rng() % up.size()], step,
                         only_opener != nullptr ? only_opener : "");
      ASSERT_OK(opened) << "step " << step;
      std::cerr << "step " << step << ": " << *opened << "\n";
      continue;  // the opener was this step
    }
    const std::string node = pick(up);
    const std::string db = pick(dbs), table = pick(tables);
    const int action = static_cast<int>(rng() % 100);
    std::string what;
    json op;
    // Ends with the model told: drops and node-local creates may take writes with them.
    bool disrupts = false;
    if (action < 13) {
      op = ops::CreateTable(db, table, {{"id", "ID"}, {"name", "String"}});
    } else if (action < 15) {
      // A node-local table of a shared name (C11): it hides the peers' table here.
      op = ops::CreateTable(db, table, {{"id", "ID"}, {"name", "String"}}, /*replicate=*/false);
      disrupts = true;
    } else if (action < 22) {
      op = ops::DropTable(db, table);
      disrupts = true;
    } else if (action < 24) {
      op = ops::DropTable(db, table, /*replicated=*/false);  // a local-only drop
      disrupts = true;
    } else if (action < 25) {
      op = {{"operation", "drop_database"}, {"database", db}};
      disrupts = true;
    } else if (action < 62) {
      json records = json::array();
      const int n = 1 + static_cast<int>(rng() % 20);
      for (int i = 0; i < n; ++i) {
        // A small key space, so writes on different nodes overwrite each other (D5), and a
        // key of its own.
        ++key_counter;
        records.push_back(
            {{"id", i == 0 ? absl::StrCat("s", key_counter) : absl::StrCat("k", rng() % 40)},
             {"name", absl::StrCat(node, "-", key_counter)}});
      }
      op = ops::Upsert(db, table, records);
    } else if (action < 69) {
      op = {{"operation", "delete"},
            {"database", db},
            {"table", table},
            {"ids", {absl::StrCat("k", rng() % 40), absl::StrCat("k", rng() % 40)}}};
    } else if (action < 75) {
      if (up.size() > 1) {
        what = absl::StrCat("kill ", node);
        c.Kill(node);
      }
    } else if (action < 82) {
      if (!down.empty()) {
        const std::string back = pick(down);
        what = absl::StrCat("restart ", back);
        const absl::Status s = c.Restart(back);
        // A buggified crash point may fire while it starts; it stays down.
        SCHEDULE_OK(s);
        if (!s.ok()) what += " (crashed starting)";
        if (s.ok()) model.ClockSet(back, absl::ZeroDuration(), /*done=*/true);  // restarts right
      }
    } else if (action < 84) {
      if (up.size() > 1 && paused.empty()) {  // one paused node at a time
        what = absl::StrCat("pause ", node);
        SCHEDULE_OK(c.Pause(node));
      }
    } else if (action < 87) {
      if (!paused.empty()) {
        const std::string back = pick(paused);
        what = absl::StrCat("resume ", back);
        SCHEDULE_OK(c.Resume(back));
      }
    } else if (action < 93) {
      const std::string other = pick(c.names());
      if (other != node) {
        what = absl::StrCat("cut ", node, " ", other);
        SCHEDULE_OK(c.Cut(node, other));
      }
    } else if (action < 99) {
      const std::string other = pick(c.names());
      if (other != node) {
        what = absl::StrCat("restore ", node, " ", other);
        SCHEDULE_OK(c.Restore(node, other));
      }
    } else if (!added && c.names().size() < 5) {
      // A fresh node joins under load: a full copy of every table while writes go on (R7).
      added = true;
      const std::string fresh = absl::StrCat("n", c.names().size() + 1);
      what = absl::StrCat("add_node ", fresh);
      SCHEDULE_OK(c.Add(fresh));
    }
    const bool is_write =
        !op.is_null() && (op["operation"] == "upsert" || op["operation"] == "delete");
    if (is_write && confirm_rng() % 100 < static_cast<uint64_t>(confirm_percent)) {
      op["replicated_confirmation"] = 1 + confirm_rng() % 2;
    }
    if (!op.is_null()) {
      const Model::Ticket ticket = model.Issue();
      HttpAnswer a = c.Op(node, op);
      const std::string name = op["operation"];
      if (name == "upsert" || name == "delete") {
        model.Answered(op, ticket, a);
      } else if (disrupts) {
        model.Disrupted(db, name == "drop_database" ? "" : table);
      }
      what =
          absl::StrCat(node, " ", name, " ", db, ".", table, " -> ", a.status, " ", a.error_code());
      // A failure buggify injected is a 500 that says so, or no answer from a node that
      // crashed; nothing else may be.
      bool crashed = false;
      if (a.status == 0 && buggify) {
        // The connection ends before the process is gone: wait for its exit status.
        if (absl::StatusOr<int> code = c.WaitExit(node, absl::Seconds(5)); code.ok()) {
          std::cerr << "step " << step << ": " << node << " exited with " << *code << "\n";
          EXPECT_EQ(*code, kCrashExit) << node << " exited";
          crashed = true;
        }
      }
      const bool injected =
          (a.error_code() == "INTERNAL" && a.body.find("injected fault") != std::string::npos) ||
          crashed;
      // Placement (design 0013): a write's members all unreachable from here (P4: 503, or a
      // forward past its deadline), its confirmations late (P10: 504, the write stays), or
      // more asked for than the database has other members (400, nothing written).
      const bool placed =
          is_write &&
          (a.error_code() == "NO_MEMBER_REACHABLE" || a.error_code() == "REQUEST_TIMEOUT" ||
           a.error_code() == "CONFIRMATION_TIMEOUT" ||
           (a.error_code() == "BAD_REQUEST" && op.contains("replicated_confirmation")));
      ASSERT_TRUE(a.status == 200 || expected_errors.count(a.error_code()) > 0 || injected ||
                  placed)
          << "step " << step << ": " << node << ": " << op.dump() << " -> " << a.status << " "
          << a.body;
    }
    if (!what.empty()) std::cerr << "step " << step << ": " << what << "\n";
  }
#undef SCHEDULE_OK
  load.Stop();
  // Nodes the heal restarts start without buggify: a node catching up after a crash meets
  // crash points at high rates, and the heal must end.
  c.EditArgs([](std::vector<std::string>* args) {
    std::vector<std::string> kept;
    for (size_t i = 0; i < args->size(); ++i) {
      if ((*args)[i] == "--buggify-seed") {
        ++i;  // and its value
      } else if ((*args)[i] != "--buggify-crashes") {
        kept.push_back((*args)[i]);
      }
    }
    *args = std::move(kept);
  });
  ASSERT_OK(heal(steps));
  EXPECT_OK(c.WaitConverged({}, absl::Seconds(120)));
  std::cerr << "model: " << model.Summary() << "\n";
  // The rows settled with the links; a link's schema_in_sync follows its next exchange.
  EXPECT_OK(Cluster::WaitFor(
      "the model", [&] { return model.Check(c); }, absl::Seconds(30)));
  EXPECT_OK(model.CheckVerify(c));  // rule (8): after the rest, once
  if (buggify) ReportProbes(c);
}

// 1-5: the first fixed seeds. Seeds that found defects with an earlier schedule, whose
// targeted tests are the regressions now (these seeds replay a different schedule):
// 1796127316251673017: a failed send round left the link open with no writer (R5;
//   RecordReplicationTest.R5_AFailedSenderRoundEndsTheLinkAndTheRowsStillArrive).
// 1796127829290826512: a write in flight at a local-only drop never came back (decision 86;
//   OwnWriteInFlightTest).
// 1796158924919796323: rule (8) after the heal: n4's Verify call to n5 failed fast on a
//   channel still backing off from n5's crash while their link (dialed by n5) was up; the
//   call now waits for the channel like a forwarded drop does (issue 20).
// 1796171581406606060, 1796173840447304457: an attribute of two types after the heal (Any,
//   indexed on nodes that had received peers' rows carrying it before its definition; String
//   where it was declared). Decision 103; AttributeMarkerTest.Decision103_* (issue 21).
// 1796265732847848750: rule (8) after the heal: n3's verify call to n2 failed with "Too many
//   pings" (n2's server closed the quiet connection at its third keepalive ping). Decision
//   113; ClusterTest.R13_AQuietLinkStaysUpWhileItsChannelPings.
INSTANTIATE_TEST_SUITE_P(
    Seeds, RandomScheduleTest,
    ::testing::Values(1, 2, 3, 4, 5, uint64_t{1796127316251673017u}, uint64_t{1796127829290826512u},
                      uint64_t{1796158924919796323u}, uint64_t{1796171581406606060u},
                      uint64_t{1796173840447304457u}, uint64_t{1796265732847848750u}));

}  // namespace
}  // namespace cairn::harness
