// Scenario 12: placement under load (issue 44, design 0013). Five nodes, a database on two of
// them and one on three; writers on every node all through the run, so non-members forward
// (P4); a member killed under load and started again; then a member added to one database and
// one removed from the other (P6, P7, P8). After the heal the model holds on every database's
// members (P9) and no other node holds a row of it, read from storage (rule 10, P3).
#include <atomic>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "cluster-tests/harness/model.h"
#include "cluster-tests/harness/ops.h"
#include "cluster-tests/harness/scenario.h"
#include "gmock/gmock.h"

namespace cairn::harness {
namespace {

using nlohmann::json;

class PlacementScenarioTest : public ScenarioTest {
 protected:
  // Sends `op` to `node` until it answers 200: a placement adds only members linked to the
  // node that takes it (P3), and links come up a moment after the nodes do.
  absl::Status Place(const std::string& node, const json& op) {
    return Cluster::WaitFor(op.dump(),
                            [&]() -> absl::Status { return cluster().Ok(node, op).status(); });
  }

  // Waits until every running node sees `db` placed on exactly `members`, each ready (P7).
  absl::Status WaitPlaced(const std::string& db, const json& members) {
    return Cluster::WaitFor(
        absl::StrCat(db, " placed on ready ", members.dump()), [&]() -> absl::Status {
          for (const std::string& n : cluster().running()) {
            CAIRN_ASSIGN_OR_RETURN(
                json d, cluster().Ok(n, {{"operation", "describe_database"}, {"database", db}}));
            const json p = d.value("__placement__", json::object());
            if (p.value("members", json()) != members ||
                !p.value("catching_up", json::array()).empty()) {
              return absl::UnavailableError(absl::StrCat(n, " places it ", p.dump()));
            }
          }
          return absl::OkStatus();
        });
  }
};

// The acceptance scenario of issue 44.
TEST_F(PlacementScenarioTest, Issue44_FiveNodesPlaceTwoAndThreeCopiesUnderLoad) {
  ClusterOptions options;
  options.names = {"n1", "n2", "n3", "n4", "n5"};
  ASSERT_OK(StartCluster(options));
  Cluster& c = cluster();
  ASSERT_OK(Place(
      "n1", {{"operation", "create_database"}, {"database", "pairs"}, {"replicas", {"n1", "n2"}}}));
  ASSERT_OK(Place("n1", {{"operation", "create_database"},
                         {"database", "triples"},
                         {"replicas", {"n2", "n3", "n4"}}}));
  for (const char* db : {"pairs", "triples"}) {
    ASSERT_OK(c.Ok("n5", ops::CreateTable(db, "t", {{"id", "ID"}, {"name", "String"}})));
  }
  ASSERT_OK(c.WaitConverged());

  // Writers on every node, n3's endpoint left alone while it is down; one in four writes asks
  // for a confirmation (P10). Every answer goes to the model; the codes are counted.
  Model model;
  std::map<std::string, OpsEndpoint> endpoints;
  for (const std::string& n : c.names()) endpoints.emplace(n, c.node(n).endpoint());
  std::atomic<bool> n3_down{false};
  std::atomic<int> acked{0};
  absl::Mutex codes_mu;
  std::map<std::string, int> codes;  // error code (or status) -> answers
  Workers load;
  for (int w = 0; w < 3; ++w) {
    load.Run([&, w](const std::atomic<bool>& stopping) {
      std::mt19937_64 rng(seed() + 1 + w);
      const std::vector<std::string> dbs = {"pairs", "triples"};
      for (int i = 0; !stopping.load(); ++i) {
        std::string to = absl::StrCat("n", 1 + rng() % 5);
        if (to == "n3" && n3_down.load()) to = "n5";
        json records = json::array();
        for (int r = 0; r < 4; ++r) {
          const std::string key =
              r == 0 ? absl::StrCat("w", w, "-", i) : absl::StrCat("k", rng() % 50);
          records.push_back({{"id", key}, {"name", absl::StrCat(to, "-", w, "-", i, "-", r)}});
        }
        json op = ops::Upsert(dbs[rng() % dbs.size()], "t", records);
        if (rng() % 4 == 0) op["replicated_confirmation"] = 1;
        const Model::Ticket ticket = model.Issue();
        HttpAnswer a = endpoints.at(to).Post(op, absl::Seconds(10));
        model.Answered(op, ticket, a);
        if (a.status == 200) ++acked;
        absl::MutexLock lock(&codes_mu);
        ++codes[a.status == 200 ? "200" : absl::StrCat(a.status, " ", a.error_code())];
      }
    });
  }
  auto more_writes = [&](int n) {
    const int until = acked.load() + n;
    return Cluster::WaitFor(absl::StrCat(n, " more acknowledged writes"), [&]() -> absl::Status {
      if (acked.load() >= until) return absl::OkStatus();
      return absl::UnavailableError(absl::StrCat(acked.load(), " of ", until));
    });
  };
  ASSERT_OK(more_writes(200));

  // A member of triples killed under load: the other two serve it, and nodes that forward
  // skip the dead one (P4).
  n3_down = true;
  c.Kill("n3");
  ASSERT_OK(more_writes(200));
  // A non-member writes, and reads back, through the members that are up.
  const json by_n5 = ops::Upsert("triples", "t", json::array({{{"id", "by-n5"}, {"name", "x"}}}));
  const Model::Ticket ticket = model.Issue();
  const HttpAnswer written = c.Op("n5", by_n5);
  model.Answered(by_n5, ticket, written);
  ASSERT_EQ(written.status, 200) << written.body;
  CAIRN_ASSIGN_OR_FAIL(auto keys, ops::Keys(c, "n5", "triples", "t"));
  EXPECT_EQ(keys.count("by-n5"), 1u);
  ASSERT_OK(c.Restart("n3"));
  n3_down = false;
  ASSERT_OK(more_writes(100));

  // A member added to pairs (n5 copies it and serves it once caught up, P7), and one removed
  // from triples (n2 lets go once the others hold everything it holds, P8), under load.
  ASSERT_OK(Place(
      "n1",
      {{"operation", "alter_database"}, {"database", "pairs"}, {"replicas", {"n1", "n2", "n5"}}}));
  ASSERT_OK(Place(
      "n3",
      {{"operation", "alter_database"}, {"database", "triples"}, {"replicas", {"n3", "n4"}}}));
  ASSERT_OK(more_writes(200));
  ASSERT_OK(WaitPlaced("pairs", {"n1", "n2", "n5"}));
  ASSERT_OK(WaitPlaced("triples", {"n3", "n4"}));
  load.Stop();
  {
    absl::MutexLock lock(&codes_mu);
    std::cerr << "answers:";
    for (const auto& [code, n] : codes) std::cerr << " " << code << " x" << n;
    std::cerr << "\n";
    // Only a node killed mid-request (no answer) or a forward cut by the kill (P5: 503) may
    // fail a write; nothing is refused or fails inside.
    for (const auto& [code, n] : codes) {
      EXPECT_TRUE(code == "200" || code == "0 " || code.rfind("503", 0) == 0 ||
                  code == "504 CONFIRMATION_TIMEOUT")
          << code << " x" << n;
    }
  }

  ASSERT_OK(c.WaitConverged());
  std::cerr << "model: " << model.Summary() << "\n";
  EXPECT_OK(Cluster::WaitFor(
      "the model", [&] { return model.Check(c); }, absl::Seconds(60)));
  EXPECT_OK(model.CheckVerify(c));
  // Rule (10) read each node's storage (read_rows); say it here too, by name.
  for (const auto& [node, db] :
       {std::pair("n2", "triples"), {"n3", "pairs"}, {"n4", "pairs"}, {"n1", "triples"}}) {
    CAIRN_ASSIGN_OR_FAIL(
        json rows, c.Ok(node, {{"operation", "read_rows"}, {"database", db}, {"table", "t"}}));
    EXPECT_EQ(rows["rows"].size(), 0u) << node << " holds rows of " << db;
  }
}

// `cairn verify` of every database on a node that holds none of a placed database's rows:
// the placement entry of describe_all is no table, and each of the database's tables is
// verified on a member (forwarded, P4), among the members only (P3).
TEST_F(PlacementScenarioTest, P3_CliVerifyOfEveryDatabaseOnANonMember) {
  ASSERT_OK(StartCluster());
  Cluster& c = cluster();
  ASSERT_OK(Place(
      "n1",
      {{"operation", "create_database"}, {"database", "placed"}, {"replicas", {"n2", "n3"}}}));
  ASSERT_OK(c.Ok("n1", ops::CreateTable("placed", "t")));
  ASSERT_OK(c.Ok("n1", ops::Upsert("placed", "t", ops::Rows("p", 20))));
  ASSERT_OK(c.WaitConverged());
  // Until the members link with each other for verify, the member answers with an error.
  ASSERT_OK(Cluster::WaitFor("a verify on a member", [&]() -> absl::Status {
    CAIRN_ASSIGN_OR_RETURN(json v, c.Ok("n1", {{"operation", "verify"}, {"database", "placed"}}));
    if (v.value("in_sync", false) && v["peers"].size() == 1) return absl::OkStatus();
    return absl::UnavailableError(v.dump());
  }));
  const auto [rc, printed] = ops::RunCli(c.node("n1").endpoint(), "verify", c.dir() + "/cli.out");
  EXPECT_EQ(rc, 0) << printed;
  EXPECT_THAT(printed, ::testing::HasSubstr("placed.t"));
  EXPECT_THAT(printed, ::testing::HasSubstr("20 rows compared, 0 repaired"));
  EXPECT_THAT(printed, ::testing::Not(::testing::HasSubstr("__placement__")));
}

}  // namespace
}  // namespace cairn::harness
