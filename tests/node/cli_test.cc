// The cairn command-line client against a real cairnd (SPEC §6): operations from an argument,
// a file or stdin, the readable verbs, credentials from the environment, and exit statuses
// that carry the server's message.
#include <sys/wait.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <future>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "cluster-tests/harness/cairnd_process.h"
#include "tests/testing/testing.h"

namespace cairn::testing {
namespace {

using ::cairn::harness::CairnCliPath;
using ::cairn::harness::CairndOptions;
using ::cairn::harness::CairndProcess;

using nlohmann::json;
using ::testing::HasSubstr;

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

std::string Quote(const std::string& s) {
  return "'" + absl::StrReplaceAll(s, {{"'", "'\\''"}}) + "'";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CairndOptions o;
    o.data_dir = dir_.Sub("n1");
    auto node = CairndProcess::Start(o);
    ASSERT_OK(node);
    node_ = std::move(*node);
  }

  // Runs cairn with `args` against the node (or `node`), feeding `input` on stdin.
  CliResult Cli(const std::vector<std::string>& args, const std::string& input = "",
                const std::string& password = "test-password", std::string node = "") {
    if (node.empty()) node = node_->ops_address();
    std::ofstream(dir_.Sub("in")) << input;
    std::string cmd =
        absl::StrCat("CAIRN_NODE=", Quote(node), " CAIRN_ADMIN_USER=admin ",
                     "CAIRN_ADMIN_PASSWORD=", Quote(password), " ", Quote(CairnCliPath()));
    for (const std::string& a : args) absl::StrAppend(&cmd, " ", Quote(a));
    absl::StrAppend(&cmd, " <", dir_.Sub("in"), " >", dir_.Sub("out"), " 2>", dir_.Sub("err"));
    CliResult r;
    const int status = std::system(cmd.c_str());
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = ReadFile(dir_.Sub("out"));
    r.err = ReadFile(dir_.Sub("err"));
    return r;
  }

  TempDir dir_;
  std::unique_ptr<CairndProcess> node_;
};

// Issue 8: the operations API over HTTPS with a certificate from scripts/gen-certs.sh. The
// client verifies it against the cluster CA; a plaintext request gets no answer; an
// unverifiable certificate is "cannot reach" (3), not a silent downgrade.
TEST_F(CliTest, HttpsWithACertificateFromGenCerts) {
  const std::string certs = dir_.Sub("certs");
  ASSERT_EQ(std::system(absl::StrCat(CAIRN_SOURCE_DIR, "/scripts/gen-certs.sh --out ", certs,
                                     " n1=127.0.0.1,localhost >/dev/null")
                            .c_str()),
            0);
  CairndOptions o;
  o.data_dir = dir_.Sub("https");
  o.ca_file = certs + "/ca.pem";
  o.args = {"--ops-tls-cert-file", certs + "/n1.pem", "--ops-tls-key-file", certs + "/n1.key"};
  auto node = CairndProcess::Start(o);
  ASSERT_OK(node);
  EXPECT_EQ((*node)->Post({{"operation", "describe_all"}}).status, 200);
  EXPECT_EQ((*node)->Get("/health").status, 200);
  cairn::harness::OpsEndpoint plaintext = (*node)->endpoint();
  plaintext.ca_file.clear();
  EXPECT_NE(plaintext.Post({{"operation", "describe_all"}}, absl::Seconds(5)).status, 200);

  const std::string https = absl::StrCat("https://127.0.0.1:", (*node)->port());
  CliResult r = Cli({"--ca-file", certs + "/ca.pem", "status"}, "", "test-password", https);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("node n1"));
  r = Cli({"--ca-file", certs + "/ca.pem", "status"}, "", "test-password",
          absl::StrCat("https://localhost:", (*node)->port()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = Cli({"status"}, "", "test-password", https);  // the system's CAs do not know ours
  EXPECT_EQ(r.exit_code, 3) << r.out;

  // A key that is not the certificate's: the node says so and does not start.
  o.data_dir = dir_.Sub("mismatch");
  ASSERT_EQ(std::system(absl::StrCat(CAIRN_SOURCE_DIR, "/scripts/gen-certs.sh --out ", certs,
                                     " n2 >/dev/null")
                            .c_str()),
            0);
  o.args = {"--ops-tls-cert-file", certs + "/n1.pem", "--ops-tls-key-file", certs + "/n2.key"};
  auto refused = CairndProcess::Start(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("cannot serve HTTPS"));
}

TEST_F(CliTest, OperationsFromAnArgumentAFileAndStdin) {
  CliResult r =
      Cli({"op", R"({"operation":"create_table","database":"d","table":"t","primary_key":"id"})"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("successfully created"));

  std::ofstream(dir_.Sub("op.json"))
      << R"({"operation":"insert","database":"d","table":"t","records":[{"id":1,"a":"x"}]})";
  r = Cli({"op", "@" + dir_.Sub("op.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["inserted_hashes"], json::parse("[1]"));

  r = Cli(
      {"op"},
      R"({"operation":"search_by_id","database":"d","table":"t","ids":[1],"get_attributes":["a"]})");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out), json::parse(R"([{"a":"x"}])"));
}

TEST_F(CliTest, ReadableVerbs) {
  ASSERT_EQ(
      Cli({"op", R"({"operation":"create_table","database":"d","table":"t","primary_key":"id"})"})
          .exit_code,
      0);
  CliResult r = Cli({"put", "d.t", R"({"id": "k1", "colour": "red"})"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["upserted_hashes"], json::parse(R"(["k1"])"));
  r = Cli({"put", "d.t", R"([{"id": 2, "colour": "blue"}, {"id": 3, "colour": "blue"}])"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  r = Cli({"get", "d.t", "k1", "2", "404"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json got = json::parse(r.out);
  ASSERT_EQ(got.size(), 2u) << r.out;
  EXPECT_EQ(got[0]["colour"], "red");
  EXPECT_EQ(got[1]["id"], 2) << "a numeric argument is an integer key";

  r = Cli({"search", "d.t", "colour", "blue"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).size(), 2u);
  // With conditions: search_by_conditions (issue 22).
  r = Cli({"search", "d.t", "colour=blue", "id>=3", "--fields", "id,colour"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out), json::parse(R"([{"id": 3, "colour": "blue"}])"));
  r = Cli({"search", "d.t", "colour^=re", "id=2..3", "--or", "--sort", "colour:desc", "--sort",
           "id", "--fields", "id"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out), json::parse(R"([{"id": "k1"}, {"id": 2}, {"id": 3}])"));
  r = Cli({"search", "d.t", "colour*=lu", "--limit", "1", "--reverse", "--fields", "id,colour"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out), json::parse(R"([{"id": 3, "colour": "blue"}])"));
  EXPECT_EQ(Cli({"search", "d.t", "colour", "blue", "extra"}).exit_code, 2);
  EXPECT_EQ(Cli({"search", "d.t", "id>1", "--sort", "id:up"}).exit_code, 2);

  r = Cli({"describe", "d.t"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["record_count"], 3);
  r = Cli({"describe", "d"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(json::parse(r.out).contains("t"));
  r = Cli({"describe"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(json::parse(r.out).contains("d"));

  r = Cli({"status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("node n1"));
}

TEST_F(CliTest, ErrorsExitNonZeroWithTheServersMessage) {
  CliResult r = Cli({"get", "d.missing", "1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("DATABASE_NOT_FOUND"));
  EXPECT_THAT(r.err, HasSubstr("'d'"));

  r = Cli({"describe"}, "", "wrong-password");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("UNAUTHORIZED"));

  r = Cli({"op", "{not json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("not valid JSON"));
  r = Cli({"get", "no-dot", "1"});
  EXPECT_EQ(r.exit_code, 2);
  r = Cli({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);

  r = Cli({"status"}, "", "test-password", "127.0.0.1:1");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("cannot reach"));
}

// SPEC §7: users and roles from the command line, and a token from `cairn login` that a later
// command uses instead of the password.
TEST_F(CliTest, UsersRolesAndLogin) {
  CliResult r = Cli({"role", "add", "reader", R"({"super_user": false})"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"role\": \"reader\""));
  r = Cli({"user", "add", "ann", "--role", "reader"}, "pw-ann\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("ann successfully added"));
  r = Cli({"user", "list"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"username\": \"ann\""));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("argon2")));
  // ann logs in; her token is used instead of a password, and her role is enforced.
  r = Cli({"--user", "ann", "login"}, "", "pw-ann");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_THAT(r.out, HasSubstr("export CAIRN_TOKEN='"));
  const size_t start = r.out.find('\'') + 1;
  const std::string token = r.out.substr(start, r.out.find('\'', start) - start);
  r = Cli({"--token", token, "op", R"({"operation": "user_info"})"}, "", "");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"username\": \"ann\""));
  r = Cli({"--token", token, "user", "list"}, "", "");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("FORBIDDEN"));
  r = Cli({"user", "alter", "ann", "--active", "false"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Cli({"user", "drop", "ann"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Cli({"role", "drop", "reader"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Cli({"user", "add", "bob", "--role", "reader"}, "").exit_code, 2) << "no password";
}

// Issue 43: `cairn watch` prints a JSON line per event as it comes, and ends with the node's
// `shutdown` (exit 0); a subscription the node refuses is exit 1 with its message.
TEST_F(CliTest, WatchPrintsAJsonLinePerEventUntilTheStreamEnds) {
  ASSERT_EQ(
      Cli({"op", R"({"operation":"create_table","database":"d","table":"t","primary_key":"id"})"})
          .exit_code,
      0);
  ASSERT_EQ(Cli({"put", "d.t", R"({"id": 1, "v": "a"})"}).exit_code, 0);
  CliResult refused = Cli({"watch", "d.nope"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("TABLE_NOT_FOUND"));

  std::future<CliResult> watch = std::async(std::launch::async, [&] {
    return Cli({"watch", "d.t"});
  });
  AssertEventually([&] { ASSERT_EQ(node_->Metric("cairn_subscriptions"), 1); });
  EXPECT_EQ(node_
                ->Post({{"operation", "upsert"},
                        {"database", "d"},
                        {"table", "t"},
                        {"records", {{{"id", 2}, {"v", "b"}}}}})
                .status,
            200);
  AssertEventually([&] { ASSERT_THAT(ReadFile(dir_.Sub("out")), HasSubstr(R"("v":"b")")); });
  EXPECT_EQ(node_->Stop(SIGTERM), 0);
  CliResult r = watch.get();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<json> lines;
  for (absl::string_view line : absl::StrSplit(r.out, '\n', absl::SkipEmpty())) {
    lines.push_back(json::parse(line));
  }
  ASSERT_EQ(lines.size(), 4u) << r.out;  // the row, caught_up, the change, shutdown
  EXPECT_EQ(lines[0]["event"], "put");
  EXPECT_EQ(lines[0]["record"]["v"], "a");
  EXPECT_EQ(lines[1]["event"], "caught_up");
  EXPECT_EQ(lines[2]["record"]["v"], "b");
  EXPECT_EQ(lines[3]["event"], "shutdown");
  EXPECT_EQ(lines[3]["cursor"], lines[2]["cursor"]);
}

}  // namespace
}  // namespace cairn::testing
