// Users and roles across real nodes (SPEC U6): made on one node, they log in and are enforced
// on the others; changed while a node is cut off, they converge once it is back; dropped
// while a node is down, they never come back; altered on every node at once, they end as one.
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "cluster-tests/harness/ops.h"
#include "cluster-tests/harness/scenario.h"

namespace cairn::harness {
namespace {

using nlohmann::json;

std::string Basic(const std::string& user, const std::string& password) {
  return "Basic " + absl::Base64Escape(user + ":" + password);
}

json Reader(bool insert) {
  return {{"shop",
           {{"tables",
             {{"items",
               {{"read", true},
                {"insert", insert},
                {"update", false},
                {"delete", false},
                {"attribute_permissions", json::array()}}}}}}}};
}

class UsersScenarioTest : public ScenarioTest {
 protected:
  // shop.items on every node, and role `app` (read only) with user `ann` made on n1.
  void SetUpUsers() {
    ASSERT_OK(StartCluster());
    Cluster& c = cluster();
    ASSERT_OK(Cluster::WaitFor("links up", [&] { return c.LinksSettled(); }));
    ASSERT_OK(
        c.Ok("n1", ops::CreateTable("shop", "items", {{"id", "ID"}, {"name", "String"}})).status());
    ASSERT_OK(
        c.Ok("n1", {{"operation", "add_role"}, {"role", "app"}, {"permission", Reader(false)}})
            .status());
    ASSERT_OK(c.Ok("n1", {{"operation", "add_user"},
                          {"username", "ann"},
                          {"password", "pw-ann"},
                          {"role", "app"},
                          {"active", true}})
                  .status());
  }
  HttpAnswer AsAnn(const std::string& node, const json& op) {
    return cluster().node(node).PostRaw(op.dump(), true, Basic("ann", "pw-ann"));
  }
  json Insert(const std::string& id) {
    return ops::Upsert("shop", "items", json::array({{{"id", id}, {"name", id}}}));
  }
  // Waits until ann's insert on `node` answers `status`.
  absl::Status InsertAnswers(const std::string& node, int status) {
    return Cluster::WaitFor(absl::StrCat("ann's insert on ", node, " answers ", status),
                            [&]() -> absl::Status {
                              json insert = {{"operation", "insert"},
                                             {"database", "shop"},
                                             {"table", "items"},
                                             {"records", {{{"id", "probe"}, {"name", "x"}}}}};
                              HttpAnswer a = AsAnn(node, insert);
                              if (a.status == status) return absl::OkStatus();
                              return absl::UnavailableError(absl::StrCat(a.status, " ", a.body));
                            });
  }
  // The roles every node lists, equal on all of them.
  absl::Status RolesConverged() {
    return Cluster::WaitFor("roles converged", [&]() -> absl::Status {
      json first;
      for (const std::string& n : cluster().names()) {
        CAIRN_ASSIGN_OR_RETURN(json roles, cluster().Ok(n, {{"operation", "list_roles"}}));
        for (json& r : roles) r.erase("__createdtime__");
        if (first.is_null()) {
          first = roles;
        } else if (roles != first) {
          return absl::UnavailableError(
              absl::StrCat(n, " lists ", roles.dump(), " not ", first.dump()));
        }
      }
      return absl::OkStatus();
    });
  }
};

TEST_F(UsersScenarioTest, U6_AUserMadeOnOneNodeLogsInAndIsEnforcedOnEvery) {
  ASSERT_NO_FATAL_FAILURE(SetUpUsers());
  Cluster& c = cluster();
  for (const std::string& n : c.names()) {
    ASSERT_OK(Cluster::WaitFor(absl::StrCat("ann logs in on ", n), [&]() -> absl::Status {
      HttpAnswer a = AsAnn(n, {{"operation", "user_info"}});
      if (a.status == 200 && a.json.value("username", "") == "ann") return absl::OkStatus();
      return absl::UnavailableError(absl::StrCat(a.status, " ", a.body));
    }));
    // Enforced there: she reads, and may not write or administer.
    HttpAnswer read = AsAnn(n, {{"operation", "search_by_value"},
                                {"database", "shop"},
                                {"table", "items"},
                                {"attribute", "id"},
                                {"value", "*"},
                                {"get_attributes", {"*"}}});
    EXPECT_EQ(read.status, 200) << n << ": " << read.body;
    EXPECT_EQ(AsAnn(n, Insert("x")).status, 403) << n;
    EXPECT_EQ(AsAnn(n, {{"operation", "cluster_status"}}).status, 403) << n;
  }
  // A token issued on n1 works on n3 (the signing key is the cluster's).
  HttpAnswer tokens = AsAnn("n1", {{"operation", "create_authentication_tokens"}});
  ASSERT_EQ(tokens.status, 200) << tokens.body;
  const std::string bearer = "Bearer " + tokens.json["operation_token"].get<std::string>();
  ASSERT_OK(Cluster::WaitFor("n1's token accepted on n3", [&]() -> absl::Status {
    HttpAnswer a = c.node("n3").PostRaw(json{{"operation", "user_info"}}.dump(), true, bearer);
    if (a.status == 200) return absl::OkStatus();
    return absl::UnavailableError(absl::StrCat(a.status, " ", a.body));
  }));
  // Granting insert on n2 opens it on n3.
  ASSERT_OK(c.Ok("n2", {{"operation", "alter_role"}, {"id", "app"}, {"permission", Reader(true)}})
                .status());
  ASSERT_OK(InsertAnswers("n3", 200));
  EXPECT_OK(c.WaitConverged());
}

TEST_F(UsersScenarioTest, U6_ARoleAlteredWhileANodeIsCutOffConvergesAfterTheHeal) {
  ASSERT_NO_FATAL_FAILURE(SetUpUsers());
  Cluster& c = cluster();
  ASSERT_OK(InsertAnswers("n3", 403));
  ASSERT_OK(c.Cut("n3", "n1"));
  ASSERT_OK(c.Cut("n3", "n2"));
  ASSERT_OK(c.Ok("n2", {{"operation", "alter_role"}, {"id", "app"}, {"permission", Reader(true)}})
                .status());
  ASSERT_OK(InsertAnswers("n1", 200));
  EXPECT_EQ(AsAnn("n3", Insert("cut")).status, 403) << "n3 is cut off: still the old role";
  ASSERT_OK(c.Heal());
  ASSERT_OK(InsertAnswers("n3", 200));
  EXPECT_OK(RolesConverged());
  EXPECT_OK(c.WaitConverged());
}

TEST_F(UsersScenarioTest, U6_AUserDroppedWhileANodeIsDownNeverComesBack) {
  ASSERT_NO_FATAL_FAILURE(SetUpUsers());
  Cluster& c = cluster();
  ASSERT_OK(InsertAnswers("n3", 403));  // n3 holds ann
  EXPECT_EQ(c.Stop("n3"), 0);
  ASSERT_OK(c.Ok("n1", {{"operation", "drop_user"}, {"username", "ann"}}).status());
  ASSERT_OK(c.Restart("n3"));
  ASSERT_OK(c.WaitConverged());
  for (const std::string& n : c.names()) {
    ASSERT_OK(Cluster::WaitFor(absl::StrCat("ann refused on ", n), [&]() -> absl::Status {
      HttpAnswer a = AsAnn(n, {{"operation", "user_info"}});
      if (a.status == 401) return absl::OkStatus();
      return absl::UnavailableError(absl::StrCat(a.status, " ", a.body));
    }));
    absl::StatusOr<json> users = c.Ok(n, {{"operation", "list_users"}});
    ASSERT_OK(users.status());
    for (const json& u : *users) EXPECT_NE(u["username"], "ann") << n << " brought ann back";
  }
}

TEST_F(UsersScenarioTest, U6_ConcurrentAltersOfOneRoleConvergeToOneValue) {
  ASSERT_NO_FATAL_FAILURE(SetUpUsers());
  Cluster& c = cluster();
  ASSERT_OK(RolesConverged());
  ASSERT_OK(c.Cut("n1", "n2"));
  ASSERT_OK(c.Cut("n1", "n3"));
  ASSERT_OK(c.Cut("n2", "n3"));
  int i = 0;
  for (const std::string& n : c.names()) {
    json permission = Reader(++i % 2 == 0);
    permission["structure_user"] = json::array({"shop"});
    if (i == 3) permission.erase("structure_user");
    ASSERT_OK(
        c.Ok(n, {{"operation", "alter_role"}, {"id", "app"}, {"permission", permission}}).status());
  }
  ASSERT_OK(c.Heal());
  EXPECT_OK(RolesConverged());
  EXPECT_OK(c.WaitConverged());
}

}  // namespace
}  // namespace cairn::harness
