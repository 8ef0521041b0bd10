// CairndProcess: one real cairnd started by a test or the harness, on loopback with port 0 (or
// given ports), found through <data-dir>/ready.json (checked against its pid), driven over
// its operations API. The destructor SIGKILLs a node still running; a node also dies with the
// thread that started it (PR_SET_PDEATHSIG), so a test killed by its timeout leaves nothing.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace cairn::harness {

struct HttpAnswer {
  int status = 0;  // 0: no answer (connection failed or timed out)
  std::string body;
  nlohmann::json json;  // parsed body; discarded when not JSON
  std::string error_code() const {
    return json.is_object() && json.contains("code") && json["code"].is_string()
               ? json["code"].get<std::string>()
               : "";
  }
};

// Where a node's operations API listens and how to log in: enough to drive the node from
// any thread, also across restarts (the harness restarts a node on the same ports).
struct OpsEndpoint {
  std::string host;
  int port = 0;
  std::string user, password;  // no password: no credentials sent
  std::string ca_file;         // set: HTTPS, the node's certificate checked against this CA
  HttpAnswer Post(const nlohmann::json& body, absl::Duration timeout = absl::Seconds(60)) const;
  // `authorization`: an Authorization header to send instead of the credentials.
  // With the endpoint's own credentials, a 429 TOO_MANY_LOGINS is tried again until
  // `timeout` (the login guard refused it before anything ran).
  HttpAnswer PostRaw(const std::string& body, const std::string& authorization = "",
                     absl::Duration timeout = absl::Seconds(60)) const;

 private:
  static constexpr absl::Duration kLoginRetryWait = absl::Milliseconds(250);
  HttpAnswer PostOnce(const std::string& body, const std::string& authorization,
                      absl::Duration timeout) const;
};

struct CairndOptions {
  std::string name = "n1";
  std::string data_dir;                    // required; the log goes to <data_dir>.log
  std::string user = "admin";              // CAIRN_ADMIN_USER
  std::string password = "test-password";  // CAIRN_ADMIN_PASSWORD; empty: none
  std::string ops_listen = "127.0.0.1:0";
  std::string peer_listen = "127.0.0.1:0";
  std::vector<std::string> args;  // more flags
  // The node serves its operations API over HTTPS (--ops-tls-*): talk HTTPS, verifying its
  // certificate against this CA file.
  std::string ca_file;
  // Run the node in this network namespace (/run/netns/<netns>, a NetLab host); empty: ours.
  std::string netns;
};

class CairndProcess {
 public:
  // Starts cairnd and waits (up to 30 s) for its ready.json.
  static absl::StatusOr<std::unique_ptr<CairndProcess>> Start(const CairndOptions& options);
  ~CairndProcess();

  // Sends `sig` and waits for the exit. Returns the exit status, 128 + signal when killed by
  // one, or -1 when it did not exit within `timeout` (then it is SIGKILLed).
  int Stop(int sig, absl::Duration timeout = absl::Seconds(10));
  // Sends `sig` without waiting (SIGSTOP, SIGCONT).
  void Signal(int sig) const;
  // The exit status if the process has exited (reaping it), else nullopt.
  std::optional<int> Exited();
  bool running() const { return pid_ > 0; }

  // POST / with the configured credentials (or none). `timeout` bounds the whole exchange.
  HttpAnswer Post(const nlohmann::json& body, bool auth = true,
                  absl::Duration timeout = absl::Seconds(60)) const;
  HttpAnswer PostRaw(const std::string& body, bool auth = true,
                     const std::string& authorization = "",
                     absl::Duration timeout = absl::Seconds(60)) const;
  HttpAnswer Get(const std::string& path) const;
  // The value of `name` (a series without labels) in /metrics, -1 when absent. A node near
  // its connection cap serves /metrics on its kept slot, which a connection just closed may
  // still hold: a refused fetch is retried for up to `wait`.
  double Metric(const std::string& name, absl::Duration wait = absl::Seconds(10)) const;

  OpsEndpoint endpoint() const;
  const std::string& host() const { return host_; }
  int port() const { return port_; }
  std::string ops_address() const { return host_ + ":" + std::to_string(port_); }
  const std::string& peer_address() const { return peer_address_; }
  pid_t pid() const { return pid_; }
  const CairndOptions& options() const { return options_; }
  std::string log() const;  // the node's stderr so far (every run on this data directory)

 private:
  explicit CairndProcess(CairndOptions options) : options_(std::move(options)) {}

  CairndOptions options_;
  pid_t pid_ = -1;
  std::string host_;
  int port_ = 0;
  std::string peer_address_;
};

// Path of the cairnd and cairn binaries: $CAIRND / $CAIRN_CLI when set (to test an installed
// build), else the ones built with this harness.
std::string CairndPath();
std::string CairnCliPath();

}  // namespace cairn::harness
