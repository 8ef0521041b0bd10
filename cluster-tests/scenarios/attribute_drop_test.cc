// Attribute drops converge across real processes (SPEC C15, design 0010): the issue's
// reproduction with a node added later, concurrent drops of one attribute, a drop racing a
// peer's drop of the table, and a crash at each step of a strip.
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cluster-tests/harness/ops.h"
#include "cluster-tests/harness/scenario.h"
#include "common/fault.h"
#include "common/fault_points.h"

namespace cairn::harness {
namespace {

using nlohmann::json;

// Records {id: "p<i>", x: "x<i>", y: `y`} for i in [from, to).
json People(int from, int to, const std::string& y) {
  json out = json::array();
  for (int i = from; i < to; ++i) {
    out.push_back({{"id", absl::StrCat("p", i)}, {"x", absl::StrCat("x", i)}, {"y", y}});
  }
  return out;
}

json DropY(const std::string& db = "app", const std::string& table = "people") {
  return {{"operation", "drop_attribute"}, {"database", db}, {"table", table}, {"attribute", "y"}};
}

// Everything one node says of app.people and its y: whether y is an attribute, the marker's
// stamp in dropped_attributes (0: none), how many stored rows hold y, how many a search finds.
struct YState {
  bool attribute = false;
  uint64_t marker = 0;
  int rows_holding = 0;
  int found = 0;
};

absl::StatusOr<YState> ReadY(Cluster& c, const std::string& node) {
  YState out;
  CAIRN_ASSIGN_OR_RETURN(json d, c.Ok(node, ops::DescribeTable("app", "people")));
  for (const json& a : d["attributes"]) out.attribute = out.attribute || a["attribute"] == "y";
  for (const json& m : d.value("dropped_attributes", json::array())) {
    if (m["name"] == "y") out.marker = m["dropped_hlc"].get<uint64_t>();
  }
  CAIRN_ASSIGN_OR_RETURN(
      json rows,
      c.Ok(node, {{"operation", "read_rows"}, {"database", "app"}, {"table", "people"}}));
  for (const json& r : rows["rows"]) {
    if (r["record"].is_object() && r["record"].contains("y")) ++out.rows_holding;
  }
  HttpAnswer found = c.Op(node, {{"operation", "search_by_value"},
                                 {"database", "app"},
                                 {"table", "people"},
                                 {"attribute", "y"},
                                 {"value", "*"}});
  if (found.status == 200 && found.json.is_array()) out.found = static_cast<int>(found.json.size());
  return out;
}

// Every running node: y is gone with the same marker, no row holds it, no search finds it.
absl::Status WaitYGone(Cluster& c) {
  return Cluster::WaitFor(
      "y gone everywhere",
      [&]() -> absl::Status {
        uint64_t marker = 0;
        for (const std::string& n : c.running()) {
          CAIRN_ASSIGN_OR_RETURN(YState y, ReadY(c, n));
          if (y.attribute || y.marker == 0 || y.rows_holding > 0 || y.found > 0) {
            return absl::FailedPreconditionError(
                absl::StrCat(n, ": attribute ", y.attribute, ", marker ", y.marker, ", ",
                             y.rows_holding, " rows hold y, ", y.found, " found"));
          }
          if (marker != 0 && y.marker != marker) {
            return absl::FailedPreconditionError(absl::StrCat(n, " holds another marker"));
          }
          marker = y.marker;
        }
        return absl::OkStatus();
      },
      absl::Seconds(60));
}

class AttributeDropTest : public ScenarioTest {
 protected:
  void SetUpPeople(int rows) {
    ASSERT_OK(StartCluster());
    ASSERT_OK(cluster().Ok(
        "n1", ops::CreateTable("app", "people", {{"id", "ID"}, {"x", "String"}, {"y", "String"}})));
    ASSERT_OK(cluster().Ok("n1", ops::Upsert("app", "people", People(0, rows, "secret"))));
    ASSERT_OK(cluster().WaitConverged());
  }
};

// C15, the reproduction between processes: after n1 drops y, no node — and no node
// added later — holds or finds y; the checker finds every body and version equal.
TEST_F(AttributeDropTest, C15_ADropReachesEveryNodeAndANodeAddedLater) {
  ASSERT_NO_FATAL_FAILURE(SetUpPeople(300));
  ASSERT_OK(cluster().Ok("n1", DropY()));
  ASSERT_OK(WaitYGone(cluster()));
  ASSERT_OK(cluster().WaitConverged());
  ASSERT_OK(cluster().Add("n4"));
  ASSERT_OK(cluster().WaitConverged());
  ASSERT_OK(WaitYGone(cluster()));
}

// C15: the same attribute dropped on two nodes at once, and a drop of an attribute racing a
// peer's drop of its table. Both converge: one marker (the later) everywhere; the table gone
// everywhere, its marker and the attribute marker kept, and a new table of the name starts
// with every attribute and no old value.
TEST_F(AttributeDropTest, C15_ConcurrentDropsConverge) {
  ASSERT_NO_FATAL_FAILURE(SetUpPeople(300));
  {
    Workers drops;
    for (const std::string n : {"n1", "n2"}) {
      drops.Run([&, n](const std::atomic<bool>&) {
        HttpAnswer a = cluster().Op(n, DropY());
        // One may find y already gone here (the other's marker came first).
        EXPECT_TRUE(a.status == 200 || a.error_code() == "UNKNOWN_ATTRIBUTE")
            << n << ": " << a.body;
      });
    }
  }
  ASSERT_OK(WaitYGone(cluster()));
  ASSERT_OK(cluster().WaitConverged());

  // y of another table, dropped on n1 while n3 drops the table.
  ASSERT_OK(cluster().Ok(
      "n1", ops::CreateTable("app", "other", {{"id", "ID"}, {"x", "String"}, {"y", "String"}})));
  ASSERT_OK(cluster().Ok("n1", ops::Upsert("app", "other", People(0, 200, "secret"))));
  ASSERT_OK(cluster().WaitConverged());
  {
    Workers both;
    both.Run([&](const std::atomic<bool>&) {
      HttpAnswer a = cluster().Op("n1", DropY("app", "other"));
      EXPECT_TRUE(a.status == 200 || a.error_code() == "TABLE_NOT_FOUND" ||
                  a.error_code() == "TABLE_DROPPING")
          << a.body;
    });
    both.Run([&](const std::atomic<bool>&) {
      EXPECT_OK(cluster().Ok("n3", ops::DropTable("app", "other")));
    });
  }
  ASSERT_OK(cluster().WaitConverged());
  for (const std::string& n : cluster().names()) {
    CAIRN_ASSIGN_OR_FAIL(bool has, ops::HasTable(cluster(), n, "app", "other"));
    EXPECT_FALSE(has) << n;
  }
  ASSERT_OK(cluster().Ok(
      "n2", ops::CreateTable("app", "other", {{"id", "ID"}, {"x", "String"}, {"y", "String"}})));
  ASSERT_OK(cluster().Ok("n2", ops::Upsert("app", "other", People(0, 10, "fresh"))));
  ASSERT_OK(cluster().WaitConverged());
  for (const std::string& n : cluster().names()) {
    HttpAnswer found = cluster().Op(n, {{"operation", "search_by_value"},
                                        {"database", "app"},
                                        {"table", "other"},
                                        {"attribute", "y"},
                                        {"value", "fresh"}});
    ASSERT_EQ(found.status, 200) << n << ": " << found.body;
    EXPECT_EQ(found.json.size(), 10u) << n;
  }
}

// C15 crash table (design 0010): a node crashes at a step of a strip — its own drop's, after
// the catalog batch or at a chunk; a peer's marker, before it is applied or at a chunk of the
// background strip — and after a restart every node converges with y gone.
struct CrashCase {
  const char* point;
  const char* crashing;  // the node armed
  const char* dropping;  // the node asked to drop y
};

void PrintTo(const CrashCase& k, std::ostream* os) {
  *os << k.point << " on " << k.crashing << ", drop on " << k.dropping;
}

class AttributeDropCrashTest : public AttributeDropTest,
                               public ::testing::WithParamInterface<CrashCase> {};

TEST_P(AttributeDropCrashTest, C15_ACrashAtAStripStepConvergesAfterARestart) {
  const CrashCase& k = GetParam();
  ASSERT_NO_FATAL_FAILURE(SetUpPeople(1000));
  ASSERT_OK(cluster().SetFault(k.crashing, absl::StrCat(k.point, "=crash")));
  // The node asked answers once the drop is durable, its strip running in the background:
  // its own crash may come before or after the answer.
  HttpAnswer a = cluster().Op(k.dropping, DropY());
  if (std::string(k.crashing) != k.dropping) {
    EXPECT_EQ(a.status, 200) << a.body;
  }
  CAIRN_ASSIGN_OR_FAIL(int code, cluster().WaitExit(k.crashing, absl::Seconds(60)));
  EXPECT_EQ(code, kInjectedCrashExitCode);
  ASSERT_OK(cluster().Restart(k.crashing));
  ASSERT_OK(WaitYGone(cluster()));
  ASSERT_OK(cluster().WaitConverged());
}

INSTANTIATE_TEST_SUITE_P(
    Points, AttributeDropCrashTest,
    ::testing::Values(CrashCase{fault_points::kStripAfterCatalog, "n2", "n2"},
                      CrashCase{fault_points::kStripChunk, "n2", "n2"},
                      CrashCase{fault_points::kReplSchemaBeforeMarker, "n2", "n1"},
                      CrashCase{fault_points::kStripChunk, "n2", "n1"}),
    [](const ::testing::TestParamInfo<CrashCase>& info) {
      std::string name = absl::StrCat(
          info.param.point, "_", info.param.crashing,
          info.param.crashing == std::string(info.param.dropping) ? "_own_drop" : "_peer_marker");
      for (char& ch : name) {
        if (ch == '.') ch = '_';
      }
      return name;
    });

}  // namespace
}  // namespace cairn::harness
