// Role permission JSON (SPEC U3): checked as Harper checks it, and read into what enforcement
// asks (U4).
#include "catalog/permissions.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/catalog/catalog_fixture.h"

namespace cairn::catalog {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

class PermissionsTest : public CatalogFixture {
 protected:
  void SetUp() override {
    CatalogFixture::SetUp();
    ASSERT_OK(catalog().CreateTable(Spec("dev", "dog", {"name", "age"})).status());
    ASSERT_OK(catalog().CreateTable(DynamicSpec("dev", "cat")).status());
  }
  // The details of a refused JSON: {"main_permissions", "schema_permissions"}.
  json Refusal(const json& permission, std::vector<std::string> main = {}) {
    absl::Status s = ValidatePermission(permission, *snap(), std::move(main));
    EXPECT_THAT(s, testing::HasErrorCode(ErrorCode::kInvalidPermissions));
    EXPECT_EQ(s.message(), "Errors in the role permissions JSON provided");
    return json::parse(DetailsOf(s));
  }
  static json Table(bool read, bool insert, bool update, bool remove, json attributes) {
    return {{"read", read},
            {"insert", insert},
            {"update", update},
            {"delete", remove},
            {"attribute_permissions", std::move(attributes)}};
  }
};

TEST_F(PermissionsTest, U3_AGoodRoleIsAccepted) {
  EXPECT_OK(ValidatePermission(json{{"super_user", true}}, *snap()));
  EXPECT_OK(ValidatePermission(json{{"super_user", false}}, *snap()));
  EXPECT_OK(ValidatePermission(json{{"structure_user", json::array({"dev"})}}, *snap()));
  EXPECT_OK(ValidatePermission(json{{"dev",
                                     {{"tables",
                                       {{"dog", Table(true, false, false, false,
                                                      json::array({{{"attribute_name", "name"},
                                                                    {"read", true},
                                                                    {"insert", false},
                                                                    {"update", false}}}))},
                                        {"cat", Table(true, true, true, true, nullptr)}}}}}},
                               *snap()));
}

TEST_F(PermissionsTest, U3_AbsentDatabasesTablesAndAttributesAreRefusedWithHarpersWords) {
  json details = Refusal(json{{"nope", {{"tables", json::object()}}},
                              {"dev",
                               {{"tables",
                                 {{"wolf", Table(true, true, true, true, json::array())},
                                  {"dog", Table(true, true, true, true,
                                                json::array({{{"attribute_name", "colour"},
                                                              {"read", true},
                                                              {"insert", true},
                                                              {"update", true}}}))}}}}}});
  EXPECT_THAT(details["main_permissions"], UnorderedElementsAre("database 'nope' does not exist",
                                                                "Table 'dev.wolf' does not exist"));
  EXPECT_THAT(details["schema_permissions"]["dev_dog"],
              ElementsAre("Invalid attribute 'colour' in 'attribute_permissions'"));
}

TEST_F(PermissionsTest, U3_MalformedTableEntries) {
  json details = Refusal(
      json{{"dev",
            {{"tables",
              {{"dog", {{"read", "yes"}, {"insert", true}, {"update", true}, {"colour", 1}}}}}}}});
  EXPECT_THAT(details["schema_permissions"]["dev_dog"],
              UnorderedElementsAre("Invalid table permission key value 'colour'",
                                   "Table READ permission must be a boolean",
                                   "Missing table DELETE permission",
                                   "Missing 'attribute_permissions' array"));
}

TEST_F(PermissionsTest, U3_AttributeEntriesAndConflicts) {
  json details = Refusal(json{
      {"dev",
       {{"tables",
         {{"dog", Table(false, true, true, true,
                        json::array({{{"attribute_name", "name"}, {"read", true}, {"insert", 1}},
                                     {{"read", true}}}))}}}}}});
  EXPECT_THAT(
      details["schema_permissions"]["dev_dog"],
      UnorderedElementsAre(
          "INSERT attribute permission for 'name' must be a boolean",
          "UPDATE attribute permission missing for 'name'",
          "You have a conflict with TABLE permissions for 'dev.dog' being false and ATTRIBUTE "
          "permissions being true",
          "Permission object in 'attribute_permission' missing an 'attribute_name'"));
}

TEST_F(PermissionsTest, U3_RoleLevelKeys) {
  json details = Refusal(json{{"super_user", true}, {"structure_user", true}});
  EXPECT_THAT(
      details["main_permissions"],
      ElementsAre("Roles with 'super_user' set to true cannot have other permissions set."));
  details = Refusal(json{{"super_user", "yes"}, {"structure_user", 3}});
  EXPECT_THAT(
      details["main_permissions"],
      UnorderedElementsAre("Value for 'super_user' permission must be a boolean",
                           "Value for 'structure_user' permission must be a boolean or Array"));
  details = Refusal(json{{"structure_user", json::array({"dev", "nope"})}},
                    {"Invalid key in JSON body - 'colour'"});
  EXPECT_THAT(details["main_permissions"],
              ElementsAre("Invalid key in JSON body - 'colour'", "database 'nope' does not exist"));
}

TEST_F(PermissionsTest, U4_ListedAttributesHideTheRestAndTheKeyGetsTheirUnion) {
  Permission p =
      ReadPermission(json{{"dev",
                           {{"tables",
                             {{"dog", Table(true, true, false, false,
                                            json::array({{{"attribute_name", "name"},
                                                          {"read", true},
                                                          {"insert", false},
                                                          {"update", false}},
                                                         {{"attribute_name", "age"},
                                                          {"read", false},
                                                          {"insert", true},
                                                          {"update", false}},
                                                         {{"attribute_name", "__createdtime__"},
                                                          {"read", true},
                                                          {"insert", true},
                                                          {"update", true}}}))},
                              {"cat", Table(true, true, true, false, json::array())}}}}}});
  EXPECT_FALSE(p.super_user);
  EXPECT_FALSE(p.MayChangeStructure("dev"));
  EXPECT_EQ(p.Table("dev", "wolf"), nullptr);
  EXPECT_EQ(p.Table("prod", "dog"), nullptr);
  const TableAccess* dog = p.Table("dev", "dog");
  ASSERT_NE(dog, nullptr);
  EXPECT_TRUE(dog->restricted());
  EXPECT_TRUE(dog->Attribute("name", "id").read);
  EXPECT_FALSE(dog->Attribute("name", "id").insert);
  EXPECT_TRUE(dog->Attribute("age", "id").insert);
  EXPECT_FALSE(dog->Attribute("colour", "id").read);  // unlisted: invisible
  const AttributeAccess key = dog->Attribute("id", "id");
  EXPECT_TRUE(key.read);
  EXPECT_TRUE(key.insert);
  EXPECT_FALSE(key.update);
  // Timestamps are readable only, whatever the role says.
  EXPECT_TRUE(dog->Attribute("__createdtime__", "id").read);
  EXPECT_FALSE(dog->Attribute("__createdtime__", "id").insert);
  const TableAccess* cat = p.Table("dev", "cat");
  ASSERT_NE(cat, nullptr);
  EXPECT_FALSE(cat->restricted());
  EXPECT_TRUE(cat->Attribute("anything", "id").update);
  EXPECT_FALSE(cat->Attribute("__updatedtime__", "id").update);
  EXPECT_TRUE(cat->Attribute("__updatedtime__", "id").read);
}

TEST_F(PermissionsTest, U4_StructureUsers) {
  EXPECT_TRUE(ReadPermission(json{{"structure_user", true}}).MayChangeStructure("any"));
  Permission some = ReadPermission(json{{"structure_user", json::array({"dev"})}});
  EXPECT_TRUE(some.MayChangeStructure("dev"));
  EXPECT_FALSE(some.MayChangeStructure("prod"));
  EXPECT_TRUE(ReadPermission(json{{"super_user", true}}).MayChangeStructure("prod"));
  // Whatever cannot be read grants nothing.
  EXPECT_FALSE(ReadPermission(json("garbage")).super_user);
  EXPECT_FALSE(ReadPermission(json{{"super_user", "true"}}).super_user);
}

}  // namespace
}  // namespace cairn::catalog
