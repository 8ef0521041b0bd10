// cairnd's configuration (SPEC §6): flags, the YAML file, the environment, and the rules a
// configuration must satisfy before a node starts.
#include "node/config.h"

#include <cstdlib>
#include <fstream>

#include "tests/testing/testing.h"

namespace cairn::node {
namespace {

using ::testing::HasSubstr;

ParsedCommandLine Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "cairnd");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return ParseCommandLine(static_cast<int>(argv.size()), argv.data());
}

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("CAIRN_ADMIN_USER");
    unsetenv("CAIRN_ADMIN_PASSWORD");
  }
  std::string WriteFile(const std::string& name, const std::string& text) {
    const std::string path = dir_.Sub(name);
    std::ofstream(path) << text;
    return path;
  }
  testing::TempDir dir_;
};

TEST_F(ConfigTest, FlagsAndDefaults) {
  ParsedCommandLine p = Parse({"--name", "n1", "--data-dir", "/tmp/x", "--peer",
                               "n2=127.0.0.1:9934", "--peer", "n3=[::1]:9935", "--sync-writes"});
  ASSERT_TRUE(p.run) << p.message;
  EXPECT_EQ(p.config.name, "n1");
  EXPECT_EQ(p.config.ops_listen.ToString(), "127.0.0.1:9925");
  EXPECT_EQ(p.config.peer_listen.ToString(), "127.0.0.1:9933");
  ASSERT_EQ(p.config.peers.size(), 2u);
  EXPECT_EQ(p.config.peers[1].name, "n3");
  EXPECT_EQ(p.config.peers[1].address.host, "::1");
  EXPECT_EQ(p.config.peers[1].address.port, 9935);
  EXPECT_TRUE(p.config.sync_writes);
  EXPECT_EQ(p.config.max_body_bytes, 10u << 20);
  EXPECT_EQ(p.config.drop_drain_timeout, absl::Seconds(10));
  EXPECT_TRUE(p.config.admin_password.empty());
}

TEST_F(ConfigTest, YamlFileSetsEveryFlagAndTheCommandLineWins) {
  const std::string password = WriteFile("pw", "s3cret\n");
  const std::string yaml = WriteFile("node.yaml",
                                     "name: from-file\n"
                                     "data_dir: /var/lib/cairn\n"
                                     "ops-listen: 0.0.0.0:7000\n"
                                     "peers:\n  n2: 10.0.0.2:9933\n  n3: 10.0.0.3:9933\n"
                                     "admin-password-file: " +
                                         password +
                                         "\n"
                                         "drop-drain-timeout: 2500ms\n"
                                         "enable-test-hooks: true\n"
                                         "fault: [catalog.drop.after_drain=delay:1ms]\n");
  ParsedCommandLine p = Parse({"--config", yaml, "--name", "from-flag"});
  ASSERT_TRUE(p.run) << p.message;
  EXPECT_EQ(p.config.name, "from-flag");
  EXPECT_EQ(p.config.data_dir, "/var/lib/cairn");
  EXPECT_EQ(p.config.ops_listen.ToString(), "0.0.0.0:7000");
  ASSERT_EQ(p.config.peers.size(), 2u);
  EXPECT_EQ(p.config.peers[0].address.ToString(), "10.0.0.2:9933");
  EXPECT_EQ(p.config.admin_password, "s3cret");
  EXPECT_EQ(p.config.drop_drain_timeout, absl::Milliseconds(2500));
  EXPECT_TRUE(p.config.enable_test_hooks);
  EXPECT_EQ(p.config.faults.size(), 1u);
}

TEST_F(ConfigTest, UnknownYamlKeyIsAnErrorNamingIt) {
  const std::string yaml = WriteFile("bad.yaml", "name: n1\ndata-dir: /tmp/x\nsnyc-writes: true\n");
  ParsedCommandLine p = Parse({"--config", yaml});
  EXPECT_FALSE(p.run);
  EXPECT_NE(p.exit_code, 0);
  EXPECT_THAT(p.message, HasSubstr("snyc-writes"));
}

TEST_F(ConfigTest, YamlOfTheWrongShapeIsAnErrorNotACrash) {
  for (const char* text :
       {"peers:\n  n2: [1, 2]\n", "name: {a: b}\n", "? [a, b]\n: c\n", "- just\n- a list\n"}) {
    SCOPED_TRACE(text);
    ParsedCommandLine p = Parse({"--config", WriteFile("shape.yaml", text)});
    EXPECT_FALSE(p.run);
    EXPECT_NE(p.exit_code, 0);
  }
}

TEST_F(ConfigTest, MalformedYamlIsAnError) {
  const std::string yaml = WriteFile("broken.yaml", "name: [unclosed\n");
  ParsedCommandLine p = Parse({"--config", yaml});
  EXPECT_FALSE(p.run);
  EXPECT_THAT(p.message, HasSubstr("YAML"));
}

TEST_F(ConfigTest, PasswordFromTheEnvironment) {
  setenv("CAIRN_ADMIN_USER", "root", 1);
  setenv("CAIRN_ADMIN_PASSWORD", "pw-env", 1);
  ParsedCommandLine p = Parse({"--name", "n1", "--data-dir", "/tmp/x"});
  ASSERT_TRUE(p.run) << p.message;
  EXPECT_EQ(p.config.admin_user, "root");
  EXPECT_EQ(p.config.admin_password, "pw-env");
}

TEST_F(ConfigTest, NoPasswordMeansLoopbackOnly) {
  ParsedCommandLine p =
      Parse({"--name", "n1", "--data-dir", "/tmp/x", "--ops-listen", "0.0.0.0:0"});
  EXPECT_FALSE(p.run);
  EXPECT_THAT(p.message, HasSubstr("without an admin password"));
  p = Parse({"--name", "n1", "--data-dir", "/tmp/x", "--peer-listen", "10.1.2.3:9933"});
  EXPECT_FALSE(p.run);
  setenv("CAIRN_ADMIN_PASSWORD", "pw", 1);
  p = Parse({"--name", "n1", "--data-dir", "/tmp/x", "--ops-listen", "0.0.0.0:0"});
  EXPECT_TRUE(p.run) << p.message;
}

TEST_F(ConfigTest, LoopbackIsAnAddressNotAPrefix) {
  for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "localhost"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (const char* host : {"127.evil.example", "0.0.0.0", "::", "10.0.0.1", "128.0.0.1", ""}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
}

TEST_F(ConfigTest, BadValuesAreRefusedWithTheirFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{"--data-dir", "/tmp/x"}, "--name"},
           {{"--name", "n1"}, "--data-dir"},
           {{"--name", "bad name", "--data-dir", "/x"}, "--name"},
           {{"--name", "n1", "--data-dir", "/x", "--ops-listen", "localhost"}, "--ops-listen"},
           {{"--name", "n1", "--data-dir", "/x", "--ops-listen", "h:99999"}, "--ops-listen"},
           {{"--name", "n1", "--data-dir", "/x", "--peer", "n2"}, "--peer"},
           {{"--name", "n1", "--data-dir", "/x", "--peer", "n1=127.0.0.1:1"}, "this node"},
           {{"--name", "n1", "--data-dir", "/x", "--drop-drain-timeout", "soon"}, "--drop-drain"},
           {{"--name", "n1", "--data-dir", "/x", "--fault", "a=crash"}, "--enable-test-hooks"},
           {{"--name", "n1", "--data-dir", "/x", "--enable-test-hooks", "--fault", "a=explode"},
            "--fault"},
           {{"--name", "n1", "--data-dir", "/x", "--buggify-seed", "7"}, "--enable-test-hooks"},
           {{"--name", "n1", "--data-dir", "/x", "--enable-test-hooks", "--buggify-crashes"},
            "--buggify-seed"},
           {{"--name", "n1", "--data-dir", "/x", "--admin-password-file", "/nonexistent"},
            "--admin-password-file"},
           {{"--name", "n1", "--data-dir", "/x", "--max-body-bytes", "-1"}, "--max-body-bytes"},
           {{"--name", "n1", "--data-dir", "/x", "--tls-cert-file", "/c.pem"}, "mutual TLS"},
           {{"--name", "n1", "--data-dir", "/x", "--peer-listen", "0.0.0.0:9933"},
            "without an admin password"},
           {{"--name", "n1", "--data-dir", "/x", "--max-body-bytes", "10"}, "--max-body-bytes"},
           {{"--name", "n1", "--data-dir", "/x", "--tombstone-retention", "1week"},
            "--tombstone-retention"},
           {{"--name", "n1", "--data-dir", "/x", "--tombstone-retention", "10m"},
            "--tombstone-retention"},
           {{"--name", "n1", "--data-dir", "/x", "--tombstone-retention", "24h",
             "--log-retention-age", "48h"},
            "at most the tombstone retention, 24h"},
           {{"--name", "n1", "--data-dir", "/x", "--max-clock-offset", "soon"},
            "--max-clock-offset"},
           {{"--name", "n1", "--data-dir", "/x", "--max-clock-offset", "0s"}, "--max-clock-offset"},
       }) {
    ParsedCommandLine p = Parse(c.args);
    EXPECT_FALSE(p.run) << c.message;
    EXPECT_NE(p.exit_code, 0);
    EXPECT_THAT(p.message, HasSubstr(c.message));
  }
}

// SPEC D5: the tombstone retention is configurable, and the log's age follows it unless set
// below it (the log names rows without their bodies).
TEST_F(ConfigTest, D5_TombstoneRetentionBoundsTheLogAge) {
  ParsedCommandLine p = Parse({"--name", "n1", "--data-dir", "/x"});
  ASSERT_TRUE(p.run) << p.message;
  EXPECT_EQ(p.config.tombstone_retention, absl::Hours(168));
  EXPECT_EQ(p.config.log_retention_age, absl::Hours(168));
  p = Parse({"--name", "n1", "--data-dir", "/x", "--tombstone-retention", "720h"});
  ASSERT_TRUE(p.run) << p.message;
  EXPECT_EQ(p.config.tombstone_retention, absl::Hours(720));
  EXPECT_EQ(p.config.log_retention_age, absl::Hours(720));
  p = Parse({"--name", "n1", "--data-dir", "/x", "--tombstone-retention", "48h",
             "--log-retention-age", "12h"});
  ASSERT_TRUE(p.run) << p.message;
  EXPECT_EQ(p.config.log_retention_age, absl::Hours(12));
}

// SPEC R16: the maximum clock offset defaults to 500 ms; "inf" turns the bound off.
TEST_F(ConfigTest, R16_MaxClockOffset) {
  ParsedCommandLine p = Parse({"--name", "n1", "--data-dir", "/x"});
  ASSERT_TRUE(p.run) << p.message;
  EXPECT_EQ(p.config.max_clock_offset, absl::Milliseconds(500));
  p = Parse({"--name", "n1", "--data-dir", "/x", "--max-clock-offset", "2s"});
  ASSERT_TRUE(p.run) << p.message;
  EXPECT_EQ(p.config.max_clock_offset, absl::Seconds(2));
  p = Parse({"--name", "n1", "--data-dir", "/x", "--max-clock-offset", "inf"});
  ASSERT_TRUE(p.run) << p.message;
  EXPECT_EQ(p.config.max_clock_offset, absl::InfiniteDuration());
}

TEST_F(ConfigTest, HelpAndVersionExitZero) {
  ParsedCommandLine p = Parse({"--help"});
  EXPECT_FALSE(p.run);
  EXPECT_EQ(p.exit_code, 0);
  EXPECT_THAT(p.message, HasSubstr("--ops-listen"));
  p = Parse({"--version"});
  EXPECT_EQ(p.exit_code, 0);
  EXPECT_THAT(p.message, HasSubstr("cairnd"));
}

}  // namespace
}  // namespace cairn::node
