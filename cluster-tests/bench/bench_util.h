// Shared pieces of the cluster benchmarks: starting cairnd processes for a run, HTTP clients
// with the run's credentials, percentiles and the machine's load.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "httplib.h"
#include "nlohmann/json.hpp"

namespace cairn::bench {

inline constexpr char kUser[] = "admin";
inline constexpr char kPassword[] = "bench-password";

struct Target {
  std::string host;
  int port = 0;
};

// A cairnd started for the run: SIGTERMed (and its directory removed, if `owns_dir`) at the
// end. Start() may be called again on the same directory after Stop() (a restart).
struct OwnNode {
  std::string cairnd, name, dir;  // dir: the node's data directory
  std::vector<std::string> args;  // more flags
  pid_t pid = -1;
  Target ops;
  std::string peer;  // HOST:PORT of its peer port
  bool owns_dir = true;

  ~OwnNode();
  // Starts it and waits (30 s) for its ready.json. False if it did not come up.
  bool Start();
  // Sends `sig` and waits for the exit; returns the wait status code.
  int Stop(int sig);
};

// A fresh directory under /tmp for a run ("/tmp/cairn-bench-XXXXXX").
std::string MakeRunDir();

std::unique_ptr<httplib::Client> NewClient(const Target& t);
// POSTs `op`; true on 200. The answer body (or the error) goes to *body when given.
bool Post(httplib::Client* c, const nlohmann::json& op, std::string* body = nullptr);
// The answer of a 200, or null.
nlohmann::json PostJson(httplib::Client* c, const nlohmann::json& op);

double Percentile(std::vector<double>* v, double p);
std::string LoadAverage();

}  // namespace cairn::bench
