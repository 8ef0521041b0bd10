// Shared pieces of the cluster benchmarks: keep-alive HTTP clients with a node's credentials,
// percentiles and the machine's load. The nodes themselves come from the cluster harness.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cluster-tests/harness/cairnd_process.h"
#include "cluster-tests/harness/cluster.h"
#include "httplib.h"
#include "nlohmann/json.hpp"

namespace cairn::bench {

inline constexpr char kUser[] = "admin";
inline constexpr char kPassword[] = "bench-password";  // of a node given with --node

// A node's operations API and credentials (nodes the benchmark starts come from the cluster
// harness, cluster-tests/harness).
using Target = harness::OpsEndpoint;

// Starts the benchmark's nodes through the cluster harness: `names`, linked both ways, no
// test hooks, running `cairnd` (when not empty) instead of the binary built with the harness.
// Exits with a message when they do not come up.
std::unique_ptr<harness::Cluster> StartCluster(const std::string& cairnd,
                                               std::vector<std::string> names = {"n1", "n2", "n3"});

// A keep-alive client with the target's credentials.
std::unique_ptr<httplib::Client> NewClient(const Target& t);
// POSTs `op`; true on 200. The answer body (or the error) goes to *body when given.
bool Post(httplib::Client* c, const nlohmann::json& op, std::string* body = nullptr);
// The answer of a 200, or null.
nlohmann::json PostJson(httplib::Client* c, const nlohmann::json& op);

// create_table of bench.<table>: {id: ID, customer: String (indexed), qty: Int}, the schema
// of every record the benchmarks write.
nlohmann::json CreateBenchTable(const std::string& table);

double Percentile(std::vector<double>* v, double p);
std::string LoadAverage();

}  // namespace cairn::bench
