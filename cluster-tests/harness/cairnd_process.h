// CairndProcess: a real cairnd started for a test, as a harness starts one: on loopback with
// port 0, found through <data-dir>/ready.json (checked against its pid), driven over HTTP.
// The destructor SIGKILLs a node still running.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace cairn::testing {

struct HttpAnswer {
  int status = 0;  // 0: no answer (connection failed)
  std::string body;
  nlohmann::json json;  // parsed body; discarded when not JSON
  std::string error_code() const {
    return json.is_object() && json.contains("code") && json["code"].is_string()
               ? json["code"].get<std::string>()
               : "";
  }
};

struct CairndOptions {
  std::string name = "n1";
  std::string data_dir;                    // required
  std::string user = "admin";              // CAIRN_ADMIN_USER
  std::string password = "test-password";  // CAIRN_ADMIN_PASSWORD; empty: none
  std::vector<std::string> args;           // more flags
};

class CairndProcess {
 public:
  // Starts cairnd and waits (up to 30 s) for its ready.json.
  static absl::StatusOr<std::unique_ptr<CairndProcess>> Start(const CairndOptions& options);
  ~CairndProcess();

  // Sends `sig` and waits for the exit. Returns the exit status, 128 + signal when killed by
  // one, or -1 when it did not exit within `timeout` (then it is SIGKILLed).
  int Stop(int sig, absl::Duration timeout = absl::Seconds(10));

  // POST / with the configured credentials (or none).
  HttpAnswer Post(const nlohmann::json& body, bool auth = true) const;
  HttpAnswer PostRaw(const std::string& body, bool auth = true,
                     const std::string& authorization = "") const;
  HttpAnswer Get(const std::string& path) const;

  const std::string& host() const { return host_; }
  int port() const { return port_; }
  std::string ops_address() const { return host_ + ":" + std::to_string(port_); }
  const std::string& peer_address() const { return peer_address_; }
  pid_t pid() const { return pid_; }
  const CairndOptions& options() const { return options_; }
  std::string log() const;  // the node's stderr so far

 private:
  explicit CairndProcess(CairndOptions options) : options_(std::move(options)) {}

  CairndOptions options_;
  pid_t pid_ = -1;
  std::string host_;
  int port_ = 0;
  std::string peer_address_;
};

// Path of the built cairnd and cairn binaries.
std::string CairndPath();
std::string CairnCliPath();

}  // namespace cairn::testing
