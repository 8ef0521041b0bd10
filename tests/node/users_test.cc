// Users, roles and tokens end to end (SPEC §7): a real cairnd driven over HTTP with Harper's
// role, user and token cases (their shapes and messages, as Harper's own suites assert them),
// enforcement of a role on every kind of operation (U4), credentials (U5), the bootstrap admin
// (U1), the last super user (U7) and the audit (U8).
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cluster-tests/harness/cairnd_process.h"
#include "gmock/gmock.h"
#include "tests/testing/testing.h"

namespace cairn::testing {
namespace {

using ::cairn::harness::CairndOptions;
using ::cairn::harness::CairndProcess;
using ::cairn::harness::HttpAnswer;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kRefused[] =
    "This operation is not authorized due to role restrictions and/or invalid database items";

std::string Basic(const std::string& user, const std::string& password) {
  return "Basic " + absl::Base64Escape(user + ":" + password);
}

class UsersTest : public ::testing::Test {
 protected:
  void SetUp() override { StartNode(); }

  void StartNode(std::string password = "test-password") {
    CairndOptions o;
    o.data_dir = dir_.Sub("n1");
    o.password = std::move(password);
    auto node = CairndProcess::Start(o);
    ASSERT_OK(node);
    node_ = std::move(*node);
  }
  void Restart(std::string password) {
    ASSERT_EQ(node_->Stop(SIGTERM), 0);
    node_.reset();
    StartNode(std::move(password));
  }

  // As the admin.
  HttpAnswer Admin(const json& op) { return node_->Post(op); }
  json Ok(const json& op) {
    HttpAnswer a = Admin(op);
    EXPECT_EQ(a.status, 200) << op.dump() << " -> " << a.body;
    return a.json;
  }
  // With this Authorization header.
  HttpAnswer As(const std::string& authorization, const json& op) {
    return node_->PostRaw(op.dump(), true, authorization);
  }
  HttpAnswer AsUser(const std::string& user, const json& op) {
    return As(Basic(user, "pw-" + user), op);
  }
  void ExpectError(const HttpAnswer& a, int status, const std::string& code,
                   const std::string& mention = "") {
    EXPECT_EQ(a.status, status) << a.body;
    EXPECT_EQ(a.error_code(), code) << a.body;
    if (a.json.is_object() && a.json.contains("error")) {
      EXPECT_THAT(a.json["error"].get<std::string>(), HasSubstr(mention)) << a.body;
    } else {
      ADD_FAILURE() << "no error member: " << a.body;
    }
  }
  // A 403 in Harper's shape.
  static void ExpectRefused(const HttpAnswer& a) {
    EXPECT_EQ(a.status, 403) << a.body;
    EXPECT_EQ(a.error_code(), "FORBIDDEN") << a.body;
    ASSERT_TRUE(a.json.is_object()) << a.body;
    EXPECT_EQ(a.json.value("error", ""), kRefused) << a.body;
    EXPECT_TRUE(a.json.contains("unauthorized_access")) << a.body;
    EXPECT_TRUE(a.json.contains("invalid_schema_items")) << a.body;
  }

  // dev.dog {id, name (indexed), age} with three dogs, dev.cat (dynamic), prod.secret.
  void MakeWorld() {
    Ok({{"operation", "create_table"},
        {"database", "dev"},
        {"table", "dog"},
        {"primary_key", "id"},
        {"attributes",
         {{{"name", "id"}, {"type", "ID"}},
          {{"name", "name"}, {"type", "String"}, {"indexed", true}},
          {{"name", "age"}, {"type", "Int"}}}}});
    Ok({{"operation", "insert"},
        {"database", "dev"},
        {"table", "dog"},
        {"records",
         {{{"id", 1}, {"name", "Penny"}, {"age", 5}},
          {{"id", 2}, {"name", "Harper"}, {"age", 3}},
          {{"id", 3}, {"name", "Alby"}, {"age", 8}}}}});
    Ok({{"operation", "create_table"},
        {"database", "dev"},
        {"table", "cat"},
        {"primary_key", "id"}});
    Ok({{"operation", "create_table"},
        {"database", "prod"},
        {"table", "secret"},
        {"primary_key", "id"}});
  }
  static json TablePerm(bool read, bool insert, bool update, bool remove,
                        json attributes = json::array()) {
    return {{"read", read},
            {"insert", insert},
            {"update", update},
            {"delete", remove},
            {"attribute_permissions", std::move(attributes)}};
  }
  static json AttributePerm(const std::string& name, bool read, bool insert, bool update) {
    return {{"attribute_name", name}, {"read", read}, {"insert", insert}, {"update", update}};
  }
  void AddRole(const std::string& role, const json& permission) {
    Ok({{"operation", "add_role"}, {"role", role}, {"permission", permission}});
  }
  void AddUser(const std::string& user, const std::string& role, bool active = true) {
    Ok({{"operation", "add_user"},
        {"username", user},
        {"password", "pw-" + user},
        {"role", role},
        {"active", active}});
  }

  TempDir dir_;
  std::unique_ptr<CairndProcess> node_;
};

// ---- Harper's role cases (U2, U3).

TEST_F(UsersTest, U2_AddRoleAnswersTheRoleAndRefusesADuplicate) {
  MakeWorld();
  const json permission = {{"dev", {{"tables", {{"dog", TablePerm(true, false, false, false)}}}}}};
  json role = Ok({{"operation", "add_role"}, {"role", "developer"}, {"permission", permission}});
  EXPECT_EQ(role["role"], "developer");
  EXPECT_EQ(role["id"], "developer");  // the id defaults to the name
  EXPECT_EQ(role["permission"], permission);
  EXPECT_TRUE(role.contains("__createdtime__"));
  ExpectError(Admin({{"operation", "add_role"}, {"role", "developer"}, {"permission", permission}}),
              409, "ROLE_EXISTS", "A role with name 'developer' already exists");
  json roles = Ok({{"operation", "list_roles"}});
  ASSERT_TRUE(roles.is_array());
  bool found = false;
  for (const json& r : roles)
    found = found || (r["id"] == "developer" && r["permission"] == permission);
  EXPECT_TRUE(found) << roles.dump();
}

TEST_F(UsersTest, U3_ARoleNamingWhatDoesNotExistIsRefusedInHarpersShape) {
  MakeWorld();
  HttpAnswer a = Admin(
      {{"operation", "add_role"},
       {"role", "bad"},
       {"colour", "blue"},
       {"permission",
        {{"crapschema", {{"tables", json::object()}}},
         {"dev",
          {{"tables",
            {{"craptable", TablePerm(true, true, true, true)},
             {"dog",
              TablePerm(true, true, true, true,
                        json::array({AttributePerm("crapattribute", true, true, true)}))}}}}}}}});
  ExpectError(a, 400, "INVALID_PERMISSIONS", "Errors in the role permissions JSON provided");
  EXPECT_THAT(a.json["main_permissions"], ElementsAre("Invalid key in JSON body - 'colour'",
                                                      "database 'crapschema' does not exist",
                                                      "Table 'dev.craptable' does not exist"));
  EXPECT_THAT(a.json["schema_permissions"]["dev_dog"],
              ElementsAre("Invalid attribute 'crapattribute' in 'attribute_permissions'"));
  ExpectError(Admin({{"operation", "add_role"},
                     {"role", "su"},
                     {"permission", {{"super_user", true}, {"structure_user", true}}}}),
              400, "INVALID_PERMISSIONS");
  EXPECT_EQ(Ok({{"operation", "list_roles"}}).size(), 1u) << "only the admin's role";
}

TEST_F(UsersTest, U2_AlterAndDropRole) {
  MakeWorld();
  AddRole("dev_role", {{"structure_user", false}});
  json altered = Ok({{"operation", "alter_role"},
                     {"id", "dev_role"},
                     {"role", "user_role_update"},
                     {"permission", {{"structure_user", true}}}});
  EXPECT_EQ(altered["id"], "dev_role");
  EXPECT_EQ(altered["role"], "user_role_update");
  EXPECT_EQ(altered["permission"], (json{{"structure_user", true}}));
  ExpectError(Admin({{"operation", "alter_role"}, {"id", "nope"}, {"permission", json::object()}}),
              404, "ROLE_NOT_FOUND", "Invalid role id");
  AddUser("ann", "user_role_update");
  ExpectError(Admin({{"operation", "drop_role"}, {"id", "dev_role"}}), 409, "ROLE_IN_USE",
              "Cannot drop role user_role_update as it has active user(s) tied to this role");
  Ok({{"operation", "alter_user"}, {"username", "ann"}, {"active", false}});
  EXPECT_EQ(Ok({{"operation", "drop_role"}, {"id", "dev_role"}})["message"],
            "user_role_update successfully deleted");
  ExpectError(Admin({{"operation", "drop_role"}, {"id", "dev_role"}}), 404, "ROLE_NOT_FOUND",
              "Role not found");
}

// ---- Harper's user cases (U2).

TEST_F(UsersTest, U2_AddListAlterAndDropUsers) {
  AddRole("reader", {{"super_user", false}});
  EXPECT_EQ(Ok({{"operation", "add_user"},
                {"username", "ann"},
                {"password", "pw-ann"},
                {"role", "reader"},
                {"active", true}})["message"],
            "ann successfully added");
  ExpectError(Admin({{"operation", "add_user"},
                     {"username", "ann"},
                     {"password", "x"},
                     {"role", "reader"},
                     {"active", true}}),
              409, "USER_EXISTS", "User ann already exists");
  ExpectError(Admin({{"operation", "add_user"},
                     {"username", "bob"},
                     {"password", "x"},
                     {"role", "nope"},
                     {"active", true}}),
              404, "ROLE_NOT_FOUND", "nope role not found");
  ExpectError(Admin({{"operation", "add_user"}, {"username", "bob"}, {"active", "yes"}}), 400,
              "BAD_REQUEST",
              "Password can't be blank,Role can't be blank,Active must be a boolean");
  json users = Ok({{"operation", "list_users"}});
  ASSERT_EQ(users.size(), 2u) << users.dump();
  for (const json& u : users) {
    EXPECT_FALSE(u.contains("password")) << u.dump();
    EXPECT_FALSE(u.contains("password_hash")) << u.dump();
    EXPECT_FALSE(absl::StrContains(u.dump(), "argon2")) << u.dump();
    EXPECT_TRUE(u["role"].is_object()) << "the role is embedded: " << u.dump();
  }
  json altered = Ok({{"operation", "alter_user"}, {"username", "ann"}, {"password", "new"}});
  EXPECT_EQ(altered["message"], "updated 1 of 1 records");
  EXPECT_EQ(altered["update_hashes"], json::array({"ann"}));
  ExpectError(Admin({{"operation", "alter_user"}, {"username", "ann"}}), 400, "BAD_REQUEST",
              "nothing to update, must supply active, role or password to update");
  ExpectError(Admin({{"operation", "alter_user"}, {"username", "ann"}, {"role", ""}}), 400,
              "BAD_REQUEST", "If role is specified, it cannot be empty.");
  ExpectError(Admin({{"operation", "alter_user"}, {"username", "ann"}, {"role", "nope"}}), 404,
              "ROLE_NOT_FOUND", "Update failed.  Requested 'nope' role not found.");
  ExpectError(Admin({{"operation", "alter_user"}, {"username", "ghost"}, {"active", true}}), 404,
              "USER_NOT_FOUND");
  EXPECT_EQ(As(Basic("ann", "new"), {{"operation", "user_info"}}).status, 200);
  EXPECT_EQ(Ok({{"operation", "drop_user"}, {"username", "ann"}})["message"],
            "ann successfully deleted");
  ExpectError(Admin({{"operation", "drop_user"}, {"username", "ann"}}), 404, "USER_NOT_FOUND",
              "User ann does not exist");
  EXPECT_EQ(As(Basic("ann", "new"), {{"operation", "user_info"}}).status, 401);
}

TEST_F(UsersTest, U2_UserInfoShowsTheCallerWithItsRoleAndNoSecret) {
  AddRole("reader", {{"super_user", false}});
  AddUser("ann", "reader");
  HttpAnswer a = AsUser("ann", {{"operation", "user_info"}});
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.json["username"], "ann");
  EXPECT_EQ(a.json["active"], true);
  EXPECT_EQ(a.json["role"]["role"], "reader");
  EXPECT_FALSE(absl::StrContains(a.body, "argon2"));
}

// ---- U5: credentials and tokens.

TEST_F(UsersTest, U5_InactiveAndWrongCredentialsAreRefused) {
  AddRole("reader", {{"super_user", false}});
  AddUser("ann", "reader", /*active=*/false);
  ExpectError(AsUser("ann", {{"operation", "user_info"}}), 401, "UNAUTHORIZED",
              "Cannot complete request: User is inactive");
  ExpectError(As(Basic("ann", "wrong"), {{"operation", "user_info"}}), 401, "UNAUTHORIZED",
              "Login failed");
  ExpectError(As(Basic("nobody", "x"), {{"operation", "user_info"}}), 401, "UNAUTHORIZED",
              "Login failed");
}

TEST_F(UsersTest, U5_TokensAreIssuedRefreshedAndRetiredWithThePassword) {
  AddRole("reader", {{"super_user", false}});
  AddUser("ann", "reader");
  // Harper's way: the credentials in the body, no Authorization header.
  HttpAnswer a = node_->Post(
      {{"operation", "create_authentication_tokens"}, {"username", "ann"}, {"password", "pw-ann"}},
      /*auth=*/false);
  ASSERT_EQ(a.status, 200) << a.body;
  const std::string op_token = a.json["operation_token"];
  const std::string refresh = a.json["refresh_token"];
  EXPECT_EQ(As("Bearer " + op_token, {{"operation", "user_info"}}).json["username"], "ann");
  // A refresh token refreshes, and does nothing else.
  ExpectError(As("Bearer " + refresh, {{"operation", "user_info"}}), 401, "UNAUTHORIZED",
              "invalid token");
  HttpAnswer refreshed = As("Bearer " + refresh, {{"operation", "refresh_operation_token"}});
  ASSERT_EQ(refreshed.status, 200) << refreshed.body;
  const std::string op_token2 = refreshed.json["operation_token"];
  EXPECT_EQ(As("Bearer " + op_token2, {{"operation", "user_info"}}).status, 200);
  // The body's refresh_token, with any credentials.
  EXPECT_EQ(Admin({{"operation", "refresh_operation_token"}, {"refresh_token", refresh}}).status,
            200);
  // Wrong credentials, a tampered token.
  ExpectError(node_->Post({{"operation", "create_authentication_tokens"},
                           {"username", "ann"},
                           {"password", "wrong"}},
                          false),
              401, "UNAUTHORIZED", "invalid credentials");
  std::string tampered = op_token;
  tampered[tampered.size() - 2] = tampered[tampered.size() - 2] == 'A' ? 'B' : 'A';
  ExpectError(As("Bearer " + tampered, {{"operation", "user_info"}}), 401, "UNAUTHORIZED",
              "invalid token");
  // Without credentials only the token request is read.
  ExpectError(node_->Post({{"operation", "describe_all"}}, false), 401, "UNAUTHORIZED",
              "Must login");
  // A new password retires every token issued before it.
  Ok({{"operation", "alter_user"}, {"username", "ann"}, {"password", "changed"}});
  ExpectError(As("Bearer " + op_token2, {{"operation", "user_info"}}), 401, "UNAUTHORIZED",
              "invalid token");
  ExpectError(As("Bearer " + refresh, {{"operation", "refresh_operation_token"}}), 401,
              "UNAUTHORIZED", "invalid token");
}

TEST_F(UsersTest, U5_ADroppedOrDeactivatedUsersTokensStopWorking) {
  AddRole("reader", {{"super_user", false}});
  AddUser("ann", "reader");
  AddUser("bob", "reader");
  auto token_of = [&](const std::string& user) {
    HttpAnswer a = As(Basic(user, "pw-" + user), {{"operation", "create_authentication_tokens"}});
    EXPECT_EQ(a.status, 200) << a.body;
    return a.json.value("operation_token", "");
  };
  const std::string ann = token_of("ann"), bob = token_of("bob");
  Ok({{"operation", "drop_user"}, {"username", "ann"}});
  Ok({{"operation", "alter_user"}, {"username", "bob"}, {"active", false}});
  ExpectError(As("Bearer " + ann, {{"operation", "user_info"}}), 401, "UNAUTHORIZED");
  ExpectError(As("Bearer " + bob, {{"operation", "user_info"}}), 401, "UNAUTHORIZED",
              "User is inactive");
  // A re-created user is a new object: the old token is not its token.
  AddUser("ann", "reader");
  ExpectError(As("Bearer " + ann, {{"operation", "user_info"}}), 401, "UNAUTHORIZED",
              "invalid token");
}

// ---- U4: enforcement.

TEST_F(UsersTest, U4_ARoleReadsOnlyItsAttributesAndWritesNothingElse) {
  MakeWorld();
  AddRole("reader",
          {{"dev",
            {{"tables",
              {{"dog", TablePerm(true, false, false, false,
                                 json::array({AttributePerm("name", true, false, false)}))}}}}}});
  AddUser("ann", "reader");
  // "*" is what the role may read: name, and the key (U4: the union of the listed).
  HttpAnswer a = AsUser("ann", {{"operation", "search_by_value"},
                                {"database", "dev"},
                                {"table", "dog"},
                                {"attribute", "name"},
                                {"value", "*"},
                                {"get_attributes", {"*"}}});
  ASSERT_EQ(a.status, 200) << a.body;
  ASSERT_EQ(a.json.size(), 3u) << a.body;
  for (const json& dog : a.json) {
    EXPECT_TRUE(dog.contains("name")) << dog.dump();
    EXPECT_TRUE(dog.contains("id")) << dog.dump();
    EXPECT_FALSE(dog.contains("age")) << dog.dump();
  }
  // Naming or searching an attribute the role cannot see: as if it did not exist.
  a = AsUser("ann", {{"operation", "search_by_id"},
                     {"database", "dev"},
                     {"table", "dog"},
                     {"ids", {1}},
                     {"get_attributes", {"name", "age"}}});
  ExpectRefused(a);
  EXPECT_THAT(a.json["invalid_schema_items"],
              ElementsAre("Attribute 'age' does not exist on 'dev.dog'"));
  ExpectRefused(AsUser(
      "ann",
      {{"operation", "search_by_conditions"},
       {"database", "dev"},
       {"table", "dog"},
       {"conditions",
        {{{"search_attribute", "age"}, {"search_type", "greater_than"}, {"search_value", 1}}}}}));
  // No insert on the table: refused in Harper's shape, nothing written.
  a = AsUser("ann", {{"operation", "insert"},
                     {"database", "dev"},
                     {"table", "dog"},
                     {"records", {{{"id", 9}, {"name", "Rex"}}}}});
  ExpectRefused(a);
  EXPECT_EQ(a.json["unauthorized_access"][0]["required_table_permissions"],
            json::array({"insert"}));
  EXPECT_EQ(Ok({{"operation", "search_by_id"},
                {"database", "dev"},
                {"table", "dog"},
                {"ids", {9}},
                {"get_attributes", {"*"}}}),
            json::array());
  // Another table, another database: as if absent.
  a = AsUser("ann", {{"operation", "search_by_id"},
                     {"database", "prod"},
                     {"table", "secret"},
                     {"ids", {1}},
                     {"get_attributes", {"*"}}});
  ExpectRefused(a);
  EXPECT_THAT(a.json["invalid_schema_items"], ElementsAre("database 'prod' does not exist"));
  ExpectRefused(AsUser(
      "ann", {{"operation", "delete"}, {"database", "dev"}, {"table", "dog"}, {"ids", {1}}}));
}

TEST_F(UsersTest, U4_AttributeLevelWritesAndTheTimestamps) {
  MakeWorld();
  AddRole("writer", {{"dev",
                      {{"tables",
                        {{"dog", TablePerm(true, true, true, false,
                                           {AttributePerm("name", true, true, false),
                                            AttributePerm("age", true, false, true)})},
                         {"cat", TablePerm(true, true, true, false)}}}}}});
  AddUser("ann", "writer");
  // insert: name may be inserted, age may not.
  HttpAnswer a = AsUser("ann", {{"operation", "insert"},
                                {"database", "dev"},
                                {"table", "dog"},
                                {"records", {{{"id", 9}, {"name", "Rex"}, {"age", 1}}}}});
  ExpectRefused(a);
  EXPECT_EQ(a.json["unauthorized_access"][0]["required_attribute_permissions"],
            (json::array({{{"attribute_name", "age"}, {"required_permissions", {"insert"}}}})));
  EXPECT_EQ(AsUser("ann", {{"operation", "insert"},
                           {"database", "dev"},
                           {"table", "dog"},
                           {"records", {{{"id", 9}, {"name", "Rex"}}}}})
                .status,
            200);
  EXPECT_EQ(AsUser("ann", {{"operation", "update"},
                           {"database", "dev"},
                           {"table", "dog"},
                           {"records", {{{"id", 9}, {"age", 2}}}}})
                .status,
            200);
  // The timestamps are readable only, on any table.
  a = AsUser("ann", {{"operation", "upsert"},
                     {"database", "dev"},
                     {"table", "cat"},
                     {"records", {{{"id", 1}, {"__createdtime__", 5}}}}});
  EXPECT_EQ(a.status, 403) << a.body;
  EXPECT_THAT(a.json.value("error", ""), HasSubstr("Internal timestamp attributes"));
  EXPECT_EQ(AsUser("ann", {{"operation", "upsert"},
                           {"database", "dev"},
                           {"table", "cat"},
                           {"records", {{{"id", 1}, {"colour", "grey"}}}}})
                .status,
            200);
}

TEST_F(UsersTest, U4_DescribeShowsWhatTheRoleSeesAndSchemaOperationsNeedStructure) {
  MakeWorld();
  AddRole("reader",
          {{"dev",
            {{"tables",
              {{"dog", TablePerm(true, false, false, false,
                                 json::array({AttributePerm("name", true, false, false)}))}}}}}});
  AddRole("builder", {{"structure_user", json::array({"dev"})}});
  AddUser("ann", "reader");
  AddUser("bob", "builder");
  HttpAnswer a = AsUser("ann", {{"operation", "describe_all"}});
  ASSERT_EQ(a.status, 200) << a.body;
  ASSERT_TRUE(a.json.contains("dev")) << a.body;
  EXPECT_FALSE(a.json.contains("prod")) << a.body;
  EXPECT_FALSE(a.json["dev"].contains("cat")) << a.body;
  std::vector<std::string> attributes;
  for (const json& attr : a.json["dev"]["dog"]["attributes"])
    attributes.push_back(attr["attribute"]);
  EXPECT_THAT(attributes, ElementsAre("id", "name"));
  ExpectRefused(
      AsUser("ann", {{"operation", "describe_table"}, {"database", "dev"}, {"table", "cat"}}));
  ExpectRefused(AsUser("ann", {{"operation", "describe_database"}, {"database", "prod"}}));
  ExpectRefused(AsUser(
      "ann",
      {{"operation", "create_table"}, {"database", "dev"}, {"table", "x"}, {"primary_key", "id"}}));
  // A structure user of dev builds there, not elsewhere, and reads no records.
  EXPECT_EQ(AsUser("bob", {{"operation", "create_table"},
                           {"database", "dev"},
                           {"table", "x"},
                           {"primary_key", "id"}})
                .status,
            200);
  ExpectRefused(
      AsUser("bob", {{"operation", "drop_table"}, {"database", "prod"}, {"table", "secret"}}));
  ExpectRefused(AsUser("bob", {{"operation", "search_by_id"},
                               {"database", "dev"},
                               {"table", "dog"},
                               {"ids", {1}},
                               {"get_attributes", {"*"}}}));
  EXPECT_EQ(Ok({{"operation", "describe_database"}, {"database", "prod"}}).size(), 1u)
      << "prod.secret still there";
}

TEST_F(UsersTest, U4_ClusterAndUserOperationsNeedASuperUser) {
  AddRole("reader", {{"super_user", false}});
  AddUser("ann", "reader");
  HttpAnswer a = AsUser("ann", {{"operation", "list_users"}});
  ExpectRefused(a);
  EXPECT_THAT(a.json["unauthorized_access"],
              ElementsAre("Operation 'listUsersExternal' is restricted to 'super_user' roles"));
  for (const char* op : {"cluster_status", "add_role", "list_roles", "verify", "create_backup"}) {
    SCOPED_TRACE(op);
    ExpectRefused(AsUser("ann", {{"operation", op}}));
  }
  ExpectRefused(AsUser("ann", {{"operation", "add_node"}, {"name", "n9"}, {"url", "127.0.0.1:1"}}));
  ExpectRefused(AsUser("ann", {{"operation", "drop_user"}, {"username", "admin"}}));
  EXPECT_EQ(Ok({{"operation", "list_users"}}).size(), 2u) << "nothing dropped";
}

// ---- U1, U7, U8.

TEST_F(UsersTest, U1_TheFlagsMakeTheAdminOnceThenTheUsersTableDecides) {
  json users = Ok({{"operation", "list_users"}});
  ASSERT_EQ(users.size(), 1u);
  EXPECT_EQ(users[0]["username"], "admin");
  EXPECT_EQ(users[0]["role"]["permission"], (json{{"super_user", true}}));
  Ok({{"operation", "alter_user"}, {"username", "admin"}, {"password", "rotated"}});
  Restart("another-password");
  EXPECT_EQ(As(Basic("admin", "another-password"), {{"operation", "describe_all"}}).status, 401);
  EXPECT_EQ(As(Basic("admin", "rotated"), {{"operation", "describe_all"}}).status, 200);
}

TEST_F(UsersTest, U7_TheLastActiveSuperUserCannotBeDroppedOrDisabled) {
  const std::string words = "would leave the instance with no active super_user";
  ExpectError(Admin({{"operation", "drop_user"}, {"username", "admin"}}), 409, "LAST_SUPER_USER",
              words);
  ExpectError(Admin({{"operation", "alter_user"}, {"username", "admin"}, {"active", false}}), 409,
              "LAST_SUPER_USER", words);
  ExpectError(Admin({{"operation", "alter_role"},
                     {"id", "super_user"},
                     {"permission", {{"super_user", false}}}}),
              409, "LAST_SUPER_USER", words);
  EXPECT_EQ(Ok({{"operation", "describe_all"}}), json::object()) << "the admin still works";
}

TEST_F(UsersTest, U8_FailedLoginsAndRefusalsAreLoggedAndCounted) {
  AddRole("reader", {{"super_user", false}});
  AddUser("ann", "reader");
  EXPECT_EQ(As(Basic("ann", "wrong"), {{"operation", "user_info"}}).status, 401);
  ExpectRefused(AsUser("ann", {{"operation", "list_users"}}));
  ASSERT_EVENTUALLY([&] {
    const std::string log = node_->log();
    ASSERT_THAT(log, HasSubstr("failed login as 'ann' from 127.0.0.1"));
    ASSERT_THAT(log, HasSubstr("refused list_users to user ann from 127.0.0.1"));
  });
  const std::string metrics = node_->Get("/metrics").body;
  EXPECT_THAT(metrics, HasSubstr("cairn_auth_refused_operations_total 1"));
  EXPECT_THAT(metrics, HasSubstr("cairn_http_login_failures_total 1"));
}

// The least-privilege example of docs/operations.md ("Users and roles"), as written there.
TEST_F(UsersTest, U4_TheOperationsGuidesLeastPrivilegeExample) {
  Ok({{"operation", "create_table"},
      {"database", "shop"},
      {"table", "orders"},
      {"primary_key", "id"},
      {"attributes",
       {{{"name", "id"}, {"type", "ID"}},
        {{"name", "item"}, {"type", "String"}},
        {{"name", "qty"}, {"type", "Int"}},
        {{"name", "price"}, {"type", "Float"}},
        {{"name", "customer"}, {"type", "String"}},
        {{"name", "status"}, {"type", "String"}}}}});
  Ok({{"operation", "insert"},
      {"database", "shop"},
      {"table", "orders"},
      {"records",
       {{{"id", 1},
         {"item", "rope"},
         {"qty", 2},
         {"price", 9.5},
         {"customer", "c"},
         {"status", "new"}}}}});
  auto orders = [](json table) { return json{{"shop", {{"tables", {{"orders", table}}}}}}; };
  AddRole("reporting", orders(TablePerm(true, false, false, false,
                                        {AttributePerm("item", true, false, false),
                                         AttributePerm("qty", true, false, false)})));
  AddRole("shipping", orders(TablePerm(true, false, true, false,
                                       {AttributePerm("item", true, false, false),
                                        AttributePerm("status", true, false, true)})));
  AddRole("engineer", {{"structure_user", json::array({"shop"})}});
  AddUser("reports", "reporting");
  AddUser("shipper", "shipping");
  AddUser("dana", "engineer");
  const json get = {{"operation", "search_by_id"},
                    {"database", "shop"},
                    {"table", "orders"},
                    {"ids", {1}},
                    {"get_attributes", {"*"}}};
  HttpAnswer a = AsUser("reports", get);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.json, (json::array({{{"id", 1}, {"item", "rope"}, {"qty", 2}}})));
  json named = get;
  named["get_attributes"] = {"id", "price"};
  ExpectRefused(AsUser("reports", named));
  auto update = [](json record) {
    return json{{"operation", "update"},
                {"database", "shop"},
                {"table", "orders"},
                {"records", json::array({std::move(record)})}};
  };
  EXPECT_EQ(AsUser("shipper", update({{"id", 1}, {"status", "shipped"}})).status, 200);
  a = AsUser("shipper", update({{"id", 1}, {"item", "chain"}}));
  ExpectRefused(a);
  EXPECT_EQ(a.json["unauthorized_access"][0]["required_attribute_permissions"][0]["attribute_name"],
            "item");
  a = AsUser("shipper", update({{"id", 1}, {"price", 1.0}}));
  ExpectRefused(a);
  EXPECT_THAT(a.json["invalid_schema_items"],
              ElementsAre("Attribute 'price' does not exist on 'shop.orders'"));
  ExpectRefused(AsUser("shipper", {{"operation", "insert"},
                                   {"database", "shop"},
                                   {"table", "orders"},
                                   {"records", {{{"id", 2}, {"status", "new"}}}}}));
  EXPECT_EQ(AsUser("dana", {{"operation", "create_table"},
                            {"database", "shop"},
                            {"table", "returns"},
                            {"primary_key", "id"}})
                .status,
            200);
  ExpectRefused(AsUser("dana", {{"operation", "create_table"},
                                {"database", "other"},
                                {"table", "t"},
                                {"primary_key", "id"}}));
  ExpectRefused(AsUser("dana", get));
  for (const char* user : {"reports", "shipper", "dana"}) {
    ExpectRefused(AsUser(user, {{"operation", "list_users"}}));
    ExpectRefused(AsUser(user, {{"operation", "cluster_status"}}));
  }
  Ok({{"operation", "alter_user"}, {"username", "shipper"}, {"active", false}});
  EXPECT_EQ(AsUser("shipper", get).status, 401);
}

}  // namespace
}  // namespace cairn::testing
