#include "node/config.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <tuple>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "catalog/names.h"
#include "common/fault.h"
#include "common/status.h"
#include "yaml-cpp/yaml.h"

namespace cairn::node {
namespace {

// Reads the --config file for CLI11: top-level scalars and lists of scalars become option
// values under the same name ('_' and '-' are interchangeable). `peers` may also be a map
// {NAME: HOST:PORT}. Anything else is a configuration error naming the key.
class YamlConfig : public CLI::Config {
 public:
  std::string to_config(const CLI::App*, bool, bool, std::string) const override { return ""; }

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    YAML::Node root;
    try {
      root = YAML::Load(input);
    } catch (const YAML::Exception& e) {
      throw CLI::ConfigError(absl::StrCat("config file is not valid YAML: ", e.what()));
    }
    try {
      return Items(root);
    } catch (const YAML::Exception& e) {  // e.g. a list where a name belongs
      throw CLI::ConfigError(absl::StrCat("config file: ", e.what()));
    }
  }

 private:
  static std::vector<CLI::ConfigItem> Items(const YAML::Node& root) {
    std::vector<CLI::ConfigItem> items;
    if (root.IsNull()) return items;
    if (!root.IsMap()) throw CLI::ConfigError("config file must be a YAML mapping of flag: value");
    for (const auto& entry : root) {
      CLI::ConfigItem item;
      item.name = absl::StrReplaceAll(entry.first.as<std::string>(), {{"_", "-"}});
      if (item.name == "peers") item.name = "peer";
      const YAML::Node& value = entry.second;
      if (value.IsScalar()) {
        item.inputs.push_back(value.as<std::string>());
      } else if (value.IsSequence()) {
        for (const auto& v : value) {
          if (!v.IsScalar()) throw CLI::ConfigError("config key '" + item.name + "': nested lists");
          item.inputs.push_back(v.as<std::string>());
        }
      } else if (value.IsMap() && item.name == "peer") {
        for (const auto& p : value) {
          item.inputs.push_back(p.first.as<std::string>() + "=" + p.second.as<std::string>());
        }
      } else if (!value.IsNull()) {
        throw CLI::ConfigError("config key '" + item.name + "' has an unsupported value");
      }
      items.push_back(std::move(item));
    }
    return items;
  }
};

absl::Status ReadSecretFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return Error(ErrorCode::kBadRequest, absl::StrCat("cannot read '", path, "'"));
  // A secret others can read is not one (decision 75: warned, not refused, so that a
  // deployment is not broken by an upgrade; the warning names the fix).
  std::error_code ec;
  const auto perms = std::filesystem::status(path, ec).permissions();
  if (!ec && (perms & (std::filesystem::perms::group_all | std::filesystem::perms::others_all)) !=
                 std::filesystem::perms::none) {
    std::fprintf(stderr,
                 "cairnd: WARNING: '%s' is readable by other users than its owner; a password or "
                 "secret there is not secret (chmod 600 '%s')\n",
                 path.c_str(), path.c_str());
  }
  std::stringstream ss;
  ss << in.rdbuf();
  *out = std::string(absl::StripTrailingAsciiWhitespace(ss.str()));
  if (out->empty()) return Error(ErrorCode::kBadRequest, absl::StrCat("'", path, "' is empty"));
  return absl::OkStatus();
}

}  // namespace

std::string HostPort::ToString() const {
  if (absl::StrContains(host, ':')) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text, absl::string_view what) {
  auto bad = [&](absl::string_view why) {
    return Error(ErrorCode::kBadRequest,
                 absl::StrCat(what, ": '", text, "' is not HOST:PORT (", why, ")"));
  };
  size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos) return bad("no port");
  HostPort hp;
  absl::string_view host = text.substr(0, colon);
  if (absl::StartsWith(host, "[") && absl::EndsWith(host, "]")) {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) return bad("no host");
  hp.host = std::string(host);
  if (!absl::SimpleAtoi(text.substr(colon + 1), &hp.port) || hp.port < 0 || hp.port > 65535) {
    return bad("port must be 0-65535");
  }
  return hp;
}

bool IsLoopbackHost(absl::string_view host) {
  if (host == "localhost") return true;
  const std::string h(host);
  in_addr v4;
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6;
  return inet_pton(AF_INET6, h.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

absl::Status ValidateConfig(const NodeConfig& c) {
  if (c.name.empty()) return Error(ErrorCode::kBadRequest, "--name is required");
  if (absl::Status s = catalog::ValidateDatabaseName(c.name); !s.ok()) {
    return Error(ErrorCode::kBadRequest, absl::StrCat("--name: ", s.message()));
  }
  if (c.data_dir.empty()) return Error(ErrorCode::kBadRequest, "--data-dir is required");
  if (c.admin_password.empty()) {
    for (const HostPort* hp : {&c.ops_listen, &c.peer_listen}) {
      if (!IsLoopbackHost(hp->host)) {
        return Error(ErrorCode::kBadRequest,
                     absl::StrCat("refusing to listen on ", hp->ToString(),
                                  " without an admin password: set --admin-password-file or "
                                  "CAIRN_ADMIN_PASSWORD, or listen on 127.0.0.1"));
      }
    }
  }
  if (c.cluster_secret.empty() && c.tls_cert_file.empty() && !IsLoopbackHost(c.peer_listen.host)) {
    return Error(ErrorCode::kBadRequest,
                 absl::StrCat("refusing to accept peers on ", c.peer_listen.ToString(),
                              " without authentication: set --cluster-secret-file (R2)"));
  }
  if (!c.faults.empty() && !c.enable_test_hooks) {
    return Error(ErrorCode::kBadRequest, "--fault needs --enable-test-hooks");
  }
  if ((c.buggify_seed != 0 || c.buggify_crashes) && !c.enable_test_hooks) {
    return Error(ErrorCode::kBadRequest, "--buggify-seed needs --enable-test-hooks");
  }
  if (c.buggify_crashes && c.buggify_seed == 0) {
    return Error(ErrorCode::kBadRequest, "--buggify-crashes needs --buggify-seed");
  }
  for (const std::string& spec : c.faults) {
    std::string name;
    FaultAction action;
    if (absl::Status s = ParseFaultSpec(spec, &name, &action); !s.ok()) {
      return Error(ErrorCode::kBadRequest, absl::StrCat("--fault ", spec, ": ", s.message()));
    }
  }
  for (const PeerConfig& p : c.peers) {
    if (p.name == c.name) {
      return Error(ErrorCode::kBadRequest, absl::StrCat("--peer ", p.name, ": that is this node"));
    }
  }
  if (c.max_body_bytes < 1024 || c.max_body_bytes > (uint64_t{1} << 30)) {
    return Error(ErrorCode::kBadRequest, "--max-body-bytes must be between 1024 and 1 GiB");
  }
  if (c.http_threads < 0 || c.http_threads > 4096) {
    return Error(ErrorCode::kBadRequest, "--http-threads must be between 0 (automatic) and 4096");
  }
  if (c.max_attributes_per_table < 2 || c.max_attributes_per_table > 1'000'000) {
    return Error(ErrorCode::kBadRequest,
                 "--max-attributes-per-table must be between 2 and 1,000,000");
  }
  if (c.max_connections < 1 || c.max_connections_per_client < 1) {
    return Error(ErrorCode::kBadRequest,
                 "--max-connections and --max-connections-per-client must be positive");
  }
  if (c.max_header_bytes < 1024 || c.max_header_bytes > (1u << 20)) {
    return Error(ErrorCode::kBadRequest, "--max-header-bytes must be between 1024 and 1 MiB");
  }
  if (c.operation_timeout < absl::Milliseconds(100) || c.operation_timeout > absl::Hours(24)) {
    return Error(ErrorCode::kBadRequest, "--operation-timeout must be between 100ms and 24h");
  }
  if (c.max_sort_bytes < (64 << 10)) {
    return Error(ErrorCode::kBadRequest, "--max-sort-bytes must be at least 64 KiB");
  }
  if (c.subscription_buffer < (64 << 10) || c.subscription_buffer > (1ull << 30)) {
    return Error(ErrorCode::kBadRequest, "--subscription-buffer must be between 64 KiB and 1 GiB");
  }
  if (c.max_subscriptions < 0 || c.max_subscriptions_per_user < 0) {
    return Error(ErrorCode::kBadRequest,
                 "--max-subscriptions and --max-subscriptions-per-user must not be negative");
  }
  if (c.request_timeout < absl::Milliseconds(100) || c.idle_timeout < absl::Milliseconds(100)) {
    return Error(ErrorCode::kBadRequest,
                 "--request-timeout and --idle-timeout must be at least 100ms");
  }
  if (c.operation_token_ttl < absl::Seconds(1) || c.refresh_token_ttl < c.operation_token_ttl) {
    return Error(ErrorCode::kBadRequest,
                 "--operation-token-ttl must be at least 1s, and --refresh-token-ttl at least as "
                 "long");
  }
  if (c.tombstone_retention < absl::Hours(1)) {
    // Shorter than a peer's ordinary absence would let its older writes resurrect deletes.
    return Error(ErrorCode::kBadRequest, "--tombstone-retention must be at least 1h");
  }
  if (c.log_retention_age <= absl::ZeroDuration() || c.log_retention_age > c.tombstone_retention) {
    // The log names rows without their bodies: a logged delete must still have its tombstone.
    return Error(ErrorCode::kBadRequest,
                 absl::StrCat("--log-retention-age must be positive and at most the tombstone "
                              "retention, ",
                              absl::FormatDuration(c.tombstone_retention)));
  }
  if (c.max_clock_offset < absl::Milliseconds(1)) {
    // Below the links' own latency every peer would be refused.
    return Error(ErrorCode::kBadRequest, "--max-clock-offset must be at least 1ms");
  }
  if (c.log_retention_entries == 0) {
    return Error(ErrorCode::kBadRequest, "--log-retention-entries must be positive");
  }
  if (c.drop_drain_timeout <= absl::ZeroDuration()) {
    return Error(ErrorCode::kBadRequest, "--drop-drain-timeout must be positive");
  }
  if (c.confirmation_timeout <= absl::ZeroDuration()) {
    return Error(ErrorCode::kBadRequest, "--confirmation-timeout must be positive");
  }
  return absl::OkStatus();
}

int HttpThreadsFor(const NodeConfig& config) {
  if (config.http_threads > 0) return config.http_threads;
  // Operations wait on RocksDB (a synced write, a compaction stall) and streamed answers on
  // their readers; 32 keeps the cores busy through such waits.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(32, 8 * cores);
}

int HttpIoThreadsFor(const NodeConfig&) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Measured (ceiling_bench, 2 cores): one I/O thread per core serves ~10 % more single
  // requests than one for both.
  return std::clamp(cores, 1, 4);
}

ParsedCommandLine ParseCommandLine(int argc, const char* const* argv) {
  ParsedCommandLine out;
  NodeConfig& c = out.config;
  std::string ops_listen = c.ops_listen.ToString();
  std::string peer_listen = c.peer_listen.ToString();
  std::vector<std::string> peers;
  std::string password_file;
  std::string drain_timeout = "10s";

  CLI::App app("cairnd: one node of a cairn cluster. See docs/operations.md.", "cairnd");
  app.config_formatter(std::make_shared<YamlConfig>());
  app.set_config("--config", "", "YAML file of flag: value pairs (flags given here win)");
  app.allow_config_extras(false);
  // A flag given twice (or in the file and on the command line) takes its last value, as a
  // wrapper script that appends an override expects. Lists (--peer, --fault) collect all.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--name", c.name, "node name, unique in the cluster")->required();
  app.add_option("--data-dir", c.data_dir, "directory of this node's data")->required();
  app.add_option("--ops-listen", ops_listen, "HOST:PORT of the operations API (port 0: any)")
      ->capture_default_str();
  app.add_option("--peer-listen", peer_listen, "HOST:PORT of the peer service (port 0: any)")
      ->capture_default_str();
  app.add_option("--peer", peers, "NAME=HOST:PORT of a peer (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  std::vector<std::string> peer_excludes;
  app.add_option("--peer-exclude", peer_excludes,
                 "NAME=DB.TABLE: a table neither sent to nor accepted from that peer (R11)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--cluster-secret-file", c.cluster_secret_file, "shared secret of the cluster");
  app.add_option("--tls-cert-file", c.tls_cert_file, "this node's certificate (PEM)");
  app.add_option("--tls-key-file", c.tls_key_file, "this node's private key (PEM)");
  app.add_option("--tls-ca-file", c.tls_ca_file, "CA that signs the cluster's certificates");
  app.add_option("--ops-tls-cert-file", c.ops_tls_cert_file,
                 "serve the operations API over HTTPS with this certificate (PEM)");
  app.add_option("--ops-tls-key-file", c.ops_tls_key_file, "the HTTPS certificate's key (PEM)");
  app.add_option("--backup-dir", c.backup_dir,
                 "where create_backup puts backups (default: <data-dir>/backups)");
  app.add_flag("--restore-stale-backup", c.restore_stale_backup,
               "restore a backup older than the tombstone retention, accepting that rows "
               "deleted since may come back");
  app.add_option("--admin-user", c.admin_user, "operations API user (env CAIRN_ADMIN_USER)")
      ->envname("CAIRN_ADMIN_USER")
      ->capture_default_str();
  app.add_option("--admin-password-file", password_file,
                 "file holding the admin password (else env CAIRN_ADMIN_PASSWORD)");
  app.add_option("--drop-drain-timeout", drain_timeout,
                 "how long a drop waits for in-flight work (SPEC C9)")
      ->capture_default_str();
  app.add_option("--log-retention-entries", c.log_retention_entries,
                 "change-log entries kept per database for lagging peers (R12)")
      ->capture_default_str();
  std::string tombstone_retention = "168h";
  app.add_option("--tombstone-retention", tombstone_retention,
                 "how long a delete's tombstone is kept against older writes (D5)")
      ->capture_default_str();
  std::string retention_age;
  app.add_option("--log-retention-age", retention_age,
                 "how long change-log entries are kept, at most the tombstone retention, which "
                 "is the default (R12, D5)");
  std::string max_clock_offset = "500ms";
  app.add_option("--max-clock-offset", max_clock_offset,
                 "how far ahead of this node's clock a peer's clock and stamps may be; 'inf' "
                 "turns the bound off (R16)")
      ->capture_default_str();
  std::string verify_interval = "1h";
  app.add_option("--verify-interval", verify_interval,
                 "how often this node verifies each database with each peer it has a route to; "
                 "0 turns the background verify off (R18)")
      ->capture_default_str();
  app.add_option("--verify-rate", c.verify_rate,
                 "rows per second a verify may scan on this node while it is quiet (see "
                 "--background-busy-share); 0: no limit (R18)")
      ->capture_default_str();
  app.add_option("--strip-rate", c.strip_rate,
                 "rows per second a strip of a dropped attribute's values may read on this node; "
                 "0: no limit (C15)")
      ->capture_default_str();
  app.add_option("--background-busy-share", c.background_busy_share,
                 "share of --verify-rate and --strip-rate that verifies and strips keep while "
                 "this node serves clients or applies peers' writes; 1: no yielding")
      ->check(CLI::Range(0.001, 1.0))
      ->capture_default_str();
  app.add_flag("--enable-test-hooks", c.enable_test_hooks, "allow fault injection operations");
  app.add_option("--fault", c.faults, "NAME=ACTION[@P|@#N] fault point (test hooks only)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--buggify-seed", c.buggify_seed,
                 "every fault point may delay, fail or crash on its own, as this seed decides "
                 "(0: off; test hooks only)");
  app.add_flag("--buggify-crashes", c.buggify_crashes,
               "let --buggify-seed crash the node too (exit 85)");
  app.add_flag("--sync-writes", c.sync_writes, "fsync every write before acknowledging it");
  app.add_option("--max-body-bytes", c.max_body_bytes, "largest request body accepted")
      ->capture_default_str();
  app.add_option("--http-threads", c.http_threads,
                 "operations API worker threads (0: from the machine)")
      ->capture_default_str();
  app.add_option("--max-connections", c.max_connections,
                 "operations API connections at most; more are refused at once")
      ->capture_default_str();
  app.add_option("--max-connections-per-client", c.max_connections_per_client,
                 "operations API connections at most from one client address")
      ->capture_default_str();
  app.add_option("--max-header-bytes", c.max_header_bytes,
                 "largest request line and headers accepted (431 beyond)")
      ->capture_default_str();
  std::string request_timeout = "10s", idle_timeout = "5s", operation_timeout = "60s";
  app.add_option("--operation-timeout", operation_timeout,
                 "how long an operation may run from its request's first byte (a request's "
                 "timeout_ms may shorten it; 503 REQUEST_TIMEOUT beyond)")
      ->capture_default_str();
  app.add_option("--replicated-confirmation", c.replicated_confirmation,
                 "other members of a database that must acknowledge a write before it is "
                 "answered, when the write names no replicated_confirmation (design 0013, P10)")
      ->capture_default_str();
  std::string confirmation_timeout = "5s";
  app.add_option("--confirmation-timeout", confirmation_timeout,
                 "how long a confirmed write waits for its confirmations (then 504 "
                 "CONFIRMATION_TIMEOUT; the write stays done)")
      ->capture_default_str();
  app.add_option("--max-sort-bytes", c.max_sort_bytes,
                 "sort values a sorted search may hold in memory (400 beyond)")
      ->capture_default_str();
  app.add_option("--subscription-buffer", c.subscription_buffer,
                 "bytes a change subscription may have unsent before it ends with an overflow "
                 "event and its cursor")
      ->capture_default_str();
  app.add_option("--max-subscriptions", c.max_subscriptions,
                 "change subscriptions open at once on this node (503 beyond; 0: none)")
      ->capture_default_str();
  app.add_option("--max-subscriptions-per-user", c.max_subscriptions_per_user,
                 "change subscriptions open at once for one user (503 beyond)")
      ->capture_default_str();
  std::string search_priority = "idle";
  app.add_option("--search-priority", search_priority,
                 "CPU priority of streamed searches: idle (only CPU nothing else wants), low "
                 "(nice +10) or normal")
      ->check(CLI::IsMember({"idle", "low", "normal"}))
      ->capture_default_str();
  app.add_option("--search-cpus", c.search_cpus,
                 "streamed searches computing at once, the others wait their turn (0: one "
                 "fewer than the CPUs, at least 1)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--request-timeout", request_timeout,
                 "how long a request may take from its first byte to its last")
      ->capture_default_str();
  app.add_option("--idle-timeout", idle_timeout, "how long a connection may wait between requests")
      ->capture_default_str();
  std::string operation_token_ttl = "1d", refresh_token_ttl = "30d";
  app.add_option("--operation-token-ttl", operation_token_ttl,
                 "how long an operation token lives (SPEC U5)")
      ->capture_default_str();
  app.add_option("--refresh-token-ttl", refresh_token_ttl,
                 "how long a refresh token lives (SPEC U5)")
      ->capture_default_str();
  app.add_option("--max-attributes-per-table", c.max_attributes_per_table,
                 "attributes a table may have from local changes")
      ->capture_default_str();
  app.add_flag("--metrics-require-auth", c.metrics_require_auth,
               "GET /metrics needs the admin credentials too");
  app.add_option("--log-level", c.log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  app.set_version_flag("--version", "cairnd " CAIRN_VERSION);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::ostringstream o, err;
    out.exit_code = app.exit(e, o, err);
    out.message = o.str() + err.str();
    return out;
  }

  auto fail = [&](const absl::Status& s) {
    out.exit_code = 2;
    out.message =
        absl::StrCat("cairnd: ", s.message(), "\nRun with --help for more information.\n");
    return out;
  };
  auto ops = ParseHostPort(ops_listen, "--ops-listen");
  if (!ops.ok()) return fail(ops.status());
  c.ops_listen = *ops;
  auto peer = ParseHostPort(peer_listen, "--peer-listen");
  if (!peer.ok()) return fail(peer.status());
  c.peer_listen = *peer;
  for (const std::string& p : peers) {
    std::pair<std::string, std::string> kv = absl::StrSplit(p, absl::MaxSplits('=', 1));
    auto address = ParseHostPort(kv.second, absl::StrCat("--peer ", p));
    if (kv.first.empty() || !address.ok()) {
      return fail(
          Error(ErrorCode::kBadRequest, absl::StrCat("--peer '", p, "' is not NAME=HOST:PORT")));
    }
    c.peers.push_back({kv.first, *address, {}});
  }
  for (const std::string& e : peer_excludes) {
    std::pair<std::string, std::string> kv = absl::StrSplit(e, absl::MaxSplits('=', 1));
    std::pair<std::string, std::string> table = absl::StrSplit(kv.second, absl::MaxSplits('.', 1));
    auto peer = std::find_if(c.peers.begin(), c.peers.end(),
                             [&](const PeerConfig& p) { return p.name == kv.first; });
    if (peer == c.peers.end() || table.first.empty() || table.second.empty()) {
      return fail(Error(ErrorCode::kBadRequest,
                        absl::StrCat("--peer-exclude '", e, "' is not NAME=DB.TABLE of a --peer")));
    }
    peer->exclude.push_back(table);
  }
  if (!absl::ParseDuration(drain_timeout, &c.drop_drain_timeout)) {
    return fail(Error(ErrorCode::kBadRequest, absl::StrCat("--drop-drain-timeout '", drain_timeout,
                                                           "' is not a duration like 10s")));
  }
  if (!absl::ParseDuration(tombstone_retention, &c.tombstone_retention)) {
    return fail(
        Error(ErrorCode::kBadRequest, absl::StrCat("--tombstone-retention '", tombstone_retention,
                                                   "' is not a duration like 168h")));
  }
  if (!absl::ParseDuration(max_clock_offset, &c.max_clock_offset)) {
    return fail(Error(ErrorCode::kBadRequest, absl::StrCat("--max-clock-offset '", max_clock_offset,
                                                           "' is not a duration like 500ms")));
  }
  if (!absl::ParseDuration(verify_interval, &c.verify_interval) ||
      c.verify_interval < absl::ZeroDuration()) {
    return fail(Error(ErrorCode::kBadRequest, absl::StrCat("--verify-interval '", verify_interval,
                                                           "' is not a duration like 1h (or 0)")));
  }
  for (auto [text, field, flag] :
       {std::make_tuple(&request_timeout, &c.request_timeout, "--request-timeout"),
        std::make_tuple(&idle_timeout, &c.idle_timeout, "--idle-timeout"),
        std::make_tuple(&operation_timeout, &c.operation_timeout, "--operation-timeout"),
        std::make_tuple(&confirmation_timeout, &c.confirmation_timeout, "--confirmation-timeout"),
        std::make_tuple(&operation_token_ttl, &c.operation_token_ttl, "--operation-token-ttl"),
        std::make_tuple(&refresh_token_ttl, &c.refresh_token_ttl, "--refresh-token-ttl")}) {
    // Days too ("30d"), which absl does not read.
    int64_t days = 0;
    if (absl::EndsWith(*text, "d") &&
        absl::SimpleAtoi(absl::string_view(*text).substr(0, text->size() - 1), &days) &&
        days >= 0 && days < 100'000) {
      *field = absl::Hours(24 * days);
    } else if (!absl::ParseDuration(*text, field)) {
      return fail(Error(ErrorCode::kBadRequest,
                        absl::StrCat(flag, " '", *text, "' is not a duration like 10s")));
    }
  }
  c.search_priority = search_priority == "normal" ? SearchPriority::kNormal
                      : search_priority == "low"  ? SearchPriority::kLow
                                                  : SearchPriority::kIdle;
  if (retention_age.empty()) {
    c.log_retention_age = c.tombstone_retention;
  } else if (!absl::ParseDuration(retention_age, &c.log_retention_age)) {
    return fail(Error(ErrorCode::kBadRequest, absl::StrCat("--log-retention-age '", retention_age,
                                                           "' is not a duration like 24h")));
  }
  if (!password_file.empty()) {
    if (absl::Status s = ReadSecretFile(password_file, &c.admin_password); !s.ok()) {
      return fail(Annotate(s, "--admin-password-file"));
    }
  } else if (const char* env = std::getenv("CAIRN_ADMIN_PASSWORD"); env != nullptr) {
    c.admin_password = env;
  }
  if (!c.cluster_secret_file.empty()) {
    if (absl::Status s = ReadSecretFile(c.cluster_secret_file, &c.cluster_secret); !s.ok()) {
      return fail(Annotate(s, "--cluster-secret-file"));
    }
  }
  const int tls_files = !c.tls_cert_file.empty() + !c.tls_key_file.empty() + !c.tls_ca_file.empty();
  if (tls_files != 0 && tls_files != 3) {
    return fail(Error(ErrorCode::kBadRequest,
                      "mutual TLS needs all of --tls-cert-file, --tls-key-file, --tls-ca-file"));
  }
  for (auto [path, text, flag] : {std::make_tuple(&c.tls_cert_file, &c.tls_cert, "--tls-cert-file"),
                                  std::make_tuple(&c.tls_key_file, &c.tls_key, "--tls-key-file"),
                                  std::make_tuple(&c.tls_ca_file, &c.tls_ca, "--tls-ca-file")}) {
    if (path->empty()) continue;
    if (absl::Status s = ReadSecretFile(*path, text); !s.ok()) return fail(Annotate(s, flag));
    text->push_back('\n');
  }
  if (c.ops_tls_cert_file.empty() != c.ops_tls_key_file.empty()) {
    return fail(Error(ErrorCode::kBadRequest,
                      "HTTPS needs both --ops-tls-cert-file and --ops-tls-key-file"));
  }
  for (auto [path, flag] : {std::make_pair(&c.ops_tls_cert_file, "--ops-tls-cert-file"),
                            std::make_pair(&c.ops_tls_key_file, "--ops-tls-key-file")}) {
    std::string unused;
    if (path->empty()) continue;
    if (absl::Status s = ReadSecretFile(*path, &unused); !s.ok()) return fail(Annotate(s, flag));
  }
  if (c.backup_dir.empty() && !c.data_dir.empty()) c.backup_dir = c.data_dir + "/backups";
  if (absl::Status s = ValidateConfig(c); !s.ok()) return fail(s);
  out.run = true;
  return out;
}

}  // namespace cairn::node
